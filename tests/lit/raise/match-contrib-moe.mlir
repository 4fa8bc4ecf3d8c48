// RUN: disagmoe-opt %s -raise-onnx-to-moe=match-only -split-input-file -verify-diagnostics | FileCheck %s
// ContribMoePattern (passes/raise/patterns/ContribMoePattern.cpp, ContribMoeMatcher.h) in IR, with
// match-only: onnxruntime's fused com.microsoft.MoE on the FFN RMSNorm output (hidden 8, 4 experts,
// expert hidden 4) becomes moe.router + moe.experts at once, each expert a slice of the stacked
// [experts, out, in] weights referenced as its transpose; its near misses are refused at the node
// (or the router Gemm) naming the attribute or input at fault.

// silu gated by fc3 (SwiGLU), k 2, normalize_routing_weights 1: softmax over the 4 logits, top-2,
// renormalised.
// CHECK-LABEL: func.func @contrib_moe_silu_fc3
// CHECK-DAG:   %[[W1:.*]] = onnx.weight "fc1_experts_weights[0]" {file = "m.onnx", length = 128 : i64, offset = {{[0-9]+}} : i64, transposed} : tensor<8x4xf32>
// CHECK-DAG:   %[[W2:.*]] = onnx.weight "fc2_experts_weights[0]" {{{.*}}transposed} : tensor<4x8xf32>
// CHECK-DAG:   %[[W3:.*]] = onnx.weight "fc3_experts_weights[3]" {{{.*}}transposed} : tensor<8x4xf32>
// CHECK:       %[[N:.*]] = moe.rms_norm
// CHECK:       %ids, %gates = moe.router %[[N]], %{{.*}} {layer = -1 : i64, num_experts = 4 : i64, scoring = "softmax_topk_renorm", top_k = 2 : i64} : tensor<1x2x8xf32>, tensor<8x4xf32>
// CHECK-NEXT:  %[[X:.*]] = moe.experts %[[N]], %ids, %gates w1(%[[W1]], %{{.*}}, %{{.*}}, %{{.*}}) w3(%{{.*}}, %{{.*}}, %{{.*}}, %[[W3]]) w2(%[[W2]], %{{.*}}, %{{.*}}, %{{.*}}) {expert_hidden = 4 : i64, layer = -1 : i64, num_experts = 4 : i64}
// CHECK-NOT:   "MoE"
func.func @contrib_moe_silu_fc3(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 512 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 544 : i64, length = 128 : i64} : tensor<8x4xf32>
  %fc1 = onnx.weight "fc1_experts_weights" {file = "m.onnx", offset = 672 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %fc2 = onnx.weight "fc2_experts_weights" {file = "m.onnx", offset = 1184 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %fc3 = onnx.weight "fc3_experts_weights" {file = "m.onnx", offset = 1696 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %ffn_norm_two = onnx.node "Constant"() {node_name = "ffn_norm_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_sq = onnx.node "Pow"(%x, %ffn_norm_two) {node_name = "ffn_norm_pow", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<f32>) -> tensor<1x2x8xf32>
  %ffn_norm_m = onnx.node "ReduceMean"(%ffn_norm_sq) {node_name = "ffn_norm_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x8xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_eps = onnx.node "Constant"() {node_name = "ffn_norm_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_a = onnx.node "Add"(%ffn_norm_m, %ffn_norm_eps) {node_name = "ffn_norm_add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %ffn_norm_s = onnx.node "Sqrt"(%ffn_norm_a) {node_name = "ffn_norm_sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_d = onnx.node "Div"(%x, %ffn_norm_s) {node_name = "ffn_norm_scaled", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x1xf32>) -> tensor<1x2x8xf32>
  %ffn_norm_n = onnx.node "Mul"(%ffn_norm_d, %nw) {node_name = "ffn_norm_weighted", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8xf32>) -> tensor<1x2x8xf32>
  %flat = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %hn2 = onnx.node "Reshape"(%ffn_norm_n, %flat) {node_name = "tokens", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %none = onnx.none
  %moe2 = onnx.node "MoE"(%hn2, %logits, %fc1, %none, %fc2, %none, %fc3) {domain = "com.microsoft", node_name = "moe", onnx_attrs = {activation_type = "silu", k = 2 : i64, normalize_routing_weights = 1 : i64}} : (tensor<2x8xf32>, tensor<2x4xf32>, tensor<4x4x8xf32>, none, tensor<4x8x4xf32>, none, tensor<4x4x8xf32>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%moe2, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// GPT-OSS's clamped SwiGLU (swiglu_fusion 1: gate and value interleaved, activation_beta 1,
// alpha 1.702, limit 7) with biases, routed by Gemm(x, Wg^T, b) with transB 1 (the router weight
// referenced as its transpose), k 2 without renormalisation.
// CHECK-LABEL: func.func @contrib_moe_swiglu_oai
// CHECK-DAG:   %[[WG:.*]] = onnx.weight "gate" {{{.*}}transposed} : tensor<8x4xf32>
// CHECK-DAG:   %[[BG:.*]] = onnx.weight "gate_bias"
// CHECK:       %ids, %gates = moe.router %{{.*}}, %[[WG]] bias(%[[BG]] : tensor<4xf32>) {layer = -1 : i64, num_experts = 4 : i64, scoring = "softmax_topk", top_k = 2 : i64}
// CHECK-NEXT:  moe.experts {{.*}} w3() {{.*}} b1({{.*}} : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) b2({{.*}} : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {activation = "swiglu_oai", expert_hidden = 4 : i64, fused_gate_up, layer = -1 : i64, num_experts = 4 : i64, swiglu_alpha = 1.702000e+00 : f64, swiglu_limit = 7.000000e+00 : f64}
func.func @contrib_moe_swiglu_oai(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 512 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 544 : i64, length = 128 : i64} : tensor<4x8xf32>
  %bg = onnx.weight "gate_bias" {file = "m.onnx", offset = 672 : i64, length = 16 : i64} : tensor<4xf32>
  %fc1 = onnx.weight "fc1_experts_weights" {file = "m.onnx", offset = 688 : i64, length = 1024 : i64} : tensor<4x8x8xf32>
  %b1 = onnx.weight "fc1_experts_bias" {file = "m.onnx", offset = 1712 : i64, length = 128 : i64} : tensor<4x8xf32>
  %fc2 = onnx.weight "fc2_experts_weights" {file = "m.onnx", offset = 1840 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %b2 = onnx.weight "fc2_experts_bias" {file = "m.onnx", offset = 2352 : i64, length = 128 : i64} : tensor<4x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %ffn_norm_two = onnx.node "Constant"() {node_name = "ffn_norm_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_sq = onnx.node "Pow"(%x, %ffn_norm_two) {node_name = "ffn_norm_pow", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<f32>) -> tensor<1x2x8xf32>
  %ffn_norm_m = onnx.node "ReduceMean"(%ffn_norm_sq) {node_name = "ffn_norm_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x8xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_eps = onnx.node "Constant"() {node_name = "ffn_norm_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_a = onnx.node "Add"(%ffn_norm_m, %ffn_norm_eps) {node_name = "ffn_norm_add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %ffn_norm_s = onnx.node "Sqrt"(%ffn_norm_a) {node_name = "ffn_norm_sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_d = onnx.node "Div"(%x, %ffn_norm_s) {node_name = "ffn_norm_scaled", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x1xf32>) -> tensor<1x2x8xf32>
  %ffn_norm_n = onnx.node "Mul"(%ffn_norm_d, %nw) {node_name = "ffn_norm_weighted", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8xf32>) -> tensor<1x2x8xf32>
  %flat = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %hn2 = onnx.node "Reshape"(%ffn_norm_n, %flat) {node_name = "tokens", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %logits = onnx.node "Gemm"(%hn2, %wg, %bg) {node_name = "router", onnx_attrs = {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transB = 1 : i64}} : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %none = onnx.none
  %moe2 = onnx.node "MoE"(%hn2, %logits, %fc1, %b1, %fc2, %b2) {domain = "com.microsoft", node_name = "moe", onnx_attrs = {activation_type = "swiglu", swiglu_fusion = 1 : i64, activation_alpha = 1.702000e+00 : f32, activation_beta = 1.000000e+00 : f32, swiglu_limit = 7.000000e+00 : f32, k = 2 : i64}} : (tensor<2x8xf32>, tensor<2x4xf32>, tensor<4x8x8xf32>, tensor<4x8xf32>, tensor<4x8x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%moe2, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// router_probs after a Softmax: the op softmaxes its router_probs again.
func.func @contrib_moe_softmax_probs_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 512 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 544 : i64, length = 128 : i64} : tensor<8x4xf32>
  %fc1 = onnx.weight "fc1_experts_weights" {file = "m.onnx", offset = 672 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %fc2 = onnx.weight "fc2_experts_weights" {file = "m.onnx", offset = 1184 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %fc3 = onnx.weight "fc3_experts_weights" {file = "m.onnx", offset = 1696 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %ffn_norm_two = onnx.node "Constant"() {node_name = "ffn_norm_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_sq = onnx.node "Pow"(%x, %ffn_norm_two) {node_name = "ffn_norm_pow", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<f32>) -> tensor<1x2x8xf32>
  %ffn_norm_m = onnx.node "ReduceMean"(%ffn_norm_sq) {node_name = "ffn_norm_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x8xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_eps = onnx.node "Constant"() {node_name = "ffn_norm_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_a = onnx.node "Add"(%ffn_norm_m, %ffn_norm_eps) {node_name = "ffn_norm_add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %ffn_norm_s = onnx.node "Sqrt"(%ffn_norm_a) {node_name = "ffn_norm_sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_d = onnx.node "Div"(%x, %ffn_norm_s) {node_name = "ffn_norm_scaled", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x1xf32>) -> tensor<1x2x8xf32>
  %ffn_norm_n = onnx.node "Mul"(%ffn_norm_d, %nw) {node_name = "ffn_norm_weighted", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8xf32>) -> tensor<1x2x8xf32>
  %flat = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %hn2 = onnx.node "Reshape"(%ffn_norm_n, %flat) {node_name = "tokens", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %sp = onnx.node "Softmax"(%logits) {node_name = "router_softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %none = onnx.none
  // expected-error @+1 {{node 'moe' (MoE): com.microsoft.MoE: input 'router_probs' is a Softmax output, but the op applies softmax to router_probs itself (routing would use softmax(softmax(logits)))}}
  %moe2 = onnx.node "MoE"(%hn2, %sp, %fc1, %none, %fc2, %none, %fc3) {domain = "com.microsoft", node_name = "moe", onnx_attrs = {activation_type = "silu", k = 2 : i64, normalize_routing_weights = 1 : i64}} : (tensor<2x8xf32>, tensor<2x4xf32>, tensor<4x4x8xf32>, none, tensor<4x8x4xf32>, none, tensor<4x4x8xf32>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%moe2, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// router_probs from the residual stream while the experts read the normalised tokens.
func.func @contrib_moe_other_input_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 512 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 544 : i64, length = 128 : i64} : tensor<8x4xf32>
  %fc1 = onnx.weight "fc1_experts_weights" {file = "m.onnx", offset = 672 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %fc2 = onnx.weight "fc2_experts_weights" {file = "m.onnx", offset = 1184 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %fc3 = onnx.weight "fc3_experts_weights" {file = "m.onnx", offset = 1696 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %ffn_norm_two = onnx.node "Constant"() {node_name = "ffn_norm_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_sq = onnx.node "Pow"(%x, %ffn_norm_two) {node_name = "ffn_norm_pow", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<f32>) -> tensor<1x2x8xf32>
  %ffn_norm_m = onnx.node "ReduceMean"(%ffn_norm_sq) {node_name = "ffn_norm_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x8xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_eps = onnx.node "Constant"() {node_name = "ffn_norm_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_a = onnx.node "Add"(%ffn_norm_m, %ffn_norm_eps) {node_name = "ffn_norm_add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %ffn_norm_s = onnx.node "Sqrt"(%ffn_norm_a) {node_name = "ffn_norm_sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_d = onnx.node "Div"(%x, %ffn_norm_s) {node_name = "ffn_norm_scaled", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x1xf32>) -> tensor<1x2x8xf32>
  %ffn_norm_n = onnx.node "Mul"(%ffn_norm_d, %nw) {node_name = "ffn_norm_weighted", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8xf32>) -> tensor<1x2x8xf32>
  %flat = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %hn2 = onnx.node "Reshape"(%ffn_norm_n, %flat) {node_name = "tokens", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %x2 = onnx.node "Reshape"(%x, %flat) {node_name = "residual_tokens", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %logits = onnx.node "MatMul"(%x2, %wg) {node_name = "router", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %none = onnx.none
  // expected-error @+1 {{node 'moe' (MoE): com.microsoft.MoE: input 'router_probs' is not computed from the node's own input}}
  %moe2 = onnx.node "MoE"(%hn2, %logits, %fc1, %none, %fc2, %none, %fc3) {domain = "com.microsoft", node_name = "moe", onnx_attrs = {activation_type = "silu", k = 2 : i64, normalize_routing_weights = 1 : i64}} : (tensor<2x8xf32>, tensor<2x4xf32>, tensor<4x4x8xf32>, none, tensor<4x8x4xf32>, none, tensor<4x4x8xf32>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%moe2, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// Top-5 of 4 experts.
func.func @contrib_moe_k_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 512 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 544 : i64, length = 128 : i64} : tensor<8x4xf32>
  %fc1 = onnx.weight "fc1_experts_weights" {file = "m.onnx", offset = 672 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %fc2 = onnx.weight "fc2_experts_weights" {file = "m.onnx", offset = 1184 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %fc3 = onnx.weight "fc3_experts_weights" {file = "m.onnx", offset = 1696 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %ffn_norm_two = onnx.node "Constant"() {node_name = "ffn_norm_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_sq = onnx.node "Pow"(%x, %ffn_norm_two) {node_name = "ffn_norm_pow", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<f32>) -> tensor<1x2x8xf32>
  %ffn_norm_m = onnx.node "ReduceMean"(%ffn_norm_sq) {node_name = "ffn_norm_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x8xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_eps = onnx.node "Constant"() {node_name = "ffn_norm_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_a = onnx.node "Add"(%ffn_norm_m, %ffn_norm_eps) {node_name = "ffn_norm_add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %ffn_norm_s = onnx.node "Sqrt"(%ffn_norm_a) {node_name = "ffn_norm_sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_d = onnx.node "Div"(%x, %ffn_norm_s) {node_name = "ffn_norm_scaled", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x1xf32>) -> tensor<1x2x8xf32>
  %ffn_norm_n = onnx.node "Mul"(%ffn_norm_d, %nw) {node_name = "ffn_norm_weighted", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8xf32>) -> tensor<1x2x8xf32>
  %flat = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %hn2 = onnx.node "Reshape"(%ffn_norm_n, %flat) {node_name = "tokens", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %none = onnx.none
  // expected-error @+1 {{node 'moe' (MoE): com.microsoft.MoE: attribute 'k' = 5 is outside 1..4 (the experts in fc1_experts_weights)}}
  %moe2 = onnx.node "MoE"(%hn2, %logits, %fc1, %none, %fc2, %none, %fc3) {domain = "com.microsoft", node_name = "moe", onnx_attrs = {activation_type = "silu", k = 5 : i64}} : (tensor<2x8xf32>, tensor<2x4xf32>, tensor<4x4x8xf32>, none, tensor<4x8x4xf32>, none, tensor<4x4x8xf32>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%moe2, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// The default activation relu with an fc3 gate (relu(x fc1) * (x fc3)): no model uses it.
func.func @contrib_moe_relu_fc3_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 512 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 544 : i64, length = 128 : i64} : tensor<8x4xf32>
  %fc1 = onnx.weight "fc1_experts_weights" {file = "m.onnx", offset = 672 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %fc2 = onnx.weight "fc2_experts_weights" {file = "m.onnx", offset = 1184 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %fc3 = onnx.weight "fc3_experts_weights" {file = "m.onnx", offset = 1696 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %ffn_norm_two = onnx.node "Constant"() {node_name = "ffn_norm_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_sq = onnx.node "Pow"(%x, %ffn_norm_two) {node_name = "ffn_norm_pow", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<f32>) -> tensor<1x2x8xf32>
  %ffn_norm_m = onnx.node "ReduceMean"(%ffn_norm_sq) {node_name = "ffn_norm_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x8xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_eps = onnx.node "Constant"() {node_name = "ffn_norm_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_a = onnx.node "Add"(%ffn_norm_m, %ffn_norm_eps) {node_name = "ffn_norm_add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %ffn_norm_s = onnx.node "Sqrt"(%ffn_norm_a) {node_name = "ffn_norm_sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_d = onnx.node "Div"(%x, %ffn_norm_s) {node_name = "ffn_norm_scaled", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x1xf32>) -> tensor<1x2x8xf32>
  %ffn_norm_n = onnx.node "Mul"(%ffn_norm_d, %nw) {node_name = "ffn_norm_weighted", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8xf32>) -> tensor<1x2x8xf32>
  %flat = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %hn2 = onnx.node "Reshape"(%ffn_norm_n, %flat) {node_name = "tokens", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %none = onnx.none
  // expected-error @+1 {{node 'moe' (MoE): com.microsoft.MoE: attribute 'activation_type' = 'relu' with fc3_experts_weights is not supported: only silu is gated by fc3 (SwiGLU)}}
  %moe2 = onnx.node "MoE"(%hn2, %logits, %fc1, %none, %fc2, %none, %fc3) {domain = "com.microsoft", node_name = "moe", onnx_attrs = {k = 2 : i64}} : (tensor<2x8xf32>, tensor<2x4xf32>, tensor<4x4x8xf32>, none, tensor<4x8x4xf32>, none, tensor<4x4x8xf32>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%moe2, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// fc2 in the pre-1.22 layout [experts, inter, hidden].
func.func @contrib_moe_old_layout_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 512 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 544 : i64, length = 128 : i64} : tensor<8x4xf32>
  %fc1 = onnx.weight "fc1_experts_weights" {file = "m.onnx", offset = 672 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %fc2 = onnx.weight "fc2_experts_weights" {file = "m.onnx", offset = 1184 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %fc3 = onnx.weight "fc3_experts_weights" {file = "m.onnx", offset = 1696 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %ffn_norm_two = onnx.node "Constant"() {node_name = "ffn_norm_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_sq = onnx.node "Pow"(%x, %ffn_norm_two) {node_name = "ffn_norm_pow", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<f32>) -> tensor<1x2x8xf32>
  %ffn_norm_m = onnx.node "ReduceMean"(%ffn_norm_sq) {node_name = "ffn_norm_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x8xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_eps = onnx.node "Constant"() {node_name = "ffn_norm_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_a = onnx.node "Add"(%ffn_norm_m, %ffn_norm_eps) {node_name = "ffn_norm_add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %ffn_norm_s = onnx.node "Sqrt"(%ffn_norm_a) {node_name = "ffn_norm_sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_d = onnx.node "Div"(%x, %ffn_norm_s) {node_name = "ffn_norm_scaled", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x1xf32>) -> tensor<1x2x8xf32>
  %ffn_norm_n = onnx.node "Mul"(%ffn_norm_d, %nw) {node_name = "ffn_norm_weighted", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8xf32>) -> tensor<1x2x8xf32>
  %flat = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %hn2 = onnx.node "Reshape"(%ffn_norm_n, %flat) {node_name = "tokens", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %none = onnx.none
  // expected-error @+1 {{node 'moe' (MoE): com.microsoft.MoE: fc2_experts_weights [4, 4, 8] is not [experts, hidden, inter] for the input's hidden size 8 (onnxruntime >= 1.22 stores weights [out, in]; the pre-1.22 layout [experts, inter, hidden] is refused)}}
  %moe2 = onnx.node "MoE"(%hn2, %logits, %fc1, %none, %fc2, %none, %fc3) {domain = "com.microsoft", node_name = "moe", onnx_attrs = {activation_type = "silu", k = 2 : i64, normalize_routing_weights = 1 : i64}} : (tensor<2x8xf32>, tensor<2x4xf32>, tensor<4x4x8xf32>, none, tensor<4x4x8xf32>, none, tensor<4x4x8xf32>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%moe2, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// A router Gemm with alpha 0.5 scales the logits, which changes the softmax: refused at the Gemm.
func.func @contrib_moe_gemm_alpha_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 512 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 544 : i64, length = 128 : i64} : tensor<4x8xf32>
  %bg = onnx.weight "gate_bias" {file = "m.onnx", offset = 672 : i64, length = 16 : i64} : tensor<4xf32>
  %fc1 = onnx.weight "fc1_experts_weights" {file = "m.onnx", offset = 688 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %fc2 = onnx.weight "fc2_experts_weights" {file = "m.onnx", offset = 1200 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %fc3 = onnx.weight "fc3_experts_weights" {file = "m.onnx", offset = 1712 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %ffn_norm_two = onnx.node "Constant"() {node_name = "ffn_norm_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_sq = onnx.node "Pow"(%x, %ffn_norm_two) {node_name = "ffn_norm_pow", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<f32>) -> tensor<1x2x8xf32>
  %ffn_norm_m = onnx.node "ReduceMean"(%ffn_norm_sq) {node_name = "ffn_norm_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x8xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_eps = onnx.node "Constant"() {node_name = "ffn_norm_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_a = onnx.node "Add"(%ffn_norm_m, %ffn_norm_eps) {node_name = "ffn_norm_add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %ffn_norm_s = onnx.node "Sqrt"(%ffn_norm_a) {node_name = "ffn_norm_sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %ffn_norm_d = onnx.node "Div"(%x, %ffn_norm_s) {node_name = "ffn_norm_scaled", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x1xf32>) -> tensor<1x2x8xf32>
  %ffn_norm_n = onnx.node "Mul"(%ffn_norm_d, %nw) {node_name = "ffn_norm_weighted", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8xf32>) -> tensor<1x2x8xf32>
  %flat = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %hn2 = onnx.node "Reshape"(%ffn_norm_n, %flat) {node_name = "tokens", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  // expected-error @+1 {{node 'router' (Gemm): com.microsoft.MoE: input 'router_probs' is a Gemm with alpha = 0.5 (expected 1: a scaled logit changes the routing softmax)}}
  %logits = onnx.node "Gemm"(%hn2, %wg, %bg) {node_name = "router", onnx_attrs = {alpha = 5.000000e-01 : f32, beta = 1.000000e+00 : f32, transB = 1 : i64}} : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %none = onnx.none
  %moe2 = onnx.node "MoE"(%hn2, %logits, %fc1, %none, %fc2, %none, %fc3) {domain = "com.microsoft", node_name = "moe", onnx_attrs = {activation_type = "silu", k = 2 : i64, normalize_routing_weights = 1 : i64}} : (tensor<2x8xf32>, tensor<2x4xf32>, tensor<4x4x8xf32>, none, tensor<4x8x4xf32>, none, tensor<4x4x8xf32>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%moe2, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}
