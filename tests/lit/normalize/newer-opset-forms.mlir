// RUN: disagmoe-opt %s -normalize-onnx -split-input-file | FileCheck %s
// normalize-onnx, the opset-18..23 and onnxruntime spellings (NewerOpsetForms.cpp,
// DecomposeAttention.cpp): each rewritten to the opset-13 form the matchers read, and the nodes
// that must stay as they are.

// ReduceMean-18: the axes input becomes the attribute; keepdims stays.
// CHECK-LABEL: func.func @reduce_axes_input
// CHECK-NOT:   "Constant"
// CHECK:       onnx.node "ReduceMean"(%arg0) {node_name = "mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}}
module attributes {onnx.opset = 18 : i64} {
func.func @reduce_axes_input(%x: tensor<2x8x4xf32>) -> tensor<2x8x1xf32> {
  %axes = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<[-1]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %m = onnx.node "ReduceMean"(%x, %axes) {node_name = "mean", onnx_attrs = {keepdims = 1 : i64}} : (tensor<2x8x4xf32>, tensor<1xi64>) -> tensor<2x8x1xf32>
  return %m : tensor<2x8x1xf32>
}
}

// -----

// noop_with_empty_axes and no axes: the identity.
// CHECK-LABEL: func.func @reduce_noop
// CHECK-NOT:   "ReduceMax"
// CHECK:       return %arg0
module attributes {onnx.opset = 18 : i64} {
func.func @reduce_noop(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %m = onnx.node "ReduceMax"(%x) {node_name = "max", onnx_attrs = {noop_with_empty_axes = 1 : i64}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %m : tensor<2x4xf32>
}
}

// -----

// Axes computed at run time (a graph input): not a form the matchers read; kept.
// CHECK-LABEL: func.func @reduce_runtime_axes
// CHECK:       onnx.node "ReduceMean"(%arg0, %arg1)
module attributes {onnx.opset = 18 : i64} {
func.func @reduce_runtime_axes(%x: tensor<2x4xf32>, %axes: tensor<1xi64>) -> tensor<2x1xf32> {
  %m = onnx.node "ReduceMean"(%x, %axes) {node_name = "mean", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  return %m : tensor<2x1xf32>
}
}

// -----

// Before opset 18 the pattern does not apply (the loader refuses the two-input form there).
// CHECK-LABEL: func.func @reduce_opset17
// CHECK:       onnx.node "ReduceMean"(%arg0, %{{.*}})
module attributes {onnx.opset = 17 : i64} {
func.func @reduce_opset17(%x: tensor<2x4xf32>) -> tensor<2x1xf32> {
  %axes = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<[-1]> : tensor<1xi64>}} : () -> tensor<1xi64>
  %m = onnx.node "ReduceMean"(%x, %axes) {node_name = "mean", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  return %m : tensor<2x1xf32>
}
}

// -----

// Split-18 num_outputs = 3 on a dim of 8: ceil(8 / 3) = 3, 3, then 2.
// CHECK-LABEL: func.func @split_num_outputs
// CHECK:       %[[S:.*]] = onnx.node "Constant"() {node_name = "split/split", onnx_attrs = {value = dense<[3, 3, 2]> : tensor<3xi64>}}
// CHECK:       onnx.node "Split"(%arg0, %[[S]]) {node_name = "split", onnx_attrs = {axis = 1 : i64}}
func.func @split_num_outputs(%x: tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>) {
  %a:3 = onnx.node "Split"(%x) {node_name = "split", onnx_attrs = {axis = 1 : i64, num_outputs = 3 : i64}} : (tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>)
  return %a#0, %a#1, %a#2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>
}

// -----

// A dynamic dim: the sizes are not known; kept.
// CHECK-LABEL: func.func @split_dynamic
// CHECK:       onnx.node "Split"(%arg0) {{.*}}num_outputs = 2
func.func @split_dynamic(%x: tensor<2x?xf32>) -> (tensor<2x?xf32>, tensor<2x?xf32>) {
  %a:2 = onnx.node "Split"(%x) {node_name = "split", onnx_attrs = {axis = 1 : i64, num_outputs = 2 : i64}} : (tensor<2x?xf32>) -> (tensor<2x?xf32>, tensor<2x?xf32>)
  return %a#0, %a#1 : tensor<2x?xf32>, tensor<2x?xf32>
}

// -----

// RMSNormalization-23 -> w * (x * (1 / sqrt(mean(x^2) + eps))), the chain RmsNormPattern reads.
// CHECK-LABEL: func.func @rms_normalization
// CHECK-NOT:   "RMSNormalization"
// CHECK:       %[[P:.*]] = onnx.node "Pow"(%arg0, %{{.*}})
// CHECK:       %[[M:.*]] = onnx.node "ReduceMean"(%[[P]]) {{.*}}axes = [-1], keepdims = 1
// CHECK:       %[[E:.*]] = onnx.node "Constant"() {{.*}}value = dense<9.99999997E-7> : tensor<f32>
// CHECK:       %[[A:.*]] = onnx.node "Add"(%[[M]], %[[E]])
// CHECK:       %[[R:.*]] = onnx.node "Sqrt"(%[[A]])
// CHECK:       %[[I:.*]] = onnx.node "Div"(%{{.*}}, %[[R]])
// CHECK:       %[[N:.*]] = onnx.node "Mul"(%arg0, %[[I]])
// CHECK:       onnx.node "Mul"(%{{.*}}, %[[N]]) {node_name = "norm"
func.func @rms_normalization(%x: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 16 : i64} : tensor<4xf32>
  %y = onnx.node "RMSNormalization"(%x, %w) {node_name = "norm", onnx_attrs = {axis = -1 : i64, epsilon = 9.99999997E-7 : f32, stash_type = 1 : i64}} : (tensor<2x8x4xf32>, tensor<4xf32>) -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

// Normalizing over more than the last axis: not an RMSNorm of the residual stream; kept.
// CHECK-LABEL: func.func @rms_normalization_two_axes
// CHECK:       onnx.node "RMSNormalization"
func.func @rms_normalization_two_axes(%x: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %y = onnx.node "RMSNormalization"(%x, %w) {node_name = "norm", onnx_attrs = {axis = 1 : i64}} : (tensor<2x8x4xf32>, tensor<8x4xf32>) -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

// onnxruntime's SimplifiedLayerNormalization: the same chain, epsilon defaulting to 1e-5 ...
// CHECK-LABEL: func.func @simplified_layer_norm
// CHECK-NOT:   "SimplifiedLayerNormalization"
// CHECK:       onnx.node "Constant"() {{.*}}value = dense<9.99999974E-6> : tensor<f32>
// CHECK:       onnx.node "Mul"(%{{.*}}, %{{.*}}) {node_name = "sln"
func.func @simplified_layer_norm(%x: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 16 : i64} : tensor<4xf32>
  %y = onnx.node "SimplifiedLayerNormalization"(%x, %w) {node_name = "sln", onnx_attrs = {}} : (tensor<2x8x4xf32>, tensor<4xf32>) -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

// ... but not when its inv_std_var output is read.
// CHECK-LABEL: func.func @simplified_layer_norm_inv_std_read
// CHECK:       onnx.node "SimplifiedLayerNormalization"
func.func @simplified_layer_norm_inv_std_read(%x: tensor<2x8x4xf32>) -> tensor<2x8x1xf32> {
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 16 : i64} : tensor<4xf32>
  %y:2 = onnx.node "SimplifiedLayerNormalization"(%x, %w) {node_name = "sln", onnx_attrs = {}} : (tensor<2x8x4xf32>, tensor<4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x1xf32>)
  return %y#1 : tensor<2x8x1xf32>
}

// -----

// com.microsoft.SkipSimplifiedLayerNormalization: S = input + skip, the norm of S, and the 4th
// output (input_skip_bias_sum) is S, which the residual stream reads on.
// CHECK-LABEL: func.func @skip_simplified_layer_norm
// CHECK-NOT:   "SkipSimplifiedLayerNormalization"
// CHECK:       %[[S:.*]] = onnx.node "Add"(%arg0, %arg1) {node_name = "skip/skip_sum"
// CHECK:       onnx.node "Pow"(%[[S]], %{{.*}})
// CHECK:       %[[Y:.*]] = onnx.node "Mul"(%{{.*}}, %{{.*}}) {node_name = "skip"
// CHECK:       return %[[Y]], %[[S]]
func.func @skip_simplified_layer_norm(%x: tensor<2x8x4xf32>, %r: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x4xf32>) {
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 16 : i64} : tensor<4xf32>
  %y:4 = onnx.node "SkipSimplifiedLayerNormalization"(%x, %r, %w) {domain = "com.microsoft", node_name = "skip", onnx_attrs = {epsilon = 9.99999974E-6 : f32}} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<4xf32>) -> (tensor<2x8x4xf32>, tensor<*xf32>, tensor<*xf32>, tensor<2x8x4xf32>)
  return %y#0, %y#3 : tensor<2x8x4xf32>, tensor<2x8x4xf32>
}

