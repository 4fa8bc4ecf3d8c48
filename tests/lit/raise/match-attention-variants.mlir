// RUN: disagmoe-opt %s -raise-onnx-to-moe=match-only -split-input-file -verify-diagnostics | FileCheck %s
// AttentionPattern's variants (passes/raise/patterns/AttentionPattern.cpp, RopeAndMasks.cpp) in IR, with
// match-only: grouped-query heads, Qwen3's per-head q/k RMSNorm, sliding windows (by value and as
// Trilu structure), GPT-OSS's biases and sinks, and the near misses of each, refused at the node at
// fault. Each function: hidden 8, 2 query heads and 1 KV head of head_dim 4 (scale 1/sqrt(4)),
// RoPE theta 10000 (inverse frequencies [1, 0.01]), token ids [1, S]; the attention output joins
// the residual Add, which match-only leaves as an ONNX node.

// Two query heads share one KV head (the k/v projections are [8, 4]): num_kv_heads 1 from the
// projection widths over head_dim 4, which the scale 1/sqrt(4) gives.
// CHECK-LABEL: func.func @attention_gqa
// CHECK:       %[[E:.*]] = moe.embedding
// CHECK-NEXT:  %[[A:.*]] = moe.attention %[[E]] weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 4 : i64, layer = -1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.000000e+04 : f64} : tensor<1x2x8xf32>, (tensor<8x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
// CHECK-NEXT:  onnx.node "Add"(%[[E]], %[[A]]) {node_name = "residual"
// CHECK-NOT:   onnx.node
func.func @attention_gqa(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x2x2xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// A bfloat16 export's inv_freq buffer is rounded to bfloat16 (model.to(torch.bfloat16)):
// 0.010009765625 is bfloat16's nearest to 10000^(-2/4) = 0.01 (0x3C24), 0.1% off, so it is not
// plain RoPE to fp32 precision for theta = 10000 (its fp32 reading is theta = 9980.5: one free
// frequency fits any theta); roundedRopeTheta finds theta = 10000, the number with the fewest
// digits whose frequencies round to these, and the shorter theta wins (the plan then computes the
// frequencies from theta in fp32).
// CHECK-LABEL: func.func @attention_rope_bf16_rounded
// CHECK:       moe.attention %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 4 : i64, layer = -1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.000000e+04 : f64}
func.func @attention_rope_bf16_rounded(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.010009765625]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x2x2xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// Qwen3: an RMSNorm over head_dim on the per-head views of q and k (weights [head_dim], epsilon
// 1e-6) before RoPE, absorbed into the attention as qk_norm.
// CHECK-LABEL: func.func @attention_qk_norm
// CHECK-DAG:   %[[QN:.*]] = onnx.weight "q_norm"
// CHECK-DAG:   %[[KN:.*]] = onnx.weight "k_norm"
// CHECK:       moe.attention %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) qk_norm(%[[QN]], %[[KN]] : tensor<4xf32>, tensor<4xf32>) {head_dim = 4 : i64, layer = -1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, qk_norm_eps = 9.9999999999999995E-7 : f64, rope_theta = 1.000000e+04 : f64}
// CHECK-NOT:   "ReduceMean"
func.func @attention_qk_norm(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %qnw = onnx.weight "q_norm" {file = "m.onnx", offset = 1280 : i64, length = 16 : i64} : tensor<4xf32>
  %knw = onnx.weight "k_norm" {file = "m.onnx", offset = 1296 : i64, length = 16 : i64} : tensor<4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %qn_two = onnx.node "Constant"() {node_name = "qn_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %qn_sq = onnx.node "Pow"(%q4, %qn_two) {node_name = "qn_pow", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<f32>) -> tensor<1x2x2x4xf32>
  %qn_m = onnx.node "ReduceMean"(%qn_sq) {node_name = "qn_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x1xf32>
  %qn_eps = onnx.node "Constant"() {node_name = "qn_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %qn_a = onnx.node "Add"(%qn_m, %qn_eps) {node_name = "qn_add", onnx_attrs = {}} : (tensor<1x2x2x1xf32>, tensor<f32>) -> tensor<1x2x2x1xf32>
  %qn_s = onnx.node "Sqrt"(%qn_a) {node_name = "qn_sqrt", onnx_attrs = {}} : (tensor<1x2x2x1xf32>) -> tensor<1x2x2x1xf32>
  %qn_d = onnx.node "Div"(%q4, %qn_s) {node_name = "qn_scaled", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x4xf32>
  %qn_n = onnx.node "Mul"(%qn_d, %qnw) {node_name = "qn_weighted", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<4xf32>) -> tensor<1x2x2x4xf32>
  %kn_two = onnx.node "Constant"() {node_name = "kn_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %kn_sq = onnx.node "Pow"(%k4, %kn_two) {node_name = "kn_pow", onnx_attrs = {}} : (tensor<1x2x1x4xf32>, tensor<f32>) -> tensor<1x2x1x4xf32>
  %kn_m = onnx.node "ReduceMean"(%kn_sq) {node_name = "kn_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x1x4xf32>) -> tensor<1x2x1x1xf32>
  %kn_eps = onnx.node "Constant"() {node_name = "kn_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %kn_a = onnx.node "Add"(%kn_m, %kn_eps) {node_name = "kn_add", onnx_attrs = {}} : (tensor<1x2x1x1xf32>, tensor<f32>) -> tensor<1x2x1x1xf32>
  %kn_s = onnx.node "Sqrt"(%kn_a) {node_name = "kn_sqrt", onnx_attrs = {}} : (tensor<1x2x1x1xf32>) -> tensor<1x2x1x1xf32>
  %kn_d = onnx.node "Div"(%k4, %kn_s) {node_name = "kn_scaled", onnx_attrs = {}} : (tensor<1x2x1x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x4xf32>
  %kn_n = onnx.node "Mul"(%kn_d, %knw) {node_name = "kn_weighted", onnx_attrs = {}} : (tensor<1x2x1x4xf32>, tensor<4xf32>) -> tensor<1x2x1x4xf32>
  %qt = onnx.node "Transpose"(%qn_n) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kt = onnx.node "Transpose"(%kn_n) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x2x2xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// A norm on q but not on k is not Qwen3's attention: refused at the projection.
func.func @attention_qk_norm_only_q_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %qnw = onnx.weight "q_norm" {file = "m.onnx", offset = 1280 : i64, length = 16 : i64} : tensor<4xf32>
  %knw = onnx.weight "k_norm" {file = "m.onnx", offset = 1296 : i64, length = 16 : i64} : tensor<4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  // expected-error @+1 {{node 'q_proj' (MatMul): attention: an RMSNorm on only one of q and k}}
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %qn_two = onnx.node "Constant"() {node_name = "qn_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %qn_sq = onnx.node "Pow"(%q4, %qn_two) {node_name = "qn_pow", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<f32>) -> tensor<1x2x2x4xf32>
  %qn_m = onnx.node "ReduceMean"(%qn_sq) {node_name = "qn_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x1xf32>
  %qn_eps = onnx.node "Constant"() {node_name = "qn_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %qn_a = onnx.node "Add"(%qn_m, %qn_eps) {node_name = "qn_add", onnx_attrs = {}} : (tensor<1x2x2x1xf32>, tensor<f32>) -> tensor<1x2x2x1xf32>
  %qn_s = onnx.node "Sqrt"(%qn_a) {node_name = "qn_sqrt", onnx_attrs = {}} : (tensor<1x2x2x1xf32>) -> tensor<1x2x2x1xf32>
  %qn_d = onnx.node "Div"(%q4, %qn_s) {node_name = "qn_scaled", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x4xf32>
  %qn_n = onnx.node "Mul"(%qn_d, %qnw) {node_name = "qn_weighted", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<4xf32>) -> tensor<1x2x2x4xf32>
  %qt = onnx.node "Transpose"(%qn_n) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x2x2xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// q and k norms with different epsilons (1e-6 and 1e-5): moe.attention holds one.
func.func @attention_qk_norm_eps_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %qnw = onnx.weight "q_norm" {file = "m.onnx", offset = 1280 : i64, length = 16 : i64} : tensor<4xf32>
  %knw = onnx.weight "k_norm" {file = "m.onnx", offset = 1296 : i64, length = 16 : i64} : tensor<4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  // expected-error @+1 {{node 'k_proj' (MatMul): attention: q and k RMSNorms have different epsilons}}
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %qn_two = onnx.node "Constant"() {node_name = "qn_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %qn_sq = onnx.node "Pow"(%q4, %qn_two) {node_name = "qn_pow", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<f32>) -> tensor<1x2x2x4xf32>
  %qn_m = onnx.node "ReduceMean"(%qn_sq) {node_name = "qn_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x1xf32>
  %qn_eps = onnx.node "Constant"() {node_name = "qn_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %qn_a = onnx.node "Add"(%qn_m, %qn_eps) {node_name = "qn_add", onnx_attrs = {}} : (tensor<1x2x2x1xf32>, tensor<f32>) -> tensor<1x2x2x1xf32>
  %qn_s = onnx.node "Sqrt"(%qn_a) {node_name = "qn_sqrt", onnx_attrs = {}} : (tensor<1x2x2x1xf32>) -> tensor<1x2x2x1xf32>
  %qn_d = onnx.node "Div"(%q4, %qn_s) {node_name = "qn_scaled", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x4xf32>
  %qn_n = onnx.node "Mul"(%qn_d, %qnw) {node_name = "qn_weighted", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<4xf32>) -> tensor<1x2x2x4xf32>
  %kn_two = onnx.node "Constant"() {node_name = "kn_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %kn_sq = onnx.node "Pow"(%k4, %kn_two) {node_name = "kn_pow", onnx_attrs = {}} : (tensor<1x2x1x4xf32>, tensor<f32>) -> tensor<1x2x1x4xf32>
  %kn_m = onnx.node "ReduceMean"(%kn_sq) {node_name = "kn_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x1x4xf32>) -> tensor<1x2x1x1xf32>
  %kn_eps = onnx.node "Constant"() {node_name = "kn_eps", onnx_attrs = {value = dense<1.0e-5> : tensor<f32>}} : () -> tensor<f32>
  %kn_a = onnx.node "Add"(%kn_m, %kn_eps) {node_name = "kn_add", onnx_attrs = {}} : (tensor<1x2x1x1xf32>, tensor<f32>) -> tensor<1x2x1x1xf32>
  %kn_s = onnx.node "Sqrt"(%kn_a) {node_name = "kn_sqrt", onnx_attrs = {}} : (tensor<1x2x1x1xf32>) -> tensor<1x2x1x1xf32>
  %kn_d = onnx.node "Div"(%k4, %kn_s) {node_name = "kn_scaled", onnx_attrs = {}} : (tensor<1x2x1x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x4xf32>
  %kn_n = onnx.node "Mul"(%kn_d, %knw) {node_name = "kn_weighted", onnx_attrs = {}} : (tensor<1x2x1x4xf32>, tensor<4xf32>) -> tensor<1x2x1x4xf32>
  %qt = onnx.node "Transpose"(%qn_n) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kt = onnx.node "Transpose"(%kn_n) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x2x2xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// A sliding window of 2 read by value (seq 4): query i sees keys max(0, i - 1) .. i, as the fold
// stage leaves masking_utils' and AttentionMaskConverter's windows.
// CHECK-LABEL: func.func @attention_sliding_window
// CHECK:       moe.attention {{.*}} {head_dim = 4 : i64, layer = -1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.000000e+04 : f64, sliding_window = 2 : i64}
// CHECK-NOT:   "Softmax"
func.func @attention_sliding_window(%ids: tensor<1x4xi64>) -> tensor<1x4x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 4, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 4, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>}} : () -> tensor<4x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x4x2xf32>) -> tensor<1x1x4x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x4x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, 0.0, 0.0, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, 0.0, 0.0]]> : tensor<4x4xf32>}} : () -> tensor<4x4xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x4x4xf32>) -> tensor<1x4x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 4, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x4x2x4xf32>, tensor<3xi64>) -> tensor<1x4x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}

// -----

// The same window as structure (a mask above fold-onnx-constants' max-elements stays so):
// triu(full(-inf), 1) + tril(full(-inf), -2), HF's sliding_window_overlay.
// CHECK-LABEL: func.func @attention_sliding_window_trilu
// CHECK:       moe.attention {{.*}}sliding_window = 2 : i64}
// CHECK-NOT:   "Trilu"
func.func @attention_sliding_window_trilu(%ids: tensor<1x4xi64>) -> tensor<1x4x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 4, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 4, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>}} : () -> tensor<4x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x4x2xf32>) -> tensor<1x1x4x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x4x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %full = onnx.node "Constant"() {node_name = "full", onnx_attrs = {value = dense<0xFF800000> : tensor<4x4xf32>}} : () -> tensor<4x4xf32>
  %ck = onnx.node "Constant"() {node_name = "causal_k", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %causal = onnx.node "Trilu"(%full, %ck) {node_name = "causal", onnx_attrs = {upper = 1 : i64}} : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
  %winoff = onnx.node "Constant"() {node_name = "window_k", onnx_attrs = {value = dense<-2> : tensor<i64>}} : () -> tensor<i64>
  %win = onnx.node "Trilu"(%full, %winoff) {node_name = "window", onnx_attrs = {upper = 0 : i64}} : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
  %mask = onnx.node "Add"(%causal, %win) {node_name = "mask", onnx_attrs = {}} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x4x4xf32>) -> tensor<1x4x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 4, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x4x2x4xf32>, tensor<3xi64>) -> tensor<1x4x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}

// -----

// The window's diagonal with the wrong sign, tril(full(-inf), +2), hides every key of every query:
// refused at that Trilu (it was raised as full causal attention before the pattern checked the
// recorded failure).
func.func @attention_window_wrong_sign_refused(%ids: tensor<1x4xi64>) -> tensor<1x4x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 4, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 4, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>}} : () -> tensor<4x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x4x2xf32>) -> tensor<1x1x4x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x4x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %full = onnx.node "Constant"() {node_name = "full", onnx_attrs = {value = dense<0xFF800000> : tensor<4x4xf32>}} : () -> tensor<4x4xf32>
  %ck = onnx.node "Constant"() {node_name = "causal_k", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %causal = onnx.node "Trilu"(%full, %ck) {node_name = "causal", onnx_attrs = {upper = 1 : i64}} : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
  %winoff = onnx.node "Constant"() {node_name = "window_k", onnx_attrs = {value = dense<2> : tensor<i64>}} : () -> tensor<i64>
  // expected-error @+1 {{node 'window' (Trilu): attention: a lower-triangular mask whose diagonal offset is not a negative constant (sliding window)}}
  %win = onnx.node "Trilu"(%full, %winoff) {node_name = "window", onnx_attrs = {upper = 0 : i64}} : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
  %mask = onnx.node "Add"(%causal, %win) {node_name = "mask", onnx_attrs = {}} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x4x4xf32>) -> tensor<1x4x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 4, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x4x2x4xf32>, tensor<3xi64>) -> tensor<1x4x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}

// -----

// A mask whose rows do not share one window (query 3 sees 2 keys, query 2 sees 3) is neither
// causal nor a sliding window: refused at its Add, naming the first row that disagrees.
func.func @attention_window_ragged_refused(%ids: tensor<1x4xi64>) -> tensor<1x4x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 4, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 4, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>}} : () -> tensor<4x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x4x2xf32>) -> tensor<1x1x4x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x4x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, 0.0, 0.0]]> : tensor<4x4xf32>}} : () -> tensor<4x4xf32>
  // expected-error @+1 {{node 'masked' (Add): attention: the mask added before the Softmax is neither causal nor a sliding window: query 2 sees keys from 0, not from 1 (a sliding window of 2)}}
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x4x4xf32>) -> tensor<1x4x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 4, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x4x2x4xf32>, tensor<3xi64>) -> tensor<1x4x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}

