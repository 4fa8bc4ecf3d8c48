// RUN: disagmoe-opt %s -normalize-onnx -split-input-file | FileCheck %s
// normalize-onnx's WidenLowPrecision.cpp: a float16 / bfloat16 export computed in fp32. Each
// pattern on the form it rewrites, and what it must keep.

// WidenLowPrecisionWeight: a bfloat16 / float16 initializer is read as f32 (same file, offset and
// byte length; stored_type names the bytes' dtype), its small `value` widened exactly
// (0.333984375 is bfloat16's nearest to 1/3, 0x3EAB; -65504 is float16's lowest); transposed and
// row_stride are kept; an f32 weight is left as it is.
// CHECK-LABEL: func.func @widen_weight
// CHECK-DAG:   onnx.weight "w" {file = "m.onnx", length = 32 : i64, offset = 0 : i64, stored_type = bf16, transposed} : tensor<4x4xf32>
// CHECK-DAG:   onnx.weight "b" {file = "m.onnx", length = 8 : i64, offset = 32 : i64, stored_type = bf16, value = dense<[1.000000e+00, 5.000000e-01, -2.000000e+00, 0.333984375]> : tensor<4xf32>} : tensor<4xf32>
// CHECK-DAG:   onnx.weight "h" {file = "m.onnx", length = 4 : i64, offset = 40 : i64, stored_type = f16, value = dense<[-6.550400e+04, 1.000000e+00]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-DAG:   onnx.weight "s" {file = "m.onnx", length = 8 : i64, offset = 44 : i64, row_stride = 8 : i64, stored_type = f16} : tensor<2x2xf32>
// CHECK-DAG:   onnx.weight "f" {file = "m.onnx", length = 16 : i64, offset = 64 : i64} : tensor<4xf32>
// CHECK-NOT:   bf16>
// CHECK-NOT:   f16>
func.func @widen_weight() -> (tensor<4x4xbf16>, tensor<4xbf16>, tensor<2xf16>, tensor<2x2xf16>, tensor<4xf32>) {
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 32 : i64, transposed} : tensor<4x4xbf16>
  %b = onnx.weight "b" {file = "m.onnx", offset = 32 : i64, length = 8 : i64, value = dense<[1.0, 0.5, -2.0, 0.333984375]> : tensor<4xbf16>} : tensor<4xbf16>
  %h = onnx.weight "h" {file = "m.onnx", offset = 40 : i64, length = 4 : i64, value = dense<[-65504.0, 1.0]> : tensor<2xf16>} : tensor<2xf16>
  %s = onnx.weight "s" {file = "m.onnx", offset = 44 : i64, length = 8 : i64, row_stride = 8 : i64} : tensor<2x2xf16>
  %f = onnx.weight "f" {file = "m.onnx", offset = 64 : i64, length = 16 : i64} : tensor<4xf32>
  return %w, %b, %h, %s, %f : tensor<4x4xbf16>, tensor<4xbf16>, tensor<2xf16>, tensor<2x2xf16>, tensor<4xf32>
}

// -----