// -----

// With a bias input (no residual stream has one): kept.
// CHECK-LABEL: func.func @skip_simplified_layer_norm_bias
// CHECK:       onnx.node "SkipSimplifiedLayerNormalization"
func.func @skip_simplified_layer_norm_bias(%x: tensor<2x8x4xf32>, %r: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 16 : i64} : tensor<4xf32>
  %b = onnx.weight "b" {file = "m.onnx", offset = 16 : i64, length = 16 : i64} : tensor<4xf32>
  %y:4 = onnx.node "SkipSimplifiedLayerNormalization"(%x, %r, %w, %b) {domain = "com.microsoft", node_name = "skip", onnx_attrs = {}} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x8x4xf32>, tensor<*xf32>, tensor<*xf32>, tensor<2x8x4xf32>)
  return %y#0 : tensor<2x8x4xf32>
}

// -----

// Attention-23, is_causal: Softmax(Q K^T * scale + triu(-inf, 1)) V.
// CHECK-LABEL: func.func @attention_causal
// CHECK-NOT:   "Attention"
// CHECK:       %[[KT:.*]] = onnx.node "Transpose"(%arg1) {{.*}}perm = [0, 1, 3, 2]
// CHECK:       %[[QK:.*]] = onnx.node "MatMul"(%arg0, %[[KT]])
// CHECK:       %[[C:.*]] = onnx.node "Constant"() {{.*}}value = dense<2.500000e-01> : tensor<f32>
// CHECK:       %[[SC:.*]] = onnx.node "Mul"(%[[QK]], %[[C]])
// CHECK:       %[[T:.*]] = onnx.node "Trilu"(%{{.*}}, %{{.*}}) {{.*}}upper = 1
// CHECK:       %[[AD:.*]] = onnx.node "Add"(%[[SC]], %[[T]])
// CHECK:       %[[P:.*]] = onnx.node "Softmax"(%[[AD]]) {{.*}}axis = -1
// CHECK:       onnx.node "MatMul"(%[[P]], %arg2) {node_name = "attn"
func.func @attention_causal(%q: tensor<1x2x5x16xf32>, %k: tensor<1x2x5x16xf32>, %v: tensor<1x2x5x16xf32>) -> tensor<1x2x5x16xf32> {
  %y = onnx.node "Attention"(%q, %k, %v) {node_name = "attn", onnx_attrs = {is_causal = 1 : i64}} : (tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>) -> tensor<1x2x5x16xf32>
  return %y : tensor<1x2x5x16xf32>
}

