// RUN: disagmoe-opt %s -raise-onnx-to-moe=match-only -split-input-file -verify-diagnostics | FileCheck %s
// SigmoidRouterPattern (passes/raise/patterns/SigmoidRouterPattern.cpp): DeepSeek-V3's
// DeepseekV3TopkRouter as the TorchScript exporter writes it after fold (the graph of
// samples/models/deepseek_v3_tiny's /layers.1/mlp/gate), on hidden 4, 2 tokens, 8 experts.

// The whole router: sigmoid scores + e_score_correction_bias [1, 8]; 4 groups of 2 scored by the
// sum of their top 2, the best 2 kept (masked_fill of the others to 0.0); top-2 experts; gates the
// unbiased scores gathered at the ids, over (sum + 1e-20), times 2.5. Every node of the router,
// the inner TopKs included, is absorbed.
// CHECK-LABEL: func.func @v3_router
// CHECK:       %[[E:.*]] = moe.embedding
// CHECK:       %ids, %gates = moe.router %[[E]], %{{.*}} correction_bias(%{{.*}} : tensor<8xf32>) {layer = -1 : i64, n_group = 4 : i64, num_experts = 8 : i64, routed_scaling_factor = 2.500000e+00 : f64, scoring = "sigmoid_group_topk_renorm", top_k = 2 : i64, topk_group = 2 : i64} : tensor<1x2x4xf32>, tensor<4x8xf32> -> tensor<2x2xi64>, tensor<2x2xf32>
// CHECK-NOT:   onnx.node "{{TopK|Sigmoid|GatherElements|Where|ScatterElements|Not|Div|Mul}}"
// CHECK:       onnx.node "Identity"(%ids)
// CHECK:       onnx.node "Identity"(%gates)
func.func @v3_router(%ids: tensor<1x2xi64>) -> (tensor<2x2xi64>, tensor<2x2xf32>) {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wg = onnx.weight "gate.weight" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<4x8xf32>
  %bias = onnx.weight "gate.e_score_correction_bias" {file = "m.onnx", offset = 256 : i64, length = 32 : i64} : tensor<1x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %xs = onnx.node "Constant"() {node_name = "x_shape", onnx_attrs = {value = dense<[-1, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %xr = onnx.node "Reshape"(%x, %xs) {node_name = "gate/Reshape", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %l = onnx.node "MatMul"(%xr, %wg) {node_name = "gate/MatMul", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %s = onnx.node "Sigmoid"(%l) {node_name = "gate/Sigmoid", onnx_attrs = {}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = onnx.node "Add"(%s, %bias) {node_name = "gate/Add", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  %ax = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gs = onnx.node "Constant"() {node_name = "group_shape", onnx_attrs = {value = dense<[-1, 4, 2]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %cg = onnx.node "Reshape"(%c, %gs) {node_name = "gate/Reshape_2", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<2x4x2xf32>
  %two = onnx.node "Constant"() {node_name = "two", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %t2v, %t2i = onnx.node "TopK"(%cg, %two) {node_name = "gate/TopK", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<2x4x2xf32>, tensor<1xi64>) -> (tensor<2x4x2xf32>, tensor<2x4x2xi64>)
  %gsum = onnx.node "ReduceSum"(%t2v, %ax) {node_name = "gate/ReduceSum", onnx_attrs = {keepdims = 0 : i64}} : (tensor<2x4x2xf32>, tensor<1xi64>) -> tensor<2x4xf32>
  %kg = onnx.node "Constant"() {node_name = "topk_group", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gv, %gi = onnx.node "TopK"(%gsum, %kg) {node_name = "gate/TopK_1", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 0 : i64}} : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %zeros = onnx.node "Constant"() {node_name = "zeros", onnx_attrs = {value = dense<0.0> : tensor<2x4xf32>}} : () -> tensor<2x4xf32>
  %ones = onnx.node "Constant"() {node_name = "ones", onnx_attrs = {value = dense<1.0> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %gm = onnx.node "ScatterElements"(%zeros, %gi, %ones) {node_name = "gate/ScatterElements", onnx_attrs = {axis = 1 : i64}} : (tensor<2x4xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %ua = onnx.node "Constant"() {node_name = "unsqueeze_axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gu = onnx.node "Unsqueeze"(%gm, %ua) {node_name = "gate/Unsqueeze", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x4x1xf32>
  %es = onnx.node "Constant"() {node_name = "expand_shape", onnx_attrs = {value = dense<[1, 4, 2]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %ge = onnx.node "Expand"(%gu, %es) {node_name = "gate/Expand", onnx_attrs = {}} : (tensor<2x4x1xf32>, tensor<3xi64>) -> tensor<2x4x2xf32>
  %fs = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %sm = onnx.node "Reshape"(%ge, %fs) {node_name = "gate/Reshape_3", onnx_attrs = {}} : (tensor<2x4x2xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %bm = onnx.node "Cast"(%sm) {node_name = "gate/Cast_1", onnx_attrs = {to = 9 : i64}} : (tensor<2x8xf32>) -> tensor<2x8xi1>
  %nb = onnx.node "Not"(%bm) {node_name = "gate/Not", onnx_attrs = {}} : (tensor<2x8xi1>) -> tensor<2x8xi1>
  %z = onnx.node "Constant"() {node_name = "fill", onnx_attrs = {value = dense<0.0> : tensor<f32>}} : () -> tensor<f32>
  %masked = onnx.node "Where"(%nb, %z, %c) {node_name = "gate/Where_1", onnx_attrs = {}} : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %v, %i = onnx.node "TopK"(%masked, %k) {node_name = "gate/TopK_2", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 0 : i64}} : (tensor<2x8xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %w = onnx.node "GatherElements"(%s, %i) {node_name = "gate/GatherElements", onnx_attrs = {axis = 1 : i64}} : (tensor<2x8xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
  %sum = onnx.node "ReduceSum"(%w, %ax) {node_name = "gate/ReduceSum_1", onnx_attrs = {keepdims = 1 : i64}} : (tensor<2x2xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %eps = onnx.node "Constant"() {node_name = "eps", onnx_attrs = {value = dense<1.0e-20> : tensor<f32>}} : () -> tensor<f32>
  %den = onnx.node "Add"(%sum, %eps) {node_name = "gate/Add_1", onnx_attrs = {}} : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %g = onnx.node "Div"(%w, %den) {node_name = "gate/Div", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %sc = onnx.node "Constant"() {node_name = "scale", onnx_attrs = {value = dense<2.5> : tensor<f32>}} : () -> tensor<f32>
  %gg = onnx.node "Mul"(%g, %sc) {node_name = "gate/Mul_1", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %io = onnx.node "Identity"(%i) {node_name = "ids_out", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x2xi64>
  %go = onnx.node "Identity"(%gg) {node_name = "gates_out", onnx_attrs = {}} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %io, %go : tensor<2x2xi64>, tensor<2x2xf32>
}

// -----

// Without groups, renormalisation or scaling (n_group 1, norm_topk_prob false): the top-k ranks
// sigmoid + bias [8] directly.
// CHECK-LABEL: func.func @sigmoid_topk_bias
// CHECK:       moe.router {{.*}} correction_bias(%{{.*}} : tensor<8xf32>) {layer = -1 : i64, num_experts = 8 : i64, scoring = "sigmoid_group_topk", top_k = 2 : i64}
// CHECK-NOT:   onnx.node "{{TopK|Sigmoid|GatherElements}}"
func.func @sigmoid_topk_bias(%ids: tensor<1x2xi64>) -> (tensor<2x2xi64>, tensor<2x2xf32>) {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wg = onnx.weight "gate.weight" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<4x8xf32>
  %bias = onnx.weight "gate.e_score_correction_bias" {file = "m.onnx", offset = 256 : i64, length = 32 : i64} : tensor<8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %xs = onnx.node "Constant"() {node_name = "x_shape", onnx_attrs = {value = dense<[-1, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %xr = onnx.node "Reshape"(%x, %xs) {node_name = "gate/Reshape", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %l = onnx.node "MatMul"(%xr, %wg) {node_name = "gate/MatMul", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %s = onnx.node "Sigmoid"(%l) {node_name = "gate/Sigmoid", onnx_attrs = {}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = onnx.node "Add"(%s, %bias) {node_name = "gate/Add", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %ax = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %v, %i = onnx.node "TopK"(%c, %k) {node_name = "gate/TopK_2", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 0 : i64}} : (tensor<2x8xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %w = onnx.node "GatherElements"(%s, %i) {node_name = "gate/GatherElements", onnx_attrs = {axis = 1 : i64}} : (tensor<2x8xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
  %io = onnx.node "Identity"(%i) {node_name = "ids_out", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x2xi64>
  %go = onnx.node "Identity"(%w) {node_name = "gates_out", onnx_attrs = {}} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %io, %go : tensor<2x2xi64>, tensor<2x2xf32>
}

// -----

// No correction bias: the top-k ranks the sigmoid scores themselves.
// CHECK-LABEL: func.func @sigmoid_topk_renorm_no_bias
// CHECK:       moe.router %{{.*}}, %{{.*}} {layer = -1 : i64, num_experts = 8 : i64, scoring = "sigmoid_group_topk_renorm", top_k = 2 : i64}
func.func @sigmoid_topk_renorm_no_bias(%ids: tensor<1x2xi64>) -> (tensor<2x2xi64>, tensor<2x2xf32>) {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wg = onnx.weight "gate.weight" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<4x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %xs = onnx.node "Constant"() {node_name = "x_shape", onnx_attrs = {value = dense<[-1, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %xr = onnx.node "Reshape"(%x, %xs) {node_name = "gate/Reshape", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %l = onnx.node "MatMul"(%xr, %wg) {node_name = "gate/MatMul", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %s = onnx.node "Sigmoid"(%l) {node_name = "gate/Sigmoid", onnx_attrs = {}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %ax = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %v, %i = onnx.node "TopK"(%s, %k) {node_name = "gate/TopK_2", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 0 : i64}} : (tensor<2x8xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %w = onnx.node "GatherElements"(%s, %i) {node_name = "gate/GatherElements", onnx_attrs = {axis = 1 : i64}} : (tensor<2x8xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
  %sum = onnx.node "ReduceSum"(%w, %ax) {node_name = "gate/ReduceSum_1", onnx_attrs = {keepdims = 1 : i64}} : (tensor<2x2xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %eps = onnx.node "Constant"() {node_name = "eps", onnx_attrs = {value = dense<1.0e-20> : tensor<f32>}} : () -> tensor<f32>
  %den = onnx.node "Add"(%sum, %eps) {node_name = "gate/Add_1", onnx_attrs = {}} : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %g = onnx.node "Div"(%w, %den) {node_name = "gate/Div", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %io = onnx.node "Identity"(%i) {node_name = "ids_out", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x2xi64>
  %go = onnx.node "Identity"(%g) {node_name = "gates_out", onnx_attrs = {}} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %io, %go : tensor<2x2xi64>, tensor<2x2xf32>
}

// -----

// The dropped groups filled with -inf (a masked_fill other than HF's 0.0) would choose differently
// when biased scores are negative: refused at the Where.
func.func @fill_minus_inf(%ids: tensor<1x2xi64>) -> (tensor<2x2xi64>, tensor<2x2xf32>) {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wg = onnx.weight "gate.weight" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<4x8xf32>
  %bias = onnx.weight "gate.e_score_correction_bias" {file = "m.onnx", offset = 256 : i64, length = 32 : i64} : tensor<1x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %xs = onnx.node "Constant"() {node_name = "x_shape", onnx_attrs = {value = dense<[-1, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %xr = onnx.node "Reshape"(%x, %xs) {node_name = "gate/Reshape", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %l = onnx.node "MatMul"(%xr, %wg) {node_name = "gate/MatMul", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %s = onnx.node "Sigmoid"(%l) {node_name = "gate/Sigmoid", onnx_attrs = {}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = onnx.node "Add"(%s, %bias) {node_name = "gate/Add", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  %ax = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gs = onnx.node "Constant"() {node_name = "group_shape", onnx_attrs = {value = dense<[-1, 4, 2]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %cg = onnx.node "Reshape"(%c, %gs) {node_name = "gate/Reshape_2", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<2x4x2xf32>
  %two = onnx.node "Constant"() {node_name = "two", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %t2v, %t2i = onnx.node "TopK"(%cg, %two) {node_name = "gate/TopK", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<2x4x2xf32>, tensor<1xi64>) -> (tensor<2x4x2xf32>, tensor<2x4x2xi64>)
  %gsum = onnx.node "ReduceSum"(%t2v, %ax) {node_name = "gate/ReduceSum", onnx_attrs = {keepdims = 0 : i64}} : (tensor<2x4x2xf32>, tensor<1xi64>) -> tensor<2x4xf32>
  %kg = onnx.node "Constant"() {node_name = "topk_group", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gv, %gi = onnx.node "TopK"(%gsum, %kg) {node_name = "gate/TopK_1", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 0 : i64}} : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %zeros = onnx.node "Constant"() {node_name = "zeros", onnx_attrs = {value = dense<0.0> : tensor<2x4xf32>}} : () -> tensor<2x4xf32>
  %ones = onnx.node "Constant"() {node_name = "ones", onnx_attrs = {value = dense<1.0> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %gm = onnx.node "ScatterElements"(%zeros, %gi, %ones) {node_name = "gate/ScatterElements", onnx_attrs = {axis = 1 : i64}} : (tensor<2x4xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %ua = onnx.node "Constant"() {node_name = "unsqueeze_axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gu = onnx.node "Unsqueeze"(%gm, %ua) {node_name = "gate/Unsqueeze", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x4x1xf32>
  %es = onnx.node "Constant"() {node_name = "expand_shape", onnx_attrs = {value = dense<[1, 4, 2]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %ge = onnx.node "Expand"(%gu, %es) {node_name = "gate/Expand", onnx_attrs = {}} : (tensor<2x4x1xf32>, tensor<3xi64>) -> tensor<2x4x2xf32>
  %fs = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %sm = onnx.node "Reshape"(%ge, %fs) {node_name = "gate/Reshape_3", onnx_attrs = {}} : (tensor<2x4x2xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %bm = onnx.node "Cast"(%sm) {node_name = "gate/Cast_1", onnx_attrs = {to = 9 : i64}} : (tensor<2x8xf32>) -> tensor<2x8xi1>
  %nb = onnx.node "Not"(%bm) {node_name = "gate/Not", onnx_attrs = {}} : (tensor<2x8xi1>) -> tensor<2x8xi1>
  %z = onnx.node "Constant"() {node_name = "fill", onnx_attrs = {value = dense<0xFF800000> : tensor<f32>}} : () -> tensor<f32>
  // expected-error @+1 {{node 'gate/Where_1' (Where): router: the experts of the dropped groups must score 0.0 (HF's masked_fill(~score_mask, 0.0)); this Where gives them another value}}
  %masked = onnx.node "Where"(%nb, %z, %c) {node_name = "gate/Where_1", onnx_attrs = {}} : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %v, %i = onnx.node "TopK"(%masked, %k) {node_name = "gate/TopK_2", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 0 : i64}} : (tensor<2x8xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %w = onnx.node "GatherElements"(%s, %i) {node_name = "gate/GatherElements", onnx_attrs = {axis = 1 : i64}} : (tensor<2x8xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
  %sum = onnx.node "ReduceSum"(%w, %ax) {node_name = "gate/ReduceSum_1", onnx_attrs = {keepdims = 1 : i64}} : (tensor<2x2xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %eps = onnx.node "Constant"() {node_name = "eps", onnx_attrs = {value = dense<1.0e-20> : tensor<f32>}} : () -> tensor<f32>
  %den = onnx.node "Add"(%sum, %eps) {node_name = "gate/Add_1", onnx_attrs = {}} : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %g = onnx.node "Div"(%w, %den) {node_name = "gate/Div", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %sc = onnx.node "Constant"() {node_name = "scale", onnx_attrs = {value = dense<2.5> : tensor<f32>}} : () -> tensor<f32>
  %gg = onnx.node "Mul"(%g, %sc) {node_name = "gate/Mul_1", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %io = onnx.node "Identity"(%i) {node_name = "ids_out", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x2xi64>
  %go = onnx.node "Identity"(%gg) {node_name = "gates_out", onnx_attrs = {}} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %io, %go : tensor<2x2xi64>, tensor<2x2xf32>
}

// -----

// The group mask unsqueezed at axis 1 broadcasts group g to experts e % 4 == g, not to its
// consecutive experts: refused at the Cast.
func.func @mask_strided(%ids: tensor<1x2xi64>) -> (tensor<2x2xi64>, tensor<2x2xf32>) {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wg = onnx.weight "gate.weight" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<4x8xf32>
  %bias = onnx.weight "gate.e_score_correction_bias" {file = "m.onnx", offset = 256 : i64, length = 32 : i64} : tensor<1x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %xs = onnx.node "Constant"() {node_name = "x_shape", onnx_attrs = {value = dense<[-1, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %xr = onnx.node "Reshape"(%x, %xs) {node_name = "gate/Reshape", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %l = onnx.node "MatMul"(%xr, %wg) {node_name = "gate/MatMul", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %s = onnx.node "Sigmoid"(%l) {node_name = "gate/Sigmoid", onnx_attrs = {}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = onnx.node "Add"(%s, %bias) {node_name = "gate/Add", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  %ax = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gs = onnx.node "Constant"() {node_name = "group_shape", onnx_attrs = {value = dense<[-1, 4, 2]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %cg = onnx.node "Reshape"(%c, %gs) {node_name = "gate/Reshape_2", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<2x4x2xf32>
  %two = onnx.node "Constant"() {node_name = "two", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %t2v, %t2i = onnx.node "TopK"(%cg, %two) {node_name = "gate/TopK", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<2x4x2xf32>, tensor<1xi64>) -> (tensor<2x4x2xf32>, tensor<2x4x2xi64>)
  %gsum = onnx.node "ReduceSum"(%t2v, %ax) {node_name = "gate/ReduceSum", onnx_attrs = {keepdims = 0 : i64}} : (tensor<2x4x2xf32>, tensor<1xi64>) -> tensor<2x4xf32>
  %kg = onnx.node "Constant"() {node_name = "topk_group", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gv, %gi = onnx.node "TopK"(%gsum, %kg) {node_name = "gate/TopK_1", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 0 : i64}} : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %zeros = onnx.node "Constant"() {node_name = "zeros", onnx_attrs = {value = dense<0.0> : tensor<2x4xf32>}} : () -> tensor<2x4xf32>
  %ones = onnx.node "Constant"() {node_name = "ones", onnx_attrs = {value = dense<1.0> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %gm = onnx.node "ScatterElements"(%zeros, %gi, %ones) {node_name = "gate/ScatterElements", onnx_attrs = {axis = 1 : i64}} : (tensor<2x4xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %ua = onnx.node "Constant"() {node_name = "unsqueeze_axis", onnx_attrs = {value = dense<1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gu = onnx.node "Unsqueeze"(%gm, %ua) {node_name = "gate/Unsqueeze", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1x4xf32>
  %es = onnx.node "Constant"() {node_name = "expand_shape", onnx_attrs = {value = dense<[1, 2, 4]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %ge = onnx.node "Expand"(%gu, %es) {node_name = "gate/Expand", onnx_attrs = {}} : (tensor<2x1x4xf32>, tensor<3xi64>) -> tensor<2x2x4xf32>
  %fs = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %sm = onnx.node "Reshape"(%ge, %fs) {node_name = "gate/Reshape_3", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  // expected-error @+1 {{node 'gate/Cast_1' (Cast): router: the group mask is not broadcast over each group's 2 consecutive experts ([tokens, n_group, 1] expanded to [tokens, n_group, experts / n_group])}}
  %bm = onnx.node "Cast"(%sm) {node_name = "gate/Cast_1", onnx_attrs = {to = 9 : i64}} : (tensor<2x8xf32>) -> tensor<2x8xi1>
  %nb = onnx.node "Not"(%bm) {node_name = "gate/Not", onnx_attrs = {}} : (tensor<2x8xi1>) -> tensor<2x8xi1>
  %z = onnx.node "Constant"() {node_name = "fill", onnx_attrs = {value = dense<0.0> : tensor<f32>}} : () -> tensor<f32>
  %masked = onnx.node "Where"(%nb, %z, %c) {node_name = "gate/Where_1", onnx_attrs = {}} : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %v, %i = onnx.node "TopK"(%masked, %k) {node_name = "gate/TopK_2", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 0 : i64}} : (tensor<2x8xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %w = onnx.node "GatherElements"(%s, %i) {node_name = "gate/GatherElements", onnx_attrs = {axis = 1 : i64}} : (tensor<2x8xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
  %sum = onnx.node "ReduceSum"(%w, %ax) {node_name = "gate/ReduceSum_1", onnx_attrs = {keepdims = 1 : i64}} : (tensor<2x2xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %eps = onnx.node "Constant"() {node_name = "eps", onnx_attrs = {value = dense<1.0e-20> : tensor<f32>}} : () -> tensor<f32>
  %den = onnx.node "Add"(%sum, %eps) {node_name = "gate/Add_1", onnx_attrs = {}} : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %g = onnx.node "Div"(%w, %den) {node_name = "gate/Div", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %sc = onnx.node "Constant"() {node_name = "scale", onnx_attrs = {value = dense<2.5> : tensor<f32>}} : () -> tensor<f32>
  %gg = onnx.node "Mul"(%g, %sc) {node_name = "gate/Mul_1", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %io = onnx.node "Identity"(%i) {node_name = "ids_out", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x2xi64>
  %go = onnx.node "Identity"(%gg) {node_name = "gates_out", onnx_attrs = {}} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %io, %go : tensor<2x2xi64>, tensor<2x2xf32>
}

// -----

// Groups scored by their best expert only (top-1, not the sum of the top 2): refused at the group
// TopK.
func.func @group_score_top1(%ids: tensor<1x2xi64>) -> (tensor<2x2xi64>, tensor<2x2xf32>) {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wg = onnx.weight "gate.weight" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<4x8xf32>
  %bias = onnx.weight "gate.e_score_correction_bias" {file = "m.onnx", offset = 256 : i64, length = 32 : i64} : tensor<1x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %xs = onnx.node "Constant"() {node_name = "x_shape", onnx_attrs = {value = dense<[-1, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %xr = onnx.node "Reshape"(%x, %xs) {node_name = "gate/Reshape", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %l = onnx.node "MatMul"(%xr, %wg) {node_name = "gate/MatMul", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %s = onnx.node "Sigmoid"(%l) {node_name = "gate/Sigmoid", onnx_attrs = {}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = onnx.node "Add"(%s, %bias) {node_name = "gate/Add", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  %ax = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gs = onnx.node "Constant"() {node_name = "group_shape", onnx_attrs = {value = dense<[-1, 4, 2]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %cg = onnx.node "Reshape"(%c, %gs) {node_name = "gate/Reshape_2", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<2x4x2xf32>
  %two = onnx.node "Constant"() {node_name = "two", onnx_attrs = {value = dense<1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %t2v, %t2i = onnx.node "TopK"(%cg, %two) {node_name = "gate/TopK", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<2x4x2xf32>, tensor<1xi64>) -> (tensor<2x4x1xf32>, tensor<2x4x1xi64>)
  %gsum = onnx.node "ReduceSum"(%t2v, %ax) {node_name = "gate/ReduceSum", onnx_attrs = {keepdims = 0 : i64}} : (tensor<2x4x1xf32>, tensor<1xi64>) -> tensor<2x4xf32>
  %kg = onnx.node "Constant"() {node_name = "topk_group", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  // expected-error @+1 {{node 'gate/TopK_1' (TopK): router: the group scores are not the sum of each group's top 2 (ReduceSum(TopK(scores_for_choice.view(-1, n_group, -1), 2)))}}
  %gv, %gi = onnx.node "TopK"(%gsum, %kg) {node_name = "gate/TopK_1", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 0 : i64}} : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %zeros = onnx.node "Constant"() {node_name = "zeros", onnx_attrs = {value = dense<0.0> : tensor<2x4xf32>}} : () -> tensor<2x4xf32>
  %ones = onnx.node "Constant"() {node_name = "ones", onnx_attrs = {value = dense<1.0> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %gm = onnx.node "ScatterElements"(%zeros, %gi, %ones) {node_name = "gate/ScatterElements", onnx_attrs = {axis = 1 : i64}} : (tensor<2x4xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %ua = onnx.node "Constant"() {node_name = "unsqueeze_axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gu = onnx.node "Unsqueeze"(%gm, %ua) {node_name = "gate/Unsqueeze", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x4x1xf32>
  %es = onnx.node "Constant"() {node_name = "expand_shape", onnx_attrs = {value = dense<[1, 4, 2]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %ge = onnx.node "Expand"(%gu, %es) {node_name = "gate/Expand", onnx_attrs = {}} : (tensor<2x4x1xf32>, tensor<3xi64>) -> tensor<2x4x2xf32>
  %fs = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %sm = onnx.node "Reshape"(%ge, %fs) {node_name = "gate/Reshape_3", onnx_attrs = {}} : (tensor<2x4x2xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %bm = onnx.node "Cast"(%sm) {node_name = "gate/Cast_1", onnx_attrs = {to = 9 : i64}} : (tensor<2x8xf32>) -> tensor<2x8xi1>
  %nb = onnx.node "Not"(%bm) {node_name = "gate/Not", onnx_attrs = {}} : (tensor<2x8xi1>) -> tensor<2x8xi1>
  %z = onnx.node "Constant"() {node_name = "fill", onnx_attrs = {value = dense<0.0> : tensor<f32>}} : () -> tensor<f32>
  %masked = onnx.node "Where"(%nb, %z, %c) {node_name = "gate/Where_1", onnx_attrs = {}} : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %v, %i = onnx.node "TopK"(%masked, %k) {node_name = "gate/TopK_2", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 0 : i64}} : (tensor<2x8xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %w = onnx.node "GatherElements"(%s, %i) {node_name = "gate/GatherElements", onnx_attrs = {axis = 1 : i64}} : (tensor<2x8xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
  %sum = onnx.node "ReduceSum"(%w, %ax) {node_name = "gate/ReduceSum_1", onnx_attrs = {keepdims = 1 : i64}} : (tensor<2x2xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %eps = onnx.node "Constant"() {node_name = "eps", onnx_attrs = {value = dense<1.0e-20> : tensor<f32>}} : () -> tensor<f32>
  %den = onnx.node "Add"(%sum, %eps) {node_name = "gate/Add_1", onnx_attrs = {}} : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %g = onnx.node "Div"(%w, %den) {node_name = "gate/Div", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %sc = onnx.node "Constant"() {node_name = "scale", onnx_attrs = {value = dense<2.5> : tensor<f32>}} : () -> tensor<f32>
  %gg = onnx.node "Mul"(%g, %sc) {node_name = "gate/Mul_1", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %io = onnx.node "Identity"(%i) {node_name = "ids_out", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x2xi64>
  %go = onnx.node "Identity"(%gg) {node_name = "gates_out", onnx_attrs = {}} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %io, %go : tensor<2x2xi64>, tensor<2x2xf32>
}

// -----

// Gates taken from the biased, masked top-k values instead of the unbiased scores: refused.
func.func @gates_from_values(%ids: tensor<1x2xi64>) -> (tensor<2x2xi64>, tensor<2x2xf32>) {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wg = onnx.weight "gate.weight" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<4x8xf32>
  %bias = onnx.weight "gate.e_score_correction_bias" {file = "m.onnx", offset = 256 : i64, length = 32 : i64} : tensor<1x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %xs = onnx.node "Constant"() {node_name = "x_shape", onnx_attrs = {value = dense<[-1, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %xr = onnx.node "Reshape"(%x, %xs) {node_name = "gate/Reshape", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %l = onnx.node "MatMul"(%xr, %wg) {node_name = "gate/MatMul", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %s = onnx.node "Sigmoid"(%l) {node_name = "gate/Sigmoid", onnx_attrs = {}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = onnx.node "Add"(%s, %bias) {node_name = "gate/Add", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  %ax = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gs = onnx.node "Constant"() {node_name = "group_shape", onnx_attrs = {value = dense<[-1, 4, 2]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %cg = onnx.node "Reshape"(%c, %gs) {node_name = "gate/Reshape_2", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<2x4x2xf32>
  %two = onnx.node "Constant"() {node_name = "two", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %t2v, %t2i = onnx.node "TopK"(%cg, %two) {node_name = "gate/TopK", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<2x4x2xf32>, tensor<1xi64>) -> (tensor<2x4x2xf32>, tensor<2x4x2xi64>)
  %gsum = onnx.node "ReduceSum"(%t2v, %ax) {node_name = "gate/ReduceSum", onnx_attrs = {keepdims = 0 : i64}} : (tensor<2x4x2xf32>, tensor<1xi64>) -> tensor<2x4xf32>
  %kg = onnx.node "Constant"() {node_name = "topk_group", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gv, %gi = onnx.node "TopK"(%gsum, %kg) {node_name = "gate/TopK_1", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 0 : i64}} : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %zeros = onnx.node "Constant"() {node_name = "zeros", onnx_attrs = {value = dense<0.0> : tensor<2x4xf32>}} : () -> tensor<2x4xf32>
  %ones = onnx.node "Constant"() {node_name = "ones", onnx_attrs = {value = dense<1.0> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %gm = onnx.node "ScatterElements"(%zeros, %gi, %ones) {node_name = "gate/ScatterElements", onnx_attrs = {axis = 1 : i64}} : (tensor<2x4xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %ua = onnx.node "Constant"() {node_name = "unsqueeze_axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gu = onnx.node "Unsqueeze"(%gm, %ua) {node_name = "gate/Unsqueeze", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x4x1xf32>
  %es = onnx.node "Constant"() {node_name = "expand_shape", onnx_attrs = {value = dense<[1, 4, 2]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %ge = onnx.node "Expand"(%gu, %es) {node_name = "gate/Expand", onnx_attrs = {}} : (tensor<2x4x1xf32>, tensor<3xi64>) -> tensor<2x4x2xf32>
  %fs = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %sm = onnx.node "Reshape"(%ge, %fs) {node_name = "gate/Reshape_3", onnx_attrs = {}} : (tensor<2x4x2xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %bm = onnx.node "Cast"(%sm) {node_name = "gate/Cast_1", onnx_attrs = {to = 9 : i64}} : (tensor<2x8xf32>) -> tensor<2x8xi1>
  %nb = onnx.node "Not"(%bm) {node_name = "gate/Not", onnx_attrs = {}} : (tensor<2x8xi1>) -> tensor<2x8xi1>
  %z = onnx.node "Constant"() {node_name = "fill", onnx_attrs = {value = dense<0.0> : tensor<f32>}} : () -> tensor<f32>
  %masked = onnx.node "Where"(%nb, %z, %c) {node_name = "gate/Where_1", onnx_attrs = {}} : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  // expected-error @+1 {{node 'gate/TopK_2' (TopK): router: the top-k's values (the biased, masked scores) are used; DeepSeek-V3's gates are the unbiased scores gathered at the ids}}
  %v, %i = onnx.node "TopK"(%masked, %k) {node_name = "gate/TopK_2", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 0 : i64}} : (tensor<2x8xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %sum = onnx.node "ReduceSum"(%v, %ax) {node_name = "gate/ReduceSum_1", onnx_attrs = {keepdims = 1 : i64}} : (tensor<2x2xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %eps = onnx.node "Constant"() {node_name = "eps", onnx_attrs = {value = dense<1.0e-20> : tensor<f32>}} : () -> tensor<f32>
  %den = onnx.node "Add"(%sum, %eps) {node_name = "gate/Add_1", onnx_attrs = {}} : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %g = onnx.node "Div"(%v, %den) {node_name = "gate/Div", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %sc = onnx.node "Constant"() {node_name = "scale", onnx_attrs = {value = dense<2.5> : tensor<f32>}} : () -> tensor<f32>
  %gg = onnx.node "Mul"(%g, %sc) {node_name = "gate/Mul_1", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %io = onnx.node "Identity"(%i) {node_name = "ids_out", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x2xi64>
  %go = onnx.node "Identity"(%gg) {node_name = "gates_out", onnx_attrs = {}} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %io, %go : tensor<2x2xi64>, tensor<2x2xf32>
}

// -----

// Gates gathered from the biased choice rather than the sigmoid scores: refused.
func.func @gates_from_choice(%ids: tensor<1x2xi64>) -> (tensor<2x2xi64>, tensor<2x2xf32>) {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wg = onnx.weight "gate.weight" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<4x8xf32>
  %bias = onnx.weight "gate.e_score_correction_bias" {file = "m.onnx", offset = 256 : i64, length = 32 : i64} : tensor<1x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %xs = onnx.node "Constant"() {node_name = "x_shape", onnx_attrs = {value = dense<[-1, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %xr = onnx.node "Reshape"(%x, %xs) {node_name = "gate/Reshape", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %l = onnx.node "MatMul"(%xr, %wg) {node_name = "gate/MatMul", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %s = onnx.node "Sigmoid"(%l) {node_name = "gate/Sigmoid", onnx_attrs = {}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = onnx.node "Add"(%s, %bias) {node_name = "gate/Add", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  %ax = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gs = onnx.node "Constant"() {node_name = "group_shape", onnx_attrs = {value = dense<[-1, 4, 2]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %cg = onnx.node "Reshape"(%c, %gs) {node_name = "gate/Reshape_2", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<2x4x2xf32>
  %two = onnx.node "Constant"() {node_name = "two", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %t2v, %t2i = onnx.node "TopK"(%cg, %two) {node_name = "gate/TopK", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<2x4x2xf32>, tensor<1xi64>) -> (tensor<2x4x2xf32>, tensor<2x4x2xi64>)
  %gsum = onnx.node "ReduceSum"(%t2v, %ax) {node_name = "gate/ReduceSum", onnx_attrs = {keepdims = 0 : i64}} : (tensor<2x4x2xf32>, tensor<1xi64>) -> tensor<2x4xf32>
  %kg = onnx.node "Constant"() {node_name = "topk_group", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gv, %gi = onnx.node "TopK"(%gsum, %kg) {node_name = "gate/TopK_1", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 0 : i64}} : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %zeros = onnx.node "Constant"() {node_name = "zeros", onnx_attrs = {value = dense<0.0> : tensor<2x4xf32>}} : () -> tensor<2x4xf32>
  %ones = onnx.node "Constant"() {node_name = "ones", onnx_attrs = {value = dense<1.0> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %gm = onnx.node "ScatterElements"(%zeros, %gi, %ones) {node_name = "gate/ScatterElements", onnx_attrs = {axis = 1 : i64}} : (tensor<2x4xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %ua = onnx.node "Constant"() {node_name = "unsqueeze_axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %gu = onnx.node "Unsqueeze"(%gm, %ua) {node_name = "gate/Unsqueeze", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x4x1xf32>
  %es = onnx.node "Constant"() {node_name = "expand_shape", onnx_attrs = {value = dense<[1, 4, 2]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %ge = onnx.node "Expand"(%gu, %es) {node_name = "gate/Expand", onnx_attrs = {}} : (tensor<2x4x1xf32>, tensor<3xi64>) -> tensor<2x4x2xf32>
  %fs = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %sm = onnx.node "Reshape"(%ge, %fs) {node_name = "gate/Reshape_3", onnx_attrs = {}} : (tensor<2x4x2xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %bm = onnx.node "Cast"(%sm) {node_name = "gate/Cast_1", onnx_attrs = {to = 9 : i64}} : (tensor<2x8xf32>) -> tensor<2x8xi1>
  %nb = onnx.node "Not"(%bm) {node_name = "gate/Not", onnx_attrs = {}} : (tensor<2x8xi1>) -> tensor<2x8xi1>
  %z = onnx.node "Constant"() {node_name = "fill", onnx_attrs = {value = dense<0.0> : tensor<f32>}} : () -> tensor<f32>
  %masked = onnx.node "Where"(%nb, %z, %c) {node_name = "gate/Where_1", onnx_attrs = {}} : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  // expected-error @+1 {{node 'gate/TopK_2' (TopK): router: the gates are not the sigmoid scores of node 'gate/Sigmoid' (Sigmoid) gathered at the chosen ids (GatherElements(scores, ids, axis 1))}}
  %v, %i = onnx.node "TopK"(%masked, %k) {node_name = "gate/TopK_2", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 0 : i64}} : (tensor<2x8xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %w = onnx.node "GatherElements"(%c, %i) {node_name = "gate/GatherElements", onnx_attrs = {axis = 1 : i64}} : (tensor<2x8xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
  %sum = onnx.node "ReduceSum"(%w, %ax) {node_name = "gate/ReduceSum_1", onnx_attrs = {keepdims = 1 : i64}} : (tensor<2x2xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %eps = onnx.node "Constant"() {node_name = "eps", onnx_attrs = {value = dense<1.0e-20> : tensor<f32>}} : () -> tensor<f32>
  %den = onnx.node "Add"(%sum, %eps) {node_name = "gate/Add_1", onnx_attrs = {}} : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %g = onnx.node "Div"(%w, %den) {node_name = "gate/Div", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %sc = onnx.node "Constant"() {node_name = "scale", onnx_attrs = {value = dense<2.5> : tensor<f32>}} : () -> tensor<f32>
  %gg = onnx.node "Mul"(%g, %sc) {node_name = "gate/Mul_1", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %io = onnx.node "Identity"(%i) {node_name = "ids_out", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x2xi64>
  %go = onnx.node "Identity"(%gg) {node_name = "gates_out", onnx_attrs = {}} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %io, %go : tensor<2x2xi64>, tensor<2x2xf32>
}