// WidenLowPrecisionNode: Hugging Face's RMSNorm in a bfloat16 export, x.to(float32) ...
// weight * x.to(input_dtype). The Cast to float of a bfloat16 value becomes same-type once its
// input is widened, the Cast back to bfloat16 (to = 16) is retargeted to float (to = 1), and both
// go (DropSameTypeCast); every bfloat16 result, and the bfloat16 scalar Constant, becomes f32
// (1e-5 in bfloat16 is 1.3125 * 2^-17 = 1.00135803e-5, widened exactly).
// CHECK-LABEL: func.func @widen_rms_norm
// CHECK-SAME:  (%arg0: tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
// CHECK-NOT:   "Cast"
// CHECK:       onnx.node "Pow"(%arg0, %{{.*}}) {{.*}} : (tensor<2x8x4xf32>, tensor<f32>) -> tensor<2x8x4xf32>
// CHECK:       onnx.node "Constant"() {node_name = "eps", onnx_attrs = {value = dense<1.00135803E-5> : tensor<f32>}} : () -> tensor<f32>
// CHECK:       %[[N:.*]] = onnx.node "Mul"(%arg0, %{{.*}}) {{.*}} -> tensor<2x8x4xf32>
// CHECK:       %[[W:.*]] = onnx.weight "w" {{.*}}stored_type = bf16{{.*}} : tensor<4xf32>
// CHECK:       %[[Y:.*]] = onnx.node "Mul"(%[[W]], %[[N]]) {{.*}} : (tensor<4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
// CHECK:       return %[[Y]] : tensor<2x8x4xf32>
func.func @widen_rms_norm(%x: tensor<2x8x4xbf16>) -> tensor<2x8x4xbf16> {
  %c0 = onnx.node "Cast"(%x) {node_name = "/input_layernorm/Cast", onnx_attrs = {to = 1 : i64}} : (tensor<2x8x4xbf16>) -> tensor<2x8x4xf32>
  %two = onnx.node "Constant"() {node_name = "two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sq = onnx.node "Pow"(%c0, %two) {node_name = "pow", onnx_attrs = {}} : (tensor<2x8x4xf32>, tensor<f32>) -> tensor<2x8x4xf32>
  %ms = onnx.node "ReduceMean"(%sq) {node_name = "mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<2x8x4xf32>) -> tensor<2x8x1xf32>
  %eps = onnx.node "Constant"() {node_name = "eps", onnx_attrs = {value = dense<1.0e-5> : tensor<bf16>}} : () -> tensor<bf16>
  %a = onnx.node "Add"(%ms, %eps) {node_name = "add", onnx_attrs = {}} : (tensor<2x8x1xf32>, tensor<bf16>) -> tensor<2x8x1xf32>
  %r = onnx.node "Mul"(%c0, %a) {node_name = "mul", onnx_attrs = {}} : (tensor<2x8x4xf32>, tensor<2x8x1xf32>) -> tensor<2x8x4xf32>
  %c1 = onnx.node "Cast"(%r) {node_name = "/input_layernorm/Cast_1", onnx_attrs = {to = 16 : i64}} : (tensor<2x8x4xf32>) -> tensor<2x8x4xbf16>
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 8 : i64} : tensor<4xbf16>
  %y = onnx.node "Mul"(%w, %c1) {node_name = "mulw", onnx_attrs = {}} : (tensor<4xbf16>, tensor<2x8x4xbf16>) -> tensor<2x8x4xbf16>
  return %y : tensor<2x8x4xbf16>
}

// -----

// WidenLowPrecisionNode on the other forms: ConstantOfShape's float16 `value` widened (the
// converter mask's finfo(float16).min), a Cast of int64 to float16 retargeted to float and kept
// (its input is no float), a Cast of a float16 value to int64 kept (to = 7) with an f32 input, and
// Casts to other types untouched.
// CHECK-LABEL: func.func @widen_other_nodes
// CHECK:       onnx.node "ConstantOfShape"(%arg1) {node_name = "fill", onnx_attrs = {value = dense<-6.550400e+04> : tensor<1xf32>}} : (tensor<2xi64>) -> tensor<4x4xf32>
// CHECK:       onnx.node "Cast"(%arg1) {node_name = "positions", onnx_attrs = {to = 1 : i64}} : (tensor<2xi64>) -> tensor<2xf32>
// CHECK:       onnx.node "Cast"(%arg0) {node_name = "to_int", onnx_attrs = {to = 7 : i64}} : (tensor<4xf32>) -> tensor<4xi64>
// CHECK:       onnx.node "Cast"(%arg1) {node_name = "to_bool", onnx_attrs = {to = 9 : i64}} : (tensor<2xi64>) -> tensor<2xi1>
// CHECK-NOT:   f16
func.func @widen_other_nodes(%x: tensor<4xf16>, %i: tensor<2xi64>) -> (tensor<4x4xf16>, tensor<2xf16>, tensor<4xi64>, tensor<2xi1>) {
  %m = onnx.node "ConstantOfShape"(%i) {node_name = "fill", onnx_attrs = {value = dense<-65504.0> : tensor<1xf16>}} : (tensor<2xi64>) -> tensor<4x4xf16>
  %p = onnx.node "Cast"(%i) {node_name = "positions", onnx_attrs = {to = 10 : i64}} : (tensor<2xi64>) -> tensor<2xf16>
  %n = onnx.node "Cast"(%x) {node_name = "to_int", onnx_attrs = {to = 7 : i64}} : (tensor<4xf16>) -> tensor<4xi64>
  %b = onnx.node "Cast"(%i) {node_name = "to_bool", onnx_attrs = {to = 9 : i64}} : (tensor<2xi64>) -> tensor<2xi1>
  return %m, %p, %n, %b : tensor<4x4xf16>, tensor<2xf16>, tensor<4xi64>, tensor<2xi1>
}

// -----

// WidenLowPrecisionSignature: the function's float16 / bfloat16 arguments and results (the logits
// of such an export) become f32, with the nodes that compute them; others are kept.
// CHECK-LABEL: func.func @widen_signature
// CHECK-SAME:  (%arg0: tensor<2x4xf32>, %arg1: tensor<2xi64>) -> (tensor<2x4xf32>, tensor<2xi64>)
// CHECK:       %[[Y:.*]] = onnx.node "Neg"(%arg0) {{.*}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK:       return %[[Y]], %arg1 : tensor<2x4xf32>, tensor<2xi64>
func.func @widen_signature(%x: tensor<2x4xf16>, %i: tensor<2xi64>) -> (tensor<2x4xbf16>, tensor<2xi64>) {
  %y = onnx.node "Neg"(%x) {node_name = "neg", onnx_attrs = {}} : (tensor<2x4xf16>) -> tensor<2x4xbf16>
  return %y, %i : tensor<2x4xbf16>, tensor<2xi64>
}

// -----

// An fp32 graph is left as it is (no pattern fires: the Cast to float of an int stays).
// CHECK-LABEL: func.func @fp32_untouched
// CHECK:       onnx.node "Cast"(%arg0) {node_name = "c", onnx_attrs = {to = 1 : i64}} : (tensor<2xi64>) -> tensor<2xf32>
func.func @fp32_untouched(%i: tensor<2xi64>) -> tensor<2xf32> {
  %c = onnx.node "Cast"(%i) {node_name = "c", onnx_attrs = {to = 1 : i64}} : (tensor<2xi64>) -> tensor<2xf32>
  return %c : tensor<2xf32>
}
