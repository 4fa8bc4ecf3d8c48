// RUN: disagmoe-opt %s -normalize-onnx -split-input-file | FileCheck %s
// normalize-onnx, com.microsoft.GroupQueryAttention on a packed QKV query (SplitPackedQkv.cpp):
// MatMul(x, W) (+ bias) becomes three MatMuls on references into W's bytes (offsets in bytes):
// row blocks when W is stored [out, in] = [(N + 2 Nkv) H, hidden], column blocks `row_stride` apart
// when it is stored [in, out]; then the separate-form decomposition applies. The packed projections that are not split: tests/lit/raise/refuse-packed-qkv.mlir.
// Each function: hidden 8, 2 query heads and 1 KV head of head_dim 4, so W [out, in] holds 16 rows
// of 8 floats (32 bytes a row): q rows 0..7, k rows 8..11, v rows 12..15.

// W read through Transpose (an export without constant folding) and a bias initializer [16]:
// q = bytes 64 + [0, 256), k = 64 + [256, 384), v = 64 + [384, 512); bias q [0, 32), k [32, 48),
// v [48, 64) after its offset 1024.
// CHECK-LABEL: func.func @packed_transpose_bias
// CHECK-DAG:   %[[BV:.*]] = onnx.weight "qkv_b[v]" {file = "m.onnx", length = 16 : i64, offset = 1072 : i64} : tensor<4xf32>
// CHECK-DAG:   %[[BK:.*]] = onnx.weight "qkv_b[k]" {file = "m.onnx", length = 16 : i64, offset = 1056 : i64} : tensor<4xf32>
// CHECK-DAG:   %[[BQ:.*]] = onnx.weight "qkv_b[q]" {file = "m.onnx", length = 32 : i64, offset = 1024 : i64} : tensor<8xf32>
// CHECK-DAG:   %[[WV:.*]] = onnx.weight "qkv_w[v]" {file = "m.onnx", length = 128 : i64, offset = 448 : i64, transposed} : tensor<8x4xf32>
// CHECK-DAG:   %[[WK:.*]] = onnx.weight "qkv_w[k]" {file = "m.onnx", length = 128 : i64, offset = 320 : i64, transposed} : tensor<8x4xf32>
// CHECK-DAG:   %[[WQ:.*]] = onnx.weight "qkv_w[q]" {file = "m.onnx", length = 256 : i64, offset = 64 : i64, transposed} : tensor<8x8xf32>
// CHECK-NOT:   "GroupQueryAttention"
// CHECK-NOT:   "Transpose"(%{{.*}}) {node_name = "w_t"
// CHECK:       %[[Q:.*]] = onnx.node "MatMul"(%arg0, %[[WQ]]) {node_name = "gqa/q_proj/MatMul"
// CHECK:       onnx.node "Add"(%[[Q]], %[[BQ]]) {node_name = "gqa/q_proj/Add"
// CHECK:       %[[K:.*]] = onnx.node "MatMul"(%arg0, %[[WK]]) {node_name = "gqa/k_proj/MatMul"
// CHECK:       onnx.node "Add"(%[[K]], %[[BK]]) {node_name = "gqa/k_proj/Add"
// CHECK:       %[[V:.*]] = onnx.node "MatMul"(%arg0, %[[WV]]) {node_name = "gqa/v_proj/MatMul"
// CHECK:       onnx.node "Add"(%[[V]], %[[BV]]) {node_name = "gqa/v_proj/Add"
// CHECK:       onnx.node "Reshape"({{.*}}) {node_name = "gqa/q_heads"
// CHECK:       onnx.node "Softmax"
// CHECK:       onnx.node "Reshape"({{.*}}) {node_name = "gqa",
// CHECK-NOT:   "qkv_proj"
func.func @packed_transpose_bias(%x: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %w = onnx.weight "qkv_w" {file = "m.onnx", offset = 64 : i64, length = 512 : i64} : tensor<16x8xf32>
  %b = onnx.weight "qkv_b" {file = "m.onnx", offset = 1024 : i64, length = 64 : i64} : tensor<16xf32>
  %wt = onnx.node "Transpose"(%w) {node_name = "w_t", onnx_attrs = {perm = [1, 0]}} : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %mm = onnx.node "MatMul"(%x, %wt) {node_name = "qkv_proj", onnx_attrs = {}} : (tensor<1x3x8xf32>, tensor<8x16xf32>) -> tensor<1x3x16xf32>
  %qkv = onnx.node "Add"(%b, %mm) {node_name = "qkv_proj_bias", onnx_attrs = {}} : (tensor<16xf32>, tensor<1x3x16xf32>) -> tensor<1x3x16xf32>
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  %y:3 = onnx.node "GroupQueryAttention"(%qkv, %none, %none, %none, %none, %seqlens, %total) {domain = "com.microsoft", node_name = "gqa", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64}} : (tensor<1x3x16xf32>, none, none, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// W already marked `transposed` (FoldWeightTranspose.cpp), a Constant bias sliced by value, and
// the rotary inputs and attributes carried over to the separate form (its RotaryEmbedding nodes
// read the same caches).
// CHECK-LABEL: func.func @packed_folded_rotary
// CHECK-DAG:   onnx.weight "qkv_w[q]" {file = "m.onnx", length = 256 : i64, offset = 0 : i64, transposed} : tensor<8x8xf32>
// CHECK-DAG:   onnx.weight "qkv_w[k]" {file = "m.onnx", length = 128 : i64, offset = 256 : i64, transposed} : tensor<8x4xf32>
// CHECK-DAG:   onnx.weight "qkv_w[v]" {file = "m.onnx", length = 128 : i64, offset = 384 : i64, transposed} : tensor<8x4xf32>
// CHECK-DAG:   onnx.node "Constant"() {node_name = "gqa/q_bias", onnx_attrs = {value = dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00]> : tensor<8xf32>}}
// CHECK-DAG:   onnx.node "Constant"() {node_name = "gqa/k_bias", onnx_attrs = {value = dense<[8.000000e+00, 9.000000e+00, 1.000000e+01, 1.100000e+01]> : tensor<4xf32>}}
// CHECK-DAG:   onnx.node "Constant"() {node_name = "gqa/v_bias", onnx_attrs = {value = dense<[1.200000e+01, 1.300000e+01, 1.400000e+01, 1.500000e+01]> : tensor<4xf32>}}
// CHECK-NOT:   "GroupQueryAttention"
// CHECK-NOT:   "RotaryEmbedding"
// CHECK:       onnx.node "Cos"
// CHECK:       onnx.node "Softmax"
// CHECK:       onnx.node "Reshape"({{.*}}) {node_name = "gqa",
func.func @packed_folded_rotary(%x: tensor<1x2x8xf32>) -> tensor<1x2x8xf32> {
  %none = onnx.none
  %w = onnx.weight "qkv_w" {file = "m.onnx", offset = 0 : i64, length = 512 : i64, transposed} : tensor<8x16xf32>
  %b = onnx.node "Constant"() {node_name = "qkv_b", onnx_attrs = {value = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]> : tensor<16xf32>}} : () -> tensor<16xf32>
  %mm = onnx.node "MatMul"(%x, %w) {node_name = "qkv_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x16xf32>) -> tensor<1x2x16xf32>
  %qkv = onnx.node "Add"(%mm, %b) {node_name = "qkv_proj_bias", onnx_attrs = {}} : (tensor<1x2x16xf32>, tensor<16xf32>) -> tensor<1x2x16xf32>
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<1> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<2> : tensor<i32>}} : () -> tensor<i32>
  %cos = onnx.node "Constant"() {node_name = "cos", onnx_attrs = {value = dense<[[1.0, 1.0], [0.5403022766113281, 0.9999499917030334]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sin = onnx.node "Constant"() {node_name = "sin", onnx_attrs = {value = dense<[[0.0, 0.0], [0.8414710164070129, 0.009999833069741726]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %y:3 = onnx.node "GroupQueryAttention"(%qkv, %none, %none, %none, %none, %seqlens, %total, %cos, %sin) {domain = "com.microsoft", node_name = "gqa", onnx_attrs = {do_rotary = 1 : i64, kv_num_heads = 1 : i64, num_heads = 2 : i64, rotary_interleaved = 0 : i64}} : (tensor<1x2x16xf32>, none, none, none, none, tensor<1xi32>, tensor<i32>, tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<1x2x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x2x8xf32>
}


// -----

// rotary_interleaved = 1 (GPT-J's pairs) carried to both RotaryEmbedding nodes, whose
// decomposition de-interleaves q's and k's heads before rotate-half RoPE and interleaves them back.
// CHECK-LABEL: func.func @packed_rotary_interleaved
// CHECK-NOT:   "RotaryEmbedding"
// CHECK:       onnx.node "Transpose"({{.*}}) {node_name = "gqa/q_rotary/deinterleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}}
// CHECK:       onnx.node "Transpose"({{.*}}) {node_name = "gqa/q_rotary/interleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}}
// CHECK:       onnx.node "Transpose"({{.*}}) {node_name = "gqa/k_rotary/deinterleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}}
// CHECK:       onnx.node "Transpose"({{.*}}) {node_name = "gqa/k_rotary/interleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}}
// CHECK:       onnx.node "Softmax"
func.func @packed_rotary_interleaved(%x: tensor<1x2x8xf32>) -> tensor<1x2x8xf32> {
  %none = onnx.none
  %w = onnx.weight "qkv_w" {file = "m.onnx", offset = 0 : i64, length = 512 : i64, transposed} : tensor<8x16xf32>
  %b = onnx.node "Constant"() {node_name = "qkv_b", onnx_attrs = {value = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]> : tensor<16xf32>}} : () -> tensor<16xf32>
  %mm = onnx.node "MatMul"(%x, %w) {node_name = "qkv_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x16xf32>) -> tensor<1x2x16xf32>
  %qkv = onnx.node "Add"(%mm, %b) {node_name = "qkv_proj_bias", onnx_attrs = {}} : (tensor<1x2x16xf32>, tensor<16xf32>) -> tensor<1x2x16xf32>
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<1> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<2> : tensor<i32>}} : () -> tensor<i32>
  %cos = onnx.node "Constant"() {node_name = "cos", onnx_attrs = {value = dense<[[1.0, 1.0], [0.5403022766113281, 0.9999499917030334]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sin = onnx.node "Constant"() {node_name = "sin", onnx_attrs = {value = dense<[[0.0, 0.0], [0.8414710164070129, 0.009999833069741726]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %y:3 = onnx.node "GroupQueryAttention"(%qkv, %none, %none, %none, %none, %seqlens, %total, %cos, %sin) {domain = "com.microsoft", node_name = "gqa", onnx_attrs = {do_rotary = 1 : i64, kv_num_heads = 1 : i64, num_heads = 2 : i64, rotary_interleaved = 1 : i64}} : (tensor<1x2x16xf32>, none, none, none, none, tensor<1xi32>, tensor<i32>, tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<1x2x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x2x8xf32>
}
// -----

// W stored [in, out] = [8, 16] (the onnxruntime-genai builder's layout): 64-byte rows, q the first
// 32 bytes of each (offset 0), k the next 16 (offset 32), v the last 16 (offset 48).
// CHECK-LABEL: func.func @packed_in_out
// CHECK-DAG:   %[[WQ:.*]] = onnx.weight "qkv_w[q]" {file = "m.onnx", length = 256 : i64, offset = 0 : i64, row_stride = 64 : i64} : tensor<8x8xf32>
// CHECK-DAG:   %[[WK:.*]] = onnx.weight "qkv_w[k]" {file = "m.onnx", length = 128 : i64, offset = 32 : i64, row_stride = 64 : i64} : tensor<8x4xf32>
// CHECK-DAG:   %[[WV:.*]] = onnx.weight "qkv_w[v]" {file = "m.onnx", length = 128 : i64, offset = 48 : i64, row_stride = 64 : i64} : tensor<8x4xf32>
// CHECK-NOT:   "GroupQueryAttention"
// CHECK:       onnx.node "MatMul"(%arg0, %[[WQ]]) {node_name = "gqa/q_proj/MatMul"
// CHECK:       onnx.node "MatMul"(%arg0, %[[WK]]) {node_name = "gqa/k_proj/MatMul"
// CHECK:       onnx.node "MatMul"(%arg0, %[[WV]]) {node_name = "gqa/v_proj/MatMul"
// CHECK:       onnx.node "Softmax"
func.func @packed_in_out(%x: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %w = onnx.weight "qkv_w" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<8x16xf32>
  %qkv = onnx.node "MatMul"(%x, %w) {node_name = "qkv_proj", onnx_attrs = {}} : (tensor<1x3x8xf32>, tensor<8x16xf32>) -> tensor<1x3x16xf32>
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  %y:3 = onnx.node "GroupQueryAttention"(%qkv, %none, %none, %none, %none, %seqlens, %total) {domain = "com.microsoft", node_name = "gqa", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64}} : (tensor<1x3x16xf32>, none, none, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}
