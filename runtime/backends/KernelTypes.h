// The argument records of the kernel interface (KernelBackend.h), shared by every backend: an FFN's
// weights and weight gradients, the form of an expert, the shape of an attention call. Plain
// pointer records; which memory the pointers address (host or device) is the backend's
// (KernelBackend::space()).
#pragma once

#include <cstdint>
#include <stdexcept>

namespace disagmoe::kernels {

/// Raised for invalid kernel arguments that depend on data (an id outside the vocabulary, a
/// backward a form has not).
class KernelError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The weights of one expert or dense FFN. w1 [hidden, inner] (or [hidden, 2*inner] with
/// fusedGateUp: gate at even columns, up at odd ones), w3 [hidden, inner] (null when fused),
/// w2 [inner, hidden]; biases b1 (w1's columns), b3 [inner], b2 [hidden] may be null.
struct FfnWeights {
  const float *w1 = nullptr, *w3 = nullptr, *w2 = nullptr;
  const float *b1 = nullptr, *b3 = nullptr, *b2 = nullptr;
  bool fusedGateUp = false;
};

/// Weight gradients of one expert / dense FFN (FfnWeights' layout; each +=, null to skip).
struct FfnGrads {
  float *w1 = nullptr, *w3 = nullptr, *w2 = nullptr;
  float *b1 = nullptr, *b3 = nullptr, *b2 = nullptr;
};

/// The non-gated activations of onnxruntime's com.microsoft.MoE (activation_type relu, gelu, silu,
/// identity), as its CPU provider computes them (onnxruntime/contrib_ops/cpu/moe/moe_utils.cc,
/// ApplyActivation): relu = max(0, a); gelu is the tanh approximation
/// 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))), not erf; silu = a * sigmoid(a); identity = a.
enum class PlainActivation { Relu, GeluTanh, Silu, Identity };

/// Which arithmetic one expert / dense FFN runs (the kernel a backend picks for it):
///  - Swiglu:     out = (silu(x W1) * (x W3)) W2, no biases, separate gate and up
///                (MixtralBlockSparseTop2MLP; cpu::swigluExpert);
///  - GatedFamily: biases, fused interleaved gate/up, and with `oai` GPT-OSS's clamped SwiGLU
///                (limit, alpha) (cpu::ffnForward);
///  - NonGated:   out = act(x W1 + b1) W2 + b2 (onnxruntime's MoE; forward only, no backward).
struct ExpertForm {
  enum class Kind { Swiglu, GatedFamily, NonGated };
  Kind kind = Kind::Swiglu;
  bool oai = false;
  float limit = 0, alpha = 0;
  PlainActivation activation = PlainActivation::Identity; ///< NonGated only
};

/// RoPE's frequencies and scale. Plain RoPE (RoFormer eq. 15): inv_freq[i] = theta^(-2i/d) from
/// `theta` alone (a RopeSpec converts from it). A scaled RoPE (YaRN, linear or NTK scaling: what
/// transformers' rope_init_fns compute) gives its d/2 frequencies in `invFreq`, and YaRN's
/// attention factor (Peng et al. 2023, eq. 22: 0.1 ln(factor) + 1) multiplies cos and sin.
struct RopeSpec {
  RopeSpec(double theta = 0, const float *invFreq = nullptr, float attentionFactor = 1.0f)
      : theta(theta), invFreq(invFreq), attentionFactor(attentionFactor) {}
  double theta;
  const float *invFreq; ///< [d/2] host memory, or null for theta^(-2i/d)
  float attentionFactor;
};

/// Causal attention over `sequences` sequences of `seqLen` tokens each (positions 0..seqLen-1,
/// after RoPE), grouped-query: query head h reads kv head h / (heads / kvHeads).
/// q [sequences*seqLen, heads*qkDim], k [.., kvHeads*qkDim], v [.., kvHeads*vDim],
/// out [.., heads*vDim]; softmax(scale * q k^T) with the optional `sinks` [heads] (a logit per
/// head in every denominator, no value; GPT-OSS) and `window` (0 = none; query t attends
/// t - window < s <= t). MLA: qkDim = nope + rope dims, vDim its v head size.
struct AttentionSpec {
  int64_t sequences = 0, seqLen = 0, heads = 0, kvHeads = 0, qkDim = 0, vDim = 0;
  double scale = 0;
  const float *sinks = nullptr;
  int64_t window = 0;
};

/// The standard scale 1 / sqrt(headDim) of scaled dot-product attention (Vaswani et al. 2017, eq.
/// 1), computed in double as the cpu kernels always have (Kernels.cpp causalAttention).
double standardAttentionScale(int64_t headDim);

/// One expert's share of a grouped expert call (KernelBackend::expertsForward): its form and
/// weights and its `rows` tokens, x [rows, hidden] -> y [rows, hidden].
struct ExpertProblem {
  ExpertForm form;
  FfnWeights weights;
  const float *x = nullptr;
  int64_t rows = 0;
  float *y = nullptr;
};

} // namespace disagmoe::kernels
