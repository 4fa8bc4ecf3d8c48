// RUN: disagmoe-opt %s -normalize-onnx -raise-onnx-to-moe=match-only -split-input-file -verify-diagnostics
// com.microsoft.GroupQueryAttention on a packed QKV query that SplitPackedQkv.cpp does not split
// (tests/lit/normalize/packed-qkv.mlir has the ones it does): the node stays through normalize-onnx
// and raise-onnx-to-moe refuses it in one line naming what of the projection did not match. Each
// function: 2 query heads and 1 KV head of head_dim 4, a packed width of 16.

// A packed query that no MatMul computes: kept.
func.func @packed_not_matmul(%qkv: tensor<1x3x16xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  // expected-error @+1 {{node 'gqa' (GroupQueryAttention): GroupQueryAttention: packed QKV (no separate key and value inputs) is not imported: the packed query is not the output of one projection MatMul(x, W)}}
  %y:3 = onnx.node "GroupQueryAttention"(%qkv, %none, %none, %none, %none, %seqlens, %total) {domain = "com.microsoft", node_name = "gqa", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64}} : (tensor<1x3x16xf32>, none, none, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// A projection of an activation, not of a weight: kept.
func.func @packed_not_constant(%x: tensor<1x3x8xf32>, %w: tensor<8x16xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %qkv = onnx.node "MatMul"(%x, %w) {node_name = "qkv_proj", onnx_attrs = {}} : (tensor<1x3x8xf32>, tensor<8x16xf32>) -> tensor<1x3x16xf32>
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  // expected-error @+1 {{node 'gqa' (GroupQueryAttention): GroupQueryAttention: packed QKV (no separate key and value inputs) is not imported: the packed projection node 'qkv_proj' (MatMul) does not read a constant weight initializer}}
  %y:3 = onnx.node "GroupQueryAttention"(%qkv, %none, %none, %none, %none, %seqlens, %total) {domain = "com.microsoft", node_name = "gqa", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64}} : (tensor<1x3x16xf32>, none, none, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// A query 12 wide where (num_heads 2 + 2 * kv_num_heads 1) * head_size 4 is 16: kept.
func.func @packed_width(%x: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %w = onnx.weight "qkv_w" {file = "m.onnx", offset = 0 : i64, length = 384 : i64, transposed} : tensor<8x12xf32>
  %qkv = onnx.node "MatMul"(%x, %w) {node_name = "qkv_proj", onnx_attrs = {}} : (tensor<1x3x8xf32>, tensor<8x12xf32>) -> tensor<1x3x12xf32>
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  // expected-error @+1 {{packed QKV (no separate key and value inputs) is not imported: the packed query's width 12 is not (num_heads 2 + 2 * kv_num_heads 1) * head_size 4 = 16}}
  %y:3 = onnx.node "GroupQueryAttention"(%qkv, %none, %none, %none, %none, %seqlens, %total) {domain = "com.microsoft", node_name = "gqa", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64}} : (tensor<1x3x12xf32>, none, none, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// A weight whose columns (12) are not the query's width (16), and a bias of 8 elements: kept.
func.func @packed_weight_and_bias_sizes(%x: tensor<1x3x8xf32>) -> (tensor<1x3x8xf32>, tensor<1x3x8xf32>) {
  %none = onnx.none
  %w12 = onnx.weight "w12" {file = "m.onnx", offset = 0 : i64, length = 384 : i64, transposed} : tensor<8x12xf32>
  %w = onnx.weight "w16" {file = "m.onnx", offset = 0 : i64, length = 512 : i64, transposed} : tensor<8x16xf32>
  %b8 = onnx.weight "b8" {file = "m.onnx", offset = 512 : i64, length = 32 : i64} : tensor<8xf32>
  %a = onnx.node "MatMul"(%x, %w12) {node_name = "proj12", onnx_attrs = {}} : (tensor<1x3x8xf32>, tensor<8x12xf32>) -> tensor<1x3x16xf32>
  %mm = onnx.node "MatMul"(%x, %w) {node_name = "proj16", onnx_attrs = {}} : (tensor<1x3x8xf32>, tensor<8x16xf32>) -> tensor<1x3x16xf32>
  %b = onnx.node "Add"(%mm, %b8) {node_name = "bias8", onnx_attrs = {}} : (tensor<1x3x16xf32>, tensor<8xf32>) -> tensor<1x3x16xf32>
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  // expected-error @+1 {{packed QKV (no separate key and value inputs) is not imported: the packed weight 'w12' is not [hidden, 16] ((num_heads + 2 * kv_num_heads) * head_size columns)}}
  %y:3 = onnx.node "GroupQueryAttention"(%a, %none, %none, %none, %none, %seqlens, %total) {domain = "com.microsoft", node_name = "gqa12", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64}} : (tensor<1x3x16xf32>, none, none, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  // expected-error @+1 {{packed QKV (no separate key and value inputs) is not imported: the packed projection's bias is not a constant [16] vector}}
  %z:3 = onnx.node "GroupQueryAttention"(%b, %none, %none, %none, %none, %seqlens, %total) {domain = "com.microsoft", node_name = "gqa_b8", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64}} : (tensor<1x3x16xf32>, none, none, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0, %z#0 : tensor<1x3x8xf32>, tensor<1x3x8xf32>
}