// -----

// triu(full(-inf)) without diagonal = 1 (k = 0) hides each query's own key too: refused at the
// Trilu (raised as causal attention before).
func.func @attention_causal_trilu_diagonal_refused(%ids: tensor<1x4xi64>) -> tensor<1x4x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 4, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 4, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>}} : () -> tensor<4x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x4x2xf32>) -> tensor<1x1x4x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x4x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %full = onnx.node "Constant"() {node_name = "full", onnx_attrs = {value = dense<0xFF800000> : tensor<4x4xf32>}} : () -> tensor<4x4xf32>
  // expected-error @+1 {{node 'causal' (Trilu): attention: the causal Trilu(upper = 1) must hide the keys after the query (k = 1), not k = 0}}
  %causal = onnx.node "Trilu"(%full) {node_name = "causal", onnx_attrs = {upper = 1 : i64}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %mask = onnx.node "Identity"(%causal) {node_name = "mask", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x4x4xf32>) -> tensor<1x4x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 4, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x4x2x4xf32>, tensor<3xi64>) -> tensor<1x4x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}

// -----

// triu(full(-inf), 2) lets each query see the next key: not causal, refused at the Trilu.
func.func @attention_causal_trilu_offset_refused(%ids: tensor<1x4xi64>) -> tensor<1x4x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 4, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 4, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>}} : () -> tensor<4x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x4x2xf32>) -> tensor<1x1x4x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x4x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %full = onnx.node "Constant"() {node_name = "full", onnx_attrs = {value = dense<0xFF800000> : tensor<4x4xf32>}} : () -> tensor<4x4xf32>
  %ck = onnx.node "Constant"() {node_name = "causal_k", onnx_attrs = {value = dense<2> : tensor<i64>}} : () -> tensor<i64>
  // expected-error @+1 {{node 'causal' (Trilu): attention: the causal Trilu(upper = 1) must hide the keys after the query (k = 1), not k = 2}}
  %causal = onnx.node "Trilu"(%full, %ck) {node_name = "causal", onnx_attrs = {upper = 1 : i64}} : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
  %mask = onnx.node "Identity"(%causal) {node_name = "mask", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x4x4xf32>) -> tensor<1x4x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 4, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x4x2x4xf32>, tensor<3xi64>) -> tensor<1x4x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}

