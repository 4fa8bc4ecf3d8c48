// RUN: disagmoe-opt %s -normalize-onnx -split-input-file | FileCheck %s
// normalize-onnx, com.microsoft.GroupQueryAttention with local_window_size and head_sink
// (DecomposeGroupQueryAttention.cpp). onnxruntime's window (its CPU kernel, onnxruntime-node
// 1.23.2): with local_window_size = L, query i sees keys max(0, i - L) .. i, L + 1 keys; head_sink
// adds exp(head_sink[n]) to head n's softmax denominator. Each function: 2 query heads, 1 KV head,
// head_dim 4, S = 3. Refusals: gqa-window-sinks-refused.mlir.

// local_window_size = 1: query 0 sees key 0, query 1 keys 0..1, query 2 keys 1..2 (not 0). The
// mask is added to the scaled scores; no causal Trilu besides it.
// CHECK-LABEL: func.func @gqa_window
// CHECK-NOT:   "GroupQueryAttention"
// CHECK:       %[[M:.*]] = onnx.node "Constant"() {node_name = "gqa/window_mask", onnx_attrs = {value = dense<{{\[}}[0.000000e+00, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0xFF800000], [0xFF800000, 0.000000e+00, 0.000000e+00]]> : tensor<3x3xf32>}}
// CHECK:       %[[S:.*]] = onnx.node "Mul"
// CHECK:       onnx.node "Add"(%[[S]], %[[M]])
// CHECK-NOT:   "Trilu"
// CHECK:       onnx.node "Softmax"
// CHECK:       onnx.node "Reshape"({{.*}}) {node_name = "gqa",
func.func @gqa_window(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  %y:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %none, %none, %seqlens, %total) {domain = "com.microsoft", node_name = "gqa", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64, local_window_size = 1 : i64}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// local_window_size = 0: every query sees only itself.
// CHECK-LABEL: func.func @gqa_window_zero
// CHECK:       onnx.node "Constant"() {node_name = "gqa0/window_mask", onnx_attrs = {value = dense<{{\[}}[0.000000e+00, 0xFF800000, 0xFF800000], [0xFF800000, 0.000000e+00, 0xFF800000], [0xFF800000, 0xFF800000, 0.000000e+00]]> : tensor<3x3xf32>}}
func.func @gqa_window_zero(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  %y:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %none, %none, %seqlens, %total) {domain = "com.microsoft", node_name = "gqa0", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64, local_window_size = 0 : i64}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// head_sink [2] (an initializer) with smooth_softmax = 1 and no window: the full causal mask, the
// sinks reshaped to [1, heads, 1, 1], expanded to [B, heads, S, 1] and concatenated to the scores,
// the Softmax over S + 1 columns, the sink column sliced off before the PV MatMul (GPT-OSS's form).
// CHECK-LABEL: func.func @gqa_sinks
// CHECK:       %[[SINK:.*]] = onnx.weight "sinks"
// CHECK:       %[[KT:.*]] = onnx.node "Transpose"({{.*}}) {node_name = "gqa_s/k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}}
// CHECK:       %[[QK:.*]] = onnx.node "MatMul"({{.*}}, %[[KT]]) {node_name = "gqa_s/scores"
// CHECK:       %[[SC:.*]] = onnx.node "Mul"(%[[QK]], {{.*}}) {node_name = "gqa_s/scaled"
// CHECK:       %[[M:.*]] = onnx.node "Constant"() {node_name = "gqa_s/causal_mask", onnx_attrs = {value = dense<{{\[}}[0.000000e+00, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<3x3xf32>}}
// CHECK:       %[[MASKED:.*]] = onnx.node "Add"(%[[SC]], %[[M]])
// CHECK:       %[[S4:.*]] = onnx.node "Reshape"(%[[SINK]], {{.*}}) {{.*}} -> tensor<1x2x1x1xf32>
// CHECK:       %[[SX:.*]] = onnx.node "Expand"(%[[S4]], {{.*}}) {{.*}} -> tensor<1x2x3x1xf32>
// CHECK:       %[[CAT:.*]] = onnx.node "Concat"(%[[MASKED]], %[[SX]]) {{.*}}axis = -1 : i64{{.*}} -> tensor<1x2x3x4xf32>
// CHECK:       %[[P:.*]] = onnx.node "Softmax"(%[[CAT]]) {{.*}} -> tensor<1x2x3x4xf32>
// CHECK:       %[[PD:.*]] = onnx.node "Slice"(%[[P]], {{.*}}) {{.*}} -> tensor<1x2x3x3xf32>
// CHECK:       onnx.node "MatMul"(%[[PD]], {{.*}}) {node_name = "gqa_s/pv"
// CHECK:       onnx.node "Reshape"({{.*}}) {node_name = "gqa_s",
func.func @gqa_sinks(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %sinks = onnx.weight "sinks" {file = "m.onnx", offset = 0 : i64, length = 8 : i64} : tensor<2xf32>
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  %y:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %none, %none, %seqlens, %total, %none, %none, %none, %none, %sinks) {domain = "com.microsoft", node_name = "gqa_s", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64, smooth_softmax = 1 : i64}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, none, none, tensor<1xi32>, tensor<i32>, none, none, none, none, tensor<2xf32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// head_sink and local_window_size = 1 together (GPT-OSS's sliding layers): the window mask in the
// sink chain.
// CHECK-LABEL: func.func @gqa_window_sinks
// CHECK:       %[[M:.*]] = onnx.node "Constant"() {node_name = "gqa_ws/window_mask", onnx_attrs = {value = dense<{{\[}}[0.000000e+00, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0xFF800000], [0xFF800000, 0.000000e+00, 0.000000e+00]]> : tensor<3x3xf32>}}
// CHECK:       %[[MASKED:.*]] = onnx.node "Add"({{.*}}, %[[M]])
// CHECK:       onnx.node "Concat"(%[[MASKED]], {{.*}})
// CHECK:       onnx.node "Slice"
func.func @gqa_window_sinks(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %sinks = onnx.weight "sinks" {file = "m.onnx", offset = 0 : i64, length = 8 : i64} : tensor<2xf32>
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  %y:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %none, %none, %seqlens, %total, %none, %none, %none, %none, %sinks) {domain = "com.microsoft", node_name = "gqa_ws", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64, local_window_size = 1 : i64}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, none, none, tensor<1xi32>, tensor<i32>, none, none, none, none, tensor<2xf32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// onnxruntime-genai's first-prompt form: past_key/past_value are empty caches [B, kv, 0, H] (what
// the compiler binds past_key_values.* to), present_key/present_value unread: no cache, the same
// causal attention over the S new keys as without them.
// CHECK-LABEL: func.func @gqa_empty_cache
// CHECK-NOT:   "GroupQueryAttention"
// CHECK:       onnx.node "Trilu"({{.*}}) {node_name = "gqa_c/Attention/causal_mask"
// CHECK:       onnx.node "Softmax"
// CHECK:       onnx.node "Reshape"({{.*}}) {node_name = "gqa_c",
func.func @gqa_empty_cache(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %past_k = onnx.node "Constant"() {node_name = "past_k", onnx_attrs = {value = dense<0.0> : tensor<1x1x0x4xf32>}} : () -> tensor<1x1x0x4xf32>
  %past_v = onnx.node "Constant"() {node_name = "past_v", onnx_attrs = {value = dense<0.0> : tensor<1x1x0x4xf32>}} : () -> tensor<1x1x0x4xf32>
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  %y:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %past_k, %past_v, %seqlens, %total) {domain = "com.microsoft", node_name = "gqa_c", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, tensor<1x1x0x4xf32>, tensor<1x1x0x4xf32>, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}
