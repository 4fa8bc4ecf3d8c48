// RUN: disagmoe-opt %s -normalize-onnx -split-input-file | FileCheck %s
// normalize-onnx, transformers' loop over the experts hit (ResolveExpertHitLoop.cpp): the traced
// hit list NonZero(Greater(ReduceSum(one-hot mask), 0)), transposed and split into one [1, 1] row
// per expert the example input hit. With as many rows as experts (3 here) row k is expert k on
// every input the file runs: the rows become the constants 0, 1, 2 and the hit-list chain goes.

// CHECK-LABEL: func.func @all_hit
// CHECK-NOT:   "NonZero"
// CHECK-NOT:   "Split"
// CHECK-DAG:   %[[E0:.*]] = onnx.node "Constant"() {node_name = "split/expert_0", onnx_attrs = {value = dense<0> : tensor<1x1xi64>}}
// CHECK-DAG:   %[[E2:.*]] = onnx.node "Constant"() {node_name = "split/expert_2", onnx_attrs = {value = dense<2> : tensor<1x1xi64>}}
// CHECK:       onnx.node "Squeeze"(%[[E0]]
// CHECK:       onnx.node "Squeeze"(%[[E2]]
func.func @all_hit(%ids: tensor<4x2xi64>) -> (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) {
  %depth = onnx.node "Constant"() {node_name = "depth", onnx_attrs = {value = dense<3> : tensor<i64>}} : () -> tensor<i64>
  %vals = onnx.node "Constant"() {node_name = "vals", onnx_attrs = {value = dense<[0, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %oh = onnx.node "OneHot"(%ids, %depth, %vals) {node_name = "onehot", onnx_attrs = {axis = -1 : i64}} : (tensor<4x2xi64>, tensor<i64>, tensor<2xi64>) -> tensor<4x2x3xi64>
  %mask = onnx.node "Transpose"(%oh) {node_name = "mask", onnx_attrs = {perm = [2, 1, 0]}} : (tensor<4x2x3xi64>) -> tensor<3x2x4xi64>
  %axes = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<[-1, -2]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %sum = onnx.node "ReduceSum"(%mask, %axes) {node_name = "sum", onnx_attrs = {keepdims = 0 : i64}} : (tensor<3x2x4xi64>, tensor<2xi64>) -> tensor<3xi64>
  %zero = onnx.node "Constant"() {node_name = "zero", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %gt = onnx.node "Greater"(%sum, %zero) {node_name = "gt", onnx_attrs = {}} : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %nz = onnx.node "NonZero"(%gt) {node_name = "nz", onnx_attrs = {}} : (tensor<3xi1>) -> tensor<1x?xi64>
  %t = onnx.node "Transpose"(%nz) {node_name = "t", onnx_attrs = {perm = [1, 0]}} : (tensor<1x?xi64>) -> tensor<?x1xi64>
  %sizes = onnx.node "Constant"() {node_name = "sizes", onnx_attrs = {value = dense<1> : tensor<3xi64>}} : () -> tensor<3xi64>
  %rows:3 = onnx.node "Split"(%t, %sizes) {node_name = "split", onnx_attrs = {axis = 0 : i64}} : (tensor<?x1xi64>, tensor<3xi64>) -> (tensor<1x1xi64>, tensor<1x1xi64>, tensor<1x1xi64>)
  %a0 = onnx.node "Constant"() {node_name = "a0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %s0 = onnx.node "Squeeze"(%rows#0, %a0) {node_name = "s0", onnx_attrs = {}} : (tensor<1x1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %s1 = onnx.node "Squeeze"(%rows#1, %a0) {node_name = "s1", onnx_attrs = {}} : (tensor<1x1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %s2 = onnx.node "Squeeze"(%rows#2, %a0) {node_name = "s2", onnx_attrs = {}} : (tensor<1x1xi64>, tensor<1xi64>) -> tensor<1xi64>
  return %s0, %s1, %s2 : tensor<1xi64>, tensor<1xi64>, tensor<1xi64>
}

// -----

// Two rows for three experts (the example input missed one): left alone; raise-onnx-to-moe refuses
// it naming the layer and the missing experts (tests/e2e/check_expert_hit_loop.py).
// CHECK-LABEL: func.func @some_hit
// CHECK:       onnx.node "NonZero"
// CHECK:       onnx.node "Split"
func.func @some_hit(%ids: tensor<4x2xi64>) -> (tensor<1x1xi64>, tensor<1x1xi64>) {
  %depth = onnx.node "Constant"() {node_name = "depth", onnx_attrs = {value = dense<3> : tensor<i64>}} : () -> tensor<i64>
  %vals = onnx.node "Constant"() {node_name = "vals", onnx_attrs = {value = dense<[0, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %oh = onnx.node "OneHot"(%ids, %depth, %vals) {node_name = "onehot", onnx_attrs = {axis = -1 : i64}} : (tensor<4x2xi64>, tensor<i64>, tensor<2xi64>) -> tensor<4x2x3xi64>
  %mask = onnx.node "Transpose"(%oh) {node_name = "mask", onnx_attrs = {perm = [2, 1, 0]}} : (tensor<4x2x3xi64>) -> tensor<3x2x4xi64>
  %axes = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<[-1, -2]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %sum = onnx.node "ReduceSum"(%mask, %axes) {node_name = "sum", onnx_attrs = {keepdims = 0 : i64}} : (tensor<3x2x4xi64>, tensor<2xi64>) -> tensor<3xi64>
  %zero = onnx.node "Constant"() {node_name = "zero", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %gt = onnx.node "Greater"(%sum, %zero) {node_name = "gt", onnx_attrs = {}} : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %nz = onnx.node "NonZero"(%gt) {node_name = "nz", onnx_attrs = {}} : (tensor<3xi1>) -> tensor<1x?xi64>
  %t = onnx.node "Transpose"(%nz) {node_name = "t", onnx_attrs = {perm = [1, 0]}} : (tensor<1x?xi64>) -> tensor<?x1xi64>
  %sizes = onnx.node "Constant"() {node_name = "sizes", onnx_attrs = {value = dense<1> : tensor<2xi64>}} : () -> tensor<2xi64>
  %rows:2 = onnx.node "Split"(%t, %sizes) {node_name = "split", onnx_attrs = {axis = 0 : i64}} : (tensor<?x1xi64>, tensor<2xi64>) -> (tensor<1x1xi64>, tensor<1x1xi64>)
  return %rows#0, %rows#1 : tensor<1x1xi64>, tensor<1x1xi64>
}
