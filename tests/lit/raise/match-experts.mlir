// RUN: disagmoe-opt %s -raise-onnx-to-moe=match-only -split-input-file -verify-diagnostics | FileCheck %s
// The experts patterns (passes/raise/patterns/Experts*.cpp) in IR, with match-only: each starts
// from the moe.router its phase-2 pattern raised (4 experts, top-2, softmax then renormalised, on
// the FFN RMSNorm of hidden 8) and replaces the routed output h + moe(h) with moe.experts (expert
// hidden 4); token ids [1, S], tokens T = S.

// ExpertsLoopPattern: Hugging Face's loop (MixtralSparseMoeBlock, Qwen3MoeSparseMoeBlock):
// expert_mask = one_hot(ids, 4).permute(2, 1, 0); per expert e, idx, top_x = where(mask[e]), the
// SwiGLU on x[top_x], scaled by the gate of (top_x, idx) and index_add-ed into the output. The loops
// come in the order 2, 0, 3, 1: each expert's id is read from its Gather(mask, e), and moe.experts
// lists the weights by id.
// CHECK-LABEL: func.func @experts_loop
// CHECK-DAG:   %[[W1_0:.*]] = onnx.weight "experts.0.w1"
// CHECK-DAG:   %[[W3_0:.*]] = onnx.weight "experts.0.w3"
// CHECK-DAG:   %[[W2_0:.*]] = onnx.weight "experts.0.w2"
// CHECK-DAG:   %[[W1_1:.*]] = onnx.weight "experts.1.w1"
// CHECK-DAG:   %[[W3_1:.*]] = onnx.weight "experts.1.w3"
// CHECK-DAG:   %[[W2_1:.*]] = onnx.weight "experts.1.w2"
// CHECK-DAG:   %[[W1_2:.*]] = onnx.weight "experts.2.w1"
// CHECK-DAG:   %[[W3_2:.*]] = onnx.weight "experts.2.w3"
// CHECK-DAG:   %[[W2_2:.*]] = onnx.weight "experts.2.w2"
// CHECK-DAG:   %[[W1_3:.*]] = onnx.weight "experts.3.w1"
// CHECK-DAG:   %[[W3_3:.*]] = onnx.weight "experts.3.w3"
// CHECK-DAG:   %[[W2_3:.*]] = onnx.weight "experts.3.w2"
// CHECK:       %[[N:.*]] = moe.rms_norm
// CHECK:       %ids, %gates = moe.router %[[N]], %{{.*}} {layer = -1 : i64, num_experts = 4 : i64, scoring = "softmax_topk_renorm", top_k = 2 : i64}
// CHECK-NEXT:  %[[X:.*]] = moe.experts %[[N]], %ids, %gates w1(%[[W1_0]], %[[W1_1]], %[[W1_2]], %[[W1_3]]) w3(%[[W3_0]], %[[W3_1]], %[[W3_2]], %[[W3_3]]) w2(%[[W2_0]], %[[W2_1]], %[[W2_2]], %[[W2_3]]) {expert_hidden = 4 : i64, layer = -1 : i64, num_experts = 4 : i64}
// CHECK-NEXT:  onnx.node "Add"(%{{.*}}, %[[X]]) {node_name = "residual"
// CHECK-NOT:   onnx.node
func.func @experts_loop(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %w1_2 = onnx.weight "experts.2.w1" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w3_2 = onnx.weight "experts.2.w3" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2_2 = onnx.weight "experts.2.w2" {file = "m.onnx", offset = 256 : i64, length = 128 : i64} : tensor<4x8xf32>
  %w1_0 = onnx.weight "experts.0.w1" {file = "m.onnx", offset = 384 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w3_0 = onnx.weight "experts.0.w3" {file = "m.onnx", offset = 512 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2_0 = onnx.weight "experts.0.w2" {file = "m.onnx", offset = 640 : i64, length = 128 : i64} : tensor<4x8xf32>
  %w1_3 = onnx.weight "experts.3.w1" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w3_3 = onnx.weight "experts.3.w3" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2_3 = onnx.weight "experts.3.w2" {file = "m.onnx", offset = 1024 : i64, length = 128 : i64} : tensor<4x8xf32>
  %w1_1 = onnx.weight "experts.1.w1" {file = "m.onnx", offset = 1152 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w3_1 = onnx.weight "experts.1.w3" {file = "m.onnx", offset = 1280 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2_1 = onnx.weight "experts.1.w2" {file = "m.onnx", offset = 1408 : i64, length = 128 : i64} : tensor<4x8xf32>
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 1536 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 2048 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 2080 : i64, length = 128 : i64} : tensor<8x4xf32>
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
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router_logits", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %probs = onnx.node "Softmax"(%logits) {node_name = "router_softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %vals, %ids_k = onnx.node "TopK"(%probs, %k) {node_name = "topk", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %ax = onnx.node "Constant"() {node_name = "sum_axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %sum = onnx.node "ReduceSum"(%vals, %ax) {node_name = "topk_sum", onnx_attrs = {keepdims = 1 : i64}} : (tensor<2x2xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %gates = onnx.node "Div"(%vals, %sum) {node_name = "renorm", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %depth = onnx.node "Constant"() {node_name = "num_classes", onnx_attrs = {value = dense<4> : tensor<i64>}} : () -> tensor<i64>
  %onoff = onnx.node "Constant"() {node_name = "one_hot_values", onnx_attrs = {value = dense<[0, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %oh = onnx.node "OneHot"(%ids_k, %depth, %onoff) {node_name = "one_hot", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xi64>, tensor<i64>, tensor<2xi64>) -> tensor<2x2x4xi64>
  %ohT = onnx.node "Transpose"(%oh) {node_name = "expert_mask", onnx_attrs = {perm = [2, 1, 0]}} : (tensor<2x2x4xi64>) -> tensor<4x2x2xi64>
  %gshape = onnx.node "Constant"() {node_name = "gates_flat_shape", onnx_attrs = {value = dense<[-1, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %gflat = onnx.node "Reshape"(%gates, %gshape) {node_name = "gates_flat", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2xi64>) -> tensor<4x1xf32>
  %i0 = onnx.node "Constant"() {node_name = "row0", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %i1 = onnx.node "Constant"() {node_name = "row1", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %kk = onnx.node "Constant"() {node_name = "top_k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %ax1 = onnx.node "Constant"() {node_name = "axis1", onnx_attrs = {value = dense<[1]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %bshape = onnx.node "Constant"() {node_name = "row_shape", onnx_attrs = {value = dense<[1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %acc = onnx.node "Constant"() {node_name = "zeros", onnx_attrs = {value = dense<0.0> : tensor<2x8xf32>}} : () -> tensor<2x8xf32>
  %e2c = onnx.node "Constant"() {node_name = "expert_2", onnx_attrs = {value = dense<2> : tensor<i64>}} : () -> tensor<i64>
  %e2m = onnx.node "Gather"(%ohT, %e2c) {node_name = "mask_2", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x2xi64>, tensor<i64>) -> tensor<2x2xi64>
  %e2nz = onnx.node "NonZero"(%e2m) {node_name = "where_2", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x?xi64>
  %e2slot = onnx.node "Gather"(%e2nz, %i0) {node_name = "idx_2", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e2tok = onnx.node "Gather"(%e2nz, %i1) {node_name = "top_x_2", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e2rows = onnx.node "Gather"(%hn2, %e2tok) {node_name = "rows_2", onnx_attrs = {axis = 0 : i64}} : (tensor<2x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %e2g = onnx.node "MatMul"(%e2rows, %w1_2) {node_name = "experts.2.w1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e2sg = onnx.node "Sigmoid"(%e2g) {node_name = "experts.2.sigmoid", onnx_attrs = {}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %e2silu = onnx.node "Mul"(%e2g, %e2sg) {node_name = "experts.2.silu", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e2u = onnx.node "MatMul"(%e2rows, %w3_2) {node_name = "experts.2.w3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e2h = onnx.node "Mul"(%e2silu, %e2u) {node_name = "experts.2.gated", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e2d = onnx.node "MatMul"(%e2h, %w2_2) {node_name = "experts.2.w2", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %e2tk = onnx.node "Mul"(%e2tok, %kk) {node_name = "flat_row_2", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %e2fi = onnx.node "Add"(%e2tk, %e2slot) {node_name = "flat_index_2", onnx_attrs = {}} : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %e2gw = onnx.node "Gather"(%gflat, %e2fi) {node_name = "gate_2", onnx_attrs = {axis = 0 : i64}} : (tensor<4x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %e2y = onnx.node "Mul"(%e2d, %e2gw) {node_name = "weighted_2", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %e2tu = onnx.node "Unsqueeze"(%e2tok, %ax1) {node_name = "top_x_col_2", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %e2ti = onnx.node "Expand"(%e2tu, %bshape) {node_name = "scatter_index_2", onnx_attrs = {}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %e2acc = onnx.node "ScatterElements"(%acc, %e2ti, %e2y) {node_name = "index_add_2", onnx_attrs = {axis = 0 : i64, reduction = "add"}} : (tensor<2x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<2x8xf32>
  %e0c = onnx.node "Constant"() {node_name = "expert_0", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %e0m = onnx.node "Gather"(%ohT, %e0c) {node_name = "mask_0", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x2xi64>, tensor<i64>) -> tensor<2x2xi64>
  %e0nz = onnx.node "NonZero"(%e0m) {node_name = "where_0", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x?xi64>
  %e0slot = onnx.node "Gather"(%e0nz, %i0) {node_name = "idx_0", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e0tok = onnx.node "Gather"(%e0nz, %i1) {node_name = "top_x_0", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e0rows = onnx.node "Gather"(%hn2, %e0tok) {node_name = "rows_0", onnx_attrs = {axis = 0 : i64}} : (tensor<2x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %e0g = onnx.node "MatMul"(%e0rows, %w1_0) {node_name = "experts.0.w1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e0sg = onnx.node "Sigmoid"(%e0g) {node_name = "experts.0.sigmoid", onnx_attrs = {}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %e0silu = onnx.node "Mul"(%e0g, %e0sg) {node_name = "experts.0.silu", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e0u = onnx.node "MatMul"(%e0rows, %w3_0) {node_name = "experts.0.w3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e0h = onnx.node "Mul"(%e0silu, %e0u) {node_name = "experts.0.gated", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e0d = onnx.node "MatMul"(%e0h, %w2_0) {node_name = "experts.0.w2", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %e0tk = onnx.node "Mul"(%e0tok, %kk) {node_name = "flat_row_0", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %e0fi = onnx.node "Add"(%e0tk, %e0slot) {node_name = "flat_index_0", onnx_attrs = {}} : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %e0gw = onnx.node "Gather"(%gflat, %e0fi) {node_name = "gate_0", onnx_attrs = {axis = 0 : i64}} : (tensor<4x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %e0y = onnx.node "Mul"(%e0d, %e0gw) {node_name = "weighted_0", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %e0tu = onnx.node "Unsqueeze"(%e0tok, %ax1) {node_name = "top_x_col_0", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %e0ti = onnx.node "Expand"(%e0tu, %bshape) {node_name = "scatter_index_0", onnx_attrs = {}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %e0acc = onnx.node "ScatterElements"(%e2acc, %e0ti, %e0y) {node_name = "index_add_0", onnx_attrs = {axis = 0 : i64, reduction = "add"}} : (tensor<2x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<2x8xf32>
  %e3c = onnx.node "Constant"() {node_name = "expert_3", onnx_attrs = {value = dense<3> : tensor<i64>}} : () -> tensor<i64>
  %e3m = onnx.node "Gather"(%ohT, %e3c) {node_name = "mask_3", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x2xi64>, tensor<i64>) -> tensor<2x2xi64>
  %e3nz = onnx.node "NonZero"(%e3m) {node_name = "where_3", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x?xi64>
  %e3slot = onnx.node "Gather"(%e3nz, %i0) {node_name = "idx_3", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e3tok = onnx.node "Gather"(%e3nz, %i1) {node_name = "top_x_3", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e3rows = onnx.node "Gather"(%hn2, %e3tok) {node_name = "rows_3", onnx_attrs = {axis = 0 : i64}} : (tensor<2x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %e3g = onnx.node "MatMul"(%e3rows, %w1_3) {node_name = "experts.3.w1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e3sg = onnx.node "Sigmoid"(%e3g) {node_name = "experts.3.sigmoid", onnx_attrs = {}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %e3silu = onnx.node "Mul"(%e3g, %e3sg) {node_name = "experts.3.silu", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e3u = onnx.node "MatMul"(%e3rows, %w3_3) {node_name = "experts.3.w3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e3h = onnx.node "Mul"(%e3silu, %e3u) {node_name = "experts.3.gated", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e3d = onnx.node "MatMul"(%e3h, %w2_3) {node_name = "experts.3.w2", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %e3tk = onnx.node "Mul"(%e3tok, %kk) {node_name = "flat_row_3", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %e3fi = onnx.node "Add"(%e3tk, %e3slot) {node_name = "flat_index_3", onnx_attrs = {}} : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %e3gw = onnx.node "Gather"(%gflat, %e3fi) {node_name = "gate_3", onnx_attrs = {axis = 0 : i64}} : (tensor<4x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %e3y = onnx.node "Mul"(%e3d, %e3gw) {node_name = "weighted_3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %e3tu = onnx.node "Unsqueeze"(%e3tok, %ax1) {node_name = "top_x_col_3", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %e3ti = onnx.node "Expand"(%e3tu, %bshape) {node_name = "scatter_index_3", onnx_attrs = {}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %e3acc = onnx.node "ScatterElements"(%e0acc, %e3ti, %e3y) {node_name = "index_add_3", onnx_attrs = {axis = 0 : i64, reduction = "add"}} : (tensor<2x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<2x8xf32>
  %e1c = onnx.node "Constant"() {node_name = "expert_1", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %e1m = onnx.node "Gather"(%ohT, %e1c) {node_name = "mask_1", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x2xi64>, tensor<i64>) -> tensor<2x2xi64>
  %e1nz = onnx.node "NonZero"(%e1m) {node_name = "where_1", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x?xi64>
  %e1slot = onnx.node "Gather"(%e1nz, %i0) {node_name = "idx_1", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e1tok = onnx.node "Gather"(%e1nz, %i1) {node_name = "top_x_1", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e1rows = onnx.node "Gather"(%hn2, %e1tok) {node_name = "rows_1", onnx_attrs = {axis = 0 : i64}} : (tensor<2x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %e1g = onnx.node "MatMul"(%e1rows, %w1_1) {node_name = "experts.1.w1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e1sg = onnx.node "Sigmoid"(%e1g) {node_name = "experts.1.sigmoid", onnx_attrs = {}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %e1silu = onnx.node "Mul"(%e1g, %e1sg) {node_name = "experts.1.silu", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e1u = onnx.node "MatMul"(%e1rows, %w3_1) {node_name = "experts.1.w3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e1h = onnx.node "Mul"(%e1silu, %e1u) {node_name = "experts.1.gated", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e1d = onnx.node "MatMul"(%e1h, %w2_1) {node_name = "experts.1.w2", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %e1tk = onnx.node "Mul"(%e1tok, %kk) {node_name = "flat_row_1", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %e1fi = onnx.node "Add"(%e1tk, %e1slot) {node_name = "flat_index_1", onnx_attrs = {}} : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %e1gw = onnx.node "Gather"(%gflat, %e1fi) {node_name = "gate_1", onnx_attrs = {axis = 0 : i64}} : (tensor<4x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %e1y = onnx.node "Mul"(%e1d, %e1gw) {node_name = "weighted_1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %e1tu = onnx.node "Unsqueeze"(%e1tok, %ax1) {node_name = "top_x_col_1", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %e1ti = onnx.node "Expand"(%e1tu, %bshape) {node_name = "scatter_index_1", onnx_attrs = {}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %e1acc = onnx.node "ScatterElements"(%e3acc, %e1ti, %e1y) {node_name = "index_add_1", onnx_attrs = {axis = 0 : i64, reduction = "add"}} : (tensor<2x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%e1acc, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// one_hot(ids, num_classes = 3) for a router of 4 experts: the tokens routed to expert 3 get an
// all-off row and expert 3's Gather(mask, 3) is out of range. Refused at the OneHot (raised as 4
// experts before).
func.func @experts_loop_depth_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %w1_0 = onnx.weight "experts.0.w1" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w3_0 = onnx.weight "experts.0.w3" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2_0 = onnx.weight "experts.0.w2" {file = "m.onnx", offset = 256 : i64, length = 128 : i64} : tensor<4x8xf32>
  %w1_1 = onnx.weight "experts.1.w1" {file = "m.onnx", offset = 384 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w3_1 = onnx.weight "experts.1.w3" {file = "m.onnx", offset = 512 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2_1 = onnx.weight "experts.1.w2" {file = "m.onnx", offset = 640 : i64, length = 128 : i64} : tensor<4x8xf32>
  %w1_2 = onnx.weight "experts.2.w1" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w3_2 = onnx.weight "experts.2.w3" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2_2 = onnx.weight "experts.2.w2" {file = "m.onnx", offset = 1024 : i64, length = 128 : i64} : tensor<4x8xf32>
  %w1_3 = onnx.weight "experts.3.w1" {file = "m.onnx", offset = 1152 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w3_3 = onnx.weight "experts.3.w3" {file = "m.onnx", offset = 1280 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2_3 = onnx.weight "experts.3.w2" {file = "m.onnx", offset = 1408 : i64, length = 128 : i64} : tensor<4x8xf32>
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 1536 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 2048 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 2080 : i64, length = 128 : i64} : tensor<8x4xf32>
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
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router_logits", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %probs = onnx.node "Softmax"(%logits) {node_name = "router_softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %vals, %ids_k = onnx.node "TopK"(%probs, %k) {node_name = "topk", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %ax = onnx.node "Constant"() {node_name = "sum_axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %sum = onnx.node "ReduceSum"(%vals, %ax) {node_name = "topk_sum", onnx_attrs = {keepdims = 1 : i64}} : (tensor<2x2xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %gates = onnx.node "Div"(%vals, %sum) {node_name = "renorm", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %depth = onnx.node "Constant"() {node_name = "num_classes", onnx_attrs = {value = dense<3> : tensor<i64>}} : () -> tensor<i64>
  %onoff = onnx.node "Constant"() {node_name = "one_hot_values", onnx_attrs = {value = dense<[0, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  // expected-error @+1 {{node 'one_hot' (OneHot): experts: the one-hot expert mask has depth 3, but the router scores 4 experts}}
  %oh = onnx.node "OneHot"(%ids_k, %depth, %onoff) {node_name = "one_hot", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xi64>, tensor<i64>, tensor<2xi64>) -> tensor<2x2x3xi64>
  %ohT = onnx.node "Transpose"(%oh) {node_name = "expert_mask", onnx_attrs = {perm = [2, 1, 0]}} : (tensor<2x2x3xi64>) -> tensor<3x2x2xi64>
  %gshape = onnx.node "Constant"() {node_name = "gates_flat_shape", onnx_attrs = {value = dense<[-1, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %gflat = onnx.node "Reshape"(%gates, %gshape) {node_name = "gates_flat", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2xi64>) -> tensor<4x1xf32>
  %i0 = onnx.node "Constant"() {node_name = "row0", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %i1 = onnx.node "Constant"() {node_name = "row1", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %kk = onnx.node "Constant"() {node_name = "top_k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %ax1 = onnx.node "Constant"() {node_name = "axis1", onnx_attrs = {value = dense<[1]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %bshape = onnx.node "Constant"() {node_name = "row_shape", onnx_attrs = {value = dense<[1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %acc = onnx.node "Constant"() {node_name = "zeros", onnx_attrs = {value = dense<0.0> : tensor<2x8xf32>}} : () -> tensor<2x8xf32>
  %e0c = onnx.node "Constant"() {node_name = "expert_0", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %e0m = onnx.node "Gather"(%ohT, %e0c) {node_name = "mask_0", onnx_attrs = {axis = 0 : i64}} : (tensor<3x2x2xi64>, tensor<i64>) -> tensor<2x2xi64>
  %e0nz = onnx.node "NonZero"(%e0m) {node_name = "where_0", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x?xi64>
  %e0slot = onnx.node "Gather"(%e0nz, %i0) {node_name = "idx_0", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e0tok = onnx.node "Gather"(%e0nz, %i1) {node_name = "top_x_0", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e0rows = onnx.node "Gather"(%hn2, %e0tok) {node_name = "rows_0", onnx_attrs = {axis = 0 : i64}} : (tensor<2x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %e0g = onnx.node "MatMul"(%e0rows, %w1_0) {node_name = "experts.0.w1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e0sg = onnx.node "Sigmoid"(%e0g) {node_name = "experts.0.sigmoid", onnx_attrs = {}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %e0silu = onnx.node "Mul"(%e0g, %e0sg) {node_name = "experts.0.silu", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e0u = onnx.node "MatMul"(%e0rows, %w3_0) {node_name = "experts.0.w3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e0h = onnx.node "Mul"(%e0silu, %e0u) {node_name = "experts.0.gated", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e0d = onnx.node "MatMul"(%e0h, %w2_0) {node_name = "experts.0.w2", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %e0tk = onnx.node "Mul"(%e0tok, %kk) {node_name = "flat_row_0", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %e0fi = onnx.node "Add"(%e0tk, %e0slot) {node_name = "flat_index_0", onnx_attrs = {}} : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %e0gw = onnx.node "Gather"(%gflat, %e0fi) {node_name = "gate_0", onnx_attrs = {axis = 0 : i64}} : (tensor<4x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %e0y = onnx.node "Mul"(%e0d, %e0gw) {node_name = "weighted_0", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %e0tu = onnx.node "Unsqueeze"(%e0tok, %ax1) {node_name = "top_x_col_0", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %e0ti = onnx.node "Expand"(%e0tu, %bshape) {node_name = "scatter_index_0", onnx_attrs = {}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %e0acc = onnx.node "ScatterElements"(%acc, %e0ti, %e0y) {node_name = "index_add_0", onnx_attrs = {axis = 0 : i64, reduction = "add"}} : (tensor<2x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<2x8xf32>
  %e1c = onnx.node "Constant"() {node_name = "expert_1", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %e1m = onnx.node "Gather"(%ohT, %e1c) {node_name = "mask_1", onnx_attrs = {axis = 0 : i64}} : (tensor<3x2x2xi64>, tensor<i64>) -> tensor<2x2xi64>
  %e1nz = onnx.node "NonZero"(%e1m) {node_name = "where_1", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x?xi64>
  %e1slot = onnx.node "Gather"(%e1nz, %i0) {node_name = "idx_1", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e1tok = onnx.node "Gather"(%e1nz, %i1) {node_name = "top_x_1", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e1rows = onnx.node "Gather"(%hn2, %e1tok) {node_name = "rows_1", onnx_attrs = {axis = 0 : i64}} : (tensor<2x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %e1g = onnx.node "MatMul"(%e1rows, %w1_1) {node_name = "experts.1.w1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e1sg = onnx.node "Sigmoid"(%e1g) {node_name = "experts.1.sigmoid", onnx_attrs = {}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %e1silu = onnx.node "Mul"(%e1g, %e1sg) {node_name = "experts.1.silu", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e1u = onnx.node "MatMul"(%e1rows, %w3_1) {node_name = "experts.1.w3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e1h = onnx.node "Mul"(%e1silu, %e1u) {node_name = "experts.1.gated", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e1d = onnx.node "MatMul"(%e1h, %w2_1) {node_name = "experts.1.w2", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %e1tk = onnx.node "Mul"(%e1tok, %kk) {node_name = "flat_row_1", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %e1fi = onnx.node "Add"(%e1tk, %e1slot) {node_name = "flat_index_1", onnx_attrs = {}} : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %e1gw = onnx.node "Gather"(%gflat, %e1fi) {node_name = "gate_1", onnx_attrs = {axis = 0 : i64}} : (tensor<4x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %e1y = onnx.node "Mul"(%e1d, %e1gw) {node_name = "weighted_1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %e1tu = onnx.node "Unsqueeze"(%e1tok, %ax1) {node_name = "top_x_col_1", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %e1ti = onnx.node "Expand"(%e1tu, %bshape) {node_name = "scatter_index_1", onnx_attrs = {}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %e1acc = onnx.node "ScatterElements"(%e0acc, %e1ti, %e1y) {node_name = "index_add_1", onnx_attrs = {axis = 0 : i64, reduction = "add"}} : (tensor<2x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<2x8xf32>
  %e2c = onnx.node "Constant"() {node_name = "expert_2", onnx_attrs = {value = dense<2> : tensor<i64>}} : () -> tensor<i64>
  %e2m = onnx.node "Gather"(%ohT, %e2c) {node_name = "mask_2", onnx_attrs = {axis = 0 : i64}} : (tensor<3x2x2xi64>, tensor<i64>) -> tensor<2x2xi64>
  %e2nz = onnx.node "NonZero"(%e2m) {node_name = "where_2", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x?xi64>
  %e2slot = onnx.node "Gather"(%e2nz, %i0) {node_name = "idx_2", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e2tok = onnx.node "Gather"(%e2nz, %i1) {node_name = "top_x_2", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e2rows = onnx.node "Gather"(%hn2, %e2tok) {node_name = "rows_2", onnx_attrs = {axis = 0 : i64}} : (tensor<2x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %e2g = onnx.node "MatMul"(%e2rows, %w1_2) {node_name = "experts.2.w1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e2sg = onnx.node "Sigmoid"(%e2g) {node_name = "experts.2.sigmoid", onnx_attrs = {}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %e2silu = onnx.node "Mul"(%e2g, %e2sg) {node_name = "experts.2.silu", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e2u = onnx.node "MatMul"(%e2rows, %w3_2) {node_name = "experts.2.w3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e2h = onnx.node "Mul"(%e2silu, %e2u) {node_name = "experts.2.gated", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e2d = onnx.node "MatMul"(%e2h, %w2_2) {node_name = "experts.2.w2", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %e2tk = onnx.node "Mul"(%e2tok, %kk) {node_name = "flat_row_2", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %e2fi = onnx.node "Add"(%e2tk, %e2slot) {node_name = "flat_index_2", onnx_attrs = {}} : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %e2gw = onnx.node "Gather"(%gflat, %e2fi) {node_name = "gate_2", onnx_attrs = {axis = 0 : i64}} : (tensor<4x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %e2y = onnx.node "Mul"(%e2d, %e2gw) {node_name = "weighted_2", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %e2tu = onnx.node "Unsqueeze"(%e2tok, %ax1) {node_name = "top_x_col_2", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %e2ti = onnx.node "Expand"(%e2tu, %bshape) {node_name = "scatter_index_2", onnx_attrs = {}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %e2acc = onnx.node "ScatterElements"(%e1acc, %e2ti, %e2y) {node_name = "index_add_2", onnx_attrs = {axis = 0 : i64, reduction = "add"}} : (tensor<2x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<2x8xf32>
  %e3c = onnx.node "Constant"() {node_name = "expert_3", onnx_attrs = {value = dense<3> : tensor<i64>}} : () -> tensor<i64>
  %e3m = onnx.node "Gather"(%ohT, %e3c) {node_name = "mask_3", onnx_attrs = {axis = 0 : i64}} : (tensor<3x2x2xi64>, tensor<i64>) -> tensor<2x2xi64>
  %e3nz = onnx.node "NonZero"(%e3m) {node_name = "where_3", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x?xi64>
  %e3slot = onnx.node "Gather"(%e3nz, %i0) {node_name = "idx_3", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e3tok = onnx.node "Gather"(%e3nz, %i1) {node_name = "top_x_3", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e3rows = onnx.node "Gather"(%hn2, %e3tok) {node_name = "rows_3", onnx_attrs = {axis = 0 : i64}} : (tensor<2x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %e3g = onnx.node "MatMul"(%e3rows, %w1_3) {node_name = "experts.3.w1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e3sg = onnx.node "Sigmoid"(%e3g) {node_name = "experts.3.sigmoid", onnx_attrs = {}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %e3silu = onnx.node "Mul"(%e3g, %e3sg) {node_name = "experts.3.silu", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e3u = onnx.node "MatMul"(%e3rows, %w3_3) {node_name = "experts.3.w3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e3h = onnx.node "Mul"(%e3silu, %e3u) {node_name = "experts.3.gated", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e3d = onnx.node "MatMul"(%e3h, %w2_3) {node_name = "experts.3.w2", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %e3tk = onnx.node "Mul"(%e3tok, %kk) {node_name = "flat_row_3", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %e3fi = onnx.node "Add"(%e3tk, %e3slot) {node_name = "flat_index_3", onnx_attrs = {}} : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %e3gw = onnx.node "Gather"(%gflat, %e3fi) {node_name = "gate_3", onnx_attrs = {axis = 0 : i64}} : (tensor<4x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %e3y = onnx.node "Mul"(%e3d, %e3gw) {node_name = "weighted_3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %e3tu = onnx.node "Unsqueeze"(%e3tok, %ax1) {node_name = "top_x_col_3", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %e3ti = onnx.node "Expand"(%e3tu, %bshape) {node_name = "scatter_index_3", onnx_attrs = {}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %e3acc = onnx.node "ScatterElements"(%e2acc, %e3ti, %e3y) {node_name = "index_add_3", onnx_attrs = {axis = 0 : i64, reduction = "add"}} : (tensor<2x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%e3acc, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// A loop over the experts the example input hit (tracing froze it; here 0..2 of 4): refused at
// the router, naming the missing expert.
func.func @experts_loop_frozen_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %w1_0 = onnx.weight "experts.0.w1" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w3_0 = onnx.weight "experts.0.w3" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2_0 = onnx.weight "experts.0.w2" {file = "m.onnx", offset = 256 : i64, length = 128 : i64} : tensor<4x8xf32>
  %w1_1 = onnx.weight "experts.1.w1" {file = "m.onnx", offset = 384 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w3_1 = onnx.weight "experts.1.w3" {file = "m.onnx", offset = 512 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2_1 = onnx.weight "experts.1.w2" {file = "m.onnx", offset = 640 : i64, length = 128 : i64} : tensor<4x8xf32>
  %w1_2 = onnx.weight "experts.2.w1" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w3_2 = onnx.weight "experts.2.w3" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2_2 = onnx.weight "experts.2.w2" {file = "m.onnx", offset = 1024 : i64, length = 128 : i64} : tensor<4x8xf32>
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 1152 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 1664 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 1696 : i64, length = 128 : i64} : tensor<8x4xf32>
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
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router_logits", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  // expected-error @+2 {{node 'topk' (TopK): experts: no SwiGLU expert found for expert id 3 of 4}}
  %probs = onnx.node "Softmax"(%logits) {node_name = "router_softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %vals, %ids_k = onnx.node "TopK"(%probs, %k) {node_name = "topk", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %ax = onnx.node "Constant"() {node_name = "sum_axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %sum = onnx.node "ReduceSum"(%vals, %ax) {node_name = "topk_sum", onnx_attrs = {keepdims = 1 : i64}} : (tensor<2x2xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %gates = onnx.node "Div"(%vals, %sum) {node_name = "renorm", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %depth = onnx.node "Constant"() {node_name = "num_classes", onnx_attrs = {value = dense<4> : tensor<i64>}} : () -> tensor<i64>
  %onoff = onnx.node "Constant"() {node_name = "one_hot_values", onnx_attrs = {value = dense<[0, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %oh = onnx.node "OneHot"(%ids_k, %depth, %onoff) {node_name = "one_hot", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xi64>, tensor<i64>, tensor<2xi64>) -> tensor<2x2x4xi64>
  %ohT = onnx.node "Transpose"(%oh) {node_name = "expert_mask", onnx_attrs = {perm = [2, 1, 0]}} : (tensor<2x2x4xi64>) -> tensor<4x2x2xi64>
  %gshape = onnx.node "Constant"() {node_name = "gates_flat_shape", onnx_attrs = {value = dense<[-1, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %gflat = onnx.node "Reshape"(%gates, %gshape) {node_name = "gates_flat", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2xi64>) -> tensor<4x1xf32>
  %i0 = onnx.node "Constant"() {node_name = "row0", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %i1 = onnx.node "Constant"() {node_name = "row1", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %kk = onnx.node "Constant"() {node_name = "top_k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %ax1 = onnx.node "Constant"() {node_name = "axis1", onnx_attrs = {value = dense<[1]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %bshape = onnx.node "Constant"() {node_name = "row_shape", onnx_attrs = {value = dense<[1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %acc = onnx.node "Constant"() {node_name = "zeros", onnx_attrs = {value = dense<0.0> : tensor<2x8xf32>}} : () -> tensor<2x8xf32>
  %e0c = onnx.node "Constant"() {node_name = "expert_0", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %e0m = onnx.node "Gather"(%ohT, %e0c) {node_name = "mask_0", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x2xi64>, tensor<i64>) -> tensor<2x2xi64>
  %e0nz = onnx.node "NonZero"(%e0m) {node_name = "where_0", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x?xi64>
  %e0slot = onnx.node "Gather"(%e0nz, %i0) {node_name = "idx_0", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e0tok = onnx.node "Gather"(%e0nz, %i1) {node_name = "top_x_0", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e0rows = onnx.node "Gather"(%hn2, %e0tok) {node_name = "rows_0", onnx_attrs = {axis = 0 : i64}} : (tensor<2x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %e0g = onnx.node "MatMul"(%e0rows, %w1_0) {node_name = "experts.0.w1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e0sg = onnx.node "Sigmoid"(%e0g) {node_name = "experts.0.sigmoid", onnx_attrs = {}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %e0silu = onnx.node "Mul"(%e0g, %e0sg) {node_name = "experts.0.silu", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e0u = onnx.node "MatMul"(%e0rows, %w3_0) {node_name = "experts.0.w3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e0h = onnx.node "Mul"(%e0silu, %e0u) {node_name = "experts.0.gated", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e0d = onnx.node "MatMul"(%e0h, %w2_0) {node_name = "experts.0.w2", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %e0tk = onnx.node "Mul"(%e0tok, %kk) {node_name = "flat_row_0", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %e0fi = onnx.node "Add"(%e0tk, %e0slot) {node_name = "flat_index_0", onnx_attrs = {}} : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %e0gw = onnx.node "Gather"(%gflat, %e0fi) {node_name = "gate_0", onnx_attrs = {axis = 0 : i64}} : (tensor<4x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %e0y = onnx.node "Mul"(%e0d, %e0gw) {node_name = "weighted_0", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %e0tu = onnx.node "Unsqueeze"(%e0tok, %ax1) {node_name = "top_x_col_0", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %e0ti = onnx.node "Expand"(%e0tu, %bshape) {node_name = "scatter_index_0", onnx_attrs = {}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %e0acc = onnx.node "ScatterElements"(%acc, %e0ti, %e0y) {node_name = "index_add_0", onnx_attrs = {axis = 0 : i64, reduction = "add"}} : (tensor<2x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<2x8xf32>
  %e1c = onnx.node "Constant"() {node_name = "expert_1", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %e1m = onnx.node "Gather"(%ohT, %e1c) {node_name = "mask_1", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x2xi64>, tensor<i64>) -> tensor<2x2xi64>
  %e1nz = onnx.node "NonZero"(%e1m) {node_name = "where_1", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x?xi64>
  %e1slot = onnx.node "Gather"(%e1nz, %i0) {node_name = "idx_1", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e1tok = onnx.node "Gather"(%e1nz, %i1) {node_name = "top_x_1", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e1rows = onnx.node "Gather"(%hn2, %e1tok) {node_name = "rows_1", onnx_attrs = {axis = 0 : i64}} : (tensor<2x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %e1g = onnx.node "MatMul"(%e1rows, %w1_1) {node_name = "experts.1.w1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e1sg = onnx.node "Sigmoid"(%e1g) {node_name = "experts.1.sigmoid", onnx_attrs = {}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %e1silu = onnx.node "Mul"(%e1g, %e1sg) {node_name = "experts.1.silu", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e1u = onnx.node "MatMul"(%e1rows, %w3_1) {node_name = "experts.1.w3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e1h = onnx.node "Mul"(%e1silu, %e1u) {node_name = "experts.1.gated", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e1d = onnx.node "MatMul"(%e1h, %w2_1) {node_name = "experts.1.w2", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %e1tk = onnx.node "Mul"(%e1tok, %kk) {node_name = "flat_row_1", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %e1fi = onnx.node "Add"(%e1tk, %e1slot) {node_name = "flat_index_1", onnx_attrs = {}} : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %e1gw = onnx.node "Gather"(%gflat, %e1fi) {node_name = "gate_1", onnx_attrs = {axis = 0 : i64}} : (tensor<4x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %e1y = onnx.node "Mul"(%e1d, %e1gw) {node_name = "weighted_1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %e1tu = onnx.node "Unsqueeze"(%e1tok, %ax1) {node_name = "top_x_col_1", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %e1ti = onnx.node "Expand"(%e1tu, %bshape) {node_name = "scatter_index_1", onnx_attrs = {}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %e1acc = onnx.node "ScatterElements"(%e0acc, %e1ti, %e1y) {node_name = "index_add_1", onnx_attrs = {axis = 0 : i64, reduction = "add"}} : (tensor<2x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<2x8xf32>
  %e2c = onnx.node "Constant"() {node_name = "expert_2", onnx_attrs = {value = dense<2> : tensor<i64>}} : () -> tensor<i64>
  %e2m = onnx.node "Gather"(%ohT, %e2c) {node_name = "mask_2", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x2xi64>, tensor<i64>) -> tensor<2x2xi64>
  %e2nz = onnx.node "NonZero"(%e2m) {node_name = "where_2", onnx_attrs = {}} : (tensor<2x2xi64>) -> tensor<2x?xi64>
  %e2slot = onnx.node "Gather"(%e2nz, %i0) {node_name = "idx_2", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e2tok = onnx.node "Gather"(%e2nz, %i1) {node_name = "top_x_2", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e2rows = onnx.node "Gather"(%hn2, %e2tok) {node_name = "rows_2", onnx_attrs = {axis = 0 : i64}} : (tensor<2x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %e2g = onnx.node "MatMul"(%e2rows, %w1_2) {node_name = "experts.2.w1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e2sg = onnx.node "Sigmoid"(%e2g) {node_name = "experts.2.sigmoid", onnx_attrs = {}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %e2silu = onnx.node "Mul"(%e2g, %e2sg) {node_name = "experts.2.silu", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e2u = onnx.node "MatMul"(%e2rows, %w3_2) {node_name = "experts.2.w3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e2h = onnx.node "Mul"(%e2silu, %e2u) {node_name = "experts.2.gated", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e2d = onnx.node "MatMul"(%e2h, %w2_2) {node_name = "experts.2.w2", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %e2tk = onnx.node "Mul"(%e2tok, %kk) {node_name = "flat_row_2", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %e2fi = onnx.node "Add"(%e2tk, %e2slot) {node_name = "flat_index_2", onnx_attrs = {}} : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %e2gw = onnx.node "Gather"(%gflat, %e2fi) {node_name = "gate_2", onnx_attrs = {axis = 0 : i64}} : (tensor<4x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %e2y = onnx.node "Mul"(%e2d, %e2gw) {node_name = "weighted_2", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %e2tu = onnx.node "Unsqueeze"(%e2tok, %ax1) {node_name = "top_x_col_2", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %e2ti = onnx.node "Expand"(%e2tu, %bshape) {node_name = "scatter_index_2", onnx_attrs = {}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %e2acc = onnx.node "ScatterElements"(%e1acc, %e2ti, %e2y) {node_name = "index_add_2", onnx_attrs = {axis = 0 : i64, reduction = "add"}} : (tensor<2x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%e2acc, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// The mask without the permute: Gather(one_hot(ids) [T, k, E], e) selects token e's row, not
// expert e's tokens (with 4 tokens the graph is valid). Refused at the first such Gather (raised
// as the loop over experts before).
func.func @experts_loop_token_axis_refused(%ids: tensor<1x4xi64>) -> tensor<1x4x8xf32> {
  %w1_0 = onnx.weight "experts.0.w1" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w3_0 = onnx.weight "experts.0.w3" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2_0 = onnx.weight "experts.0.w2" {file = "m.onnx", offset = 256 : i64, length = 128 : i64} : tensor<4x8xf32>
  %w1_1 = onnx.weight "experts.1.w1" {file = "m.onnx", offset = 384 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w3_1 = onnx.weight "experts.1.w3" {file = "m.onnx", offset = 512 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2_1 = onnx.weight "experts.1.w2" {file = "m.onnx", offset = 640 : i64, length = 128 : i64} : tensor<4x8xf32>
  %w1_2 = onnx.weight "experts.2.w1" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w3_2 = onnx.weight "experts.2.w3" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2_2 = onnx.weight "experts.2.w2" {file = "m.onnx", offset = 1024 : i64, length = 128 : i64} : tensor<4x8xf32>
  %w1_3 = onnx.weight "experts.3.w1" {file = "m.onnx", offset = 1152 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w3_3 = onnx.weight "experts.3.w3" {file = "m.onnx", offset = 1280 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w2_3 = onnx.weight "experts.3.w2" {file = "m.onnx", offset = 1408 : i64, length = 128 : i64} : tensor<4x8xf32>
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 1536 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 2048 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 2080 : i64, length = 128 : i64} : tensor<8x4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %ffn_norm_two = onnx.node "Constant"() {node_name = "ffn_norm_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_sq = onnx.node "Pow"(%x, %ffn_norm_two) {node_name = "ffn_norm_pow", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<f32>) -> tensor<1x4x8xf32>
  %ffn_norm_m = onnx.node "ReduceMean"(%ffn_norm_sq) {node_name = "ffn_norm_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %ffn_norm_eps = onnx.node "Constant"() {node_name = "ffn_norm_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_a = onnx.node "Add"(%ffn_norm_m, %ffn_norm_eps) {node_name = "ffn_norm_add", onnx_attrs = {}} : (tensor<1x4x1xf32>, tensor<f32>) -> tensor<1x4x1xf32>
  %ffn_norm_s = onnx.node "Sqrt"(%ffn_norm_a) {node_name = "ffn_norm_sqrt", onnx_attrs = {}} : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %ffn_norm_d = onnx.node "Div"(%x, %ffn_norm_s) {node_name = "ffn_norm_scaled", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<1x4x1xf32>) -> tensor<1x4x8xf32>
  %ffn_norm_n = onnx.node "Mul"(%ffn_norm_d, %nw) {node_name = "ffn_norm_weighted", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %flat = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %hn2 = onnx.node "Reshape"(%ffn_norm_n, %flat) {node_name = "tokens", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<2xi64>) -> tensor<4x8xf32>
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router_logits", onnx_attrs = {}} : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %probs = onnx.node "Softmax"(%logits) {node_name = "router_softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %vals, %ids_k = onnx.node "TopK"(%probs, %k) {node_name = "topk", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<4x4xf32>, tensor<1xi64>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
  %ax = onnx.node "Constant"() {node_name = "sum_axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %sum = onnx.node "ReduceSum"(%vals, %ax) {node_name = "topk_sum", onnx_attrs = {keepdims = 1 : i64}} : (tensor<4x2xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %gates = onnx.node "Div"(%vals, %sum) {node_name = "renorm", onnx_attrs = {}} : (tensor<4x2xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  %depth = onnx.node "Constant"() {node_name = "num_classes", onnx_attrs = {value = dense<4> : tensor<i64>}} : () -> tensor<i64>
  %onoff = onnx.node "Constant"() {node_name = "one_hot_values", onnx_attrs = {value = dense<[0, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %oh = onnx.node "OneHot"(%ids_k, %depth, %onoff) {node_name = "one_hot", onnx_attrs = {axis = -1 : i64}} : (tensor<4x2xi64>, tensor<i64>, tensor<2xi64>) -> tensor<4x2x4xi64>
  %gshape = onnx.node "Constant"() {node_name = "gates_flat_shape", onnx_attrs = {value = dense<[-1, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %gflat = onnx.node "Reshape"(%gates, %gshape) {node_name = "gates_flat", onnx_attrs = {}} : (tensor<4x2xf32>, tensor<2xi64>) -> tensor<8x1xf32>
  %i0 = onnx.node "Constant"() {node_name = "row0", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %i1 = onnx.node "Constant"() {node_name = "row1", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %kk = onnx.node "Constant"() {node_name = "top_k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %ax1 = onnx.node "Constant"() {node_name = "axis1", onnx_attrs = {value = dense<[1]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %bshape = onnx.node "Constant"() {node_name = "row_shape", onnx_attrs = {value = dense<[1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %acc = onnx.node "Constant"() {node_name = "zeros", onnx_attrs = {value = dense<0.0> : tensor<4x8xf32>}} : () -> tensor<4x8xf32>
  %e0c = onnx.node "Constant"() {node_name = "expert_0", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  // expected-error @+1 {{node 'mask_0' (Gather): experts: Gather(mask, e) reads axis 0 of the one-hot expert mask, not its experts axis 2: it selects one token's routing, not expert e's tokens}}
  %e0m = onnx.node "Gather"(%oh, %e0c) {node_name = "mask_0", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x4xi64>, tensor<i64>) -> tensor<2x4xi64>
  %e0nz = onnx.node "NonZero"(%e0m) {node_name = "where_0", onnx_attrs = {}} : (tensor<2x4xi64>) -> tensor<2x?xi64>
  %e0slot = onnx.node "Gather"(%e0nz, %i0) {node_name = "idx_0", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e0tok = onnx.node "Gather"(%e0nz, %i1) {node_name = "top_x_0", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e0rows = onnx.node "Gather"(%hn2, %e0tok) {node_name = "rows_0", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %e0g = onnx.node "MatMul"(%e0rows, %w1_0) {node_name = "experts.0.w1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e0sg = onnx.node "Sigmoid"(%e0g) {node_name = "experts.0.sigmoid", onnx_attrs = {}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %e0silu = onnx.node "Mul"(%e0g, %e0sg) {node_name = "experts.0.silu", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e0u = onnx.node "MatMul"(%e0rows, %w3_0) {node_name = "experts.0.w3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e0h = onnx.node "Mul"(%e0silu, %e0u) {node_name = "experts.0.gated", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e0d = onnx.node "MatMul"(%e0h, %w2_0) {node_name = "experts.0.w2", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %e0tk = onnx.node "Mul"(%e0tok, %kk) {node_name = "flat_row_0", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %e0fi = onnx.node "Add"(%e0tk, %e0slot) {node_name = "flat_index_0", onnx_attrs = {}} : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %e0gw = onnx.node "Gather"(%gflat, %e0fi) {node_name = "gate_0", onnx_attrs = {axis = 0 : i64}} : (tensor<8x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %e0y = onnx.node "Mul"(%e0d, %e0gw) {node_name = "weighted_0", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %e0tu = onnx.node "Unsqueeze"(%e0tok, %ax1) {node_name = "top_x_col_0", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %e0ti = onnx.node "Expand"(%e0tu, %bshape) {node_name = "scatter_index_0", onnx_attrs = {}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %e0acc = onnx.node "ScatterElements"(%acc, %e0ti, %e0y) {node_name = "index_add_0", onnx_attrs = {axis = 0 : i64, reduction = "add"}} : (tensor<4x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<4x8xf32>
  %e1c = onnx.node "Constant"() {node_name = "expert_1", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %e1m = onnx.node "Gather"(%oh, %e1c) {node_name = "mask_1", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x4xi64>, tensor<i64>) -> tensor<2x4xi64>
  %e1nz = onnx.node "NonZero"(%e1m) {node_name = "where_1", onnx_attrs = {}} : (tensor<2x4xi64>) -> tensor<2x?xi64>
  %e1slot = onnx.node "Gather"(%e1nz, %i0) {node_name = "idx_1", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e1tok = onnx.node "Gather"(%e1nz, %i1) {node_name = "top_x_1", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e1rows = onnx.node "Gather"(%hn2, %e1tok) {node_name = "rows_1", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %e1g = onnx.node "MatMul"(%e1rows, %w1_1) {node_name = "experts.1.w1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e1sg = onnx.node "Sigmoid"(%e1g) {node_name = "experts.1.sigmoid", onnx_attrs = {}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %e1silu = onnx.node "Mul"(%e1g, %e1sg) {node_name = "experts.1.silu", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e1u = onnx.node "MatMul"(%e1rows, %w3_1) {node_name = "experts.1.w3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e1h = onnx.node "Mul"(%e1silu, %e1u) {node_name = "experts.1.gated", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e1d = onnx.node "MatMul"(%e1h, %w2_1) {node_name = "experts.1.w2", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %e1tk = onnx.node "Mul"(%e1tok, %kk) {node_name = "flat_row_1", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %e1fi = onnx.node "Add"(%e1tk, %e1slot) {node_name = "flat_index_1", onnx_attrs = {}} : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %e1gw = onnx.node "Gather"(%gflat, %e1fi) {node_name = "gate_1", onnx_attrs = {axis = 0 : i64}} : (tensor<8x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %e1y = onnx.node "Mul"(%e1d, %e1gw) {node_name = "weighted_1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %e1tu = onnx.node "Unsqueeze"(%e1tok, %ax1) {node_name = "top_x_col_1", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %e1ti = onnx.node "Expand"(%e1tu, %bshape) {node_name = "scatter_index_1", onnx_attrs = {}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %e1acc = onnx.node "ScatterElements"(%e0acc, %e1ti, %e1y) {node_name = "index_add_1", onnx_attrs = {axis = 0 : i64, reduction = "add"}} : (tensor<4x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<4x8xf32>
  %e2c = onnx.node "Constant"() {node_name = "expert_2", onnx_attrs = {value = dense<2> : tensor<i64>}} : () -> tensor<i64>
  %e2m = onnx.node "Gather"(%oh, %e2c) {node_name = "mask_2", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x4xi64>, tensor<i64>) -> tensor<2x4xi64>
  %e2nz = onnx.node "NonZero"(%e2m) {node_name = "where_2", onnx_attrs = {}} : (tensor<2x4xi64>) -> tensor<2x?xi64>
  %e2slot = onnx.node "Gather"(%e2nz, %i0) {node_name = "idx_2", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e2tok = onnx.node "Gather"(%e2nz, %i1) {node_name = "top_x_2", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e2rows = onnx.node "Gather"(%hn2, %e2tok) {node_name = "rows_2", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %e2g = onnx.node "MatMul"(%e2rows, %w1_2) {node_name = "experts.2.w1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e2sg = onnx.node "Sigmoid"(%e2g) {node_name = "experts.2.sigmoid", onnx_attrs = {}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %e2silu = onnx.node "Mul"(%e2g, %e2sg) {node_name = "experts.2.silu", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e2u = onnx.node "MatMul"(%e2rows, %w3_2) {node_name = "experts.2.w3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e2h = onnx.node "Mul"(%e2silu, %e2u) {node_name = "experts.2.gated", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e2d = onnx.node "MatMul"(%e2h, %w2_2) {node_name = "experts.2.w2", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %e2tk = onnx.node "Mul"(%e2tok, %kk) {node_name = "flat_row_2", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %e2fi = onnx.node "Add"(%e2tk, %e2slot) {node_name = "flat_index_2", onnx_attrs = {}} : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %e2gw = onnx.node "Gather"(%gflat, %e2fi) {node_name = "gate_2", onnx_attrs = {axis = 0 : i64}} : (tensor<8x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %e2y = onnx.node "Mul"(%e2d, %e2gw) {node_name = "weighted_2", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %e2tu = onnx.node "Unsqueeze"(%e2tok, %ax1) {node_name = "top_x_col_2", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %e2ti = onnx.node "Expand"(%e2tu, %bshape) {node_name = "scatter_index_2", onnx_attrs = {}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %e2acc = onnx.node "ScatterElements"(%e1acc, %e2ti, %e2y) {node_name = "index_add_2", onnx_attrs = {axis = 0 : i64, reduction = "add"}} : (tensor<4x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<4x8xf32>
  %e3c = onnx.node "Constant"() {node_name = "expert_3", onnx_attrs = {value = dense<3> : tensor<i64>}} : () -> tensor<i64>
  %e3m = onnx.node "Gather"(%oh, %e3c) {node_name = "mask_3", onnx_attrs = {axis = 0 : i64}} : (tensor<4x2x4xi64>, tensor<i64>) -> tensor<2x4xi64>
  %e3nz = onnx.node "NonZero"(%e3m) {node_name = "where_3", onnx_attrs = {}} : (tensor<2x4xi64>) -> tensor<2x?xi64>
  %e3slot = onnx.node "Gather"(%e3nz, %i0) {node_name = "idx_3", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e3tok = onnx.node "Gather"(%e3nz, %i1) {node_name = "top_x_3", onnx_attrs = {axis = 0 : i64}} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %e3rows = onnx.node "Gather"(%hn2, %e3tok) {node_name = "rows_3", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %e3g = onnx.node "MatMul"(%e3rows, %w1_3) {node_name = "experts.3.w1", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e3sg = onnx.node "Sigmoid"(%e3g) {node_name = "experts.3.sigmoid", onnx_attrs = {}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %e3silu = onnx.node "Mul"(%e3g, %e3sg) {node_name = "experts.3.silu", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e3u = onnx.node "MatMul"(%e3rows, %w3_3) {node_name = "experts.3.w3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %e3h = onnx.node "Mul"(%e3silu, %e3u) {node_name = "experts.3.gated", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e3d = onnx.node "MatMul"(%e3h, %w2_3) {node_name = "experts.3.w2", onnx_attrs = {}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %e3tk = onnx.node "Mul"(%e3tok, %kk) {node_name = "flat_row_3", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %e3fi = onnx.node "Add"(%e3tk, %e3slot) {node_name = "flat_index_3", onnx_attrs = {}} : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %e3gw = onnx.node "Gather"(%gflat, %e3fi) {node_name = "gate_3", onnx_attrs = {axis = 0 : i64}} : (tensor<8x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %e3y = onnx.node "Mul"(%e3d, %e3gw) {node_name = "weighted_3", onnx_attrs = {}} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %e3tu = onnx.node "Unsqueeze"(%e3tok, %ax1) {node_name = "top_x_col_3", onnx_attrs = {}} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %e3ti = onnx.node "Expand"(%e3tu, %bshape) {node_name = "scatter_index_3", onnx_attrs = {}} : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %e3acc = onnx.node "ScatterElements"(%e2acc, %e3ti, %e3y) {node_name = "index_add_3", onnx_attrs = {axis = 0 : i64, reduction = "add"}} : (tensor<4x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<4x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 4, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%e3acc, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<1x4x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}

// -----

// ExpertsDenseMaskedPattern: every expert on every token with stacked weights gate/up [4, 8, 4]
// and down [4, 4, 8] (transformers' batched inference path), weighted by the dense score matrix
// ScatterElements(zeros, ids, gates) and summed over the experts; each expert a slice
// "<stacked>[e]" of the stacked weight, at offset + e * 128 bytes.
// CHECK-LABEL: func.func @experts_dense_masked
// CHECK-DAG:   %[[G0:.*]] = onnx.weight "experts.gate_proj[0]" {file = "m.onnx", length = 128 : i64, offset = 0 : i64} : tensor<8x4xf32>
// CHECK-DAG:   %[[G1:.*]] = onnx.weight "experts.gate_proj[1]" {file = "m.onnx", length = 128 : i64, offset = 128 : i64} : tensor<8x4xf32>
// CHECK-DAG:   %[[G2:.*]] = onnx.weight "experts.gate_proj[2]" {file = "m.onnx", length = 128 : i64, offset = 256 : i64} : tensor<8x4xf32>
// CHECK-DAG:   %[[G3:.*]] = onnx.weight "experts.gate_proj[3]" {file = "m.onnx", length = 128 : i64, offset = 384 : i64} : tensor<8x4xf32>
// CHECK-DAG:   %[[D3:.*]] = onnx.weight "experts.down_proj[3]" {{.*}} : tensor<4x8xf32>
// CHECK:       %ids, %gates = moe.router
// CHECK-NEXT:  %[[X:.*]] = moe.experts %{{.*}}, %ids, %gates w1(%[[G0]], %[[G1]], %[[G2]], %[[G3]]) w3(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) w2(%{{.*}}, %{{.*}}, %{{.*}}, %[[D3]]) {expert_hidden = 4 : i64, layer = -1 : i64, num_experts = 4 : i64}
// CHECK-NOT:   onnx.node "Tile"
// CHECK-NOT:   onnx.node "ScatterElements"
func.func @experts_dense_masked(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %w1 = onnx.weight "experts.gate_proj" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %w3 = onnx.weight "experts.up_proj" {file = "m.onnx", offset = 512 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %w2 = onnx.weight "experts.down_proj" {file = "m.onnx", offset = 1024 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 1536 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 2048 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 2080 : i64, length = 128 : i64} : tensor<8x4xf32>
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
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router_logits", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %probs = onnx.node "Softmax"(%logits) {node_name = "router_softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %vals, %ids_k = onnx.node "TopK"(%probs, %k) {node_name = "topk", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %ax = onnx.node "Constant"() {node_name = "sum_axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %sum = onnx.node "ReduceSum"(%vals, %ax) {node_name = "topk_sum", onnx_attrs = {keepdims = 1 : i64}} : (tensor<2x2xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %gates = onnx.node "Div"(%vals, %sum) {node_name = "renorm", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %z = onnx.node "Constant"() {node_name = "zeros", onnx_attrs = {value = dense<0.0> : tensor<2x4xf32>}} : () -> tensor<2x4xf32>
  %scores = onnx.node "ScatterElements"(%z, %ids_k, %gates) {node_name = "dense_scores", onnx_attrs = {axis = 1 : i64}} : (tensor<2x4xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %rep = onnx.node "Constant"() {node_name = "repeats", onnx_attrs = {value = dense<[4, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %tile = onnx.node "Tile"(%hn2, %rep) {node_name = "tile", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<8x8xf32>
  %s3 = onnx.node "Constant"() {node_name = "stack_shape", onnx_attrs = {value = dense<[4, -1, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %xs = onnx.node "Reshape"(%tile, %s3) {node_name = "per_expert", onnx_attrs = {}} : (tensor<8x8xf32>, tensor<3xi64>) -> tensor<4x2x8xf32>
  %g = onnx.node "MatMul"(%xs, %w1) {node_name = "gate_proj", onnx_attrs = {}} : (tensor<4x2x8xf32>, tensor<4x8x4xf32>) -> tensor<4x2x4xf32>
  %sg = onnx.node "Sigmoid"(%g) {node_name = "sigmoid", onnx_attrs = {}} : (tensor<4x2x4xf32>) -> tensor<4x2x4xf32>
  %silu = onnx.node "Mul"(%g, %sg) {node_name = "silu", onnx_attrs = {}} : (tensor<4x2x4xf32>, tensor<4x2x4xf32>) -> tensor<4x2x4xf32>
  %u = onnx.node "MatMul"(%xs, %w3) {node_name = "up_proj", onnx_attrs = {}} : (tensor<4x2x8xf32>, tensor<4x8x4xf32>) -> tensor<4x2x4xf32>
  %h = onnx.node "Mul"(%silu, %u) {node_name = "gated", onnx_attrs = {}} : (tensor<4x2x4xf32>, tensor<4x2x4xf32>) -> tensor<4x2x4xf32>
  %d = onnx.node "MatMul"(%h, %w2) {node_name = "down_proj", onnx_attrs = {}} : (tensor<4x2x4xf32>, tensor<4x4x8xf32>) -> tensor<4x2x8xf32>
  %sT = onnx.node "Transpose"(%scores) {node_name = "scores_t", onnx_attrs = {perm = [1, 0]}} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %ax2 = onnx.node "Constant"() {node_name = "axis2", onnx_attrs = {value = dense<[2]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %s3d = onnx.node "Unsqueeze"(%sT, %ax2) {node_name = "scores_col", onnx_attrs = {}} : (tensor<4x2xf32>, tensor<1xi64>) -> tensor<4x2x1xf32>
  %wtd = onnx.node "Mul"(%d, %s3d) {node_name = "weighted", onnx_attrs = {}} : (tensor<4x2x8xf32>, tensor<4x2x1xf32>) -> tensor<4x2x8xf32>
  %sax = onnx.node "Constant"() {node_name = "sum_axes", onnx_attrs = {value = dense<[0]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %esum = onnx.node "ReduceSum"(%wtd, %sax) {node_name = "expert_sum", onnx_attrs = {keepdims = 0 : i64}} : (tensor<4x2x8xf32>, tensor<1xi64>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%esum, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// The gates scattered along the tokens axis (axis 0) are not the [tokens, experts] score matrix.
func.func @experts_dense_masked_scatter_axis_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %w1 = onnx.weight "experts.gate_proj" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %w3 = onnx.weight "experts.up_proj" {file = "m.onnx", offset = 512 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %w2 = onnx.weight "experts.down_proj" {file = "m.onnx", offset = 1024 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 1536 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 2048 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 2080 : i64, length = 128 : i64} : tensor<8x4xf32>
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
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router_logits", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %probs = onnx.node "Softmax"(%logits) {node_name = "router_softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %vals, %ids_k = onnx.node "TopK"(%probs, %k) {node_name = "topk", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %ax = onnx.node "Constant"() {node_name = "sum_axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %sum = onnx.node "ReduceSum"(%vals, %ax) {node_name = "topk_sum", onnx_attrs = {keepdims = 1 : i64}} : (tensor<2x2xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %gates = onnx.node "Div"(%vals, %sum) {node_name = "renorm", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %z = onnx.node "Constant"() {node_name = "zeros", onnx_attrs = {value = dense<0.0> : tensor<2x4xf32>}} : () -> tensor<2x4xf32>
  // expected-error @+1 {{node 'dense_scores' (ScatterElements): experts: the score matrix must scatter the gates along the experts axis}}
  %scores = onnx.node "ScatterElements"(%z, %ids_k, %gates) {node_name = "dense_scores", onnx_attrs = {axis = 0 : i64}} : (tensor<2x4xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %rep = onnx.node "Constant"() {node_name = "repeats", onnx_attrs = {value = dense<[4, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %tile = onnx.node "Tile"(%hn2, %rep) {node_name = "tile", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<8x8xf32>
  %s3 = onnx.node "Constant"() {node_name = "stack_shape", onnx_attrs = {value = dense<[4, -1, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %xs = onnx.node "Reshape"(%tile, %s3) {node_name = "per_expert", onnx_attrs = {}} : (tensor<8x8xf32>, tensor<3xi64>) -> tensor<4x2x8xf32>
  %g = onnx.node "MatMul"(%xs, %w1) {node_name = "gate_proj", onnx_attrs = {}} : (tensor<4x2x8xf32>, tensor<4x8x4xf32>) -> tensor<4x2x4xf32>
  %sg = onnx.node "Sigmoid"(%g) {node_name = "sigmoid", onnx_attrs = {}} : (tensor<4x2x4xf32>) -> tensor<4x2x4xf32>
  %silu = onnx.node "Mul"(%g, %sg) {node_name = "silu", onnx_attrs = {}} : (tensor<4x2x4xf32>, tensor<4x2x4xf32>) -> tensor<4x2x4xf32>
  %u = onnx.node "MatMul"(%xs, %w3) {node_name = "up_proj", onnx_attrs = {}} : (tensor<4x2x8xf32>, tensor<4x8x4xf32>) -> tensor<4x2x4xf32>
  %h = onnx.node "Mul"(%silu, %u) {node_name = "gated", onnx_attrs = {}} : (tensor<4x2x4xf32>, tensor<4x2x4xf32>) -> tensor<4x2x4xf32>
  %d = onnx.node "MatMul"(%h, %w2) {node_name = "down_proj", onnx_attrs = {}} : (tensor<4x2x4xf32>, tensor<4x4x8xf32>) -> tensor<4x2x8xf32>
  %sT = onnx.node "Transpose"(%scores) {node_name = "scores_t", onnx_attrs = {perm = [1, 0]}} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %ax2 = onnx.node "Constant"() {node_name = "axis2", onnx_attrs = {value = dense<[2]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %s3d = onnx.node "Unsqueeze"(%sT, %ax2) {node_name = "scores_col", onnx_attrs = {}} : (tensor<4x2xf32>, tensor<1xi64>) -> tensor<4x2x1xf32>
  %wtd = onnx.node "Mul"(%d, %s3d) {node_name = "weighted", onnx_attrs = {}} : (tensor<4x2x8xf32>, tensor<4x2x1xf32>) -> tensor<4x2x8xf32>
  %sax = onnx.node "Constant"() {node_name = "sum_axes", onnx_attrs = {value = dense<[0]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %esum = onnx.node "ReduceSum"(%wtd, %sax) {node_name = "expert_sum", onnx_attrs = {keepdims = 0 : i64}} : (tensor<4x2x8xf32>, tensor<1xi64>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%esum, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// Stacked weights of 8 experts under a router of 4: refused at the experts' activation.
func.func @experts_dense_masked_count_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %w1 = onnx.weight "experts.gate_proj" {file = "m.onnx", offset = 0 : i64, length = 1024 : i64} : tensor<8x8x4xf32>
  %w3 = onnx.weight "experts.up_proj" {file = "m.onnx", offset = 1024 : i64, length = 1024 : i64} : tensor<8x8x4xf32>
  %w2 = onnx.weight "experts.down_proj" {file = "m.onnx", offset = 2048 : i64, length = 1024 : i64} : tensor<8x4x8xf32>
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 3072 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 3584 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 3616 : i64, length = 128 : i64} : tensor<8x4xf32>
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
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router_logits", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %probs = onnx.node "Softmax"(%logits) {node_name = "router_softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %vals, %ids_k = onnx.node "TopK"(%probs, %k) {node_name = "topk", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %ax = onnx.node "Constant"() {node_name = "sum_axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %sum = onnx.node "ReduceSum"(%vals, %ax) {node_name = "topk_sum", onnx_attrs = {keepdims = 1 : i64}} : (tensor<2x2xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %gates = onnx.node "Div"(%vals, %sum) {node_name = "renorm", onnx_attrs = {}} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %z = onnx.node "Constant"() {node_name = "zeros", onnx_attrs = {value = dense<0.0> : tensor<2x4xf32>}} : () -> tensor<2x4xf32>
  %scores = onnx.node "ScatterElements"(%z, %ids_k, %gates) {node_name = "dense_scores", onnx_attrs = {axis = 1 : i64}} : (tensor<2x4xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %rep = onnx.node "Constant"() {node_name = "repeats", onnx_attrs = {value = dense<[8, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %tile = onnx.node "Tile"(%hn2, %rep) {node_name = "tile", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<16x8xf32>
  %s3 = onnx.node "Constant"() {node_name = "stack_shape", onnx_attrs = {value = dense<[8, -1, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %xs = onnx.node "Reshape"(%tile, %s3) {node_name = "per_expert", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<3xi64>) -> tensor<8x2x8xf32>
  %g = onnx.node "MatMul"(%xs, %w1) {node_name = "gate_proj", onnx_attrs = {}} : (tensor<8x2x8xf32>, tensor<8x8x4xf32>) -> tensor<8x2x4xf32>
  // expected-error @+1 {{node 'sigmoid' (Sigmoid): experts: the stacked weights do not hold 4 experts}}
  %sg = onnx.node "Sigmoid"(%g) {node_name = "sigmoid", onnx_attrs = {}} : (tensor<8x2x4xf32>) -> tensor<8x2x4xf32>
  %silu = onnx.node "Mul"(%g, %sg) {node_name = "silu", onnx_attrs = {}} : (tensor<8x2x4xf32>, tensor<8x2x4xf32>) -> tensor<8x2x4xf32>
  %u = onnx.node "MatMul"(%xs, %w3) {node_name = "up_proj", onnx_attrs = {}} : (tensor<8x2x8xf32>, tensor<8x8x4xf32>) -> tensor<8x2x4xf32>
  %h = onnx.node "Mul"(%silu, %u) {node_name = "gated", onnx_attrs = {}} : (tensor<8x2x4xf32>, tensor<8x2x4xf32>) -> tensor<8x2x4xf32>
  %d = onnx.node "MatMul"(%h, %w2) {node_name = "down_proj", onnx_attrs = {}} : (tensor<8x2x4xf32>, tensor<8x4x8xf32>) -> tensor<8x2x8xf32>
  %sT = onnx.node "Transpose"(%scores) {node_name = "scores_t", onnx_attrs = {perm = [1, 0]}} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %ax2 = onnx.node "Constant"() {node_name = "axis2", onnx_attrs = {value = dense<[2]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %s3d = onnx.node "Unsqueeze"(%sT, %ax2) {node_name = "scores_col", onnx_attrs = {}} : (tensor<4x2xf32>, tensor<1xi64>) -> tensor<4x2x1xf32>
  %wtd = onnx.node "Mul"(%d, %s3d) {node_name = "weighted", onnx_attrs = {}} : (tensor<8x2x8xf32>, tensor<4x2x1xf32>) -> tensor<8x2x8xf32>
  %sax = onnx.node "Constant"() {node_name = "sum_axes", onnx_attrs = {value = dense<[0]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %esum = onnx.node "ReduceSum"(%wtd, %sax) {node_name = "expert_sum", onnx_attrs = {keepdims = 0 : i64}} : (tensor<8x2x8xf32>, tensor<1xi64>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%esum, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// The weighted outputs [4 experts, 4 tokens, 8] summed over the tokens (a valid graph when there
// are as many tokens as experts) mix tokens: refused at the ReduceSum (raised before).
func.func @experts_dense_masked_sum_axis_refused(%ids: tensor<1x4xi64>) -> tensor<1x4x8xf32> {
  %w1 = onnx.weight "experts.gate_proj" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %w3 = onnx.weight "experts.up_proj" {file = "m.onnx", offset = 512 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %w2 = onnx.weight "experts.down_proj" {file = "m.onnx", offset = 1024 : i64, length = 512 : i64} : tensor<4x4x8xf32>
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 1536 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 2048 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 2080 : i64, length = 128 : i64} : tensor<8x4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %ffn_norm_two = onnx.node "Constant"() {node_name = "ffn_norm_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_sq = onnx.node "Pow"(%x, %ffn_norm_two) {node_name = "ffn_norm_pow", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<f32>) -> tensor<1x4x8xf32>
  %ffn_norm_m = onnx.node "ReduceMean"(%ffn_norm_sq) {node_name = "ffn_norm_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %ffn_norm_eps = onnx.node "Constant"() {node_name = "ffn_norm_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %ffn_norm_a = onnx.node "Add"(%ffn_norm_m, %ffn_norm_eps) {node_name = "ffn_norm_add", onnx_attrs = {}} : (tensor<1x4x1xf32>, tensor<f32>) -> tensor<1x4x1xf32>
  %ffn_norm_s = onnx.node "Sqrt"(%ffn_norm_a) {node_name = "ffn_norm_sqrt", onnx_attrs = {}} : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %ffn_norm_d = onnx.node "Div"(%x, %ffn_norm_s) {node_name = "ffn_norm_scaled", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<1x4x1xf32>) -> tensor<1x4x8xf32>
  %ffn_norm_n = onnx.node "Mul"(%ffn_norm_d, %nw) {node_name = "ffn_norm_weighted", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %flat = onnx.node "Constant"() {node_name = "flat_shape", onnx_attrs = {value = dense<[-1, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %hn2 = onnx.node "Reshape"(%ffn_norm_n, %flat) {node_name = "tokens", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<2xi64>) -> tensor<4x8xf32>
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router_logits", onnx_attrs = {}} : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %probs = onnx.node "Softmax"(%logits) {node_name = "router_softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %vals, %ids_k = onnx.node "TopK"(%probs, %k) {node_name = "topk", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<4x4xf32>, tensor<1xi64>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
  %ax = onnx.node "Constant"() {node_name = "sum_axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %sum = onnx.node "ReduceSum"(%vals, %ax) {node_name = "topk_sum", onnx_attrs = {keepdims = 1 : i64}} : (tensor<4x2xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %gates = onnx.node "Div"(%vals, %sum) {node_name = "renorm", onnx_attrs = {}} : (tensor<4x2xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  %z = onnx.node "Constant"() {node_name = "zeros", onnx_attrs = {value = dense<0.0> : tensor<4x4xf32>}} : () -> tensor<4x4xf32>
  %scores = onnx.node "ScatterElements"(%z, %ids_k, %gates) {node_name = "dense_scores", onnx_attrs = {axis = 1 : i64}} : (tensor<4x4xf32>, tensor<4x2xi64>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %rep = onnx.node "Constant"() {node_name = "repeats", onnx_attrs = {value = dense<[4, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %tile = onnx.node "Tile"(%hn2, %rep) {node_name = "tile", onnx_attrs = {}} : (tensor<4x8xf32>, tensor<2xi64>) -> tensor<16x8xf32>
  %s3 = onnx.node "Constant"() {node_name = "stack_shape", onnx_attrs = {value = dense<[4, -1, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %xs = onnx.node "Reshape"(%tile, %s3) {node_name = "per_expert", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<3xi64>) -> tensor<4x4x8xf32>
  %g = onnx.node "MatMul"(%xs, %w1) {node_name = "gate_proj", onnx_attrs = {}} : (tensor<4x4x8xf32>, tensor<4x8x4xf32>) -> tensor<4x4x4xf32>
  %sg = onnx.node "Sigmoid"(%g) {node_name = "sigmoid", onnx_attrs = {}} : (tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %silu = onnx.node "Mul"(%g, %sg) {node_name = "silu", onnx_attrs = {}} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %u = onnx.node "MatMul"(%xs, %w3) {node_name = "up_proj", onnx_attrs = {}} : (tensor<4x4x8xf32>, tensor<4x8x4xf32>) -> tensor<4x4x4xf32>
  %h = onnx.node "Mul"(%silu, %u) {node_name = "gated", onnx_attrs = {}} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %d = onnx.node "MatMul"(%h, %w2) {node_name = "down_proj", onnx_attrs = {}} : (tensor<4x4x4xf32>, tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  %sT = onnx.node "Transpose"(%scores) {node_name = "scores_t", onnx_attrs = {perm = [1, 0]}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %ax2 = onnx.node "Constant"() {node_name = "axis2", onnx_attrs = {value = dense<[2]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %s3d = onnx.node "Unsqueeze"(%sT, %ax2) {node_name = "scores_col", onnx_attrs = {}} : (tensor<4x4xf32>, tensor<1xi64>) -> tensor<4x4x1xf32>
  %wtd = onnx.node "Mul"(%d, %s3d) {node_name = "weighted", onnx_attrs = {}} : (tensor<4x4x8xf32>, tensor<4x4x1xf32>) -> tensor<4x4x8xf32>
  %sax = onnx.node "Constant"() {node_name = "sum_axes", onnx_attrs = {value = dense<[1]> : tensor<1xi64>}} : () -> tensor<1xi64>
  // expected-error @+1 {{node 'expert_sum' (ReduceSum): experts: the weighted expert outputs are summed over axes [1], not over the experts (axis 0)}}
  %esum = onnx.node "ReduceSum"(%wtd, %sax) {node_name = "expert_sum", onnx_attrs = {keepdims = 0 : i64}} : (tensor<4x4x8xf32>, tensor<1xi64>) -> tensor<4x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 4, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%esum, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<1x4x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}

// -----

// ExpertsEinsumPattern: openai/gpt-oss's MLPBlock (router top-2 then softmax over the two): the
// chosen experts' weights gathered per token from [experts, out, in] by the router's ids,
// Einsum("beck,bk->bec") + bias, the clamped SwiGLU (limit 7, alpha 1.702) on the interleaved
// gate/up columns, Einsum("beck,bek->bec") + bias and Einsum("bec,be->bc") with the gates; each
// expert a transposed slice of the stacked weights.
// CHECK-LABEL: func.func @experts_einsum
// CHECK-DAG:   %[[W0:.*]] = onnx.weight "mlp1_weight[0]" {file = "m.onnx", length = 256 : i64, offset = 0 : i64, transposed} : tensor<8x8xf32>
// CHECK-DAG:   %[[B0:.*]] = onnx.weight "mlp1_bias[0]" {{.*}} : tensor<8xf32>
// CHECK-DAG:   %[[D0:.*]] = onnx.weight "mlp2_weight[0]" {{{.*}}transposed} : tensor<4x8xf32>
// CHECK:       %ids, %gates = moe.router {{.*}}scoring = "topk_softmax", top_k = 2 : i64}
// CHECK-NEXT:  moe.experts %{{.*}}, %ids, %gates w1(%[[W0]], %{{.*}}, %{{.*}}, %{{.*}}) w3() w2(%[[D0]], %{{.*}}, %{{.*}}, %{{.*}}) b1(%[[B0]], %{{.*}}, %{{.*}}, %{{.*}} : {{.*}}) b2({{.*}}) {activation = "swiglu_oai", expert_hidden = 4 : i64, fused_gate_up, layer = -1 : i64, num_experts = 4 : i64, swiglu_alpha = 1.702000e+00 : f64, swiglu_limit = 7.000000e+00 : f64}
// CHECK-NOT:   onnx.node "Einsum"
func.func @experts_einsum(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %w13 = onnx.weight "mlp1_weight" {file = "m.onnx", offset = 0 : i64, length = 1024 : i64} : tensor<4x8x8xf32>
  %b13 = onnx.weight "mlp1_bias" {file = "m.onnx", offset = 1024 : i64, length = 128 : i64} : tensor<4x8xf32>
  %w2 = onnx.weight "mlp2_weight" {file = "m.onnx", offset = 1152 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %b2 = onnx.weight "mlp2_bias" {file = "m.onnx", offset = 1664 : i64, length = 128 : i64} : tensor<4x8xf32>
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 1792 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 2304 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 2336 : i64, length = 128 : i64} : tensor<8x4xf32>
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
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router_logits", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %vals, %ids_k = onnx.node "TopK"(%logits, %k) {node_name = "topk", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %gates = onnx.node "Softmax"(%vals) {node_name = "topk_softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %w13g = onnx.node "Gather"(%w13, %ids_k) {node_name = "mlp1_weight_gather", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8x8xf32>, tensor<2x2xi64>) -> tensor<2x2x8x8xf32>
  %b13g = onnx.node "Gather"(%b13, %ids_k) {node_name = "mlp1_bias_gather", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8xf32>, tensor<2x2xi64>) -> tensor<2x2x8xf32>
  %up = onnx.node "Einsum"(%w13g, %hn2) {node_name = "mlp1", onnx_attrs = {equation = "beck,bk->bec"}} : (tensor<2x2x8x8xf32>, tensor<2x8xf32>) -> tensor<2x2x8xf32>
  %upb = onnx.node "Add"(%up, %b13g) {node_name = "mlp1_bias", onnx_attrs = {}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
  %s0 = onnx.node "Constant"() {node_name = "start0", onnx_attrs = {value = dense<[0]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %s1 = onnx.node "Constant"() {node_name = "start1", onnx_attrs = {value = dense<[1]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %end = onnx.node "Constant"() {node_name = "end", onnx_attrs = {value = dense<[9223372036854775807]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %axl = onnx.node "Constant"() {node_name = "axis_last", onnx_attrs = {value = dense<[-1]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %st2 = onnx.node "Constant"() {node_name = "step2", onnx_attrs = {value = dense<[2]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %glin = onnx.node "Slice"(%upb, %s0, %end, %axl, %st2) {node_name = "x_glu", onnx_attrs = {}} : (tensor<2x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x2x4xf32>
  %ulin = onnx.node "Slice"(%upb, %s1, %end, %axl, %st2) {node_name = "x_linear", onnx_attrs = {}} : (tensor<2x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x2x4xf32>
  %none = onnx.none
  %lim = onnx.node "Constant"() {node_name = "limit", onnx_attrs = {value = dense<7.0> : tensor<f32>}} : () -> tensor<f32>
  %nlim = onnx.node "Constant"() {node_name = "neg_limit", onnx_attrs = {value = dense<-7.0> : tensor<f32>}} : () -> tensor<f32>
  %gc = onnx.node "Clip"(%glin, %none, %lim) {node_name = "clamp_glu", onnx_attrs = {}} : (tensor<2x2x4xf32>, none, tensor<f32>) -> tensor<2x2x4xf32>
  %uc = onnx.node "Clip"(%ulin, %nlim, %lim) {node_name = "clamp_linear", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<f32>, tensor<f32>) -> tensor<2x2x4xf32>
  %alpha = onnx.node "Constant"() {node_name = "alpha", onnx_attrs = {value = dense<1.702> : tensor<f32>}} : () -> tensor<f32>
  %ga = onnx.node "Mul"(%gc, %alpha) {node_name = "alpha_glu", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<f32>) -> tensor<2x2x4xf32>
  %sg = onnx.node "Sigmoid"(%ga) {node_name = "sigmoid", onnx_attrs = {}} : (tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %glu = onnx.node "Mul"(%gc, %sg) {node_name = "glu", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %one = onnx.node "Constant"() {node_name = "one", onnx_attrs = {value = dense<1.0> : tensor<f32>}} : () -> tensor<f32>
  %u1 = onnx.node "Add"(%uc, %one) {node_name = "linear_plus_one", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<f32>) -> tensor<2x2x4xf32>
  %act = onnx.node "Mul"(%glu, %u1) {node_name = "swiglu", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %w2g = onnx.node "Gather"(%w2, %ids_k) {node_name = "mlp2_weight_gather", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8x4xf32>, tensor<2x2xi64>) -> tensor<2x2x8x4xf32>
  %b2g = onnx.node "Gather"(%b2, %ids_k) {node_name = "mlp2_bias_gather", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8xf32>, tensor<2x2xi64>) -> tensor<2x2x8xf32>
  %dn = onnx.node "Einsum"(%w2g, %act) {node_name = "mlp2", onnx_attrs = {equation = "beck,bek->bec"}} : (tensor<2x2x8x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x8xf32>
  %dnb = onnx.node "Add"(%dn, %b2g) {node_name = "mlp2_bias", onnx_attrs = {}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
  %comb = onnx.node "Einsum"(%dnb, %gates) {node_name = "combine", onnx_attrs = {equation = "bec,be->bc"}} : (tensor<2x2x8xf32>, tensor<2x2xf32>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%comb, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// Gate and up swapped (the gate from the odd columns): refused at the gate's Clip.
func.func @experts_einsum_gate_odd_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %w13 = onnx.weight "mlp1_weight" {file = "m.onnx", offset = 0 : i64, length = 1024 : i64} : tensor<4x8x8xf32>
  %b13 = onnx.weight "mlp1_bias" {file = "m.onnx", offset = 1024 : i64, length = 128 : i64} : tensor<4x8xf32>
  %w2 = onnx.weight "mlp2_weight" {file = "m.onnx", offset = 1152 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %b2 = onnx.weight "mlp2_bias" {file = "m.onnx", offset = 1664 : i64, length = 128 : i64} : tensor<4x8xf32>
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 1792 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 2304 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 2336 : i64, length = 128 : i64} : tensor<8x4xf32>
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
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router_logits", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %vals, %ids_k = onnx.node "TopK"(%logits, %k) {node_name = "topk", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %gates = onnx.node "Softmax"(%vals) {node_name = "topk_softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %w13g = onnx.node "Gather"(%w13, %ids_k) {node_name = "mlp1_weight_gather", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8x8xf32>, tensor<2x2xi64>) -> tensor<2x2x8x8xf32>
  %b13g = onnx.node "Gather"(%b13, %ids_k) {node_name = "mlp1_bias_gather", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8xf32>, tensor<2x2xi64>) -> tensor<2x2x8xf32>
  %up = onnx.node "Einsum"(%w13g, %hn2) {node_name = "mlp1", onnx_attrs = {equation = "beck,bk->bec"}} : (tensor<2x2x8x8xf32>, tensor<2x8xf32>) -> tensor<2x2x8xf32>
  %upb = onnx.node "Add"(%up, %b13g) {node_name = "mlp1_bias", onnx_attrs = {}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
  %s0 = onnx.node "Constant"() {node_name = "start0", onnx_attrs = {value = dense<[0]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %s1 = onnx.node "Constant"() {node_name = "start1", onnx_attrs = {value = dense<[1]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %end = onnx.node "Constant"() {node_name = "end", onnx_attrs = {value = dense<[9223372036854775807]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %axl = onnx.node "Constant"() {node_name = "axis_last", onnx_attrs = {value = dense<[-1]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %st2 = onnx.node "Constant"() {node_name = "step2", onnx_attrs = {value = dense<[2]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %glin = onnx.node "Slice"(%upb, %s1, %end, %axl, %st2) {node_name = "x_glu", onnx_attrs = {}} : (tensor<2x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x2x4xf32>
  %ulin = onnx.node "Slice"(%upb, %s0, %end, %axl, %st2) {node_name = "x_linear", onnx_attrs = {}} : (tensor<2x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x2x4xf32>
  %none = onnx.none
  %lim = onnx.node "Constant"() {node_name = "limit", onnx_attrs = {value = dense<7.0> : tensor<f32>}} : () -> tensor<f32>
  %nlim = onnx.node "Constant"() {node_name = "neg_limit", onnx_attrs = {value = dense<-7.0> : tensor<f32>}} : () -> tensor<f32>
  // expected-error @+1 {{node 'clamp_glu' (Clip): experts: the gate is not the even columns of a fused gate_up projection (Slice start 0, step 2)}}
  %gc = onnx.node "Clip"(%glin, %none, %lim) {node_name = "clamp_glu", onnx_attrs = {}} : (tensor<2x2x4xf32>, none, tensor<f32>) -> tensor<2x2x4xf32>
  %uc = onnx.node "Clip"(%ulin, %nlim, %lim) {node_name = "clamp_linear", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<f32>, tensor<f32>) -> tensor<2x2x4xf32>
  %alpha = onnx.node "Constant"() {node_name = "alpha", onnx_attrs = {value = dense<1.702> : tensor<f32>}} : () -> tensor<f32>
  %ga = onnx.node "Mul"(%gc, %alpha) {node_name = "alpha_glu", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<f32>) -> tensor<2x2x4xf32>
  %sg = onnx.node "Sigmoid"(%ga) {node_name = "sigmoid", onnx_attrs = {}} : (tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %glu = onnx.node "Mul"(%gc, %sg) {node_name = "glu", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %one = onnx.node "Constant"() {node_name = "one", onnx_attrs = {value = dense<1.0> : tensor<f32>}} : () -> tensor<f32>
  %u1 = onnx.node "Add"(%uc, %one) {node_name = "linear_plus_one", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<f32>) -> tensor<2x2x4xf32>
  %act = onnx.node "Mul"(%glu, %u1) {node_name = "swiglu", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %w2g = onnx.node "Gather"(%w2, %ids_k) {node_name = "mlp2_weight_gather", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8x4xf32>, tensor<2x2xi64>) -> tensor<2x2x8x4xf32>
  %b2g = onnx.node "Gather"(%b2, %ids_k) {node_name = "mlp2_bias_gather", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8xf32>, tensor<2x2xi64>) -> tensor<2x2x8xf32>
  %dn = onnx.node "Einsum"(%w2g, %act) {node_name = "mlp2", onnx_attrs = {equation = "beck,bek->bec"}} : (tensor<2x2x8x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x8xf32>
  %dnb = onnx.node "Add"(%dn, %b2g) {node_name = "mlp2_bias", onnx_attrs = {}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
  %comb = onnx.node "Einsum"(%dnb, %gates) {node_name = "combine", onnx_attrs = {equation = "bec,be->bc"}} : (tensor<2x2x8xf32>, tensor<2x2xf32>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%comb, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// The expert outputs combined with the top-k logits instead of the gates (their softmax): refused at
// the down projection's Einsum. The TopK, still read by the combine, stays and is anchored again
// once the router took its Softmax: match-only reports that second failure too.
func.func @experts_einsum_combine_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %w13 = onnx.weight "mlp1_weight" {file = "m.onnx", offset = 0 : i64, length = 1024 : i64} : tensor<4x8x8xf32>
  %b13 = onnx.weight "mlp1_bias" {file = "m.onnx", offset = 1024 : i64, length = 128 : i64} : tensor<4x8xf32>
  %w2 = onnx.weight "mlp2_weight" {file = "m.onnx", offset = 1152 : i64, length = 512 : i64} : tensor<4x8x4xf32>
  %b2 = onnx.weight "mlp2_bias" {file = "m.onnx", offset = 1664 : i64, length = 128 : i64} : tensor<4x8xf32>
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 1792 : i64, length = 512 : i64} : tensor<16x8xf32>
  %nw = onnx.weight "ffn_norm" {file = "m.onnx", offset = 2304 : i64, length = 32 : i64} : tensor<8xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 2336 : i64, length = 128 : i64} : tensor<8x4xf32>
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
  %logits = onnx.node "MatMul"(%hn2, %wg) {node_name = "router_logits", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  // expected-error @+1 {{node 'topk' (TopK): router: no Softmax before or after TopK}}
  %vals, %ids_k = onnx.node "TopK"(%logits, %k) {node_name = "topk", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %gates = onnx.node "Softmax"(%vals) {node_name = "topk_softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %w13g = onnx.node "Gather"(%w13, %ids_k) {node_name = "mlp1_weight_gather", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8x8xf32>, tensor<2x2xi64>) -> tensor<2x2x8x8xf32>
  %b13g = onnx.node "Gather"(%b13, %ids_k) {node_name = "mlp1_bias_gather", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8xf32>, tensor<2x2xi64>) -> tensor<2x2x8xf32>
  %up = onnx.node "Einsum"(%w13g, %hn2) {node_name = "mlp1", onnx_attrs = {equation = "beck,bk->bec"}} : (tensor<2x2x8x8xf32>, tensor<2x8xf32>) -> tensor<2x2x8xf32>
  %upb = onnx.node "Add"(%up, %b13g) {node_name = "mlp1_bias", onnx_attrs = {}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
  %s0 = onnx.node "Constant"() {node_name = "start0", onnx_attrs = {value = dense<[0]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %s1 = onnx.node "Constant"() {node_name = "start1", onnx_attrs = {value = dense<[1]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %end = onnx.node "Constant"() {node_name = "end", onnx_attrs = {value = dense<[9223372036854775807]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %axl = onnx.node "Constant"() {node_name = "axis_last", onnx_attrs = {value = dense<[-1]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %st2 = onnx.node "Constant"() {node_name = "step2", onnx_attrs = {value = dense<[2]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %glin = onnx.node "Slice"(%upb, %s0, %end, %axl, %st2) {node_name = "x_glu", onnx_attrs = {}} : (tensor<2x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x2x4xf32>
  %ulin = onnx.node "Slice"(%upb, %s1, %end, %axl, %st2) {node_name = "x_linear", onnx_attrs = {}} : (tensor<2x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x2x4xf32>
  %none = onnx.none
  %lim = onnx.node "Constant"() {node_name = "limit", onnx_attrs = {value = dense<7.0> : tensor<f32>}} : () -> tensor<f32>
  %nlim = onnx.node "Constant"() {node_name = "neg_limit", onnx_attrs = {value = dense<-7.0> : tensor<f32>}} : () -> tensor<f32>
  %gc = onnx.node "Clip"(%glin, %none, %lim) {node_name = "clamp_glu", onnx_attrs = {}} : (tensor<2x2x4xf32>, none, tensor<f32>) -> tensor<2x2x4xf32>
  %uc = onnx.node "Clip"(%ulin, %nlim, %lim) {node_name = "clamp_linear", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<f32>, tensor<f32>) -> tensor<2x2x4xf32>
  %alpha = onnx.node "Constant"() {node_name = "alpha", onnx_attrs = {value = dense<1.702> : tensor<f32>}} : () -> tensor<f32>
  %ga = onnx.node "Mul"(%gc, %alpha) {node_name = "alpha_glu", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<f32>) -> tensor<2x2x4xf32>
  %sg = onnx.node "Sigmoid"(%ga) {node_name = "sigmoid", onnx_attrs = {}} : (tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %glu = onnx.node "Mul"(%gc, %sg) {node_name = "glu", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %one = onnx.node "Constant"() {node_name = "one", onnx_attrs = {value = dense<1.0> : tensor<f32>}} : () -> tensor<f32>
  %u1 = onnx.node "Add"(%uc, %one) {node_name = "linear_plus_one", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<f32>) -> tensor<2x2x4xf32>
  %act = onnx.node "Mul"(%glu, %u1) {node_name = "swiglu", onnx_attrs = {}} : (tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %w2g = onnx.node "Gather"(%w2, %ids_k) {node_name = "mlp2_weight_gather", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8x4xf32>, tensor<2x2xi64>) -> tensor<2x2x8x4xf32>
  %b2g = onnx.node "Gather"(%b2, %ids_k) {node_name = "mlp2_bias_gather", onnx_attrs = {axis = 0 : i64}} : (tensor<4x8xf32>, tensor<2x2xi64>) -> tensor<2x2x8xf32>
  // expected-error @+1 {{node 'mlp2' (Einsum): experts: expected Einsum("bec,be->bc") of the expert outputs and the router's gates}}
  %dn = onnx.node "Einsum"(%w2g, %act) {node_name = "mlp2", onnx_attrs = {equation = "beck,bek->bec"}} : (tensor<2x2x8x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x8xf32>
  %dnb = onnx.node "Add"(%dn, %b2g) {node_name = "mlp2_bias", onnx_attrs = {}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
  %comb = onnx.node "Einsum"(%dnb, %vals) {node_name = "combine", onnx_attrs = {equation = "bec,be->bc"}} : (tensor<2x2x8xf32>, tensor<2x2xf32>) -> tensor<2x8xf32>
  %oshape = onnx.node "Constant"() {node_name = "out_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %moe = onnx.node "Reshape"(%comb, %oshape) {node_name = "moe_out", onnx_attrs = {}} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %moe) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}