// -----

// A boolean attn_mask becomes Where(mask, 0, -inf), added to the scores; the scale attribute wins.
// CHECK-LABEL: func.func @attention_bool_mask
// CHECK:       onnx.node "Constant"() {{.*}}value = dense<5.000000e-01> : tensor<f32>
// CHECK:       %[[W:.*]] = onnx.node "Where"(%arg3, %{{.*}}, %{{.*}})
// CHECK:       onnx.node "Add"(%{{.*}}, %[[W]])
func.func @attention_bool_mask(%q: tensor<1x2x5x16xf32>, %k: tensor<1x2x5x16xf32>, %v: tensor<1x2x5x16xf32>, %m: tensor<5x5xi1>) -> tensor<1x2x5x16xf32> {
  %y = onnx.node "Attention"(%q, %k, %v, %m) {node_name = "attn", onnx_attrs = {scale = 5.000000e-01 : f32}} : (tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>, tensor<5x5xi1>) -> tensor<1x2x5x16xf32>
  return %y : tensor<1x2x5x16xf32>
}

// -----

// softcap, K/V with fewer heads than Q, and no mask at all: none is moe.attention; all kept.
// CHECK-LABEL: func.func @attention_kept
// CHECK-COUNT-3: onnx.node "Attention"
func.func @attention_kept(%q: tensor<1x2x5x16xf32>, %k: tensor<1x2x5x16xf32>, %k1: tensor<1x1x5x16xf32>, %v: tensor<1x2x5x16xf32>) -> (tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>) {
  %a = onnx.node "Attention"(%q, %k, %v) {node_name = "softcap", onnx_attrs = {is_causal = 1 : i64, softcap = 3.000000e+01 : f32}} : (tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>) -> tensor<1x2x5x16xf32>
  %b = onnx.node "Attention"(%q, %k1, %v) {node_name = "gqa", onnx_attrs = {is_causal = 1 : i64}} : (tensor<1x2x5x16xf32>, tensor<1x1x5x16xf32>, tensor<1x2x5x16xf32>) -> tensor<1x2x5x16xf32>
  %c = onnx.node "Attention"(%q, %k, %v) {node_name = "bidirectional", onnx_attrs = {}} : (tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>) -> tensor<1x2x5x16xf32>
  return %a, %b, %c : tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>
}