// -----

// The causal Trilu of +inf (the mask's sign flipped) hides nothing: refused at the Trilu.
func.func @attention_causal_trilu_positive_refused(%ids: tensor<1x4xi64>) -> tensor<1x4x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 4, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 4, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>}} : () -> tensor<4x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x4x2xf32>) -> tensor<1x1x4x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x4x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %full = onnx.node "Constant"() {node_name = "full", onnx_attrs = {value = dense<0x7F800000> : tensor<4x4xf32>}} : () -> tensor<4x4xf32>
  %ck = onnx.node "Constant"() {node_name = "causal_k", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  // expected-error @+1 {{node 'causal' (Trilu): attention: the causal Trilu keeps a triangle of inf, which hides no key (a mask adds -inf or finfo.min)}}
  %causal = onnx.node "Trilu"(%full, %ck) {node_name = "causal", onnx_attrs = {upper = 1 : i64}} : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
  %mask = onnx.node "Identity"(%causal) {node_name = "mask", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x4x4xf32>) -> tensor<1x4x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 4, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x4x2x4xf32>, tensor<3xi64>) -> tensor<1x4x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}

// -----

// The same sign flip by value (finfo.max above the diagonal) is no mask of hidden keys at all:
// refused at the Softmax as having no causal mask.
func.func @attention_mask_positive_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x2x2xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, 3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  // expected-error @+1 {{node 'softmax' (Softmax): attention: no causal mask (Trilu(upper=1), or -inf where key position > query position) added before the Softmax; only causal decoders are supported}}
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// GPT-OSS: biases on q, k, v and o; one sink logit per head concatenated to the scores (stored
// by constant folding as [1, heads, 1, 1], read as [heads]) and its column dropped after the
// Softmax; a sliding window of 2.
// CHECK-LABEL: func.func @attention_gpt_oss
// CHECK-DAG:   %[[BQ:.*]] = onnx.weight "bq"
// CHECK-DAG:   %[[BO:.*]] = onnx.weight "bo"
// CHECK-DAG:   %[[S:.*]] = onnx.weight "sinks" {file = "m.onnx", length = 8 : i64, offset = {{[0-9]+}} : i64} : tensor<2xf32>
// CHECK:       moe.attention %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) bq(%[[BQ]] : tensor<8xf32>) bk(%{{.*}} : tensor<4xf32>) bv(%{{.*}} : tensor<4xf32>) bo(%[[BO]] : tensor<8xf32>) sinks(%[[S]] : tensor<2xf32>) {head_dim = 4 : i64, layer = -1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.000000e+04 : f64, sliding_window = 2 : i64}
// CHECK-NOT:   "Concat"
// CHECK-NOT:   "Slice"
func.func @attention_gpt_oss(%ids: tensor<1x4xi64>) -> tensor<1x4x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %bq = onnx.weight "bq" {file = "m.onnx", offset = 1280 : i64, length = 32 : i64} : tensor<8xf32>
  %bk = onnx.weight "bk" {file = "m.onnx", offset = 1312 : i64, length = 16 : i64} : tensor<4xf32>
  %bv = onnx.weight "bv" {file = "m.onnx", offset = 1328 : i64, length = 16 : i64} : tensor<4xf32>
  %bo = onnx.weight "bo" {file = "m.onnx", offset = 1344 : i64, length = 32 : i64} : tensor<8xf32>
  %sinks = onnx.weight "sinks" {file = "m.onnx", offset = 1376 : i64, length = 8 : i64} : tensor<1x2x1x1xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %qb = onnx.node "Add"(%q, %bq) {node_name = "q_bias", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %kb = onnx.node "Add"(%k, %bk) {node_name = "k_bias", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xf32>) -> tensor<1x4x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %vb = onnx.node "Add"(%v, %bv) {node_name = "v_bias", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xf32>) -> tensor<1x4x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 4, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 4, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%qb, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %k4 = onnx.node "Reshape"(%kb, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %v4 = onnx.node "Reshape"(%vb, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>}} : () -> tensor<4x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x4x2xf32>) -> tensor<1x1x4x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x4x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, 0.0, 0.0, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, 0.0, 0.0]]> : tensor<4x4xf32>}} : () -> tensor<4x4xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %sink_expand = onnx.node "Constant"() {node_name = "sink_expand", onnx_attrs = {value = dense<[1, 2, 4, 1]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %sinkx = onnx.node "Expand"(%sinks, %sink_expand) {node_name = "sinks_expanded", onnx_attrs = {}} : (tensor<1x2x1x1xf32>, tensor<4xi64>) -> tensor<1x2x4x1xf32>
  %cat = onnx.node "Concat"(%sm, %sinkx) {node_name = "with_sinks", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %p = onnx.node "Softmax"(%cat) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x5xf32>
  %cS = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %pd = onnx.node "Slice"(%p, %c0, %cS, %last) {node_name = "drop_sinks", onnx_attrs = {}} : (tensor<1x2x4x5xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %pv = onnx.node "MatMul"(%pd, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x4x4xf32>) -> tensor<1x4x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 4, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x4x2x4xf32>, tensor<3xi64>) -> tensor<1x4x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %yb = onnx.node "Add"(%y, %bo) {node_name = "o_bias", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %r = onnx.node "Add"(%x, %yb) {node_name = "residual", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}

// -----

// Unfolded sinks: the [heads] parameter reshaped to [1, heads, 1, 1] and expanded (HF's
// sinks.reshape(1, -1, 1, 1).expand(...)).
// CHECK-LABEL: func.func @attention_sinks_reshaped
// CHECK:       %[[S:.*]] = onnx.weight "sinks" {{.*}} : tensor<2xf32>
// CHECK:       moe.attention {{.*}} sinks(%[[S]] : tensor<2xf32>) {head_dim = 4 : i64, layer = -1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.000000e+04 : f64}
func.func @attention_sinks_reshaped(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %sinks = onnx.weight "sinks" {file = "m.onnx", offset = 1280 : i64, length = 8 : i64} : tensor<2xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x2x2xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %sink_shape = onnx.node "Constant"() {node_name = "sink_shape", onnx_attrs = {value = dense<[1, 2, 1, 1]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %sinks4 = onnx.node "Reshape"(%sinks, %sink_shape) {node_name = "sinks_view", onnx_attrs = {}} : (tensor<2xf32>, tensor<4xi64>) -> tensor<1x2x1x1xf32>
  %sink_expand = onnx.node "Constant"() {node_name = "sink_expand", onnx_attrs = {value = dense<[1, 2, 2, 1]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %sinkx = onnx.node "Expand"(%sinks4, %sink_expand) {node_name = "sinks_expanded", onnx_attrs = {}} : (tensor<1x2x1x1xf32>, tensor<4xi64>) -> tensor<1x2x2x1xf32>
  %cat = onnx.node "Concat"(%sm, %sinkx) {node_name = "with_sinks", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x3xf32>
  %p = onnx.node "Softmax"(%cat) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
  %cS = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %pd = onnx.node "Slice"(%p, %c0, %cS, %last) {node_name = "drop_sinks", onnx_attrs = {}} : (tensor<1x2x2x3xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%pd, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// A sink logit per head and query ([1, 2, 4, 1]) is not GPT-OSS's: refused at the Concat.
func.func @attention_sinks_per_query_refused(%ids: tensor<1x4xi64>) -> tensor<1x4x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %sinks = onnx.weight "sinks" {file = "m.onnx", offset = 1280 : i64, length = 32 : i64} : tensor<1x2x4x1xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 4, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 4, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>}} : () -> tensor<4x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x4x2xf32>) -> tensor<1x1x4x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x4x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>}} : () -> tensor<4x4xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %sink_expand = onnx.node "Constant"() {node_name = "sink_expand", onnx_attrs = {value = dense<[1, 2, 4, 1]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %sinkx = onnx.node "Expand"(%sinks, %sink_expand) {node_name = "sinks_expanded", onnx_attrs = {}} : (tensor<1x2x4x1xf32>, tensor<4xi64>) -> tensor<1x2x4x1xf32>
  // expected-error @+1 {{node 'with_sinks' (Concat): attention: the scores are concatenated with something that is not one sink logit per head [2]}}
  %cat = onnx.node "Concat"(%sm, %sinkx) {node_name = "with_sinks", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x5xf32>
  %p = onnx.node "Softmax"(%cat) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x5xf32>) -> tensor<1x2x4x5xf32>
  %cS = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %pd = onnx.node "Slice"(%p, %c0, %cS, %last) {node_name = "drop_sinks", onnx_attrs = {}} : (tensor<1x2x4x5xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %pv = onnx.node "MatMul"(%pd, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x4x4xf32>) -> tensor<1x4x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 4, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x4x2x4xf32>, tensor<3xi64>) -> tensor<1x4x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}

// -----

// Two logits laid along the query axis ([1, 1, 2, 1]) at a sequence as long as the heads count:
// one per query, not per head. Refused at the Concat (they were read as per-head sinks before).
func.func @attention_sinks_query_axis_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %sinks = onnx.weight "sinks" {file = "m.onnx", offset = 1280 : i64, length = 8 : i64} : tensor<1x1x2x1xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x2x2xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %sink_expand = onnx.node "Constant"() {node_name = "sink_expand", onnx_attrs = {value = dense<[1, 2, 2, 1]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %sinkx = onnx.node "Expand"(%sinks, %sink_expand) {node_name = "sinks_expanded", onnx_attrs = {}} : (tensor<1x1x2x1xf32>, tensor<4xi64>) -> tensor<1x2x2x1xf32>
  // expected-error @+1 {{node 'with_sinks' (Concat): attention: the sink logits are broadcast from [1, 1, 2, 1], not [1, heads = 2, 1, 1]: not one logit per head}}
  %cat = onnx.node "Concat"(%sm, %sinkx) {node_name = "with_sinks", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x3xf32>
  %p = onnx.node "Softmax"(%cat) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
  %cS = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %pd = onnx.node "Slice"(%p, %c0, %cS, %last) {node_name = "drop_sinks", onnx_attrs = {}} : (tensor<1x2x2x3xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%pd, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// The same misplacement by the Reshape of a [heads] parameter: refused (accepted before).
func.func @attention_sinks_reshaped_query_axis_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %sinks = onnx.weight "sinks" {file = "m.onnx", offset = 1280 : i64, length = 8 : i64} : tensor<2xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qt, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x2x2xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %sink_shape = onnx.node "Constant"() {node_name = "sink_shape", onnx_attrs = {value = dense<[1, 1, 2, 1]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %sinks4 = onnx.node "Reshape"(%sinks, %sink_shape) {node_name = "sinks_view", onnx_attrs = {}} : (tensor<2xf32>, tensor<4xi64>) -> tensor<1x1x2x1xf32>
  %sink_expand = onnx.node "Constant"() {node_name = "sink_expand", onnx_attrs = {value = dense<[1, 2, 2, 1]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %sinkx = onnx.node "Expand"(%sinks4, %sink_expand) {node_name = "sinks_expanded", onnx_attrs = {}} : (tensor<1x1x2x1xf32>, tensor<4xi64>) -> tensor<1x2x2x1xf32>
  // expected-error @+1 {{node 'with_sinks' (Concat): attention: the sink logits are broadcast from [1, 1, 2, 1], not [1, heads = 2, 1, 1]: not one logit per head}}
  %cat = onnx.node "Concat"(%sm, %sinkx) {node_name = "with_sinks", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x3xf32>
  %p = onnx.node "Softmax"(%cat) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
  %cS = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %pd = onnx.node "Slice"(%p, %c0, %cS, %last) {node_name = "drop_sinks", onnx_attrs = {}} : (tensor<1x2x2x3xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%pd, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// GPT-J's interleaved RoPE (onnxruntime's RotaryEmbedding interleaved = 1 after normalize-onnx):
// each q and k head de-interleaved, [.., 2, 2] pairs -> Transpose(perm [0, 1, 2, 4, 3]), before
// rotate-half RoPE: moe.attention with rope_interleaved (RopeAndMasks.cpp ropePairsMismatch).
// CHECK-LABEL: func.func @attention_rope_interleaved
// CHECK:       moe.attention %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 4 : i64, layer = -1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_interleaved, rope_theta = 1.000000e+04 : f64}
// CHECK-NOT:   onnx.node "Transpose"
func.func @attention_rope_interleaved(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %qs5 = onnx.node "Constant"() {node_name = "q_pairs_shape", onnx_attrs = {value = dense<[1, 2, 2, 2, 2]> : tensor<5xi64>}} : () -> tensor<5xi64>
  %q5 = onnx.node "Reshape"(%qt, %qs5) {node_name = "q_pairs_split", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<5xi64>) -> tensor<1x2x2x2x2xf32>
  %q5t = onnx.node "Transpose"(%q5) {node_name = "q_deinterleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x2x2xf32>
  %qs4 = onnx.node "Constant"() {node_name = "q_heads_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %qd = onnx.node "Reshape"(%q5t, %qs4) {node_name = "q_pairs_merge", onnx_attrs = {}} : (tensor<1x2x2x2x2xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %ks5 = onnx.node "Constant"() {node_name = "k_pairs_shape", onnx_attrs = {value = dense<[1, 1, 2, 2, 2]> : tensor<5xi64>}} : () -> tensor<5xi64>
  %k5 = onnx.node "Reshape"(%kt, %ks5) {node_name = "k_pairs_split", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<5xi64>) -> tensor<1x1x2x2x2xf32>
  %k5t = onnx.node "Transpose"(%k5) {node_name = "k_deinterleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}} : (tensor<1x1x2x2x2xf32>) -> tensor<1x1x2x2x2xf32>
  %ks4 = onnx.node "Constant"() {node_name = "k_heads_shape", onnx_attrs = {value = dense<[1, 1, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kd = onnx.node "Reshape"(%k5t, %ks4) {node_name = "k_pairs_merge", onnx_attrs = {}} : (tensor<1x1x2x2x2xf32>, tensor<4xi64>) -> tensor<1x1x2x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qd, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qd, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qd, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kd, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kd, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kd, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x2x2xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}


// -----

// Only q de-interleaved: q and k rotate different dims, refused at the scores.
func.func @attention_rope_interleaved_q_only(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %qs5 = onnx.node "Constant"() {node_name = "q_pairs_shape", onnx_attrs = {value = dense<[1, 2, 2, 2, 2]> : tensor<5xi64>}} : () -> tensor<5xi64>
  %q5 = onnx.node "Reshape"(%qt, %qs5) {node_name = "q_pairs_split", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<5xi64>) -> tensor<1x2x2x2x2xf32>
  %q5t = onnx.node "Transpose"(%q5) {node_name = "q_deinterleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x2x2xf32>
  %qs4 = onnx.node "Constant"() {node_name = "q_heads_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %qd = onnx.node "Reshape"(%q5t, %qs4) {node_name = "q_pairs_merge", onnx_attrs = {}} : (tensor<1x2x2x2x2xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qd, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qd, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qd, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kt, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  // expected-error @+1 {{node 'scores' (MatMul): RoPE: only q rotates GPT-J's interleaved pairs (the other the halves)}}
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x2x2xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}


// -----

// Both de-interleaved, only q interleaved back after the rotation: q . k is no longer the
// de-interleaved heads' product, refused.
func.func @attention_rope_interleave_back_q_only(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %qs5 = onnx.node "Constant"() {node_name = "q_pairs_shape", onnx_attrs = {value = dense<[1, 2, 2, 2, 2]> : tensor<5xi64>}} : () -> tensor<5xi64>
  %q5 = onnx.node "Reshape"(%qt, %qs5) {node_name = "q_pairs_split", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<5xi64>) -> tensor<1x2x2x2x2xf32>
  %q5t = onnx.node "Transpose"(%q5) {node_name = "q_deinterleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x2x2xf32>
  %qs4 = onnx.node "Constant"() {node_name = "q_heads_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %qd = onnx.node "Reshape"(%q5t, %qs4) {node_name = "q_pairs_merge", onnx_attrs = {}} : (tensor<1x2x2x2x2xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %ks5 = onnx.node "Constant"() {node_name = "k_pairs_shape", onnx_attrs = {value = dense<[1, 1, 2, 2, 2]> : tensor<5xi64>}} : () -> tensor<5xi64>
  %k5 = onnx.node "Reshape"(%kt, %ks5) {node_name = "k_pairs_split", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<5xi64>) -> tensor<1x1x2x2x2xf32>
  %k5t = onnx.node "Transpose"(%k5) {node_name = "k_deinterleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}} : (tensor<1x1x2x2x2xf32>) -> tensor<1x1x2x2x2xf32>
  %ks4 = onnx.node "Constant"() {node_name = "k_heads_shape", onnx_attrs = {value = dense<[1, 1, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kd = onnx.node "Reshape"(%k5t, %ks4) {node_name = "k_pairs_merge", onnx_attrs = {}} : (tensor<1x1x2x2x2xf32>, tensor<4xi64>) -> tensor<1x1x2x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qd, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qd, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qd, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %qb5s = onnx.node "Constant"() {node_name = "q_back_shape", onnx_attrs = {value = dense<[1, 2, 2, 2, 2]> : tensor<5xi64>}} : () -> tensor<5xi64>
  %qb5 = onnx.node "Reshape"(%qr, %qb5s) {node_name = "q_back_split", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<5xi64>) -> tensor<1x2x2x2x2xf32>
  %qb5t = onnx.node "Transpose"(%qb5) {node_name = "q_interleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x2x2xf32>
  %qb4s = onnx.node "Constant"() {node_name = "q_back_heads", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %qback = onnx.node "Reshape"(%qb5t, %qb4s) {node_name = "q_back_merge", onnx_attrs = {}} : (tensor<1x2x2x2x2xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kd, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kd, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kd, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  // expected-error @+1 {{node 'scores' (MatMul): RoPE: only q is interleaved back after the rotation (q . k changes)}}
  %s = onnx.node "MatMul"(%qback, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x2x2xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}


// -----

// A 5-D permutation of q's head dims that is not the de-interleave, refused naming it.
func.func @attention_rope_unknown_permutation(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %qs5 = onnx.node "Constant"() {node_name = "q_pairs_shape", onnx_attrs = {value = dense<[1, 2, 2, 2, 2]> : tensor<5xi64>}} : () -> tensor<5xi64>
  %q5 = onnx.node "Reshape"(%qt, %qs5) {node_name = "q_pairs_split", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<5xi64>) -> tensor<1x2x2x2x2xf32>
  %q5t = onnx.node "Transpose"(%q5) {node_name = "q_deinterleave", onnx_attrs = {perm = [0, 1, 3, 2, 4]}} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x2x2xf32>
  %qs4 = onnx.node "Constant"() {node_name = "q_heads_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %qd = onnx.node "Reshape"(%q5t, %qs4) {node_name = "q_pairs_merge", onnx_attrs = {}} : (tensor<1x2x2x2x2xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %ks5 = onnx.node "Constant"() {node_name = "k_pairs_shape", onnx_attrs = {value = dense<[1, 1, 2, 2, 2]> : tensor<5xi64>}} : () -> tensor<5xi64>
  %k5 = onnx.node "Reshape"(%kt, %ks5) {node_name = "k_pairs_split", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<5xi64>) -> tensor<1x1x2x2x2xf32>
  %k5t = onnx.node "Transpose"(%k5) {node_name = "k_deinterleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}} : (tensor<1x1x2x2x2xf32>) -> tensor<1x1x2x2x2xf32>
  %ks4 = onnx.node "Constant"() {node_name = "k_heads_shape", onnx_attrs = {value = dense<[1, 1, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kd = onnx.node "Reshape"(%k5t, %ks4) {node_name = "k_pairs_merge", onnx_attrs = {}} : (tensor<1x1x2x2x2xf32>, tensor<4xi64>) -> tensor<1x1x2x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.01]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qd, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qd, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qd, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kd, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kd, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kd, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  // expected-error @+1 {{node 'scores' (MatMul): RoPE on q: node 'q_deinterleave' permutes the rotary dims before RoPE otherwise than GPT-J's de-interleave ([.., 2, 2] with perm [0, 1, 2, 4, 3])}}
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x2x2xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}


// -----

// A scaled RoPE (linear scaling by 2: every frequency halved, so not theta^(-2i/d) for any theta)
// with YaRN's attention factor 1.25 on cos and sin: kept as rope_inv_freq and
// rope_attention_factor (rope_theta the base of frequency 1 alone).
// CHECK-LABEL: func.func @attention_rope_scaled
// CHECK:       moe.attention %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 4 : i64, layer = -1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_attention_factor = 1.250000e+00 : f64, rope_inv_freq = array<f64: 5.000000e-01, 0.004999999888241291>, rope_theta = 4.000000e+04 : f64}
func.func @attention_rope_scaled(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[0.5, 0.005]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %mc = onnx.node "Constant"() {node_name = "cos_factor", onnx_attrs = {value = dense<1.25> : tensor<f32>}} : () -> tensor<f32>
  %ms = onnx.node "Constant"() {node_name = "sin_factor", onnx_attrs = {value = dense<1.25> : tensor<f32>}} : () -> tensor<f32>
  %cosm = onnx.node "Mul"(%cos, %mc) {node_name = "cos_scaled", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %sinm = onnx.node "Mul"(%sin, %ms) {node_name = "sin_scaled", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qt, %cosm) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sinm) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kt, %cosm) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sinm) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x2x2xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}


// -----

// cos and sin scaled by different factors: not YaRN's single factor, refused at the Cos.
func.func @attention_rope_scaled_apart(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 512 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 768 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 896 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 1024 : i64, length = 256 : i64} : tensor<8x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k4 = onnx.node "Reshape"(%k, %kvshape) {node_name = "k_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %v4 = onnx.node "Reshape"(%v, %kvshape) {node_name = "v_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %kt = onnx.node "Transpose"(%k4) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vt = onnx.node "Transpose"(%v4) {node_name = "v_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[0.5, 0.005]> : tensor<2xf32>}} : () -> tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%invf, %pos) {node_name = "freqs", onnx_attrs = {}} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{node 'cos' (Cos): RoPE: cos and sin are not scaled by one constant factor (YaRN's attention factor multiplies both)}}
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %mc = onnx.node "Constant"() {node_name = "cos_factor", onnx_attrs = {value = dense<1.25> : tensor<f32>}} : () -> tensor<f32>
  %ms = onnx.node "Constant"() {node_name = "sin_factor", onnx_attrs = {value = dense<1.5> : tensor<f32>}} : () -> tensor<f32>
  %cosm = onnx.node "Mul"(%cos, %mc) {node_name = "cos_scaled", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %sinm = onnx.node "Mul"(%sin, %ms) {node_name = "sin_scaled", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %c0 = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c2 = onnx.node "Constant"() {node_name = "c2", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %c4 = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%qt, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qt, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qt, %cosm) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sinm) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kt, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kt, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kt, %cosm) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sinm) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kT = onnx.node "Transpose"(%kr) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %s = onnx.node "MatMul"(%qr, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x2x2xf32>
  %sd = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %sd) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %vt) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

