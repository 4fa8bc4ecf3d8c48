//===- ContribMoeMatcher.h - onnxruntime's fused com.microsoft.MoE as moe ops -===//
//
// Reads one `com.microsoft.MoE` node (onnxruntime contrib op, opset com.microsoft 1) into the
// parts of `moe.router` + `moe.experts`: the router weight behind `router_probs`, top-k and
// scoring, and per-expert references into the stacked expert weights (no bytes are read).
//
// Semantics and defaults (onnxruntime >= 1.22: contrib_ops/cpu/moe/moe_base_cpu.h for the
// attribute defaults, moe_cpu.cc for routing and the GEMMs, moe_utils.cc ApplySwiGLUActivation,
// moe_helper.h CheckInputs for the weight shapes, docs/ContribOperators.md, and
// contrib_ops/cuda/moe/README.md for swiglu_fusion 2 = block [gate; value]):
//   k = 1, activation_type = "relu", normalize_routing_weights = 0, swiglu_fusion = 0,
//   swiglu_limit = +inf, activation_alpha = 1, activation_beta = 0, use_sparse_mixer = 0.
//   router_probs [tokens, E] are logits: softmax over all E, top-k, divided by the top-k sum when
//   normalize_routing_weights = 1 (moe.router scoring softmax_topk_renorm, else softmax_topk).
//   Weights are stored [out, in]: fc1 [E, f*I, H] (f = 2 for fused SwiGLU), fc2 [E, H, I],
//   fc3 [E, I, H]; biases fc1 [E, f*I], fc2 [E, H], fc3 [E, I] (all f32).
//   swiglu: a = x fc1^T + b1 split into gate g and value v (swiglu_fusion 1: even / odd rows,
//   2: first / second half); g = min(g, limit), v = clamp(v, -limit, limit),
//   act = g * sigmoid(alpha g) * (v + beta). silu with fc3: act = silu(x fc1^T + b1) * (x fc3^T +
//   b3). y = act fc2^T + b2, combined with the top-k weights.
//
// Forms that moe.experts expresses: silu with fc3 (SwiGLU); swiglu with alpha = 1, beta = 0 and
// no limit (SwiGLU); swiglu with beta = 1 and alpha > 0 (GPT-OSS's clamped SwiGLU, limit +inf
// read as FLT_MAX); non-gated experts without fc3, y = act(x fc1^T + b1) fc2^T + b2, for relu,
// gelu, silu and identity (moe_cpu.cc applies moe_utils.cc ApplyActivation elementwise to fc1's
// output; its gelu is the tanh approximation 0.5 a (1 + tanh(0.7978845608 (a + 0.044715 a^3))),
// read as moe.experts activation "gelu_tanh"). Everything else is refused with an error naming
// the node and attribute: relu/gelu/identity with fc3, other alpha/beta/limit combinations,
// use_sparse_mixer, k outside 1..E, weight shapes that contradict swiglu_fusion / activation
// (including the pre-1.22 [E, H, I] layout), router_probs that are not MatMul(x, Wg) [+ b] or
// Gemm(x, Wg, b) of the node's input (a Softmax there would be applied twice). A Gemm router
// (ONNX Gemm: alpha A' B' + beta C) is read with transB 0 (Wg [H, E]) or 1 (Wg^T [E, H], referenced
// as its transpose) and a bias C [E]; transA = 1, alpha != 1 (a scaled logit changes the softmax)
// and beta != 1 with a bias are refused naming the attribute.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_RAISE_CONTRIBMOEMATCHER_H
#define DISAGMOE_PASSES_RAISE_CONTRIBMOEMATCHER_H

#include "passes/raise/GraphMatchers.h"

#include "mlir/IR/Operation.h"
#include "llvm/Support/Error.h"

#include <string>

namespace disagmoe::raise {

/// One com.microsoft.MoE node read as router + experts. Per-expert lists are in expert id order;
/// w1/w3 are [hidden, I] (w1 [hidden, 2I] with fusedGateUp), w2 [I, hidden]; bias lists are
/// empty or one per expert.
struct ContribMoeMatch {
  NodeOp node;
  WeightOp routerWeight; // [hidden, experts]
  WeightOp routerBias;   // [experts] or null
  int64_t numExperts = 0, topK = 0, expertHidden = 0;
  std::string scoring; // softmax_topk_renorm or softmax_topk
  llvm::SmallVector<WeightOp> w1, w3, w2, b1, b3, b2;
  bool fusedGateUp = false;
  bool oai = false; // clamped SwiGLU (u + 1) * g * sigmoid(alpha g)
  double limit = 0, alpha = 0;
  /// Non-gated experts (no fc3, not swiglu): relu, gelu_tanh, silu or identity (moe.experts'
  /// activation); empty for the gated forms.
  std::string activation;
  mlir::Value output; // the node's output (the combined experts, before the residual add)
};

/// The com.microsoft.MoE node reading `x` (the FFN norm output, possibly reshaped), or null.
NodeOp findContribMoe(mlir::Value x);

/// True for a node of op type MoE in the com.microsoft domain.
bool isContribMoe(NodeOp node);

/// What matchContribMoe fails with: the op at fault (the node, or the Gemm behind router_probs)
/// and one line naming the attribute or input at fault ("com.microsoft.MoE: ...").
class ContribMoeError : public llvm::ErrorInfo<ContribMoeError> {
public:
  static char ID;
  ContribMoeError(mlir::Operation *at, std::string message) : at(at), message(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

  mlir::Operation *at;
  std::string message;
};

/// Reads `node` (found by findContribMoe(x)). On a contradiction or an unsupported form fails
/// with a ContribMoeError naming the op and the attribute or input at fault.
llvm::Expected<ContribMoeMatch> matchContribMoe(NodeOp node, mlir::Value x);

} // namespace disagmoe::raise

#endif
