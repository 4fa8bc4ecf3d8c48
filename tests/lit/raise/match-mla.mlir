// RUN: disagmoe-opt %s -raise-onnx-to-moe=match-only -split-input-file -verify-diagnostics | FileCheck %s
// MlaAttentionPattern (passes/raise/patterns/MlaAttentionPattern.cpp) in IR, with match-only:
// DeepSeek-V2's multi-head latent attention with q_lora_rank null, and its near misses. Each
// function: hidden 8, 2 heads, qk_nope_head_dim 2, qk_rope_head_dim 4 (RoPE theta 10000, inverse
// frequencies [1, 0.01]), v_head_dim 3, kv_lora_rank 6; q_proj [8, 12], kv_a_proj_with_mqa [8, 10]
// split [6, 4], kv_a_layernorm [6], kv_b_proj [6, 10] split per head [2, 3], o_proj [6, 8]; the
// softmax scale 1/sqrt(6) as a Mul; token ids [1, S].

// The sizes come from the kv norm (rank), kv_a's width (rope), the scale (q_head_dim 6) and the
// widths of q_proj and kv_b_proj; RoPE without DeepSeek's de-interleave.
// CHECK-LABEL: func.func @mla
// CHECK-DAG:   %[[WQ:.*]] = onnx.weight "q_proj"
// CHECK-DAG:   %[[KVA:.*]] = onnx.weight "kv_a_proj_with_mqa"
// CHECK-DAG:   %[[KVN:.*]] = onnx.weight "kv_a_layernorm"
// CHECK-DAG:   %[[KVB:.*]] = onnx.weight "kv_b_proj"
// CHECK-DAG:   %[[WO:.*]] = onnx.weight "o_proj"
// CHECK:       %[[E:.*]] = moe.embedding
// CHECK-NEXT:  %[[A:.*]] = moe.mla_attention %[[E]] weights(%[[WQ]], %[[KVA]], %[[KVN]], %[[KVB]], %[[WO]]) {kv_lora_rank = 6 : i64, kv_norm_eps = 9.9999999999999995E-7 : f64, layer = -1 : i64, num_heads = 2 : i64, qk_nope_head_dim = 2 : i64, qk_rope_head_dim = 4 : i64, rope_theta = 1.000000e+04 : f64, softmax_scale = 0.40824830000000001 : f64, v_head_dim = 3 : i64} : tensor<1x2x8xf32>, (tensor<8x12xf32>, tensor<8x10xf32>, tensor<6xf32>, tensor<6x10xf32>, tensor<6x8xf32>) -> tensor<1x2x8xf32>
// CHECK-NEXT:  onnx.node "Add"(%[[E]], %[[A]]) {node_name = "residual"
// CHECK-NOT:   onnx.node
func.func @mla(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "q_proj" {file = "m.onnx", offset = 512 : i64, length = 384 : i64} : tensor<8x12xf32>
  %wkva = onnx.weight "kv_a_proj_with_mqa" {file = "m.onnx", offset = 896 : i64, length = 320 : i64} : tensor<8x10xf32>
  %kvn = onnx.weight "kv_a_layernorm" {file = "m.onnx", offset = 1216 : i64, length = 24 : i64} : tensor<6xf32>
  %wkvb = onnx.weight "kv_b_proj" {file = "m.onnx", offset = 1240 : i64, length = 240 : i64} : tensor<6x10xf32>
  %wo = onnx.weight "o_proj" {file = "m.onnx", offset = 1480 : i64, length = 192 : i64} : tensor<6x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x12xf32>) -> tensor<1x2x12xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 6]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x12xf32>, tensor<4xi64>) -> tensor<1x2x2x6xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x6xf32>) -> tensor<1x2x2x6xf32>
  %qsplit = onnx.node "Constant"() {node_name = "q_split", onnx_attrs = {value = dense<[2, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %qnope, %qpe = onnx.node "Split"(%qt, %qsplit) {node_name = "q_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x6xf32>, tensor<2xi64>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>)
  %kva = onnx.node "MatMul"(%x, %wkva) {node_name = "kv_a_proj_with_mqa", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x10xf32>) -> tensor<1x2x10xf32>
  %kvasplit = onnx.node "Constant"() {node_name = "kv_a_split", onnx_attrs = {value = dense<[6, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %c, %kpe = onnx.node "Split"(%kva, %kvasplit) {node_name = "kv_a_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x10xf32>, tensor<2xi64>) -> (tensor<1x2x6xf32>, tensor<1x2x4xf32>)
  %kpeshape = onnx.node "Constant"() {node_name = "k_pe_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kpe4 = onnx.node "Reshape"(%kpe, %kpeshape) {node_name = "k_pe_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %kpet = onnx.node "Transpose"(%kpe4) {node_name = "k_pe_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %kvn_two = onnx.node "Constant"() {node_name = "kvn_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %kvn_sq = onnx.node "Pow"(%c, %kvn_two) {node_name = "kvn_pow", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<f32>) -> tensor<1x2x6xf32>
  %kvn_m = onnx.node "ReduceMean"(%kvn_sq) {node_name = "kvn_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x6xf32>) -> tensor<1x2x1xf32>
  %kvn_eps = onnx.node "Constant"() {node_name = "kvn_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %kvn_a = onnx.node "Add"(%kvn_m, %kvn_eps) {node_name = "kvn_add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %kvn_s = onnx.node "Sqrt"(%kvn_a) {node_name = "kvn_sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %kvn_d = onnx.node "Div"(%c, %kvn_s) {node_name = "kvn_scaled", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<1x2x1xf32>) -> tensor<1x2x6xf32>
  %kvn_n = onnx.node "Mul"(%kvn_d, %kvn) {node_name = "kvn_weighted", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6xf32>) -> tensor<1x2x6xf32>
  %kvb = onnx.node "MatMul"(%kvn_n, %wkvb) {node_name = "kv_b_proj", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6x10xf32>) -> tensor<1x2x10xf32>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 2, 5]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kv4 = onnx.node "Reshape"(%kvb, %kvshape) {node_name = "kv_heads", onnx_attrs = {}} : (tensor<1x2x10xf32>, tensor<4xi64>) -> tensor<1x2x2x5xf32>
  %kvt = onnx.node "Transpose"(%kv4) {node_name = "kv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x5xf32>) -> tensor<1x2x2x5xf32>
  %kvbsplit = onnx.node "Constant"() {node_name = "kv_b_split", onnx_attrs = {value = dense<[2, 3]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %knope, %v = onnx.node "Split"(%kvt, %kvbsplit) {node_name = "kv_b_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x5xf32>, tensor<2xi64>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>)
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
  %q1 = onnx.node "Slice"(%qpe, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qpe, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qpe, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kpet, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kpet, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kpet, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kexp = onnx.node "Constant"() {node_name = "k_pe_expand", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kre = onnx.node "Expand"(%kr, %kexp) {node_name = "k_pe_expanded", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %qst = onnx.node "Concat"(%qnope, %qr) {node_name = "query_states", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x6xf32>
  %kst = onnx.node "Concat"(%knope, %kre) {node_name = "key_states", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x6xf32>
  %kT = onnx.node "Transpose"(%kst) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x2x2x6xf32>) -> tensor<1x2x6x2xf32>
  %s = onnx.node "MatMul"(%qst, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x6xf32>, tensor<1x2x6x2xf32>) -> tensor<1x2x2x2xf32>
  %scale = onnx.node "Constant"() {node_name = "softmax_scale", onnx_attrs = {value = dense<0.408248305> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Mul"(%s, %scale) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %v) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 6]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x3xf32>, tensor<3xi64>) -> tensor<1x2x6xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// DeepSeek-V2's de-interleave of the rope dims of q and k (view(.., d/2, 2).transpose(-1, -2)
// .reshape(.., d)) before RoPE: rope_interleaved.
// CHECK-LABEL: func.func @mla_interleaved
// CHECK:       moe.mla_attention {{.*}} {kv_lora_rank = 6 : i64, kv_norm_eps = 9.9999999999999995E-7 : f64, layer = -1 : i64, num_heads = 2 : i64, qk_nope_head_dim = 2 : i64, qk_rope_head_dim = 4 : i64, rope_interleaved, rope_theta = 1.000000e+04 : f64, softmax_scale = 0.40824830000000001 : f64, v_head_dim = 3 : i64}
// CHECK-NOT:   "Transpose"
func.func @mla_interleaved(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "q_proj" {file = "m.onnx", offset = 512 : i64, length = 384 : i64} : tensor<8x12xf32>
  %wkva = onnx.weight "kv_a_proj_with_mqa" {file = "m.onnx", offset = 896 : i64, length = 320 : i64} : tensor<8x10xf32>
  %kvn = onnx.weight "kv_a_layernorm" {file = "m.onnx", offset = 1216 : i64, length = 24 : i64} : tensor<6xf32>
  %wkvb = onnx.weight "kv_b_proj" {file = "m.onnx", offset = 1240 : i64, length = 240 : i64} : tensor<6x10xf32>
  %wo = onnx.weight "o_proj" {file = "m.onnx", offset = 1480 : i64, length = 192 : i64} : tensor<6x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x12xf32>) -> tensor<1x2x12xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 6]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x12xf32>, tensor<4xi64>) -> tensor<1x2x2x6xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x6xf32>) -> tensor<1x2x2x6xf32>
  %qsplit = onnx.node "Constant"() {node_name = "q_split", onnx_attrs = {value = dense<[2, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %qnope, %qpe = onnx.node "Split"(%qt, %qsplit) {node_name = "q_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x6xf32>, tensor<2xi64>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>)
  %kva = onnx.node "MatMul"(%x, %wkva) {node_name = "kv_a_proj_with_mqa", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x10xf32>) -> tensor<1x2x10xf32>
  %kvasplit = onnx.node "Constant"() {node_name = "kv_a_split", onnx_attrs = {value = dense<[6, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %c, %kpe = onnx.node "Split"(%kva, %kvasplit) {node_name = "kv_a_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x10xf32>, tensor<2xi64>) -> (tensor<1x2x6xf32>, tensor<1x2x4xf32>)
  %kpeshape = onnx.node "Constant"() {node_name = "k_pe_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kpe4 = onnx.node "Reshape"(%kpe, %kpeshape) {node_name = "k_pe_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %kpet = onnx.node "Transpose"(%kpe4) {node_name = "k_pe_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %kvn_two = onnx.node "Constant"() {node_name = "kvn_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %kvn_sq = onnx.node "Pow"(%c, %kvn_two) {node_name = "kvn_pow", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<f32>) -> tensor<1x2x6xf32>
  %kvn_m = onnx.node "ReduceMean"(%kvn_sq) {node_name = "kvn_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x6xf32>) -> tensor<1x2x1xf32>
  %kvn_eps = onnx.node "Constant"() {node_name = "kvn_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %kvn_a = onnx.node "Add"(%kvn_m, %kvn_eps) {node_name = "kvn_add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %kvn_s = onnx.node "Sqrt"(%kvn_a) {node_name = "kvn_sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %kvn_d = onnx.node "Div"(%c, %kvn_s) {node_name = "kvn_scaled", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<1x2x1xf32>) -> tensor<1x2x6xf32>
  %kvn_n = onnx.node "Mul"(%kvn_d, %kvn) {node_name = "kvn_weighted", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6xf32>) -> tensor<1x2x6xf32>
  %kvb = onnx.node "MatMul"(%kvn_n, %wkvb) {node_name = "kv_b_proj", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6x10xf32>) -> tensor<1x2x10xf32>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 2, 5]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kv4 = onnx.node "Reshape"(%kvb, %kvshape) {node_name = "kv_heads", onnx_attrs = {}} : (tensor<1x2x10xf32>, tensor<4xi64>) -> tensor<1x2x2x5xf32>
  %kvt = onnx.node "Transpose"(%kv4) {node_name = "kv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x5xf32>) -> tensor<1x2x2x5xf32>
  %kvbsplit = onnx.node "Constant"() {node_name = "kv_b_split", onnx_attrs = {value = dense<[2, 3]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %knope, %v = onnx.node "Split"(%kvt, %kvbsplit) {node_name = "kv_b_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x5xf32>, tensor<2xi64>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>)
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
  %q_pe_s5 = onnx.node "Constant"() {node_name = "q_pe_pairs", onnx_attrs = {value = dense<[1, 2, 2, 2, 2]> : tensor<5xi64>}} : () -> tensor<5xi64>
  %q_pe_v5 = onnx.node "Reshape"(%qpe, %q_pe_s5) {node_name = "q_pe_pairs", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<5xi64>) -> tensor<1x2x2x2x2xf32>
  %q_pe_t5 = onnx.node "Transpose"(%q_pe_v5) {node_name = "q_pe_deinterleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x2x2xf32>
  %q_pe_s4 = onnx.node "Constant"() {node_name = "q_pe_flat", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q_pe_di = onnx.node "Reshape"(%q_pe_t5, %q_pe_s4) {node_name = "q_pe_flat", onnx_attrs = {}} : (tensor<1x2x2x2x2xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %k_pe_s5 = onnx.node "Constant"() {node_name = "k_pe_pairs", onnx_attrs = {value = dense<[1, 1, 2, 2, 2]> : tensor<5xi64>}} : () -> tensor<5xi64>
  %k_pe_v5 = onnx.node "Reshape"(%kpet, %k_pe_s5) {node_name = "k_pe_pairs", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<5xi64>) -> tensor<1x1x2x2x2xf32>
  %k_pe_t5 = onnx.node "Transpose"(%k_pe_v5) {node_name = "k_pe_deinterleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}} : (tensor<1x1x2x2x2xf32>) -> tensor<1x1x2x2x2xf32>
  %k_pe_s4 = onnx.node "Constant"() {node_name = "k_pe_flat", onnx_attrs = {value = dense<[1, 1, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %k_pe_di = onnx.node "Reshape"(%k_pe_t5, %k_pe_s4) {node_name = "k_pe_flat", onnx_attrs = {}} : (tensor<1x1x2x2x2xf32>, tensor<4xi64>) -> tensor<1x1x2x4xf32>
  %q1 = onnx.node "Slice"(%q_pe_di, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%q_pe_di, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%q_pe_di, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%k_pe_di, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%k_pe_di, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%k_pe_di, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kexp = onnx.node "Constant"() {node_name = "k_pe_expand", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kre = onnx.node "Expand"(%kr, %kexp) {node_name = "k_pe_expanded", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %qst = onnx.node "Concat"(%qnope, %qr) {node_name = "query_states", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x6xf32>
  %kst = onnx.node "Concat"(%knope, %kre) {node_name = "key_states", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x6xf32>
  %kT = onnx.node "Transpose"(%kst) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x2x2x6xf32>) -> tensor<1x2x6x2xf32>
  %s = onnx.node "MatMul"(%qst, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x6xf32>, tensor<1x2x6x2xf32>) -> tensor<1x2x2x2xf32>
  %scale = onnx.node "Constant"() {node_name = "softmax_scale", onnx_attrs = {value = dense<0.408248305> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Mul"(%s, %scale) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %v) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 6]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x3xf32>, tensor<3xi64>) -> tensor<1x2x6xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// q's heads split [4, 2], the rope dims first (RoPE on the first four of each head): the sizes
// read elsewhere say [nope 2, rope 4]. Refused at q_proj.
func.func @mla_q_split_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "q_proj" {file = "m.onnx", offset = 512 : i64, length = 384 : i64} : tensor<8x12xf32>
  %wkva = onnx.weight "kv_a_proj_with_mqa" {file = "m.onnx", offset = 896 : i64, length = 320 : i64} : tensor<8x10xf32>
  %kvn = onnx.weight "kv_a_layernorm" {file = "m.onnx", offset = 1216 : i64, length = 24 : i64} : tensor<6xf32>
  %wkvb = onnx.weight "kv_b_proj" {file = "m.onnx", offset = 1240 : i64, length = 240 : i64} : tensor<6x10xf32>
  %wo = onnx.weight "o_proj" {file = "m.onnx", offset = 1480 : i64, length = 192 : i64} : tensor<6x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  // expected-error @+1 {{node 'q_proj' (MatMul): MLA: the per-head split is not [2, 4]}}
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x12xf32>) -> tensor<1x2x12xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 6]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x12xf32>, tensor<4xi64>) -> tensor<1x2x2x6xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x6xf32>) -> tensor<1x2x2x6xf32>
  %qsplit = onnx.node "Constant"() {node_name = "q_split", onnx_attrs = {value = dense<[4, 2]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %qpe, %qnope = onnx.node "Split"(%qt, %qsplit) {node_name = "q_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x6xf32>, tensor<2xi64>) -> (tensor<1x2x2x4xf32>, tensor<1x2x2x2xf32>)
  %kva = onnx.node "MatMul"(%x, %wkva) {node_name = "kv_a_proj_with_mqa", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x10xf32>) -> tensor<1x2x10xf32>
  %kvasplit = onnx.node "Constant"() {node_name = "kv_a_split", onnx_attrs = {value = dense<[6, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %c, %kpe = onnx.node "Split"(%kva, %kvasplit) {node_name = "kv_a_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x10xf32>, tensor<2xi64>) -> (tensor<1x2x6xf32>, tensor<1x2x4xf32>)
  %kpeshape = onnx.node "Constant"() {node_name = "k_pe_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kpe4 = onnx.node "Reshape"(%kpe, %kpeshape) {node_name = "k_pe_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %kpet = onnx.node "Transpose"(%kpe4) {node_name = "k_pe_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %kvn_two = onnx.node "Constant"() {node_name = "kvn_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %kvn_sq = onnx.node "Pow"(%c, %kvn_two) {node_name = "kvn_pow", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<f32>) -> tensor<1x2x6xf32>
  %kvn_m = onnx.node "ReduceMean"(%kvn_sq) {node_name = "kvn_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x6xf32>) -> tensor<1x2x1xf32>
  %kvn_eps = onnx.node "Constant"() {node_name = "kvn_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %kvn_a = onnx.node "Add"(%kvn_m, %kvn_eps) {node_name = "kvn_add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %kvn_s = onnx.node "Sqrt"(%kvn_a) {node_name = "kvn_sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %kvn_d = onnx.node "Div"(%c, %kvn_s) {node_name = "kvn_scaled", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<1x2x1xf32>) -> tensor<1x2x6xf32>
  %kvn_n = onnx.node "Mul"(%kvn_d, %kvn) {node_name = "kvn_weighted", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6xf32>) -> tensor<1x2x6xf32>
  %kvb = onnx.node "MatMul"(%kvn_n, %wkvb) {node_name = "kv_b_proj", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6x10xf32>) -> tensor<1x2x10xf32>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 2, 5]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kv4 = onnx.node "Reshape"(%kvb, %kvshape) {node_name = "kv_heads", onnx_attrs = {}} : (tensor<1x2x10xf32>, tensor<4xi64>) -> tensor<1x2x2x5xf32>
  %kvt = onnx.node "Transpose"(%kv4) {node_name = "kv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x5xf32>) -> tensor<1x2x2x5xf32>
  %kvbsplit = onnx.node "Constant"() {node_name = "kv_b_split", onnx_attrs = {value = dense<[2, 3]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %knope, %v = onnx.node "Split"(%kvt, %kvbsplit) {node_name = "kv_b_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x5xf32>, tensor<2xi64>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>)
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
  %q1 = onnx.node "Slice"(%qpe, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qpe, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qpe, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kpet, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kpet, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kpet, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kexp = onnx.node "Constant"() {node_name = "k_pe_expand", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kre = onnx.node "Expand"(%kr, %kexp) {node_name = "k_pe_expanded", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %qst = onnx.node "Concat"(%qnope, %qr) {node_name = "query_states", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x6xf32>
  %kst = onnx.node "Concat"(%knope, %kre) {node_name = "key_states", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x6xf32>
  %kT = onnx.node "Transpose"(%kst) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x2x2x6xf32>) -> tensor<1x2x6x2xf32>
  %s = onnx.node "MatMul"(%qst, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x6xf32>, tensor<1x2x6x2xf32>) -> tensor<1x2x2x2xf32>
  %scale = onnx.node "Constant"() {node_name = "softmax_scale", onnx_attrs = {value = dense<0.408248305> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Mul"(%s, %scale) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %v) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 6]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x3xf32>, tensor<3xi64>) -> tensor<1x2x6xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// kv_b's heads split [3, 2], the values first: refused at kv_b_proj, whose split must be
// [qk_nope_head_dim 2, v_head_dim 3].
func.func @mla_kv_b_split_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "q_proj" {file = "m.onnx", offset = 512 : i64, length = 384 : i64} : tensor<8x12xf32>
  %wkva = onnx.weight "kv_a_proj_with_mqa" {file = "m.onnx", offset = 896 : i64, length = 320 : i64} : tensor<8x10xf32>
  %kvn = onnx.weight "kv_a_layernorm" {file = "m.onnx", offset = 1216 : i64, length = 24 : i64} : tensor<6xf32>
  %wkvb = onnx.weight "kv_b_proj" {file = "m.onnx", offset = 1240 : i64, length = 240 : i64} : tensor<6x10xf32>
  %wo = onnx.weight "o_proj" {file = "m.onnx", offset = 1480 : i64, length = 192 : i64} : tensor<6x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x12xf32>) -> tensor<1x2x12xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 6]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x12xf32>, tensor<4xi64>) -> tensor<1x2x2x6xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x6xf32>) -> tensor<1x2x2x6xf32>
  %qsplit = onnx.node "Constant"() {node_name = "q_split", onnx_attrs = {value = dense<[2, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %qnope, %qpe = onnx.node "Split"(%qt, %qsplit) {node_name = "q_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x6xf32>, tensor<2xi64>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>)
  %kva = onnx.node "MatMul"(%x, %wkva) {node_name = "kv_a_proj_with_mqa", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x10xf32>) -> tensor<1x2x10xf32>
  %kvasplit = onnx.node "Constant"() {node_name = "kv_a_split", onnx_attrs = {value = dense<[6, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %c, %kpe = onnx.node "Split"(%kva, %kvasplit) {node_name = "kv_a_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x10xf32>, tensor<2xi64>) -> (tensor<1x2x6xf32>, tensor<1x2x4xf32>)
  %kpeshape = onnx.node "Constant"() {node_name = "k_pe_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kpe4 = onnx.node "Reshape"(%kpe, %kpeshape) {node_name = "k_pe_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %kpet = onnx.node "Transpose"(%kpe4) {node_name = "k_pe_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %kvn_two = onnx.node "Constant"() {node_name = "kvn_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %kvn_sq = onnx.node "Pow"(%c, %kvn_two) {node_name = "kvn_pow", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<f32>) -> tensor<1x2x6xf32>
  %kvn_m = onnx.node "ReduceMean"(%kvn_sq) {node_name = "kvn_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x6xf32>) -> tensor<1x2x1xf32>
  %kvn_eps = onnx.node "Constant"() {node_name = "kvn_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %kvn_a = onnx.node "Add"(%kvn_m, %kvn_eps) {node_name = "kvn_add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %kvn_s = onnx.node "Sqrt"(%kvn_a) {node_name = "kvn_sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %kvn_d = onnx.node "Div"(%c, %kvn_s) {node_name = "kvn_scaled", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<1x2x1xf32>) -> tensor<1x2x6xf32>
  %kvn_n = onnx.node "Mul"(%kvn_d, %kvn) {node_name = "kvn_weighted", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6xf32>) -> tensor<1x2x6xf32>
  // expected-error @+1 {{node 'kv_b_proj' (MatMul): MLA: the per-head split is not [2, 3]}}
  %kvb = onnx.node "MatMul"(%kvn_n, %wkvb) {node_name = "kv_b_proj", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6x10xf32>) -> tensor<1x2x10xf32>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 2, 5]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kv4 = onnx.node "Reshape"(%kvb, %kvshape) {node_name = "kv_heads", onnx_attrs = {}} : (tensor<1x2x10xf32>, tensor<4xi64>) -> tensor<1x2x2x5xf32>
  %kvt = onnx.node "Transpose"(%kv4) {node_name = "kv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x5xf32>) -> tensor<1x2x2x5xf32>
  %kvbsplit = onnx.node "Constant"() {node_name = "kv_b_split", onnx_attrs = {value = dense<[3, 2]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %v, %knope = onnx.node "Split"(%kvt, %kvbsplit) {node_name = "kv_b_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x5xf32>, tensor<2xi64>) -> (tensor<1x2x2x3xf32>, tensor<1x2x2x2xf32>)
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
  %q1 = onnx.node "Slice"(%qpe, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%qpe, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%qpe, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kpet, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kpet, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kpet, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kexp = onnx.node "Constant"() {node_name = "k_pe_expand", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kre = onnx.node "Expand"(%kr, %kexp) {node_name = "k_pe_expanded", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %qst = onnx.node "Concat"(%qnope, %qr) {node_name = "query_states", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x6xf32>
  %kst = onnx.node "Concat"(%knope, %kre) {node_name = "key_states", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x6xf32>
  %kT = onnx.node "Transpose"(%kst) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x2x2x6xf32>) -> tensor<1x2x6x2xf32>
  %s = onnx.node "MatMul"(%qst, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x6xf32>, tensor<1x2x6x2xf32>) -> tensor<1x2x2x2xf32>
  %scale = onnx.node "Constant"() {node_name = "softmax_scale", onnx_attrs = {value = dense<0.408248305> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Mul"(%s, %scale) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %v) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 6]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x3xf32>, tensor<3xi64>) -> tensor<1x2x6xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// The de-interleave on q's rope dims but not on k's pairs different dims in the scores: refused.
func.func @mla_one_side_interleaved_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "q_proj" {file = "m.onnx", offset = 512 : i64, length = 384 : i64} : tensor<8x12xf32>
  %wkva = onnx.weight "kv_a_proj_with_mqa" {file = "m.onnx", offset = 896 : i64, length = 320 : i64} : tensor<8x10xf32>
  %kvn = onnx.weight "kv_a_layernorm" {file = "m.onnx", offset = 1216 : i64, length = 24 : i64} : tensor<6xf32>
  %wkvb = onnx.weight "kv_b_proj" {file = "m.onnx", offset = 1240 : i64, length = 240 : i64} : tensor<6x10xf32>
  %wo = onnx.weight "o_proj" {file = "m.onnx", offset = 1480 : i64, length = 192 : i64} : tensor<6x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x2xi64>) -> tensor<1x2x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x12xf32>) -> tensor<1x2x12xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 2, 2, 6]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x2x12xf32>, tensor<4xi64>) -> tensor<1x2x2x6xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x6xf32>) -> tensor<1x2x2x6xf32>
  %qsplit = onnx.node "Constant"() {node_name = "q_split", onnx_attrs = {value = dense<[2, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %qnope, %qpe = onnx.node "Split"(%qt, %qsplit) {node_name = "q_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x6xf32>, tensor<2xi64>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>)
  %kva = onnx.node "MatMul"(%x, %wkva) {node_name = "kv_a_proj_with_mqa", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x10xf32>) -> tensor<1x2x10xf32>
  %kvasplit = onnx.node "Constant"() {node_name = "kv_a_split", onnx_attrs = {value = dense<[6, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %c, %kpe = onnx.node "Split"(%kva, %kvasplit) {node_name = "kv_a_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x10xf32>, tensor<2xi64>) -> (tensor<1x2x6xf32>, tensor<1x2x4xf32>)
  %kpeshape = onnx.node "Constant"() {node_name = "k_pe_shape", onnx_attrs = {value = dense<[1, 2, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kpe4 = onnx.node "Reshape"(%kpe, %kpeshape) {node_name = "k_pe_heads", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x1x4xf32>
  %kpet = onnx.node "Transpose"(%kpe4) {node_name = "k_pe_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %kvn_two = onnx.node "Constant"() {node_name = "kvn_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %kvn_sq = onnx.node "Pow"(%c, %kvn_two) {node_name = "kvn_pow", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<f32>) -> tensor<1x2x6xf32>
  %kvn_m = onnx.node "ReduceMean"(%kvn_sq) {node_name = "kvn_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x6xf32>) -> tensor<1x2x1xf32>
  %kvn_eps = onnx.node "Constant"() {node_name = "kvn_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %kvn_a = onnx.node "Add"(%kvn_m, %kvn_eps) {node_name = "kvn_add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %kvn_s = onnx.node "Sqrt"(%kvn_a) {node_name = "kvn_sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %kvn_d = onnx.node "Div"(%c, %kvn_s) {node_name = "kvn_scaled", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<1x2x1xf32>) -> tensor<1x2x6xf32>
  %kvn_n = onnx.node "Mul"(%kvn_d, %kvn) {node_name = "kvn_weighted", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6xf32>) -> tensor<1x2x6xf32>
  %kvb = onnx.node "MatMul"(%kvn_n, %wkvb) {node_name = "kv_b_proj", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6x10xf32>) -> tensor<1x2x10xf32>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 2, 2, 5]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kv4 = onnx.node "Reshape"(%kvb, %kvshape) {node_name = "kv_heads", onnx_attrs = {}} : (tensor<1x2x10xf32>, tensor<4xi64>) -> tensor<1x2x2x5xf32>
  %kvt = onnx.node "Transpose"(%kv4) {node_name = "kv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x5xf32>) -> tensor<1x2x2x5xf32>
  %kvbsplit = onnx.node "Constant"() {node_name = "kv_b_split", onnx_attrs = {value = dense<[2, 3]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %knope, %v = onnx.node "Split"(%kvt, %kvbsplit) {node_name = "kv_b_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x5xf32>, tensor<2xi64>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>)
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
  %q_pe_s5 = onnx.node "Constant"() {node_name = "q_pe_pairs", onnx_attrs = {value = dense<[1, 2, 2, 2, 2]> : tensor<5xi64>}} : () -> tensor<5xi64>
  %q_pe_v5 = onnx.node "Reshape"(%qpe, %q_pe_s5) {node_name = "q_pe_pairs", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<5xi64>) -> tensor<1x2x2x2x2xf32>
  %q_pe_t5 = onnx.node "Transpose"(%q_pe_v5) {node_name = "q_pe_deinterleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x2x2xf32>
  %q_pe_s4 = onnx.node "Constant"() {node_name = "q_pe_flat", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q_pe_di = onnx.node "Reshape"(%q_pe_t5, %q_pe_s4) {node_name = "q_pe_flat", onnx_attrs = {}} : (tensor<1x2x2x2x2xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %q1 = onnx.node "Slice"(%q_pe_di, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %q2 = onnx.node "Slice"(%q_pe_di, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %qc = onnx.node "Mul"(%q_pe_di, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %k1 = onnx.node "Slice"(%kpet, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %k2 = onnx.node "Slice"(%kpet, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x2x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x4xf32>
  %kc = onnx.node "Mul"(%kpet, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %kexp = onnx.node "Constant"() {node_name = "k_pe_expand", onnx_attrs = {value = dense<[1, 2, 2, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kre = onnx.node "Expand"(%kr, %kexp) {node_name = "k_pe_expanded", onnx_attrs = {}} : (tensor<1x1x2x4xf32>, tensor<4xi64>) -> tensor<1x2x2x4xf32>
  %qst = onnx.node "Concat"(%qnope, %qr) {node_name = "query_states", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x6xf32>
  %kst = onnx.node "Concat"(%knope, %kre) {node_name = "key_states", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x6xf32>
  %kT = onnx.node "Transpose"(%kst) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x2x2x6xf32>) -> tensor<1x2x6x2xf32>
  // expected-error @+1 {{node 'scores' (MatMul): MLA: the rope dims of only one of q and k are de-interleaved}}
  %s = onnx.node "MatMul"(%qst, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x2x6xf32>, tensor<1x2x6x2xf32>) -> tensor<1x2x2x2xf32>
  %scale = onnx.node "Constant"() {node_name = "softmax_scale", onnx_attrs = {value = dense<0.408248305> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Mul"(%s, %scale) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %v) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 2, 6]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x2x2x3xf32>, tensor<3xi64>) -> tensor<1x2x6xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6x8xf32>) -> tensor<1x2x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return %r : tensor<1x2x8xf32>
}

// -----

// moe.mla_attention has no sliding window: a window mask is refused at its Add.
func.func @mla_sliding_window_refused(%ids: tensor<1x4xi64>) -> tensor<1x4x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "q_proj" {file = "m.onnx", offset = 512 : i64, length = 384 : i64} : tensor<8x12xf32>
  %wkva = onnx.weight "kv_a_proj_with_mqa" {file = "m.onnx", offset = 896 : i64, length = 320 : i64} : tensor<8x10xf32>
  %kvn = onnx.weight "kv_a_layernorm" {file = "m.onnx", offset = 1216 : i64, length = 24 : i64} : tensor<6xf32>
  %wkvb = onnx.weight "kv_b_proj" {file = "m.onnx", offset = 1240 : i64, length = 240 : i64} : tensor<6x10xf32>
  %wo = onnx.weight "o_proj" {file = "m.onnx", offset = 1480 : i64, length = 192 : i64} : tensor<6x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x12xf32>) -> tensor<1x4x12xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 4, 2, 6]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x4x12xf32>, tensor<4xi64>) -> tensor<1x4x2x6xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x2x6xf32>) -> tensor<1x2x4x6xf32>
  %qsplit = onnx.node "Constant"() {node_name = "q_split", onnx_attrs = {value = dense<[2, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %qnope, %qpe = onnx.node "Split"(%qt, %qsplit) {node_name = "q_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x6xf32>, tensor<2xi64>) -> (tensor<1x2x4x2xf32>, tensor<1x2x4x4xf32>)
  %kva = onnx.node "MatMul"(%x, %wkva) {node_name = "kv_a_proj_with_mqa", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x10xf32>) -> tensor<1x4x10xf32>
  %kvasplit = onnx.node "Constant"() {node_name = "kv_a_split", onnx_attrs = {value = dense<[6, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %c, %kpe = onnx.node "Split"(%kva, %kvasplit) {node_name = "kv_a_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x4x10xf32>, tensor<2xi64>) -> (tensor<1x4x6xf32>, tensor<1x4x4xf32>)
  %kpeshape = onnx.node "Constant"() {node_name = "k_pe_shape", onnx_attrs = {value = dense<[1, 4, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kpe4 = onnx.node "Reshape"(%kpe, %kpeshape) {node_name = "k_pe_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %kpet = onnx.node "Transpose"(%kpe4) {node_name = "k_pe_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %kvn_two = onnx.node "Constant"() {node_name = "kvn_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %kvn_sq = onnx.node "Pow"(%c, %kvn_two) {node_name = "kvn_pow", onnx_attrs = {}} : (tensor<1x4x6xf32>, tensor<f32>) -> tensor<1x4x6xf32>
  %kvn_m = onnx.node "ReduceMean"(%kvn_sq) {node_name = "kvn_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x4x6xf32>) -> tensor<1x4x1xf32>
  %kvn_eps = onnx.node "Constant"() {node_name = "kvn_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %kvn_a = onnx.node "Add"(%kvn_m, %kvn_eps) {node_name = "kvn_add", onnx_attrs = {}} : (tensor<1x4x1xf32>, tensor<f32>) -> tensor<1x4x1xf32>
  %kvn_s = onnx.node "Sqrt"(%kvn_a) {node_name = "kvn_sqrt", onnx_attrs = {}} : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %kvn_d = onnx.node "Div"(%c, %kvn_s) {node_name = "kvn_scaled", onnx_attrs = {}} : (tensor<1x4x6xf32>, tensor<1x4x1xf32>) -> tensor<1x4x6xf32>
  %kvn_n = onnx.node "Mul"(%kvn_d, %kvn) {node_name = "kvn_weighted", onnx_attrs = {}} : (tensor<1x4x6xf32>, tensor<6xf32>) -> tensor<1x4x6xf32>
  %kvb = onnx.node "MatMul"(%kvn_n, %wkvb) {node_name = "kv_b_proj", onnx_attrs = {}} : (tensor<1x4x6xf32>, tensor<6x10xf32>) -> tensor<1x4x10xf32>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 4, 2, 5]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kv4 = onnx.node "Reshape"(%kvb, %kvshape) {node_name = "kv_heads", onnx_attrs = {}} : (tensor<1x4x10xf32>, tensor<4xi64>) -> tensor<1x4x2x5xf32>
  %kvt = onnx.node "Transpose"(%kv4) {node_name = "kv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x2x5xf32>) -> tensor<1x2x4x5xf32>
  %kvbsplit = onnx.node "Constant"() {node_name = "kv_b_split", onnx_attrs = {value = dense<[2, 3]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %knope, %v = onnx.node "Split"(%kvt, %kvbsplit) {node_name = "kv_b_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x5xf32>, tensor<2xi64>) -> (tensor<1x2x4x2xf32>, tensor<1x2x4x3xf32>)
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
  %q1 = onnx.node "Slice"(%qpe, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %q2 = onnx.node "Slice"(%qpe, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x4xf32>
  %qc = onnx.node "Mul"(%qpe, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %k1 = onnx.node "Slice"(%kpet, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %k2 = onnx.node "Slice"(%kpet, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x4x2xf32>) -> tensor<1x1x4x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x4x4xf32>
  %kc = onnx.node "Mul"(%kpet, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %kexp = onnx.node "Constant"() {node_name = "k_pe_expand", onnx_attrs = {value = dense<[1, 2, 4, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kre = onnx.node "Expand"(%kr, %kexp) {node_name = "k_pe_expanded", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4xi64>) -> tensor<1x2x4x4xf32>
  %qst = onnx.node "Concat"(%qnope, %qr) {node_name = "query_states", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x2xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x6xf32>
  %kst = onnx.node "Concat"(%knope, %kre) {node_name = "key_states", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x2xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x6xf32>
  %kT = onnx.node "Transpose"(%kst) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x2x4x6xf32>) -> tensor<1x2x6x4xf32>
  %s = onnx.node "MatMul"(%qst, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x4x6xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x4x4xf32>
  %scale = onnx.node "Constant"() {node_name = "softmax_scale", onnx_attrs = {value = dense<0.408248305> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Mul"(%s, %scale) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %mask = onnx.node "Constant"() {node_name = "mask", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, 0.0, 0.0, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, 0.0, 0.0]]> : tensor<4x4xf32>}} : () -> tensor<4x4xf32>
  // expected-error @+1 {{node 'masked' (Add): MLA: sliding windows are not supported with MLA}}
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pv = onnx.node "MatMul"(%p, %v) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x4x3xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x4x3xf32>) -> tensor<1x4x2x3xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 4, 6]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x4x2x3xf32>, tensor<3xi64>) -> tensor<1x4x6xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x4x6xf32>, tensor<6x8xf32>) -> tensor<1x4x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}

// -----

// A structural window whose diagonal has the wrong sign, tril(full(-inf), +2), hides every key:
// refused at the Trilu (raised as full causal MLA before the pattern checked the recorded failure).
func.func @mla_window_wrong_sign_refused(%ids: tensor<1x4xi64>) -> tensor<1x4x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %wq = onnx.weight "q_proj" {file = "m.onnx", offset = 512 : i64, length = 384 : i64} : tensor<8x12xf32>
  %wkva = onnx.weight "kv_a_proj_with_mqa" {file = "m.onnx", offset = 896 : i64, length = 320 : i64} : tensor<8x10xf32>
  %kvn = onnx.weight "kv_a_layernorm" {file = "m.onnx", offset = 1216 : i64, length = 24 : i64} : tensor<6xf32>
  %wkvb = onnx.weight "kv_b_proj" {file = "m.onnx", offset = 1240 : i64, length = 240 : i64} : tensor<6x10xf32>
  %wo = onnx.weight "o_proj" {file = "m.onnx", offset = 1480 : i64, length = 192 : i64} : tensor<6x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x12xf32>) -> tensor<1x4x12xf32>
  %qshape = onnx.node "Constant"() {node_name = "q_shape", onnx_attrs = {value = dense<[1, 4, 2, 6]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %q4 = onnx.node "Reshape"(%q, %qshape) {node_name = "q_heads", onnx_attrs = {}} : (tensor<1x4x12xf32>, tensor<4xi64>) -> tensor<1x4x2x6xf32>
  %qt = onnx.node "Transpose"(%q4) {node_name = "q_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x2x6xf32>) -> tensor<1x2x4x6xf32>
  %qsplit = onnx.node "Constant"() {node_name = "q_split", onnx_attrs = {value = dense<[2, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %qnope, %qpe = onnx.node "Split"(%qt, %qsplit) {node_name = "q_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x6xf32>, tensor<2xi64>) -> (tensor<1x2x4x2xf32>, tensor<1x2x4x4xf32>)
  %kva = onnx.node "MatMul"(%x, %wkva) {node_name = "kv_a_proj_with_mqa", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<8x10xf32>) -> tensor<1x4x10xf32>
  %kvasplit = onnx.node "Constant"() {node_name = "kv_a_split", onnx_attrs = {value = dense<[6, 4]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %c, %kpe = onnx.node "Split"(%kva, %kvasplit) {node_name = "kv_a_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x4x10xf32>, tensor<2xi64>) -> (tensor<1x4x6xf32>, tensor<1x4x4xf32>)
  %kpeshape = onnx.node "Constant"() {node_name = "k_pe_shape", onnx_attrs = {value = dense<[1, 4, 1, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kpe4 = onnx.node "Reshape"(%kpe, %kpeshape) {node_name = "k_pe_heads", onnx_attrs = {}} : (tensor<1x4x4xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %kpet = onnx.node "Transpose"(%kpe4) {node_name = "k_pe_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x1x4xf32>) -> tensor<1x1x4x4xf32>
  %kvn_two = onnx.node "Constant"() {node_name = "kvn_two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %kvn_sq = onnx.node "Pow"(%c, %kvn_two) {node_name = "kvn_pow", onnx_attrs = {}} : (tensor<1x4x6xf32>, tensor<f32>) -> tensor<1x4x6xf32>
  %kvn_m = onnx.node "ReduceMean"(%kvn_sq) {node_name = "kvn_mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x4x6xf32>) -> tensor<1x4x1xf32>
  %kvn_eps = onnx.node "Constant"() {node_name = "kvn_eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %kvn_a = onnx.node "Add"(%kvn_m, %kvn_eps) {node_name = "kvn_add", onnx_attrs = {}} : (tensor<1x4x1xf32>, tensor<f32>) -> tensor<1x4x1xf32>
  %kvn_s = onnx.node "Sqrt"(%kvn_a) {node_name = "kvn_sqrt", onnx_attrs = {}} : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %kvn_d = onnx.node "Div"(%c, %kvn_s) {node_name = "kvn_scaled", onnx_attrs = {}} : (tensor<1x4x6xf32>, tensor<1x4x1xf32>) -> tensor<1x4x6xf32>
  %kvn_n = onnx.node "Mul"(%kvn_d, %kvn) {node_name = "kvn_weighted", onnx_attrs = {}} : (tensor<1x4x6xf32>, tensor<6xf32>) -> tensor<1x4x6xf32>
  %kvb = onnx.node "MatMul"(%kvn_n, %wkvb) {node_name = "kv_b_proj", onnx_attrs = {}} : (tensor<1x4x6xf32>, tensor<6x10xf32>) -> tensor<1x4x10xf32>
  %kvshape = onnx.node "Constant"() {node_name = "kv_shape", onnx_attrs = {value = dense<[1, 4, 2, 5]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kv4 = onnx.node "Reshape"(%kvb, %kvshape) {node_name = "kv_heads", onnx_attrs = {}} : (tensor<1x4x10xf32>, tensor<4xi64>) -> tensor<1x4x2x5xf32>
  %kvt = onnx.node "Transpose"(%kv4) {node_name = "kv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x4x2x5xf32>) -> tensor<1x2x4x5xf32>
  %kvbsplit = onnx.node "Constant"() {node_name = "kv_b_split", onnx_attrs = {value = dense<[2, 3]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %knope, %v = onnx.node "Split"(%kvt, %kvbsplit) {node_name = "kv_b_split", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x5xf32>, tensor<2xi64>) -> (tensor<1x2x4x2xf32>, tensor<1x2x4x3xf32>)
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
  %q1 = onnx.node "Slice"(%qpe, %c0, %c2, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %q2 = onnx.node "Slice"(%qpe, %c2, %c4, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x4xf32>
  %qc = onnx.node "Mul"(%qpe, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %k1 = onnx.node "Slice"(%kpet, %c0, %c2, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %k2 = onnx.node "Slice"(%kpet, %c2, %c4, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x4x2xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x1x4x2xf32>) -> tensor<1x1x4x2xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x4x4xf32>
  %kc = onnx.node "Mul"(%kpet, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %kexp = onnx.node "Constant"() {node_name = "k_pe_expand", onnx_attrs = {value = dense<[1, 2, 4, 4]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %kre = onnx.node "Expand"(%kr, %kexp) {node_name = "k_pe_expanded", onnx_attrs = {}} : (tensor<1x1x4x4xf32>, tensor<4xi64>) -> tensor<1x2x4x4xf32>
  %qst = onnx.node "Concat"(%qnope, %qr) {node_name = "query_states", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x2xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x6xf32>
  %kst = onnx.node "Concat"(%knope, %kre) {node_name = "key_states", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x2xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x6xf32>
  %kT = onnx.node "Transpose"(%kst) {node_name = "k_transposed", onnx_attrs = {perm = [0, 1, 3, 2]}} : (tensor<1x2x4x6xf32>) -> tensor<1x2x6x4xf32>
  %s = onnx.node "MatMul"(%qst, %kT) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x4x6xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x4x4xf32>
  %scale = onnx.node "Constant"() {node_name = "softmax_scale", onnx_attrs = {value = dense<0.408248305> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Mul"(%s, %scale) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %full = onnx.node "Constant"() {node_name = "full", onnx_attrs = {value = dense<0xFF800000> : tensor<4x4xf32>}} : () -> tensor<4x4xf32>
  %ck = onnx.node "Constant"() {node_name = "causal_k", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %causal = onnx.node "Trilu"(%full, %ck) {node_name = "causal", onnx_attrs = {upper = 1 : i64}} : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
  %winoff = onnx.node "Constant"() {node_name = "window_k", onnx_attrs = {value = dense<2> : tensor<i64>}} : () -> tensor<i64>
  // expected-error @+1 {{node 'window' (Trilu): attention: a lower-triangular mask whose diagonal offset is not a negative constant (sliding window)}}
  %win = onnx.node "Trilu"(%full, %winoff) {node_name = "window", onnx_attrs = {upper = 0 : i64}} : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
  %mask = onnx.node "Add"(%causal, %win) {node_name = "mask", onnx_attrs = {}} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pv = onnx.node "MatMul"(%p, %v) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x4x3xf32>
  %pt = onnx.node "Transpose"(%pv) {node_name = "pv_t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<1x2x4x3xf32>) -> tensor<1x4x2x3xf32>
  %oshape = onnx.node "Constant"() {node_name = "o_shape", onnx_attrs = {value = dense<[1, 4, 6]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %pr = onnx.node "Reshape"(%pt, %oshape) {node_name = "merge_heads", onnx_attrs = {}} : (tensor<1x4x2x3xf32>, tensor<3xi64>) -> tensor<1x4x6xf32>
  %y = onnx.node "MatMul"(%pr, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x4x6xf32>, tensor<6x8xf32>) -> tensor<1x4x8xf32>
  %r = onnx.node "Add"(%x, %y) {node_name = "residual", onnx_attrs = {}} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}
