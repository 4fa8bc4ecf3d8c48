// RUN: disagmoe-opt %s -normalize-onnx -split-input-file | FileCheck %s
// normalize-onnx (passes/raise/normalize/): each pattern on the form it removes, and the nodes it
// must keep.

// Identity is dropped; its users read its input.
// CHECK-LABEL: func.func @identity
// CHECK-NOT:   "Identity"
// CHECK:       %[[W:.*]] = onnx.weight "w"
// CHECK:       onnx.node "MatMul"(%arg0, %[[W]])
func.func @identity(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 64 : i64} : tensor<4x4xf32>
  %i = onnx.node "Identity"(%w) {node_name = "id", onnx_attrs = {}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = onnx.node "MatMul"(%x, %i) {node_name = "mm", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// An Identity that changes the static type (here: the function's declared result) is kept.
// CHECK-LABEL: func.func @identity_retyped
// CHECK:       onnx.node "Identity"
func.func @identity_retyped(%x: tensor<2x4xf32>) -> tensor<?x4xf32> {
  %i = onnx.node "Identity"(%x) {node_name = "id", onnx_attrs = {}} : (tensor<2x4xf32>) -> tensor<?x4xf32>
  return %i : tensor<?x4xf32>
}

// -----

// Hugging Face's RMSNorm in an fp32 export: x.to(float32) ... .to(input_dtype) are Casts to
// float (to = 1) of f32 values; both go, leaving the chain the RMSNorm matcher accepts.
// CHECK-LABEL: func.func @same_type_cast
// CHECK-NOT:   "Cast"
// CHECK:       %[[P:.*]] = onnx.node "Pow"(%arg0, %{{.*}})
// CHECK:       %[[N:.*]] = onnx.node "Mul"(%arg0, %{{.*}})
// CHECK:       onnx.node "Mul"(%{{.*}}, %[[N]])
func.func @same_type_cast(%x: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %c0 = onnx.node "Cast"(%x) {node_name = "/input_layernorm/Cast", onnx_attrs = {to = 1 : i64}} : (tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %two = onnx.node "Constant"() {node_name = "two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sq = onnx.node "Pow"(%c0, %two) {node_name = "pow", onnx_attrs = {}} : (tensor<2x8x4xf32>, tensor<f32>) -> tensor<2x8x4xf32>
  %r = onnx.node "Mul"(%c0, %sq) {node_name = "mul", onnx_attrs = {}} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %c1 = onnx.node "Cast"(%r) {node_name = "/input_layernorm/Cast_1", onnx_attrs = {to = 1 : i64}} : (tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 16 : i64} : tensor<4xf32>
  %y = onnx.node "Mul"(%w, %c1) {node_name = "mulw", onnx_attrs = {}} : (tensor<4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

// Integer same-type Casts go too (int64 -> int64).
// CHECK-LABEL: func.func @same_type_cast_int
// CHECK-NOT:   "Cast"
// CHECK:       onnx.node "Gather"(%{{.*}}, %arg0)
func.func @same_type_cast_int(%ids: tensor<2x8xi64>) -> tensor<2x8x4xf32> {
  %c = onnx.node "Cast"(%ids) {node_name = "cast", onnx_attrs = {to = 7 : i64}} : (tensor<2x8xi64>) -> tensor<2x8xi64>
  %w = onnx.weight "emb" {file = "m.onnx", offset = 0 : i64, length = 256 : i64} : tensor<16x4xf32>
  %y = onnx.node "Gather"(%w, %c) {node_name = "gather", onnx_attrs = {}} : (tensor<16x4xf32>, tensor<2x8xi64>) -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

// A Cast to another type is kept: int64 -> fp32, fp32 -> int64 (Casts to float16 / bfloat16 are
// widen-low-precision.mlir's: the plan computes in fp32).
// CHECK-LABEL: func.func @other_type_cast
// CHECK:       onnx.node "Cast"(%arg1) {{.*}}to = 1 : i64
// CHECK:       onnx.node "Cast"(%arg0) {{.*}}to = 7 : i64
func.func @other_type_cast(%x: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>) {
  %b = onnx.node "Cast"(%i) {node_name = "to_f32", onnx_attrs = {to = 1 : i64}} : (tensor<4xi64>) -> tensor<4xf32>
  %c = onnx.node "Cast"(%x) {node_name = "to_i64", onnx_attrs = {to = 7 : i64}} : (tensor<4xf32>) -> tensor<4xi64>
  return %b, %c : tensor<4xf32>, tensor<4xi64>
}

// -----

// A Cast to float of a value whose element type shape inference left unknown (the importer
// types it unranked f32) is kept: its input may be of any type.
// CHECK-LABEL: func.func @cast_of_untyped
// CHECK:       onnx.node "Cast"(%{{.*}}) {{.*}}to = 1 : i64
func.func @cast_of_untyped(%x: tensor<4xf32>) -> tensor<*xf32> {
  %u = onnx.node "Unknown"(%x) {node_name = "unknown", onnx_attrs = {}} : (tensor<4xf32>) -> tensor<*xf32>
  %c = onnx.node "Cast"(%u) {node_name = "cast", onnx_attrs = {to = 1 : i64}} : (tensor<*xf32>) -> tensor<*xf32>
  return %c : tensor<*xf32>
}

// -----

// Reciprocal(Sqrt(x)) becomes Div(1, Sqrt(x)), the form torch.onnx.export writes for torch.rsqrt.
// CHECK-LABEL: func.func @reciprocal_sqrt
// CHECK:       %[[S:.*]] = onnx.node "Sqrt"(%arg0)
// CHECK:       %[[ONE:.*]] = onnx.node "Constant"() {node_name = "rcp/one", onnx_attrs = {value = dense<1.000000e+00> : tensor<f32>}}
// CHECK:       %[[D:.*]] = onnx.node "Div"(%[[ONE]], %[[S]]) {node_name = "rcp", onnx_attrs = {}}
// CHECK-NOT:   "Reciprocal"
// CHECK:       return %[[D]]
func.func @reciprocal_sqrt(%x: tensor<2x8x1xf32>) -> tensor<2x8x1xf32> {
  %s = onnx.node "Sqrt"(%x) {node_name = "sqrt", onnx_attrs = {}} : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %r = onnx.node "Reciprocal"(%s) {node_name = "rcp", onnx_attrs = {}} : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  return %r : tensor<2x8x1xf32>
}

// -----

// Reciprocal of anything but a Sqrt is kept.
// CHECK-LABEL: func.func @reciprocal_other
// CHECK:       onnx.node "Reciprocal"(%arg0)
// CHECK-NOT:   "Div"
func.func @reciprocal_other(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = onnx.node "Reciprocal"(%x) {node_name = "rcp", onnx_attrs = {}} : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Pow(x, -0.5) becomes Div(1, Sqrt(x)); the exponent constant goes with it.
// CHECK-LABEL: func.func @pow_minus_half
// CHECK-NOT:   -5.000000e-01
// CHECK:       %[[S:.*]] = onnx.node "Sqrt"(%arg0) {node_name = "rsqrt/Sqrt", onnx_attrs = {}}
// CHECK:       %[[ONE:.*]] = onnx.node "Constant"() {node_name = "rsqrt/one"
// CHECK:       %[[D:.*]] = onnx.node "Div"(%[[ONE]], %[[S]]) {node_name = "rsqrt", onnx_attrs = {}}
// CHECK-NOT:   "Pow"
// CHECK:       return %[[D]]
func.func @pow_minus_half(%x: tensor<2x8x1xf32>) -> tensor<2x8x1xf32> {
  %e = onnx.node "Constant"() {node_name = "e", onnx_attrs = {value = dense<-5.000000e-01> : tensor<f32>}} : () -> tensor<f32>
  %r = onnx.node "Pow"(%x, %e) {node_name = "rsqrt", onnx_attrs = {}} : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  return %r : tensor<2x8x1xf32>
}

// -----

// Pow with another exponent (-1, 0.5, 3), or with a non-constant exponent, is kept; a shared
// exponent constant stays for its other users.
// CHECK-LABEL: func.func @pow_other
// CHECK-COUNT-4: onnx.node "Pow"
// CHECK-NOT:   "Div"
// CHECK-NOT:   "Sqrt"
func.func @pow_other(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %m1 = onnx.node "Constant"() {node_name = "m1", onnx_attrs = {value = dense<-1.0> : tensor<f32>}} : () -> tensor<f32>
  %h = onnx.node "Constant"() {node_name = "h", onnx_attrs = {value = dense<0.5> : tensor<f32>}} : () -> tensor<f32>
  %t = onnx.node "Constant"() {node_name = "t", onnx_attrs = {value = dense<3.0> : tensor<f32>}} : () -> tensor<f32>
  %a = onnx.node "Pow"(%x, %m1) {node_name = "a", onnx_attrs = {}} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %b = onnx.node "Pow"(%x, %h) {node_name = "b", onnx_attrs = {}} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %c = onnx.node "Pow"(%x, %t) {node_name = "c", onnx_attrs = {}} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %d = onnx.node "Pow"(%x, %y) {node_name = "d", onnx_attrs = {}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %a, %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Pow(x, -0.5) with an exponent of more elements, or one that broadcasts x to a larger shape,
// is kept.
// CHECK-LABEL: func.func @pow_minus_half_broadcast
// CHECK-COUNT-2: onnx.node "Pow"
// CHECK-NOT:   "Sqrt"
func.func @pow_minus_half_broadcast(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x4xf32>) {
  %e2 = onnx.node "Constant"() {node_name = "e2", onnx_attrs = {value = dense<[-0.5, -0.5, -0.5, -0.5]> : tensor<4xf32>}} : () -> tensor<4xf32>
  %e3 = onnx.node "Constant"() {node_name = "e3", onnx_attrs = {value = dense<-0.5> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %a = onnx.node "Pow"(%x, %e2) {node_name = "a", onnx_attrs = {}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = onnx.node "Pow"(%x, %e3) {node_name = "b", onnx_attrs = {}} : (tensor<4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %a, %b : tensor<4xf32>, tensor<2x4xf32>
}

// -----

// Mul(x, x) becomes Pow(x, 2), the form of torch's x.pow(2) that the RMSNorm matcher accepts.
// CHECK-LABEL: func.func @mul_self
// CHECK:       %[[TWO:.*]] = onnx.node "Constant"() {node_name = "sq/two", onnx_attrs = {value = dense<2.000000e+00> : tensor<f32>}}
// CHECK:       %[[P:.*]] = onnx.node "Pow"(%arg0, %[[TWO]]) {node_name = "sq", onnx_attrs = {}}
// CHECK:       onnx.node "ReduceMean"(%[[P]])
func.func @mul_self(%x: tensor<2x8x4xf32>) -> tensor<2x8x1xf32> {
  %sq = onnx.node "Mul"(%x, %x) {node_name = "sq", onnx_attrs = {}} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %m = onnx.node "ReduceMean"(%sq) {node_name = "mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<2x8x4xf32>) -> tensor<2x8x1xf32>
  return %m : tensor<2x8x1xf32>
}

// -----

// Mul of two different values, and Mul(x, x) of integers, are kept.
// CHECK-LABEL: func.func @mul_other
// CHECK-COUNT-2: onnx.node "Mul"
// CHECK-NOT:   "Pow"
func.func @mul_other(%x: tensor<4xf32>, %y: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>) {
  %a = onnx.node "Mul"(%x, %y) {node_name = "a", onnx_attrs = {}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = onnx.node "Mul"(%i, %i) {node_name = "b", onnx_attrs = {}} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %a, %b : tensor<4xf32>, tensor<4xi64>
}

// -----

// Pow(x, 2) itself, and Div(1, Sqrt(x)), are already canonical and stay as they are.
// CHECK-LABEL: func.func @canonical
// CHECK:       onnx.node "Pow"(%arg0,
// CHECK:       onnx.node "Sqrt"
// CHECK:       onnx.node "Div"
func.func @canonical(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %two = onnx.node "Constant"() {node_name = "two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %p = onnx.node "Pow"(%x, %two) {node_name = "p", onnx_attrs = {}} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %one = onnx.node "Constant"() {node_name = "one", onnx_attrs = {value = dense<1.0> : tensor<f32>}} : () -> tensor<f32>
  %s = onnx.node "Sqrt"(%x) {node_name = "s", onnx_attrs = {}} : (tensor<4xf32>) -> tensor<4xf32>
  %d = onnx.node "Div"(%one, %s) {node_name = "d", onnx_attrs = {}} : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return %p, %d : tensor<4xf32>, tensor<4xf32>
}

// -----

// torch's scaled_dot_product_attention symbolic: q and k^T each scaled by sqrt(scale) before
// their MatMul; the scale moves after it, as one constant (0.5 * 0.5 = 0.25), the form the
// attention matcher reads.
// CHECK-LABEL: func.func @sdpa_scales
// CHECK:       %[[P:.*]] = onnx.node "MatMul"(%arg0, %arg1) {node_name = "scores/unscaled"
// CHECK:       %[[C:.*]] = onnx.node "Constant"() {node_name = "scores/scale", onnx_attrs = {value = dense<2.500000e-01> : tensor<f32>}}
// CHECK:       onnx.node "Mul"(%[[P]], %[[C]]) {node_name = "scores"
func.func @sdpa_scales(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32> {
  %s = onnx.node "Constant"() {node_name = "sqrt_scale", onnx_attrs = {value = dense<0.5> : tensor<f32>}} : () -> tensor<f32>
  %qs = onnx.node "Mul"(%q, %s) {node_name = "q_scaled", onnx_attrs = {}} : (tensor<2x4x8x16xf32>, tensor<f32>) -> tensor<2x4x8x16xf32>
  %ks = onnx.node "Mul"(%kt, %s) {node_name = "k_scaled", onnx_attrs = {}} : (tensor<2x4x16x8xf32>, tensor<f32>) -> tensor<2x4x16x8xf32>
  %w = onnx.node "MatMul"(%qs, %ks) {node_name = "scores", onnx_attrs = {}} : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  return %w : tensor<2x4x8x8xf32>
}

// -----

// Kept: only one operand scaled, or a scale that is a tensor rather than one value.
// CHECK-LABEL: func.func @matmul_scales_kept
// CHECK:       onnx.node "Mul"(%arg0
// CHECK:       onnx.node "MatMul"
// CHECK:       onnx.node "Mul"(%arg0
// CHECK:       onnx.node "Mul"(%arg1
// CHECK:       onnx.node "MatMul"
func.func @matmul_scales_kept(%q: tensor<2x16xf32>, %k: tensor<16x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %s = onnx.node "Constant"() {node_name = "s", onnx_attrs = {value = dense<0.5> : tensor<f32>}} : () -> tensor<f32>
  %v = onnx.node "Constant"() {node_name = "v", onnx_attrs = {value = dense<0.5> : tensor<16xf32>}} : () -> tensor<16xf32>
  %qs = onnx.node "Mul"(%q, %s) {node_name = "one_side", onnx_attrs = {}} : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %a = onnx.node "MatMul"(%qs, %k) {node_name = "a", onnx_attrs = {}} : (tensor<2x16xf32>, tensor<16x2xf32>) -> tensor<2x2xf32>
  %qv = onnx.node "Mul"(%q, %v) {node_name = "q_vec", onnx_attrs = {}} : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %kv = onnx.node "Mul"(%k, %s) {node_name = "k_s", onnx_attrs = {}} : (tensor<16x2xf32>, tensor<f32>) -> tensor<16x2xf32>
  %b = onnx.node "MatMul"(%qv, %kv) {node_name = "b", onnx_attrs = {}} : (tensor<2x16xf32>, tensor<16x2xf32>) -> tensor<2x2xf32>
  return %a, %b : tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// Transpose(W) of a 2-D weight (an export without constant folding reads nn.Linear's [out, in]
// bytes this way) becomes the same bytes referenced as [in, out], marked `transposed`.
// CHECK-LABEL: func.func @weight_transpose
// CHECK-NOT:   "Transpose"
// CHECK:       %[[W:.*]] = onnx.weight "q_proj.weight" {file = "m.onnx", length = 96 : i64, offset = 0 : i64, transposed} : tensor<4x6xf32>
// CHECK:       onnx.node "MatMul"(%arg0, %[[W]])
func.func @weight_transpose(%x: tensor<2x4xf32>) -> tensor<2x6xf32> {
  %w = onnx.weight "q_proj.weight" {file = "m.onnx", offset = 0 : i64, length = 96 : i64} : tensor<6x4xf32>
  %t = onnx.node "Transpose"(%w) {node_name = "t", onnx_attrs = {perm = [1, 0]}} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %y = onnx.node "MatMul"(%x, %t) {node_name = "mm", onnx_attrs = {}} : (tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}

// -----

// A Transpose of an activation, or of a 3-D (stacked) weight, is kept.
// CHECK-LABEL: func.func @weight_transpose_kept
// CHECK:       onnx.node "Transpose"(%arg0)
// CHECK:       onnx.node "Transpose"(%{{.*}}) {node_name = "t3"
func.func @weight_transpose_kept(%x: tensor<2x4xf32>) -> (tensor<4x2xf32>, tensor<2x4x6xf32>) {
  %w = onnx.weight "stacked" {file = "m.onnx", offset = 0 : i64, length = 192 : i64} : tensor<2x6x4xf32>
  %t = onnx.node "Transpose"(%x) {node_name = "t", onnx_attrs = {perm = [1, 0]}} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %t3 = onnx.node "Transpose"(%w) {node_name = "t3", onnx_attrs = {perm = [0, 2, 1]}} : (tensor<2x6x4xf32>) -> tensor<2x4x6xf32>
  return %t, %t3 : tensor<4x2xf32>, tensor<2x4x6xf32>
}

// -----

// An empty KV cache (past length 0) appended to by torch.cat([past, new], dim=-2): the empty
// operand goes, and a Concat of one operand is that operand.
// CHECK-LABEL: func.func @empty_cache_concat
// CHECK-NOT:   "Concat"
// CHECK-NOT:   "Constant"
// CHECK:       %[[T:.*]] = onnx.node "Transpose"(%arg0)
// CHECK:       onnx.node "MatMul"(%[[T]], %[[T]])
func.func @empty_cache_concat(%k: tensor<2x8x2x4xf32>) -> tensor<2x2x8x8xf32> {
  %past = onnx.node "Constant"() {node_name = "past_key_values.0.key", onnx_attrs = {value = dense<> : tensor<2x2x0x4xf32>}} : () -> tensor<2x2x0x4xf32>
  %new = onnx.node "Transpose"(%k) {node_name = "t", onnx_attrs = {perm = [0, 2, 1, 3]}} : (tensor<2x8x2x4xf32>) -> tensor<2x2x8x4xf32>
  %cat = onnx.node "Concat"(%past, %new) {node_name = "/self_attn/Concat_5", onnx_attrs = {axis = -2 : i64}} : (tensor<2x2x0x4xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x8x4xf32>
  %y = onnx.node "MatMul"(%cat, %cat) {node_name = "mm", onnx_attrs = {}} : (tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x8x8xf32>
  return %y : tensor<2x2x8x8xf32>
}

// -----

// Of three operands only the empty one goes; the Concat stays, with its axis.
// CHECK-LABEL: func.func @empty_concat_operand
// CHECK:       onnx.node "Concat"(%arg0, %arg1) {node_name = "cat", onnx_attrs = {axis = 1 : i64}}
func.func @empty_concat_operand(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %e = onnx.node "Constant"() {node_name = "e", onnx_attrs = {value = dense<> : tensor<2x0xf32>}} : () -> tensor<2x0xf32>
  %cat = onnx.node "Concat"(%a, %e, %b) {node_name = "cat", onnx_attrs = {axis = 1 : i64}} : (tensor<2x3xf32>, tensor<2x0xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  return %cat : tensor<2x8xf32>
}

// -----

// Not empty along the axis (a real cache of 3 tokens; an empty batch axis is not the concat's),
// or of unknown length: the Concat is kept.
// CHECK-LABEL: func.func @nonempty_concat
// CHECK-COUNT-3: onnx.node "Concat"
func.func @nonempty_concat(%past: tensor<2x2x3x4xf32>, %new: tensor<2x2x8x4xf32>, %dyn: tensor<2x2x?x4xf32>, %z: tensor<0x2x8x4xf32>) -> (tensor<2x2x11x4xf32>, tensor<2x2x?x4xf32>, tensor<0x2x16x4xf32>) {
  %a = onnx.node "Concat"(%past, %new) {node_name = "a", onnx_attrs = {axis = 2 : i64}} : (tensor<2x2x3x4xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x11x4xf32>
  %b = onnx.node "Concat"(%dyn, %new) {node_name = "b", onnx_attrs = {axis = -2 : i64}} : (tensor<2x2x?x4xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x?x4xf32>
  %c = onnx.node "Concat"(%z, %z) {node_name = "c", onnx_attrs = {axis = 2 : i64}} : (tensor<0x2x8x4xf32>, tensor<0x2x8x4xf32>) -> tensor<0x2x16x4xf32>
  return %a, %b, %c : tensor<2x2x11x4xf32>, tensor<2x2x?x4xf32>, tensor<0x2x16x4xf32>
}

// -----

// A graph output keeps the function's declared type: a Concat whose one non-empty operand has
// another type stays.
// CHECK-LABEL: func.func @empty_concat_returned
// CHECK:       onnx.node "Concat"
func.func @empty_concat_returned(%new: tensor<2x2x8x4xf32>) -> tensor<2x2x?x4xf32> {
  %past = onnx.node "Constant"() {node_name = "p", onnx_attrs = {value = dense<> : tensor<2x2x0x4xf32>}} : () -> tensor<2x2x0x4xf32>
  %cat = onnx.node "Concat"(%past, %new) {node_name = "cat", onnx_attrs = {axis = 2 : i64}} : (tensor<2x2x0x4xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x?x4xf32>
  return %cat : tensor<2x2x?x4xf32>
}