// -----

// com.microsoft.RotaryEmbedding with plain RoPE tables (theta 10000, head_dim 4) read at positions
// 0..S-1: Hugging Face's chain, x * cos + rotate_half(x) * sin, from an inv_freq constant.
// CHECK-LABEL: func.func @rotary_plain
// CHECK-NOT:   "RotaryEmbedding"
// CHECK:       onnx.node "Constant"() {node_name = "rope/inv_freq", onnx_attrs = {value = dense<{{\[}}[1.000000e+00], [0.00999999977]]> : tensor<2x1xf32>}}
// CHECK:       %[[F:.*]] = onnx.node "MatMul"
// CHECK:       %[[E:.*]] = onnx.node "Concat"
// CHECK:       %[[C:.*]] = onnx.node "Cos"(%[[E]])
// CHECK:       %[[S:.*]] = onnx.node "Sin"(%[[E]])
// CHECK:       %[[N:.*]] = onnx.node "Neg"
// CHECK:       %[[R:.*]] = onnx.node "Concat"(%[[N]], %{{.*}})
// CHECK:       %[[A:.*]] = onnx.node "Mul"(%arg0, %[[C]])
// CHECK:       %[[B:.*]] = onnx.node "Mul"(%[[R]], %[[S]])
// CHECK:       onnx.node "Add"(%[[A]], %[[B]]) {node_name = "rope"
func.func @rotary_plain(%x: tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32> {
  %pos = onnx.node "Constant"() {node_name = "pos", onnx_attrs = {value = dense<[[0, 1]]> : tensor<1x2xi64>}} : () -> tensor<1x2xi64>
  %cos = onnx.node "Constant"() {node_name = "cos", onnx_attrs = {value = dense<[[1.0, 1.0], [0.5403022766113281, 0.9999499917030334]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sin = onnx.node "Constant"() {node_name = "sin", onnx_attrs = {value = dense<[[0.0, 0.0], [0.8414710164070129, 0.009999833069741726]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %y = onnx.node "RotaryEmbedding"(%x, %pos, %cos, %sin) {domain = "com.microsoft", node_name = "rope", onnx_attrs = {interleaved = 0 : i64}} : (tensor<1x2x2x4xf32>, tensor<1x2xi64>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x4xf32>
  return %y : tensor<1x2x2x4xf32>
}

// -----

// GPT-J's pairs (interleaved = 1): each head de-interleaved ([.., d/2, 2] swapped to [.., 2, d/2]),
// rotated as above, and interleaved back; AttentionPattern reads the pair as rope_interleaved.
// CHECK-LABEL: func.func @rotary_interleaved
// CHECK-NOT:   "RotaryEmbedding"
// CHECK:       %[[P:.*]] = onnx.node "Reshape"(%arg0, %{{.*}}) {node_name = "rope/deinterleave_split"{{.*}} -> tensor<1x2x2x2x2xf32>
// CHECK:       %[[T:.*]] = onnx.node "Transpose"(%[[P]]) {node_name = "rope/deinterleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}}
// CHECK:       %[[D:.*]] = onnx.node "Reshape"(%[[T]], %{{.*}}) {node_name = "rope/deinterleave_merge"{{.*}} -> tensor<1x2x2x4xf32>
// CHECK:       onnx.node "Slice"(%[[D]],
// CHECK:       %[[A:.*]] = onnx.node "Mul"(%[[D]], %{{.*}})
// CHECK:       %[[Y:.*]] = onnx.node "Add"(%[[A]], %{{.*}}) {node_name = "rope/rotated"
// CHECK:       %[[Q:.*]] = onnx.node "Reshape"(%[[Y]], %{{.*}}) {node_name = "rope/interleave_split"
// CHECK:       %[[U:.*]] = onnx.node "Transpose"(%[[Q]]) {node_name = "rope/interleave", onnx_attrs = {perm = [0, 1, 2, 4, 3]}}
// CHECK:       %[[R:.*]] = onnx.node "Reshape"(%[[U]], %{{.*}}) {node_name = "rope/interleave_merge"
// CHECK:       return %[[R]]
func.func @rotary_interleaved(%x: tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32> {
  %pos = onnx.node "Constant"() {node_name = "pos", onnx_attrs = {value = dense<[[0, 1]]> : tensor<1x2xi64>}} : () -> tensor<1x2xi64>
  %cos = onnx.node "Constant"() {node_name = "cos", onnx_attrs = {value = dense<[[1.0, 1.0], [0.5403022766113281, 0.9999499917030334]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sin = onnx.node "Constant"() {node_name = "sin", onnx_attrs = {value = dense<[[0.0, 0.0], [0.8414710164070129, 0.009999833069741726]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %y = onnx.node "RotaryEmbedding"(%x, %pos, %cos, %sin) {domain = "com.microsoft", node_name = "rope", onnx_attrs = {interleaved = 1 : i64}} : (tensor<1x2x2x4xf32>, tensor<1x2xi64>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x4xf32>
  return %y : tensor<1x2x2x4xf32>
}

// -----

// Tables of a scaled RoPE, m cos/sin(p w_i) with m = 1.25 and w = [0.5, 0.005] (onnxruntime-genai's
// YaRN caches): the chain gets the measured frequencies and a Mul by m after Cos and Sin.
// CHECK-LABEL: func.func @rotary_scaled
// CHECK-NOT:   "RotaryEmbedding"
// CHECK:       onnx.node "Constant"() {node_name = "rope/inv_freq", onnx_attrs = {value = dense<{{\[}}[5.000000e-01], [5.000000e-03]]> : tensor<2x1xf32>}}
// CHECK:       %[[C:.*]] = onnx.node "Cos"
// CHECK:       %[[S:.*]] = onnx.node "Sin"
// CHECK:       %[[M:.*]] = onnx.node "Constant"() {node_name = "rope/attention_factor", onnx_attrs = {value = dense<1.250000e+00> : tensor<f32>}}
// CHECK:       onnx.node "Mul"(%[[C]], %[[M]]) {node_name = "rope/cos_scaled"
// CHECK:       onnx.node "Mul"(%[[S]], %[[M]]) {node_name = "rope/sin_scaled"
func.func @rotary_scaled(%x: tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32> {
  %pos = onnx.node "Constant"() {node_name = "pos", onnx_attrs = {value = dense<[[0, 1]]> : tensor<1x2xi64>}} : () -> tensor<1x2xi64>
  %cos = onnx.node "Constant"() {node_name = "cos", onnx_attrs = {value = dense<[[1.25, 1.25], [1.096978202362966, 1.249984375032552]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sin = onnx.node "Constant"() {node_name = "sin", onnx_attrs = {value = dense<[[0.0, 0.0], [0.5992819232552538, 0.006249973958365886]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %y = onnx.node "RotaryEmbedding"(%x, %pos, %cos, %sin) {domain = "com.microsoft", node_name = "rope", onnx_attrs = {interleaved = 0 : i64}} : (tensor<1x2x2x4xf32>, tensor<1x2xi64>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x4xf32>
  return %y : tensor<1x2x2x4xf32>
}

// -----

// cos scaled by 1.1 and sin by 1.2 (not one factor), interleaved = 2 (neither form), and position
// ids that start at 1: none is RoPE at 0..S-1; all kept (the raise pass names why).
// CHECK-LABEL: func.func @rotary_kept
// CHECK-COUNT-3: onnx.node "RotaryEmbedding"
func.func @rotary_kept(%x: tensor<1x2x2x4xf32>) -> (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) {
  %pos = onnx.node "Constant"() {node_name = "pos", onnx_attrs = {value = dense<[[0, 1]]> : tensor<1x2xi64>}} : () -> tensor<1x2xi64>
  %pos1 = onnx.node "Constant"() {node_name = "pos1", onnx_attrs = {value = dense<[[1, 2]]> : tensor<1x2xi64>}} : () -> tensor<1x2xi64>
  %cos = onnx.node "Constant"() {node_name = "cos", onnx_attrs = {value = dense<[[1.0, 1.0], [0.5403022766113281, 0.9999499917030334]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sin = onnx.node "Constant"() {node_name = "sin", onnx_attrs = {value = dense<[[0.0, 0.0], [0.8414710164070129, 0.009999833069741726]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %cos11 = onnx.node "Constant"() {node_name = "cos11", onnx_attrs = {value = dense<[[1.1, 1.1], [0.59433250427, 1.09994499087]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sin11 = onnx.node "Constant"() {node_name = "sin11", onnx_attrs = {value = dense<[[0.0, 0.0], [1.00976521969, 0.01199979968]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %a = onnx.node "RotaryEmbedding"(%x, %pos, %cos11, %sin11) {domain = "com.microsoft", node_name = "mscale", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2xi64>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x4xf32>
  %b = onnx.node "RotaryEmbedding"(%x, %pos, %cos, %sin) {domain = "com.microsoft", node_name = "interleaved", onnx_attrs = {interleaved = 2 : i64}} : (tensor<1x2x2x4xf32>, tensor<1x2xi64>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x4xf32>
  %c = onnx.node "RotaryEmbedding"(%x, %pos1, %cos, %sin) {domain = "com.microsoft", node_name = "offset", onnx_attrs = {}} : (tensor<1x2x2x4xf32>, tensor<1x2xi64>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x4xf32>
  return %a, %b, %c : tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>
}

// -----

// com.microsoft.GroupQueryAttention with separate q/k/v, no KV cache and no padding: the head
// split, transformers' repeat_kv for 2 query heads per KV head, causal attention, the head merge.
// CHECK-LABEL: func.func @group_query_attention
// CHECK-NOT:   "GroupQueryAttention"
// CHECK:       onnx.node "Reshape"(%arg0, %{{.*}}) {node_name = "gqa/q_heads"
// CHECK:       onnx.node "Unsqueeze"
// CHECK:       onnx.node "Expand"
// CHECK:       %[[KR:.*]] = onnx.node "Reshape"({{.*}}) {node_name = "gqa/k_repeat"
// CHECK:       onnx.node "Transpose"(%[[KR]]) {{.*}}perm = [0, 1, 3, 2]
// CHECK:       onnx.node "Trilu"
// CHECK:       onnx.node "Softmax"
// CHECK:       onnx.node "Reshape"({{.*}}) {node_name = "gqa",
func.func @group_query_attention(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.none
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  %y:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %none, %none, %seqlens, %total) {domain = "com.microsoft", node_name = "gqa", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0 : tensor<1x3x8xf32>
}

// -----

// A padded batch (seqlens_k below S - 1) and a packed QKV input: not imported; kept.
// CHECK-LABEL: func.func @group_query_attention_kept
// CHECK-COUNT-2: onnx.node "GroupQueryAttention"
func.func @group_query_attention_kept(%q: tensor<1x3x8xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>, %qkv: tensor<1x3x16xf32>) -> (tensor<1x3x8xf32>, tensor<1x3x8xf32>) {
  %none = onnx.none
  %seqlens = onnx.node "Constant"() {node_name = "seqlens", onnx_attrs = {value = dense<1> : tensor<1xi32>}} : () -> tensor<1xi32>
  %full = onnx.node "Constant"() {node_name = "full", onnx_attrs = {value = dense<2> : tensor<1xi32>}} : () -> tensor<1xi32>
  %total = onnx.node "Constant"() {node_name = "total", onnx_attrs = {value = dense<3> : tensor<i32>}} : () -> tensor<i32>
  %a:3 = onnx.node "GroupQueryAttention"(%q, %k, %v, %none, %none, %seqlens, %total) {domain = "com.microsoft", node_name = "padded", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64}} : (tensor<1x3x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  %b:3 = onnx.node "GroupQueryAttention"(%qkv, %none, %none, %none, %none, %full, %total) {domain = "com.microsoft", node_name = "packed", onnx_attrs = {kv_num_heads = 1 : i64, num_heads = 2 : i64}} : (tensor<1x3x16xf32>, none, none, none, none, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x8xf32>, tensor<*xf32>, tensor<*xf32>)
  return %a#0, %b#0 : tensor<1x3x8xf32>, tensor<1x3x8xf32>
}
