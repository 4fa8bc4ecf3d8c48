// RUN: disagmoe-opt %s -raise-onnx-to-moe=match-only -split-input-file -verify-diagnostics | FileCheck %s
// The component patterns of raise-onnx-to-moe (passes/raise/patterns/), each on the smallest graph
// holding its component, with match-only: no assembly, so norms and dense FFNs keep layer -1 and
// an empty role. Each function starts with the embedding Gather the pass reads the hidden size
// from (hidden 4, token ids [1, 2]).

// EmbeddingPattern + RmsNormPattern: the RMSNorm chain on the embedding output becomes one op,
// its epsilon read from the Add.
// CHECK-LABEL: func.func @rms_norm
// CHECK:       %[[E:.*]] = moe.embedding %arg0, %{{.*}} : tensor<1x2xi64>, tensor<8x4xf32> -> tensor<1x2x4xf32>
// CHECK-NEXT:  %[[N:.*]] = moe.rms_norm %[[E]], %{{.*}} {eps = 9.99999997{{.*}}E-7 : f64, layer = -1 : i64, role = ""}
// CHECK-NEXT:  return %[[N]]
func.func @rms_norm(%ids: tensor<1x2xi64>) -> tensor<1x2x4xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w = onnx.weight "norm" {file = "m.onnx", offset = 128 : i64, length = 16 : i64} : tensor<4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %two = onnx.node "Constant"() {node_name = "two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sq = onnx.node "Pow"(%x, %two) {node_name = "pow", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<f32>) -> tensor<1x2x4xf32>
  %m = onnx.node "ReduceMean"(%sq) {node_name = "mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x4xf32>) -> tensor<1x2x1xf32>
  %eps = onnx.node "Constant"() {node_name = "eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %a = onnx.node "Add"(%m, %eps) {node_name = "add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %s = onnx.node "Sqrt"(%a) {node_name = "sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %one = onnx.node "Constant"() {node_name = "one", onnx_attrs = {value = dense<1.0> : tensor<f32>}} : () -> tensor<f32>
  %r = onnx.node "Div"(%one, %s) {node_name = "rsqrt", onnx_attrs = {}} : (tensor<f32>, tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %n = onnx.node "Mul"(%x, %r) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<1x2x1xf32>) -> tensor<1x2x4xf32>
  %y = onnx.node "Mul"(%w, %n) {node_name = "weighted", onnx_attrs = {}} : (tensor<4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  return %y : tensor<1x2x4xf32>
}

// -----

// A norm chain that is not x / sqrt(mean(x^2) + eps) (here: Sqrt into Neg) is refused at the node
// where it departs (a refusal prints no IR).
func.func @rms_norm_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x1xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %two = onnx.node "Constant"() {node_name = "two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sq = onnx.node "Pow"(%x, %two) {node_name = "pow", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<f32>) -> tensor<1x2x4xf32>
  %m = onnx.node "ReduceMean"(%sq) {node_name = "mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x4xf32>) -> tensor<1x2x1xf32>
  %eps = onnx.node "Constant"() {node_name = "eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %a = onnx.node "Add"(%m, %eps) {node_name = "add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  // expected-error @+1 {{node 'sqrt' (Sqrt): RMSNorm: expected x / sqrt(mean(x^2) + eps)}}
  %s = onnx.node "Sqrt"(%a) {node_name = "sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %neg = onnx.node "Neg"(%s) {node_name = "neg", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  return %neg : tensor<1x2x1xf32>
}

// -----

// A norm whose weight is not [hidden] (a per-head q/k norm) is left to its attention pattern.
// CHECK-LABEL: func.func @rms_norm_per_head
// CHECK-NOT:   moe.rms_norm
// CHECK:       onnx.node "ReduceMean"
func.func @rms_norm_per_head(%ids: tensor<1x2xi64>, %q: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w = onnx.weight "q_norm" {file = "m.onnx", offset = 128 : i64, length = 8 : i64} : tensor<2xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %two = onnx.node "Constant"() {node_name = "two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sq = onnx.node "Pow"(%q, %two) {node_name = "pow", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %m = onnx.node "ReduceMean"(%sq) {node_name = "mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x1xf32>
  %eps = onnx.node "Constant"() {node_name = "eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %a = onnx.node "Add"(%m, %eps) {node_name = "add", onnx_attrs = {}} : (tensor<1x2x2x1xf32>, tensor<f32>) -> tensor<1x2x2x1xf32>
  %s = onnx.node "Sqrt"(%a) {node_name = "sqrt", onnx_attrs = {}} : (tensor<1x2x2x1xf32>) -> tensor<1x2x2x1xf32>
  %n = onnx.node "Div"(%q, %s) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x2xf32>
  %y = onnx.node "Mul"(%n, %w) {node_name = "weighted", onnx_attrs = {}} : (tensor<1x2x2x2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// -----

// RouterPattern: softmax over the experts, top-2, gates renormalised by their sum; the TopK's ids
// and the renormalised gates become moe.router's results ([tokens, top_k]).
// CHECK-LABEL: func.func @router_softmax_topk_renorm
// CHECK:       %[[E:.*]] = moe.embedding
// CHECK:       %ids, %gates = moe.router %[[E]], %{{.*}} {layer = -1 : i64, num_experts = 4 : i64, scoring = "softmax_topk_renorm", top_k = 2 : i64} : tensor<1x2x4xf32>, tensor<4x4xf32> -> tensor<2x2xi64>, tensor<2x2xf32>
// CHECK-NOT:   "TopK"
// CHECK:       onnx.node "Identity"(%ids)
// CHECK:       onnx.node "Identity"(%gates)
func.func @router_softmax_topk_renorm(%ids: tensor<1x2xi64>) -> (tensor<1x2x2xi64>, tensor<1x2x2xf32>) {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 128 : i64, length = 64 : i64} : tensor<4x4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %l = onnx.node "MatMul"(%x, %wg) {node_name = "logits", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  %p = onnx.node "Softmax"(%l) {node_name = "probs", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %v, %i = onnx.node "TopK"(%p, %k) {node_name = "topk", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<1x2x4xf32>, tensor<1xi64>) -> (tensor<1x2x2xf32>, tensor<1x2x2xi64>)
  %ax = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %sum = onnx.node "ReduceSum"(%v, %ax) {node_name = "sum", onnx_attrs = {keepdims = 1 : i64}} : (tensor<1x2x2xf32>, tensor<1xi64>) -> tensor<1x2x1xf32>
  %g = onnx.node "Div"(%v, %sum) {node_name = "renorm", onnx_attrs = {}} : (tensor<1x2x2xf32>, tensor<1x2x1xf32>) -> tensor<1x2x2xf32>
  %io = onnx.node "Identity"(%i) {node_name = "ids_out", onnx_attrs = {}} : (tensor<1x2x2xi64>) -> tensor<1x2x2xi64>
  %go = onnx.node "Identity"(%g) {node_name = "gates_out", onnx_attrs = {}} : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  return %io, %go : tensor<1x2x2xi64>, tensor<1x2x2xf32>
}

// -----

// Top-k on the logits, then a softmax over the k (Mixtral's order), and a positive constant on
// the gates (DeepSeek's routed_scaling_factor).
// CHECK-LABEL: func.func @router_topk_softmax_scaled
// CHECK:       moe.router {{.*}} {layer = -1 : i64, num_experts = 4 : i64, routed_scaling_factor = 2.500000e+00 : f64, scoring = "topk_softmax", top_k = 2 : i64}
// CHECK-NOT:   "Softmax"
func.func @router_topk_softmax_scaled(%ids: tensor<1x2xi64>) -> (tensor<1x2x2xi64>, tensor<1x2x2xf32>) {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 128 : i64, length = 64 : i64} : tensor<4x4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %l = onnx.node "MatMul"(%x, %wg) {node_name = "logits", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %v, %i = onnx.node "TopK"(%l, %k) {node_name = "topk", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<1x2x4xf32>, tensor<1xi64>) -> (tensor<1x2x2xf32>, tensor<1x2x2xi64>)
  %p = onnx.node "Softmax"(%v) {node_name = "probs", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %c = onnx.node "Constant"() {node_name = "scale", onnx_attrs = {value = dense<2.5> : tensor<f32>}} : () -> tensor<f32>
  %g = onnx.node "Mul"(%p, %c) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2xf32>, tensor<f32>) -> tensor<1x2x2xf32>
  %io = onnx.node "Identity"(%i) {node_name = "ids_out", onnx_attrs = {}} : (tensor<1x2x2xi64>) -> tensor<1x2x2xi64>
  %go = onnx.node "Identity"(%g) {node_name = "gates_out", onnx_attrs = {}} : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  return %io, %go : tensor<1x2x2xi64>, tensor<1x2x2xf32>
}

// -----

// A TopK of the smallest scores is not a router: refused at the TopK.
func.func @router_smallest_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x2xi64> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 128 : i64, length = 64 : i64} : tensor<4x4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %l = onnx.node "MatMul"(%x, %wg) {node_name = "logits", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  %p = onnx.node "Softmax"(%l) {node_name = "probs", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  // expected-error @+1 {{node 'topk' (TopK): router: TopK must select the largest scores}}
  %v, %i = onnx.node "TopK"(%p, %k) {node_name = "topk", onnx_attrs = {axis = -1 : i64, largest = 0 : i64, sorted = 1 : i64}} : (tensor<1x2x4xf32>, tensor<1xi64>) -> (tensor<1x2x2xf32>, tensor<1x2x2xi64>)
  return %i : tensor<1x2x2xi64>
}

// -----

// The top-k weights divided by their sum plus 2 (a stray Add on the renormalisation's
// denominator) is no renormalisation moe.router represents: refused at the Div, not raised as a
// router without renormalisation with the Div left to the combine.
func.func @router_renorm_near_miss_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x2xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wg = onnx.weight "gate" {file = "m.onnx", offset = 128 : i64, length = 64 : i64} : tensor<4x4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %l = onnx.node "MatMul"(%x, %wg) {node_name = "logits", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  %p = onnx.node "Softmax"(%l) {node_name = "probs", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %k = onnx.node "Constant"() {node_name = "k", onnx_attrs = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %v, %i = onnx.node "TopK"(%p, %k) {node_name = "topk", onnx_attrs = {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}} : (tensor<1x2x4xf32>, tensor<1xi64>) -> (tensor<1x2x2xf32>, tensor<1x2x2xi64>)
  %axes = onnx.node "Constant"() {node_name = "axes", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %sum = onnx.node "ReduceSum"(%v, %axes) {node_name = "sum", onnx_attrs = {keepdims = 1 : i64}} : (tensor<1x2x2xf32>, tensor<1xi64>) -> tensor<1x2x1xf32>
  %two = onnx.node "Constant"() {node_name = "two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %den = onnx.node "Add"(%sum, %two) {node_name = "stray", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  // expected-error @+1 {{node 'renorm' (Div): router: the top-k weights are divided by node 'stray' (Add), not by their sum (or their sum + an epsilon below 1e-6): not a renormalisation moe.router represents}}
  %g = onnx.node "Div"(%v, %den) {node_name = "renorm", onnx_attrs = {}} : (tensor<1x2x2xf32>, tensor<1x2x1xf32>) -> tensor<1x2x2xf32>
  return %g : tensor<1x2x2xf32>
}

// -----

// SwiGluFfnPattern: silu(x W1) * (x W3) W2 on a raised RMSNorm's output becomes moe.dense_ffn
// (dense or shared is decided by the assembly).
// CHECK-LABEL: func.func @swiglu_ffn
// CHECK:       %[[N:.*]] = moe.rms_norm
// CHECK:       moe.dense_ffn %[[N]] w1(%{{.*}}) w3(%{{.*}}) w2(%{{.*}}) {ffn_hidden = 6 : i64, layer = -1 : i64, role = ""}
// CHECK-NOT:   "Sigmoid"
func.func @swiglu_ffn(%ids: tensor<1x2xi64>) -> tensor<1x2x4xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w = onnx.weight "norm" {file = "m.onnx", offset = 128 : i64, length = 16 : i64} : tensor<4xf32>
  %w1 = onnx.weight "w1" {file = "m.onnx", offset = 144 : i64, length = 96 : i64} : tensor<4x6xf32>
  %w3 = onnx.weight "w3" {file = "m.onnx", offset = 240 : i64, length = 96 : i64} : tensor<4x6xf32>
  %w2 = onnx.weight "w2" {file = "m.onnx", offset = 336 : i64, length = 96 : i64} : tensor<6x4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %two = onnx.node "Constant"() {node_name = "two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sq = onnx.node "Pow"(%x, %two) {node_name = "pow", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<f32>) -> tensor<1x2x4xf32>
  %m = onnx.node "ReduceMean"(%sq) {node_name = "mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x4xf32>) -> tensor<1x2x1xf32>
  %eps = onnx.node "Constant"() {node_name = "eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %a = onnx.node "Add"(%m, %eps) {node_name = "add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %s = onnx.node "Sqrt"(%a) {node_name = "sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %d = onnx.node "Div"(%x, %s) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<1x2x1xf32>) -> tensor<1x2x4xf32>
  %n = onnx.node "Mul"(%d, %w) {node_name = "weighted", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xf32>) -> tensor<1x2x4xf32>
  %g = onnx.node "MatMul"(%n, %w1) {node_name = "gate_proj", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x6xf32>) -> tensor<1x2x6xf32>
  %sg = onnx.node "Sigmoid"(%g) {node_name = "sigmoid", onnx_attrs = {}} : (tensor<1x2x6xf32>) -> tensor<1x2x6xf32>
  %silu = onnx.node "Mul"(%g, %sg) {node_name = "silu", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<1x2x6xf32>) -> tensor<1x2x6xf32>
  %u = onnx.node "MatMul"(%n, %w3) {node_name = "up_proj", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x6xf32>) -> tensor<1x2x6xf32>
  %h = onnx.node "Mul"(%silu, %u) {node_name = "gated", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<1x2x6xf32>) -> tensor<1x2x6xf32>
  %y = onnx.node "MatMul"(%h, %w2) {node_name = "down_proj", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<6x4xf32>) -> tensor<1x2x4xf32>
  return %y : tensor<1x2x4xf32>
}

// -----

// An FFN whose activation is not SiLU (x * Sigmoid(x) of the same x) is refused at the Sigmoid.
func.func @swiglu_not_silu_refused(%ids: tensor<1x2xi64>, %other: tensor<1x2x6xf32>) -> tensor<1x2x6xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %w = onnx.weight "norm" {file = "m.onnx", offset = 128 : i64, length = 16 : i64} : tensor<4xf32>
  %w1 = onnx.weight "w1" {file = "m.onnx", offset = 144 : i64, length = 96 : i64} : tensor<4x6xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %two = onnx.node "Constant"() {node_name = "two", onnx_attrs = {value = dense<2.0> : tensor<f32>}} : () -> tensor<f32>
  %sq = onnx.node "Pow"(%x, %two) {node_name = "pow", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<f32>) -> tensor<1x2x4xf32>
  %m = onnx.node "ReduceMean"(%sq) {node_name = "mean", onnx_attrs = {axes = [-1], keepdims = 1 : i64}} : (tensor<1x2x4xf32>) -> tensor<1x2x1xf32>
  %eps = onnx.node "Constant"() {node_name = "eps", onnx_attrs = {value = dense<1.0e-6> : tensor<f32>}} : () -> tensor<f32>
  %a = onnx.node "Add"(%m, %eps) {node_name = "add", onnx_attrs = {}} : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
  %s = onnx.node "Sqrt"(%a) {node_name = "sqrt", onnx_attrs = {}} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %d = onnx.node "Div"(%x, %s) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<1x2x1xf32>) -> tensor<1x2x4xf32>
  %n = onnx.node "Mul"(%d, %w) {node_name = "weighted", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4xf32>) -> tensor<1x2x4xf32>
  %g = onnx.node "MatMul"(%n, %w1) {node_name = "gate_proj", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x6xf32>) -> tensor<1x2x6xf32>
  // expected-error @+1 {{node 'sigmoid' (Sigmoid): FFN: expected SiLU = x * Sigmoid(x)}}
  %sg = onnx.node "Sigmoid"(%g) {node_name = "sigmoid", onnx_attrs = {}} : (tensor<1x2x6xf32>) -> tensor<1x2x6xf32>
  %y = onnx.node "Mul"(%other, %sg) {node_name = "not_silu", onnx_attrs = {}} : (tensor<1x2x6xf32>, tensor<1x2x6xf32>) -> tensor<1x2x6xf32>
  return %y : tensor<1x2x6xf32>
}

// -----

// HeadPattern: MatMul(x, W[hidden, vocab]) producing the graph output.
// CHECK-LABEL: func.func @head
// CHECK:       %[[E:.*]] = moe.embedding
// CHECK-NEXT:  %[[H:.*]] = moe.head %[[E]], %{{.*}} : tensor<1x2x4xf32>, tensor<4x8xf32> -> tensor<1x2x8xf32>
// CHECK-NEXT:  return %[[H]]
func.func @head(%ids: tensor<1x2xi64>) -> tensor<1x2x8xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wh = onnx.weight "lm_head" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<4x8xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %y = onnx.node "MatMul"(%x, %wh) {node_name = "lm_head", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x8xf32>) -> tensor<1x2x8xf32>
  return %y : tensor<1x2x8xf32>
}

// -----

// AttentionPattern: anchored at the Softmax over Q K^T; head_dim 8 from the scale 1/sqrt(8), one
// head from the projection widths, rope_theta 10000 from the inverse frequencies
// 10000^(-2i/8) = [1, 0.1, 0.01, 0.001], the mask read by value (causal at length 2).
// CHECK-LABEL: func.func @attention
// CHECK:       %[[E:.*]] = moe.embedding
// CHECK:       moe.attention %[[E]] weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 8 : i64, layer = -1 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, rope_theta = 1.000000e+04 : f64}
// CHECK-NOT:   "Softmax"
func.func @attention(%ids: tensor<1x2xi64>) -> tensor<1x2x4xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<4x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 256 : i64, length = 128 : i64} : tensor<4x8xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 384 : i64, length = 128 : i64} : tensor<4x8xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 512 : i64, length = 128 : i64} : tensor<8x4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x8xf32>) -> tensor<1x2x8xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x8xf32>) -> tensor<1x2x8xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.1, 0.01, 0.001]> : tensor<4xf32>}} : () -> tensor<4xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%pos, %invf) {node_name = "freqs", onnx_attrs = {}} : (tensor<2x1xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %zero = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %four = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %eight = onnx.node "Constant"() {node_name = "c8", onnx_attrs = {value = dense<8> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%q, %zero, %four, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4xf32>
  %q2 = onnx.node "Slice"(%q, %four, %eight, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x8xf32>
  %qc = onnx.node "Mul"(%q, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2x8xf32>) -> tensor<1x2x8xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2x8xf32>) -> tensor<1x2x8xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %k1 = onnx.node "Slice"(%k, %zero, %four, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4xf32>
  %k2 = onnx.node "Slice"(%k, %four, %eight, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x8xf32>
  %kc = onnx.node "Mul"(%k, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2x8xf32>) -> tensor<1x2x8xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2x8xf32>) -> tensor<1x2x8xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %kt = onnx.node "Transpose"(%kr) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1]}} : (tensor<1x2x8xf32>) -> tensor<1x8x2xf32>
  %s = onnx.node "MatMul"(%qr, %kt) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x8x2xf32>) -> tensor<1x2x2xf32>
  %c = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.82842708> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %c) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2xf32>, tensor<f32>) -> tensor<1x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "causal", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %v) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pv, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  return %y : tensor<1x2x4xf32>
}

// -----

// Without the sign flip of rotate_half (here on q) the rotation is not RoPE: refused at the scores.
func.func @attention_no_rotate_sign_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x4xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<4x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 256 : i64, length = 128 : i64} : tensor<4x8xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 384 : i64, length = 128 : i64} : tensor<4x8xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 512 : i64, length = 128 : i64} : tensor<8x4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x8xf32>) -> tensor<1x2x8xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x8xf32>) -> tensor<1x2x8xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.1, 0.01, 0.001]> : tensor<4xf32>}} : () -> tensor<4xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%pos, %invf) {node_name = "freqs", onnx_attrs = {}} : (tensor<2x1xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %zero = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %four = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %eight = onnx.node "Constant"() {node_name = "c8", onnx_attrs = {value = dense<8> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%q, %zero, %four, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4xf32>
  %q2 = onnx.node "Slice"(%q, %four, %eight, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4xf32>
  %qh = onnx.node "Concat"(%q2, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x8xf32>
  %qc = onnx.node "Mul"(%q, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2x8xf32>) -> tensor<1x2x8xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2x8xf32>) -> tensor<1x2x8xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %k1 = onnx.node "Slice"(%k, %zero, %four, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4xf32>
  %k2 = onnx.node "Slice"(%k, %four, %eight, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x8xf32>
  %kc = onnx.node "Mul"(%k, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2x8xf32>) -> tensor<1x2x8xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2x8xf32>) -> tensor<1x2x8xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %kt = onnx.node "Transpose"(%kr) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1]}} : (tensor<1x2x8xf32>) -> tensor<1x8x2xf32>
  // expected-error @+1 {{node 'scores' (MatMul): RoPE on q: no rotate-half sign}}
  %s = onnx.node "MatMul"(%qr, %kt) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x8x2xf32>) -> tensor<1x2x2xf32>
  %c = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.82842708> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %c) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2xf32>, tensor<f32>) -> tensor<1x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "causal", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %v) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pv, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  return %y : tensor<1x2x4xf32>
}

