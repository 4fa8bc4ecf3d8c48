// RUN: disagmoe-opt %s -fold-onnx-constants -raise-onnx-to-moe=match-only -split-input-file -verify-diagnostics | FileCheck %s
// Attention masks built with Where from position comparisons (transformers' masking_utils: the
// boolean kv_idx <= q_idx turned into where(mask, 0, finfo.min); the pre-Trilu exports'
// where(key > query, -inf, 0)), folded by fold-onnx-constants and matched by value
// (passes/raise/patterns/AttentionPattern.cpp, MaskAnalysis in GraphMatchers.h), and the near
// misses of their orientation: a comparison or a Where with its operands swapped builds the
// transposed (anti-causal) mask or its complement, refused at the Add that applies it. Each
// function is match-attention-variants.mlir's @attention_gqa (hidden 8, 2 query heads, 1 KV
// head, head_dim 4, token ids [1, 2]) with its constant mask replaced. Oracle: the mask each form
// defines at seq 2, by hand: causal is [[0, min], [0, 0]] (query 0 sees key 0 only). inv_freq is
// an initializer (a float parameter, which fold leaves alone, as torch stores the buffer), so the
// RoPE angles stay computed.

// masking_utils: kv_idx <= q_idx, where(mask, 0, finfo.min): causal.
// CHECK-LABEL: func.func @where_masking_utils
// CHECK:       moe.attention %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 4 : i64, layer = -1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.000000e+04 : f64}
// CHECK-NOT:   onnx.node "Softmax"
func.func @where_masking_utils(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
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
  %invf = onnx.weight "inv_freq" {file = "m.onnx", offset = 1280 : i64, length = 8 : i64, value = dense<[1.0, 0.01]> : tensor<2xf32>} : tensor<2xf32>
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
  %r0 = onnx.node "Constant"() {node_name = "r0", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %r2 = onnx.node "Constant"() {node_name = "r2", onnx_attrs = {value = dense<2> : tensor<i64>}} : () -> tensor<i64>
  %r1 = onnx.node "Constant"() {node_name = "r1", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %kv = onnx.node "Range"(%r0, %r2, %r1) {node_name = "kv_arange", onnx_attrs = {}} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<2xi64>
  %col = onnx.node "Constant"() {node_name = "col", onnx_attrs = {value = dense<[-1, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %qp = onnx.node "Reshape"(%kv, %col) {node_name = "cache_position", onnx_attrs = {}} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2x1xi64>
  %z = onnx.node "Constant"() {node_name = "zero", onnx_attrs = {value = dense<0.0> : tensor<f32>}} : () -> tensor<f32>
  %min = onnx.node "Constant"() {node_name = "min", onnx_attrs = {value = dense<-3.40282347E+38> : tensor<f32>}} : () -> tensor<f32>
  %le = onnx.node "LessOrEqual"(%kv, %qp) {node_name = "le", onnx_attrs = {}} : (tensor<2xi64>, tensor<2x1xi64>) -> tensor<2x2xi1>
  %mask = onnx.node "Where"(%le, %z, %min) {node_name = "where", onnx_attrs = {}} : (tensor<2x2xi1>, tensor<f32>, tensor<f32>) -> tensor<2x2xf32>
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

// where(key > query, finfo.min, 0): the same causal mask from the comparison's complement.
// CHECK-LABEL: func.func @where_greater_structural
// CHECK:       moe.attention %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 4 : i64, layer = -1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.000000e+04 : f64}
// CHECK-NOT:   onnx.node "Softmax"
func.func @where_greater_structural(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
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
  %invf = onnx.weight "inv_freq" {file = "m.onnx", offset = 1280 : i64, length = 8 : i64, value = dense<[1.0, 0.01]> : tensor<2xf32>} : tensor<2xf32>
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
  %r0 = onnx.node "Constant"() {node_name = "r0", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %r2 = onnx.node "Constant"() {node_name = "r2", onnx_attrs = {value = dense<2> : tensor<i64>}} : () -> tensor<i64>
  %r1 = onnx.node "Constant"() {node_name = "r1", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %kv = onnx.node "Range"(%r0, %r2, %r1) {node_name = "kv_arange", onnx_attrs = {}} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<2xi64>
  %col = onnx.node "Constant"() {node_name = "col", onnx_attrs = {value = dense<[-1, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %qp = onnx.node "Reshape"(%kv, %col) {node_name = "cache_position", onnx_attrs = {}} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2x1xi64>
  %z = onnx.node "Constant"() {node_name = "zero", onnx_attrs = {value = dense<0.0> : tensor<f32>}} : () -> tensor<f32>
  %min = onnx.node "Constant"() {node_name = "min", onnx_attrs = {value = dense<-3.40282347E+38> : tensor<f32>}} : () -> tensor<f32>
  %le = onnx.node "Greater"(%kv, %qp) {node_name = "gt", onnx_attrs = {}} : (tensor<2xi64>, tensor<2x1xi64>) -> tensor<2x2xi1>
  %mask = onnx.node "Where"(%le, %min, %z) {node_name = "where", onnx_attrs = {}} : (tensor<2x2xi1>, tensor<f32>, tensor<f32>) -> tensor<2x2xf32>
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

// q_idx <= kv_idx (the comparison's operands swapped): the transposed mask, each query sees the keys after it.
func.func @where_transposed(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
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
  %invf = onnx.weight "inv_freq" {file = "m.onnx", offset = 1280 : i64, length = 8 : i64, value = dense<[1.0, 0.01]> : tensor<2xf32>} : tensor<2xf32>
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
  %r0 = onnx.node "Constant"() {node_name = "r0", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %r2 = onnx.node "Constant"() {node_name = "r2", onnx_attrs = {value = dense<2> : tensor<i64>}} : () -> tensor<i64>
  %r1 = onnx.node "Constant"() {node_name = "r1", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %kv = onnx.node "Range"(%r0, %r2, %r1) {node_name = "kv_arange", onnx_attrs = {}} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<2xi64>
  %col = onnx.node "Constant"() {node_name = "col", onnx_attrs = {value = dense<[-1, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %qp = onnx.node "Reshape"(%kv, %col) {node_name = "cache_position", onnx_attrs = {}} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2x1xi64>
  %z = onnx.node "Constant"() {node_name = "zero", onnx_attrs = {value = dense<0.0> : tensor<f32>}} : () -> tensor<f32>
  %min = onnx.node "Constant"() {node_name = "min", onnx_attrs = {value = dense<-3.40282347E+38> : tensor<f32>}} : () -> tensor<f32>
  %le = onnx.node "LessOrEqual"(%qp, %kv) {node_name = "le", onnx_attrs = {}} : (tensor<2x1xi64>, tensor<2xi64>) -> tensor<2x2xi1>
  %mask = onnx.node "Where"(%le, %z, %min) {node_name = "where", onnx_attrs = {}} : (tensor<2x2xi1>, tensor<f32>, tensor<f32>) -> tensor<2x2xf32>
  // expected-error @+1 {{node 'masked' (Add): attention: the mask added before the Softmax is neither causal nor a sliding window: query 0 sees keys up to 1, not up to itself (a causal mask)}}
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

// where(mask, finfo.min, 0) (the Where's branches swapped): the complement, each query sees only the keys after it.
func.func @where_branches_swapped(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
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
  %invf = onnx.weight "inv_freq" {file = "m.onnx", offset = 1280 : i64, length = 8 : i64, value = dense<[1.0, 0.01]> : tensor<2xf32>} : tensor<2xf32>
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
  %r0 = onnx.node "Constant"() {node_name = "r0", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %r2 = onnx.node "Constant"() {node_name = "r2", onnx_attrs = {value = dense<2> : tensor<i64>}} : () -> tensor<i64>
  %r1 = onnx.node "Constant"() {node_name = "r1", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %kv = onnx.node "Range"(%r0, %r2, %r1) {node_name = "kv_arange", onnx_attrs = {}} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<2xi64>
  %col = onnx.node "Constant"() {node_name = "col", onnx_attrs = {value = dense<[-1, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %qp = onnx.node "Reshape"(%kv, %col) {node_name = "cache_position", onnx_attrs = {}} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2x1xi64>
  %z = onnx.node "Constant"() {node_name = "zero", onnx_attrs = {value = dense<0.0> : tensor<f32>}} : () -> tensor<f32>
  %min = onnx.node "Constant"() {node_name = "min", onnx_attrs = {value = dense<-3.40282347E+38> : tensor<f32>}} : () -> tensor<f32>
  %le = onnx.node "LessOrEqual"(%kv, %qp) {node_name = "le", onnx_attrs = {}} : (tensor<2xi64>, tensor<2x1xi64>) -> tensor<2x2xi1>
  %mask = onnx.node "Where"(%le, %min, %z) {node_name = "where", onnx_attrs = {}} : (tensor<2x2xi1>, tensor<f32>, tensor<f32>) -> tensor<2x2xf32>
  // expected-error @+1 {{node 'masked' (Add): attention: the mask added before the Softmax is neither causal nor a sliding window: query 0 sees keys up to 1, not up to itself (a causal mask)}}
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
