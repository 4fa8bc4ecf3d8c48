// RUN: disagmoe-opt %s -normalize-onnx -fold-onnx-constants -raise-onnx-to-moe=match-only -split-input-file -verify-diagnostics
// Hugging Face's GPT-OSS training loop over expert_hit, traced with a batch that hit 3 of 4
// experts: FoldExhaustiveNonZeroSplit.cpp keeps the Split (tests/lit/normalize/expert-hit-loop.mlir),
// and raise-onnx-to-moe refuses it in one line naming the Split and the count.
func.func @expert_hit_partial(%hit: tensor<4xi1>) -> tensor<1x2x3xf32> {
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 96 : i64} : tensor<4x2x3xf32>
  %nz = onnx.node "NonZero"(%hit) {node_name = "nz", onnx_attrs = {}} : (tensor<4xi1>) -> tensor<1x?xi64>
  %t = onnx.node "Transpose"(%nz) {node_name = "t", onnx_attrs = {perm = [1, 0]}} : (tensor<1x?xi64>) -> tensor<?x1xi64>
  %sizes = onnx.node "Constant"() {node_name = "sizes", onnx_attrs = {value = dense<1> : tensor<3xi64>}} : () -> tensor<3xi64>
  // expected-error @+1 {{node 'split' (Split): experts: the loop over the experts hit (Split of NonZero, Hugging Face's expert_hit) was traced with 3 of 4 experts hit, so the file runs only on batches that hit exactly those: export with a trace batch that routes a token to every expert}}
  %s:3 = onnx.node "Split"(%t, %sizes) {node_name = "split", onnx_attrs = {axis = 0 : i64}} : (tensor<?x1xi64>, tensor<3xi64>) -> (tensor<1x1xi64>, tensor<1x1xi64>, tensor<1x1xi64>)
  %sq0 = onnx.node "Constant"() {node_name = "sq0", onnx_attrs = {value = dense<[0]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %e1 = onnx.node "Squeeze"(%s#1, %sq0) {node_name = "sq1", onnx_attrs = {}} : (tensor<1x1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %w1 = onnx.node "Gather"(%w, %e1) {node_name = "gw1", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x3xf32>, tensor<1xi64>) -> tensor<1x2x3xf32>
  return %w1 : tensor<1x2x3xf32>
}

// -----

// Mixtral's loop (per-expert modules, whose nodes torch.onnx.export names `<block>/experts.<e>/...`)
// traced with a batch that hit experts 0 and 2 of 4: the refusal also names the experts the file
// lacks, 1 and 3.
func.func @expert_hit_partial_named(%hit: tensor<4xi1>, %x: tensor<1x2xf32>) -> (tensor<1x1xi64>, tensor<1x2xf32>, tensor<1x2xf32>) {
  %w0 = onnx.weight "w0" {file = "m.onnx", offset = 0 : i64, length = 16 : i64} : tensor<2x2xf32>
  %w2 = onnx.weight "w2" {file = "m.onnx", offset = 16 : i64, length = 16 : i64} : tensor<2x2xf32>
  %nz = onnx.node "NonZero"(%hit) {node_name = "/layers.0/block_sparse_moe/NonZero", onnx_attrs = {}} : (tensor<4xi1>) -> tensor<1x?xi64>
  %t = onnx.node "Transpose"(%nz) {node_name = "/layers.0/block_sparse_moe/Transpose_1", onnx_attrs = {perm = [1, 0]}} : (tensor<1x?xi64>) -> tensor<?x1xi64>
  %sizes = onnx.node "Constant"() {node_name = "/layers.0/block_sparse_moe/sizes", onnx_attrs = {value = dense<1> : tensor<2xi64>}} : () -> tensor<2xi64>
  // expected-error @+1 {{node '/layers.0/block_sparse_moe/Split' (Split): experts: the loop over the experts hit (Split of NonZero, Hugging Face's expert_hit) was traced with 2 of 4 experts hit; experts 1, 3 are not in the file, so the file runs only on batches that hit exactly those: export with a trace batch that routes a token to every expert}}
  %s:2 = onnx.node "Split"(%t, %sizes) {node_name = "/layers.0/block_sparse_moe/Split", onnx_attrs = {axis = 0 : i64}} : (tensor<?x1xi64>, tensor<2xi64>) -> (tensor<1x1xi64>, tensor<1x1xi64>)
  %y0 = onnx.node "MatMul"(%x, %w0) {node_name = "/layers.0/block_sparse_moe/experts.0/w1/MatMul", onnx_attrs = {}} : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  %y2 = onnx.node "MatMul"(%x, %w2) {node_name = "/layers.0/block_sparse_moe/experts.2/w1/MatMul", onnx_attrs = {}} : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  return %s#0, %y0, %y2 : tensor<1x1xi64>, tensor<1x2xf32>, tensor<1x2xf32>
}
