// RUN: disagmoe-opt %s -fold-onnx-constants -split-input-file | FileCheck %s
// RUN: disagmoe-opt %s -fold-onnx-constants="max-elements=4" -split-input-file | FileCheck %s --check-prefix=CAP
// fold-onnx-constants (passes/raise/fold/): subgraphs of known values become one Constant node
// named like the node they replace; data, float parameters and transcendental ops stay.
// Oracle: the values each mask form defines (by hand, at seq 3).

// transformers' masking_utils (sdpa_mask without vmap, then eager_mask): kv_idx <= q_idx as a
// boolean, expanded to [1, 1, q, kv], then where(mask, 0, finfo.min).
// CHECK-LABEL: func.func @masking_utils
// CHECK-NOT:   "Range"
// CHECK-NOT:   "LessOrEqual"
// CHECK-NOT:   "Where"
// CHECK:       %[[M:.*]] = onnx.node "Constant"() {node_name = "where", onnx_attrs = {value = dense<{{\[}}{{\[}}{{\[}}[0.000000e+00, -3.40282347E+38, -3.40282347E+38], [0.000000e+00, 0.000000e+00, -3.40282347E+38], [0.000000e+00, 0.000000e+00, 0.000000e+00]]]]> : tensor<1x1x3x3xf32>}}
// CHECK:       onnx.node "Add"(%arg0, %[[M]])
func.func @masking_utils(%scores: tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32> {
  %zero = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %three = onnx.node "Constant"() {node_name = "c3", onnx_attrs = {value = dense<3> : tensor<i64>}} : () -> tensor<i64>
  %one = onnx.node "Constant"() {node_name = "c1", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %kv = onnx.node "Range"(%zero, %three, %one) {node_name = "kv_arange", onnx_attrs = {}} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<3xi64>
  %shape = onnx.node "Constant"() {node_name = "shape", onnx_attrs = {value = dense<[-1, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %q = onnx.node "Reshape"(%kv, %shape) {node_name = "cache_position", onnx_attrs = {}} : (tensor<3xi64>, tensor<2xi64>) -> tensor<3x1xi64>
  %le = onnx.node "LessOrEqual"(%kv, %q) {node_name = "le", onnx_attrs = {}} : (tensor<3xi64>, tensor<3x1xi64>) -> tensor<3x3xi1>
  %axes = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<[0, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %u = onnx.node "Unsqueeze"(%le, %axes) {node_name = "unsq", onnx_attrs = {}} : (tensor<3x3xi1>, tensor<2xi64>) -> tensor<1x1x3x3xi1>
  %z = onnx.node "Constant"() {node_name = "zero", onnx_attrs = {value = dense<0.0> : tensor<f32>}} : () -> tensor<f32>
  %min = onnx.node "Constant"() {node_name = "min", onnx_attrs = {value = dense<-3.40282347E+38> : tensor<f32>}} : () -> tensor<f32>
  %m = onnx.node "Where"(%u, %z, %min) {node_name = "where", onnx_attrs = {}} : (tensor<1x1x3x3xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x3x3xf32>
  %y = onnx.node "Add"(%scores, %m) {node_name = "add", onnx_attrs = {}} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  return %y : tensor<1x1x3x3xf32>
}

// -----

// AttentionMaskConverter._make_causal_mask with sliding_window 1: finfo.min filled with 0 on and
// below the diagonal (masked_fill = Where), then tril(ones, diagonal = -1 - 1) filled back with
// finfo.min: key j is hidden from query i when j <= i - 2, so each query sees 2 keys.
// CHECK-LABEL: func.func @converter_window
// CHECK-NOT:   "ConstantOfShape"
// CHECK-NOT:   "Trilu"
// CHECK:       onnx.node "Constant"() {node_name = "fill_window", onnx_attrs = {value = dense<{{\[}}[0.000000e+00, -3.40282347E+38, -3.40282347E+38], [0.000000e+00, 0.000000e+00, -3.40282347E+38], [-3.40282347E+38, 0.000000e+00, 0.000000e+00]]> : tensor<3x3xf32>}}
func.func @converter_window() -> tensor<3x3xf32> {
  %shape = onnx.node "Constant"() {node_name = "shape", onnx_attrs = {value = dense<[3, 3]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %full = onnx.node "ConstantOfShape"(%shape) {node_name = "full", onnx_attrs = {value = dense<-3.40282347E+38> : tensor<1xf32>}} : (tensor<2xi64>) -> tensor<3x3xf32>
  %r = onnx.node "Constant"() {node_name = "cond", onnx_attrs = {value = dense<[[true, false, false], [true, true, false], [true, true, true]]> : tensor<3x3xi1>}} : () -> tensor<3x3xi1>
  %zero = onnx.node "Constant"() {node_name = "zero", onnx_attrs = {value = dense<0.0> : tensor<f32>}} : () -> tensor<f32>
  %causal = onnx.node "Where"(%r, %zero, %full) {node_name = "fill", onnx_attrs = {}} : (tensor<3x3xi1>, tensor<f32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  %ones = onnx.node "Constant"() {node_name = "ones", onnx_attrs = {value = dense<true> : tensor<3x3xi1>}} : () -> tensor<3x3xi1>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<-2> : tensor<i64>}} : () -> tensor<i64>
  %ctx = onnx.node "Trilu"(%ones, %k) {node_name = "tril", onnx_attrs = {upper = 0 : i64}} : (tensor<3x3xi1>, tensor<i64>) -> tensor<3x3xi1>
  %min = onnx.node "Constant"() {node_name = "min", onnx_attrs = {value = dense<-3.40282347E+38> : tensor<f32>}} : () -> tensor<f32>
  %m = onnx.node "Where"(%ctx, %min, %causal) {node_name = "fill_window", onnx_attrs = {}} : (tensor<3x3xi1>, tensor<f32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  return %m : tensor<3x3xf32>
}

// -----

// Shape of a static value folds without its values; arithmetic on the dims follows.
// CHECK-LABEL: func.func @shape_arithmetic
// CHECK-NOT:   "Shape"
// CHECK:       onnx.node "Constant"() {node_name = "seq_plus_one", onnx_attrs = {value = dense<9> : tensor<1xi64>}}
func.func @shape_arithmetic(%ids: tensor<2x8xi64>) -> tensor<1xi64> {
  %s = onnx.node "Shape"(%ids) {node_name = "shape", onnx_attrs = {start = 1 : i64}} : (tensor<2x8xi64>) -> tensor<1xi64>
  %one = onnx.node "Constant"() {node_name = "one", onnx_attrs = {value = dense<1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %y = onnx.node "Add"(%s, %one) {node_name = "seq_plus_one", onnx_attrs = {}} : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  return %y : tensor<1xi64>
}

// -----

// Kept: a node reading data, a float initializer (a parameter: its bytes stay in the file), and
// RoPE's transcendental ops.
// CHECK-LABEL: func.func @kept
// CHECK:       onnx.node "Mul"(%arg0
// CHECK:       onnx.node "Mul"(%{{.*}}, %{{.*}}) {node_name = "angles"
// CHECK:       onnx.node "Cos"
func.func @kept(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<3x2xf32>) {
  %c = onnx.node "Constant"() {node_name = "c", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %y = onnx.node "Mul"(%x, %c) {node_name = "scale", onnx_attrs = {}} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %inv = onnx.weight "inv_freq" {file = "m.onnx", offset = 0 : i64, length = 8 : i64, value = dense<[1.0, 0.1]> : tensor<2xf32>} : tensor<2xf32>
  %pos = onnx.node "Constant"() {node_name = "pos", onnx_attrs = {value = dense<[[0.0], [1.0], [2.0]]> : tensor<3x1xf32>}} : () -> tensor<3x1xf32>
  %a = onnx.node "Mul"(%pos, %inv) {node_name = "angles", onnx_attrs = {}} : (tensor<3x1xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %cos = onnx.node "Cos"(%a) {node_name = "cos", onnx_attrs = {}} : (tensor<3x2xf32>) -> tensor<3x2xf32>
  return %y, %cos : tensor<4xf32>, tensor<3x2xf32>
}

// -----

// Above max-elements (4 here) a result stays computed; the smaller one before it folds.
// CAP-LABEL: func.func @capped
// CAP:       onnx.node "Constant"() {node_name = "small"
// CAP:       onnx.node "Expand"
func.func @capped() -> tensor<3x3xf32> {
  %a = onnx.node "Constant"() {node_name = "a", onnx_attrs = {value = dense<1.0> : tensor<1xf32>}} : () -> tensor<1xf32>
  %b = onnx.node "Neg"(%a) {node_name = "small", onnx_attrs = {}} : (tensor<1xf32>) -> tensor<1xf32>
  %s = onnx.node "Constant"() {node_name = "s", onnx_attrs = {value = dense<[3, 3]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %e = onnx.node "Expand"(%b, %s) {node_name = "big", onnx_attrs = {}} : (tensor<1xf32>, tensor<2xi64>) -> tensor<3x3xf32>
  return %e : tensor<3x3xf32>
}

// -----

// Data movement on known values, each checked against numpy's semantics of the op by hand:
// x = [[0, 1, 2], [3, 4, 5]]; transpose -> [[0, 3], [1, 4], [2, 5]]; concat(x, x, axis 0);
// slice rows 1.., columns -1 down to 0 by -2 -> [[5, 3]]; gather(x, [-1, 0], axis 1) ->
// [[2, 0], [5, 3]]; range(5, 0, -2) -> [5, 3, 1]; expand([1, 2], [2, 2]) -> [[1, 2], [1, 2]].
// CHECK-LABEL: func.func @data_movement
// CHECK-DAG:   node_name = "t", onnx_attrs = {value = dense<{{\[}}[0, 3], [1, 4], [2, 5]]> : tensor<3x2xi64>}
// CHECK-DAG:   node_name = "cat", onnx_attrs = {value = dense<{{\[}}[0, 1, 2], [3, 4, 5], [0, 1, 2], [3, 4, 5]]> : tensor<4x3xi64>}
// CHECK-DAG:   node_name = "sl", onnx_attrs = {value = dense<{{\[}}[5, 3]]> : tensor<1x2xi64>}
// CHECK-DAG:   node_name = "g", onnx_attrs = {value = dense<{{\[}}[2, 0], [5, 3]]> : tensor<2x2xi64>}
// CHECK-DAG:   node_name = "r", onnx_attrs = {value = dense<[5, 3, 1]> : tensor<3xi64>}
// CHECK-DAG:   node_name = "e", onnx_attrs = {value = dense<{{\[}}[1, 2], [1, 2]]> : tensor<2x2xi64>}
func.func @data_movement() -> (tensor<3x2xi64>, tensor<4x3xi64>, tensor<1x2xi64>, tensor<2x2xi64>, tensor<3xi64>, tensor<2x2xi64>) {
  %x = onnx.node "Constant"() {node_name = "x", onnx_attrs = {value = dense<[[0, 1, 2], [3, 4, 5]]> : tensor<2x3xi64>}} : () -> tensor<2x3xi64>
  %t = onnx.node "Transpose"(%x) {node_name = "t", onnx_attrs = {perm = [1, 0]}} : (tensor<2x3xi64>) -> tensor<3x2xi64>
  %cat = onnx.node "Concat"(%x, %x) {node_name = "cat", onnx_attrs = {axis = 0 : i64}} : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<4x3xi64>
  %st = onnx.node "Constant"() {node_name = "st", onnx_attrs = {value = dense<[1, -1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %en = onnx.node "Constant"() {node_name = "en", onnx_attrs = {value = dense<[9223372036854775807, -9223372036854775807]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %ax = onnx.node "Constant"() {node_name = "ax", onnx_attrs = {value = dense<[0, 1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %sp = onnx.node "Constant"() {node_name = "sp", onnx_attrs = {value = dense<[1, -2]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %sl = onnx.node "Slice"(%x, %st, %en, %ax, %sp) {node_name = "sl", onnx_attrs = {}} : (tensor<2x3xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x2xi64>
  %idx = onnx.node "Constant"() {node_name = "idx", onnx_attrs = {value = dense<[-1, 0]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %g = onnx.node "Gather"(%x, %idx) {node_name = "g", onnx_attrs = {axis = 1 : i64}} : (tensor<2x3xi64>, tensor<2xi64>) -> tensor<2x2xi64>
  %five = onnx.node "Constant"() {node_name = "five", onnx_attrs = {value = dense<5> : tensor<i64>}} : () -> tensor<i64>
  %zero = onnx.node "Constant"() {node_name = "zero", onnx_attrs = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %m2 = onnx.node "Constant"() {node_name = "m2", onnx_attrs = {value = dense<-2> : tensor<i64>}} : () -> tensor<i64>
  %r = onnx.node "Range"(%five, %zero, %m2) {node_name = "r", onnx_attrs = {}} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<3xi64>
  %v = onnx.node "Constant"() {node_name = "v", onnx_attrs = {value = dense<[1, 2]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %s = onnx.node "Constant"() {node_name = "s", onnx_attrs = {value = dense<[2, 2]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %e = onnx.node "Expand"(%v, %s) {node_name = "e", onnx_attrs = {}} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2x2xi64>
  return %t, %cat, %sl, %g, %r, %e : tensor<3x2xi64>, tensor<4x3xi64>, tensor<1x2xi64>, tensor<2x2xi64>, tensor<3xi64>, tensor<2x2xi64>
}

// -----

// Integer ReduceSum, exact: onnxruntime-genai's seqlens_k = ReduceSum(attention_mask, axes [1],
// keepdims 0) - 1 as int32 on a mask m = [[1, 1, 1], [0, 1, 1]] -> [2, 1]; the opset-11 form
// with the axes attribute [-1] and keepdims 1 on x = [[0, 1, 1], [1, 1, 1]] -> [[2], [3]]; no
// axes: every element summed -> 5. A float ReduceSum stays (its rounding depends on an order).
// CHECK-LABEL: func.func @reduce_sum
// CHECK-DAG:   node_name = "seqlens", onnx_attrs = {value = dense<[2, 1]> : tensor<2xi32>}
// CHECK-DAG:   node_name = "rows", onnx_attrs = {value = dense<{{\[}}[2], [3]]> : tensor<2x1xi64>}
// CHECK-DAG:   node_name = "all", onnx_attrs = {value = dense<5> : tensor<i64>}
// CHECK:       onnx.node "ReduceSum"(%arg0) {node_name = "float_sum"
func.func @reduce_sum(%f: tensor<2x3xf32>) -> (tensor<2xi32>, tensor<2x1xi64>, tensor<i64>, tensor<f32>) {
  %m = onnx.node "Constant"() {node_name = "m", onnx_attrs = {value = dense<[[1, 1, 1], [0, 1, 1]]> : tensor<2x3xi64>}} : () -> tensor<2x3xi64>
  %axes = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %sum = onnx.node "ReduceSum"(%m, %axes) {node_name = "sum", onnx_attrs = {keepdims = 0 : i64}} : (tensor<2x3xi64>, tensor<1xi64>) -> tensor<2xi64>
  %one = onnx.node "Constant"() {node_name = "one", onnx_attrs = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %last = onnx.node "Sub"(%sum, %one) {node_name = "last", onnx_attrs = {}} : (tensor<2xi64>, tensor<i64>) -> tensor<2xi64>
  %seqlens = onnx.node "Cast"(%last) {node_name = "seqlens", onnx_attrs = {to = 6 : i64}} : (tensor<2xi64>) -> tensor<2xi32>
  %x = onnx.node "Constant"() {node_name = "x", onnx_attrs = {value = dense<[[0, 1, 1], [1, 1, 1]]> : tensor<2x3xi64>}} : () -> tensor<2x3xi64>
  %rows = onnx.node "ReduceSum"(%x) {node_name = "rows", onnx_attrs = {axes = [-1]}} : (tensor<2x3xi64>) -> tensor<2x1xi64>
  %all = onnx.node "ReduceSum"(%x) {node_name = "all", onnx_attrs = {keepdims = 0 : i64}} : (tensor<2x3xi64>) -> tensor<i64>
  %fs = onnx.node "ReduceSum"(%f) {node_name = "float_sum", onnx_attrs = {keepdims = 0 : i64}} : (tensor<2x3xf32>) -> tensor<f32>
  return %seqlens, %rows, %all, %fs : tensor<2xi32>, tensor<2x1xi64>, tensor<i64>, tensor<f32>
}
