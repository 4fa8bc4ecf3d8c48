// RUN: disagmoe-opt %s -normalize-onnx -fold-onnx-constants -raise-onnx-to-moe=match-only -verify-diagnostics
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
