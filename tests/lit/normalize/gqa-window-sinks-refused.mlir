// RUN: disagmoe-opt %s -normalize-onnx -raise-onnx-to-moe=match-only -split-input-file -verify-diagnostics
// com.microsoft.GroupQueryAttention forms that moe.attention does not represent
// (DecomposeGroupQueryAttention.cpp): the node stays through normalize-onnx and raise-onnx-to-moe
// refuses it in one line naming the node and the attribute or input. Each function: 2 query heads,
// 1 KV head, head_dim 4, S = 3. The imported window and sink forms: gqa-window-sinks.mlir.

// Gemma-2 style logit capping: kept.
func.func @gqa_softcap(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  // expected-error @+1 {{node 'capped' (GroupQueryAttention): GroupQueryAttention: attribute softcap = 30.000000 is not imported (no softcap in moe.attention)}}
  %y:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %none, %none, %seqlens, %total) {domain = "com.microsoft", node_name = "capped", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64, softcap = 3.0e+01 : f32}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// smooth_softmax = 1 without head_sink: a fixed zero sink, not a trained one; kept.
func.func @gqa_smooth_alone(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  // expected-error @+1 {{node 'smooth' (GroupQueryAttention): GroupQueryAttention: attribute smooth_softmax = 1 without a head_sink input (a fixed zero sink) is not imported: moe.attention's sinks are trained parameters}}
  %y:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %none, %none, %seqlens, %total) {domain = "com.microsoft", node_name = "smooth", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64, smooth_softmax = 1 : i64}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// A head_sink that a node computes (not an initializer): kept.
func.func @gqa_sink_computed(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>, %sinks: tensor<2xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  %s2 = onnx.node "Neg"(%sinks) {node_name = "neg_sinks", onnx_attrs = {}} : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error @+1 {{node 'computed_sink' (GroupQueryAttention): GroupQueryAttention: input head_sink is not an initializer (a trained per-head parameter): a computed sink is not imported}}
  %y:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %none, %none, %seqlens, %total, %none, %none, %none, %none, %s2) {domain = "com.microsoft", node_name = "computed_sink", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, none, none, tensor<1xi32>, tensor<i32>, none, none, none, none, tensor<2xf32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// A head_sink of 3 logits for 2 heads: kept.
func.func @gqa_sink_shape(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  %s3 = onnx.weight "sinks" {file = "m.onnx", offset = 0 : i64, length = 12 : i64} : tensor<3xf32>
  // expected-error @+1 {{node 'sink3' (GroupQueryAttention): GroupQueryAttention: input head_sink is not [num_heads = 2] of the query's element type}}
  %y:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %none, %none, %seqlens, %total, %none, %none, %none, %none, %s3) {domain = "com.microsoft", node_name = "sink3", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, none, none, tensor<1xi32>, tensor<i32>, none, none, none, none, tensor<3xf32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// A local window with a KV cache (past_key/past_value): kept.
func.func @gqa_window_kv_cache(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>, %pk: tensor<1x1x2x4xf32>, %pv: tensor<1x1x2x4xf32>) -> tensor<1x3x8xf32> {
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<4> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<5> : tensor<i32>}} : () -> tensor<i32>
  // expected-error @+1 {{node 'cached' (GroupQueryAttention): GroupQueryAttention: past_key/past_value inputs (a KV cache) are not imported (with local_window_size = 2: a windowed KV cache): training runs whole sequences}}
  %y:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %pk, %pv, %seqlens, %total) {domain = "com.microsoft", node_name = "cached", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64, local_window_size = 2 : i64}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// causal = 0 (bidirectional attention): kept.
func.func @gqa_bidirectional(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  // expected-error @+1 {{node 'bidir' (GroupQueryAttention): GroupQueryAttention: attribute causal = 0 (bidirectional attention) is not imported: moe.attention is causal}}
  %y:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %none, %none, %seqlens, %total) {domain = "com.microsoft", node_name = "bidir", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64, causal = 0 : i64}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// local_window_size = -2: neither -1 (unused) nor a window; kept.
func.func @gqa_window_negative(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  // expected-error @+1 {{node 'neg_window' (GroupQueryAttention): GroupQueryAttention: attribute local_window_size = -2 is neither -1 nor a window >= 0}}
  %y:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %none, %none, %seqlens, %total) {domain = "com.microsoft", node_name = "neg_window", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64, local_window_size = -2 : i64}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// A real KV cache (past length 2): kept.
func.func @gqa_past(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>, %pk: tensor<1x1x2x4xf32>, %pv: tensor<1x1x2x4xf32>) -> tensor<1x3x8xf32> {
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<4> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<5> : tensor<i32>}} : () -> tensor<i32>
  // expected-error @+1 {{node 'cached' (GroupQueryAttention): GroupQueryAttention: past_key/past_value inputs (a KV cache) are not imported: training runs whole sequences}}
  %y:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %pk, %pv, %seqlens, %total) {domain = "com.microsoft", node_name = "cached", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// An empty cache whose head size (8) is not the query's (4): kept.
func.func @gqa_empty_cache_mis_shaped(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x3x8xf32> {
  %pk = onnx.node "Constant"() {node_name = "pk", onnx_attrs = {value = dense<0.0> : tensor<1x1x0x8xf32>}} : () -> tensor<1x1x0x8xf32>
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  // expected-error @+1 {{node 'misshaped' (GroupQueryAttention): GroupQueryAttention: an empty past_key/past_value is not [batch, kv_num_heads, 0, head_size]}}
  %y:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %pk, %pk, %seqlens, %total) {domain = "com.microsoft", node_name = "misshaped", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, tensor<1x1x0x8xf32>, tensor<1x1x0x8xf32>, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}