// -----

// A Softmax over the queries (axis 1 of [b, q, k]) is not attention's: refused at the Softmax.
func.func @attention_softmax_axis_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x4xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<4x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 256 : i64, length = 128 : i64} : tensor<4x8xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 384 : i64, length = 128 : i64} : tensor<4x8xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 512 : i64, length = 128 : i64} : tensor<8x4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x8xf32>) -> tensor<1x2x8xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x8xf32>) -> tensor<1x2x8xf32>
  %invf = onnx.node "Constant"() {node_name = "inv_freq", onnx_attrs = {value = dense<[1.0, 0.1, 0.01, 0.001]> : tensor<4xf32>}} : () -> tensor<4xf32>
  %pos = onnx.node "Constant"() {node_name = "positions", onnx_attrs = {value = dense<[[0.0], [1.0]]> : tensor<2x1xf32>}} : () -> tensor<2x1xf32>
  %ang = onnx.node "Mul"(%pos, %invf) {node_name = "freqs", onnx_attrs = {}} : (tensor<2x1xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %emb2 = onnx.node "Concat"(%ang, %ang) {node_name = "emb", onnx_attrs = {axis = -1 : i64}} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %cos = onnx.node "Cos"(%emb2) {node_name = "cos", onnx_attrs = {}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %sin = onnx.node "Sin"(%emb2) {node_name = "sin", onnx_attrs = {}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %zero = onnx.node "Constant"() {node_name = "c0", onnx_attrs = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %four = onnx.node "Constant"() {node_name = "c4", onnx_attrs = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %eight = onnx.node "Constant"() {node_name = "c8", onnx_attrs = {value = dense<8> : tensor<1xi64>}} : () -> tensor<1xi64>
  %last = onnx.node "Constant"() {node_name = "axis", onnx_attrs = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %q1 = onnx.node "Slice"(%q, %zero, %four, %last) {node_name = "q_first", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4xf32>
  %q2 = onnx.node "Slice"(%q, %four, %eight, %last) {node_name = "q_second", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4xf32>
  %qn = onnx.node "Neg"(%q2) {node_name = "q_neg", onnx_attrs = {}} : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %qh = onnx.node "Concat"(%qn, %q1) {node_name = "q_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x8xf32>
  %qc = onnx.node "Mul"(%q, %cos) {node_name = "q_cos", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2x8xf32>) -> tensor<1x2x8xf32>
  %qs = onnx.node "Mul"(%qh, %sin) {node_name = "q_sin", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2x8xf32>) -> tensor<1x2x8xf32>
  %qr = onnx.node "Add"(%qc, %qs) {node_name = "q_rot", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %k1 = onnx.node "Slice"(%k, %zero, %four, %last) {node_name = "k_first", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4xf32>
  %k2 = onnx.node "Slice"(%k, %four, %eight, %last) {node_name = "k_second", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4xf32>
  %kn = onnx.node "Neg"(%k2) {node_name = "k_neg", onnx_attrs = {}} : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %kh = onnx.node "Concat"(%kn, %k1) {node_name = "k_rotate_half", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x8xf32>
  %kc = onnx.node "Mul"(%k, %cos) {node_name = "k_cos", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2x8xf32>) -> tensor<1x2x8xf32>
  %ks = onnx.node "Mul"(%kh, %sin) {node_name = "k_sin", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<2x8xf32>) -> tensor<1x2x8xf32>
  %kr = onnx.node "Add"(%kc, %ks) {node_name = "k_rot", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %kt = onnx.node "Transpose"(%kr) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1]}} : (tensor<1x2x8xf32>) -> tensor<1x8x2xf32>
  %s = onnx.node "MatMul"(%qr, %kt) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x8x2xf32>) -> tensor<1x2x2xf32>
  %c = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.82842708> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %c) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2xf32>, tensor<f32>) -> tensor<1x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "causal", onnx_attrs = {value = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2xf32>
  // expected-error @+1 {{node 'softmax' (Softmax): attention: the Softmax is not over the keys (the last axis)}}
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = 1 : i64}} : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %v) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pv, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  return %y : tensor<1x2x4xf32>
}

// -----

// A mask that lets query 0 see key 1 is not causal: refused at its Add, naming the row.
func.func @attention_bidirectional_refused(%ids: tensor<1x2xi64>) -> tensor<1x2x4xf32> {
  %emb = onnx.weight "embed" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wq = onnx.weight "wq" {file = "m.onnx", offset = 128 : i64, length = 128 : i64} : tensor<4x8xf32>
  %wk = onnx.weight "wk" {file = "m.onnx", offset = 256 : i64, length = 128 : i64} : tensor<4x8xf32>
  %wv = onnx.weight "wv" {file = "m.onnx", offset = 384 : i64, length = 128 : i64} : tensor<4x8xf32>
  %wo = onnx.weight "wo" {file = "m.onnx", offset = 512 : i64, length = 128 : i64} : tensor<8x4xf32>
  %x = onnx.node "Gather"(%emb, %ids) {node_name = "embed", onnx_attrs = {}} : (tensor<8x4xf32>, tensor<1x2xi64>) -> tensor<1x2x4xf32>
  %q = onnx.node "MatMul"(%x, %wq) {node_name = "q_proj", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x8xf32>) -> tensor<1x2x8xf32>
  %k = onnx.node "MatMul"(%x, %wk) {node_name = "k_proj", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x8xf32>) -> tensor<1x2x8xf32>
  %v = onnx.node "MatMul"(%x, %wv) {node_name = "v_proj", onnx_attrs = {}} : (tensor<1x2x4xf32>, tensor<4x8xf32>) -> tensor<1x2x8xf32>
  %kt = onnx.node "Transpose"(%k) {node_name = "k_t", onnx_attrs = {perm = [0, 2, 1]}} : (tensor<1x2x8xf32>) -> tensor<1x8x2xf32>
  %s = onnx.node "MatMul"(%q, %kt) {node_name = "scores", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<1x8x2xf32>) -> tensor<1x2x2xf32>
  %c = onnx.node "Constant"() {node_name = "sqrt_d", onnx_attrs = {value = dense<2.82842708> : tensor<f32>}} : () -> tensor<f32>
  %sc = onnx.node "Div"(%s, %c) {node_name = "scaled", onnx_attrs = {}} : (tensor<1x2x2xf32>, tensor<f32>) -> tensor<1x2x2xf32>
  %mask = onnx.node "Constant"() {node_name = "anti", onnx_attrs = {value = dense<[[0.0, 0.0], [-3.40282347E+38, 0.0]]> : tensor<2x2xf32>}} : () -> tensor<2x2xf32>
  // expected-error @+1 {{node 'masked' (Add): attention: the mask added before the Softmax is neither causal nor a sliding window: query 0 sees keys up to 1}}
  %sm = onnx.node "Add"(%sc, %mask) {node_name = "masked", onnx_attrs = {}} : (tensor<1x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2xf32>
  %p = onnx.node "Softmax"(%sm) {node_name = "softmax", onnx_attrs = {axis = -1 : i64}} : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %pv = onnx.node "MatMul"(%p, %v) {node_name = "pv", onnx_attrs = {}} : (tensor<1x2x2xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %y = onnx.node "MatMul"(%pv, %wo) {node_name = "o_proj", onnx_attrs = {}} : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  return %y : tensor<1x2x4xf32>
}
