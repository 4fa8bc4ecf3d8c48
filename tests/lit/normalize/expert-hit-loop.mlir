// RUN: disagmoe-opt %s -normalize-onnx -fold-onnx-constants -split-input-file | FileCheck %s
// FoldExhaustiveNonZeroSplit and FoldWeightGather (passes/raise/normalize/): GPT-OSS's training
// branch, `for expert_idx in expert_hit[:]` over `greater(mask.sum(...), 0).nonzero()`, and
// `self.gate_up_proj[expert_idx]` read with that index (the fold stage evaluates the Squeezes and
// Gathers of the folded indices, then re-applies the normalize patterns).

// A split of the 4 hit indices into 4 pieces: each piece is the constant [[j]]; the weight
// Gathers with those indices become references into the stacked weight's bytes (row block j of
// 4 x 2 x 3 floats: offset 24 j, length 24), with a leading axis of 1 for the 1-D index.
// CHECK-LABEL: func.func @expert_hit_all
// CHECK-NOT:   "Split"
// CHECK-NOT:   "NonZero"
// CHECK-NOT:   "ReduceSum"
// CHECK-DAG:   onnx.weight "w[1]" {file = "m.onnx", length = 24 : i64, offset = 24 : i64} : tensor<1x2x3xf32>
// CHECK-DAG:   onnx.weight "w[3]" {file = "m.onnx", length = 24 : i64, offset = 72 : i64} : tensor<2x3xf32>
// CHECK-DAG:   onnx.weight "b[1]" {file = "m.onnx", length = 12 : i64, offset = 96 : i64, value = dense<[3.000000e+00, 4.000000e+00, 5.000000e+00]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NOT:   "Gather"
func.func @expert_hit_all(%mask: tensor<4x2x8xi64>) -> (tensor<1x2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) {
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 96 : i64} : tensor<4x2x3xf32>
  %b = onnx.weight "b" {file = "m.onnx", offset = 84 : i64, length = 48 : i64, value = dense<[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [9.0, 10.0, 11.0]]> : tensor<4x3xf32>} : tensor<4x3xf32>
  %axes = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<[1, 2]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %sum = onnx.node "ReduceSum"(%mask, %axes) {node_name = "sum", onnx_attrs = {keepdims = 0 : i64}} : (tensor<4x2x8xi64>, tensor<2xi64>) -> tensor<4xi64>
  %zero = onnx.node "Constant"() {node_name = "zero", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %hit = onnx.node "Greater"(%sum, %zero) {node_name = "gt", onnx_attrs = {}} : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
  %nz = onnx.node "NonZero"(%hit) {node_name = "nz", onnx_attrs = {}} : (tensor<4xi1>) -> tensor<1x?xi64>
  %t = onnx.node "Transpose"(%nz) {node_name = "t", onnx_attrs = {perm = [1, 0]}} : (tensor<1x?xi64>) -> tensor<?x1xi64>
  %sizes = onnx.node "Constant"() {node_name = "sizes", onnx_attrs = {value = dense<1> : tensor<4xi64>}} : () -> tensor<4xi64>
  %s:4 = onnx.node "Split"(%t, %sizes) {node_name = "split", onnx_attrs = {axis = 0 : i64}} : (tensor<?x1xi64>, tensor<4xi64>) -> (tensor<1x1xi64>, tensor<1x1xi64>, tensor<1x1xi64>, tensor<1x1xi64>)
  %sq0 = onnx.node "Constant"() {node_name = "sq0", onnx_attrs = {value = dense<[0]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %e1 = onnx.node "Squeeze"(%s#1, %sq0) {node_name = "sq1", onnx_attrs = {}} : (tensor<1x1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %e3v = onnx.node "Squeeze"(%s#3, %sq0) {node_name = "sq3", onnx_attrs = {}} : (tensor<1x1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %e3 = onnx.node "Gather"(%e3v, %c0) {node_name = "g3", onnx_attrs = {axis = 0 : i64}} : (tensor<1xi64>, tensor<i64>) -> tensor<i64>
  %w1 = onnx.node "Gather"(%w, %e1) {node_name = "gw1", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x3xf32>, tensor<1xi64>) -> tensor<1x2x3xf32>
  %w3 = onnx.node "Gather"(%w, %e3) {node_name = "gw3", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
  %e1s = onnx.node "Gather"(%e1, %c0) {node_name = "g1", onnx_attrs = {axis = 0 : i64}} : (tensor<1xi64>, tensor<i64>) -> tensor<i64>
  %b1 = onnx.node "Gather"(%b, %e1s) {node_name = "gb1", onnx_attrs = {axis = 0 : i64}} : (tensor<4x3xf32>, tensor<i64>) -> tensor<3xf32>
  return %w1, %w3, %b1 : tensor<1x2x3xf32>, tensor<2x3xf32>, tensor<3xf32>
}

// -----

// Three pieces for four hit flags (a trace batch that missed an expert): the split does not cover
// every index, NonZero's rows are not known, and the Split and the weight Gather stay.
// CHECK-LABEL: func.func @expert_hit_partial
// CHECK:       onnx.node "Split"
// CHECK:       onnx.node "Gather"
func.func @expert_hit_partial(%hit: tensor<4xi1>) -> tensor<1x2x3xf32> {
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 96 : i64} : tensor<4x2x3xf32>
  %nz = onnx.node "NonZero"(%hit) {node_name = "nz", onnx_attrs = {}} : (tensor<4xi1>) -> tensor<1x?xi64>
  %t = onnx.node "Transpose"(%nz) {node_name = "t", onnx_attrs = {perm = [1, 0]}} : (tensor<1x?xi64>) -> tensor<?x1xi64>
  %sizes = onnx.node "Constant"() {node_name = "sizes", onnx_attrs = {value = dense<1> : tensor<3xi64>}} : () -> tensor<3xi64>
  %s:3 = onnx.node "Split"(%t, %sizes) {node_name = "split", onnx_attrs = {axis = 0 : i64}} : (tensor<?x1xi64>, tensor<3xi64>) -> (tensor<1x1xi64>, tensor<1x1xi64>, tensor<1x1xi64>)
  %sq0 = onnx.node "Constant"() {node_name = "sq0", onnx_attrs = {value = dense<[0]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %e1 = onnx.node "Squeeze"(%s#1, %sq0) {node_name = "sq1", onnx_attrs = {}} : (tensor<1x1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %w1 = onnx.node "Gather"(%w, %e1) {node_name = "gw1", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x3xf32>, tensor<1xi64>) -> tensor<1x2x3xf32>
  return %w1 : tensor<1x2x3xf32>
}

// -----

// A weight Gather along another axis, or with several indices, is kept.
// CHECK-LABEL: func.func @weight_gather_kept
// CHECK:       onnx.node "Gather"(%{{.*}}, %{{.*}}) {node_name = "axis1"
// CHECK:       onnx.node "Gather"(%{{.*}}, %{{.*}}) {node_name = "two"
func.func @weight_gather_kept() -> (tensor<4x3xf32>, tensor<2x2x3xf32>) {
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 96 : i64} : tensor<4x2x3xf32>
  %i = onnx.node "Constant"() {node_name = "i", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %ij = onnx.node "Constant"() {node_name = "ij", onnx_attrs = {value = dense<[0, 2]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %a = onnx.node "Gather"(%w, %i) {node_name = "axis1", onnx_attrs = {axis = 1 : i64}} : (tensor<4x2x3xf32>, tensor<i64>) -> tensor<4x3xf32>
  %b = onnx.node "Gather"(%w, %ij) {node_name = "two", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x3xf32>, tensor<2xi64>) -> tensor<2x2x3xf32>
  return %a, %b : tensor<4x3xf32>, tensor<2x2x3xf32>
}
