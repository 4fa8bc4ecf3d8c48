// RUN: disagmoe-opt %s -normalize-onnx -raise-onnx-to-moe=match-only -split-input-file -verify-diagnostics
// SigmoidRouterCheck.cpp: a top-k over sigmoid(x Wg) (DeepSeek-V3's DeepseekV3TopkRouter, here
// with its e_score_correction_bias) is refused in one line at the Sigmoid, before matching.
func.func @sigmoid_router(%x: tensor<4x8xf32>) -> tensor<4x2xi64> {
  %wg = onnx.weight "gate.weight" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %bias = onnx.weight "gate.e_score_correction_bias" {file = "m.onnx", offset = 128 : i64, length = 16 : i64, value = dense<[0.1, -0.1, 0.2, 0.0]> : tensor<4xf32>} : tensor<4xf32>
  %logits = onnx.node "MatMul"(%x, %wg) {node_name = "gate/MatMul", onnx_attrs = {}} : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  // expected-error @+1 {{node 'gate/Sigmoid' (Sigmoid): router: node 'gate/TopK' (TopK) selects experts on sigmoid(x Wg) scores (DeepSeek-V3's DeepseekV3TopkRouter: sigmoid scores, e_score_correction_bias for the selection, group-limited top-k); moe.router represents softmax_topk, softmax_topk_renorm and topk_softmax only, so this export is not imported}}
  %scores = onnx.node "Sigmoid"(%logits) {node_name = "gate/Sigmoid", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %choice = onnx.node "Add"(%scores, %bias) {node_name = "gate/Add", onnx_attrs = {}} : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %v, %i = onnx.node "TopK"(%choice, %k) {node_name = "gate/TopK", onnx_attrs = {axis = -1 : i64}} : (tensor<4x4xf32>, tensor<1xi64>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
  return %i : tensor<4x2xi64>
}

// -----

// A SiLU's Sigmoid on a projection whose values reach no TopK before the next projection (an
// expert's gate_proj) is no router: this check passes, and the match then fails on what this
// fragment lacks (its embedding).
// expected-error @below {{no token embedding: the token-id input feeds no Gather from a weight}}
func.func @silu_not_router(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w1 = onnx.weight "w1" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2 = onnx.weight "w2" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<4x8xf32>
  %g = onnx.node "MatMul"(%x, %w1) {node_name = "gate_proj", onnx_attrs = {}} : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %s = onnx.node "Sigmoid"(%g) {node_name = "silu/Sigmoid", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %a = onnx.node "Mul"(%g, %s) {node_name = "silu/Mul", onnx_attrs = {}} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %d = onnx.node "MatMul"(%a, %w2) {node_name = "down_proj", onnx_attrs = {}} : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %v, %i = onnx.node "TopK"(%d, %k) {node_name = "next/TopK", onnx_attrs = {axis = -1 : i64}} : (tensor<4x8xf32>, tensor<1xi64>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
  return %d : tensor<4x8xf32>
}
