// fp32 CPU forward kernels of the parts the MoE families add to the Mixtral-style components
// (docs/plan-format.md, "components"): projection biases, per-head q/k RMSNorm (Qwen3), attention
// sinks and sliding windows (GPT-OSS), router biases and scaling (GPT-OSS, DeepSeek), GPT-OSS's
// clamped SwiGLU on a fused interleaved gate/up projection, biased experts, and always-on SwiGLU
// FFNs (DeepSeek's dense layers and shared experts). Each follows the family's Hugging Face code
// (see samples/models/*_tiny/export.py, whose goldens the tests compare against). Short reductions
// accumulate in double, as in Kernels.h; attention runs on fp32 cblas_sgemm (attentionProbs).
#pragma once

#include "runtime/backends/KernelTypes.h"

#include <cstdint>

namespace disagmoe::cpu {

/// y[r] += b for every row r. y [rows, cols], b [cols].
void addBias(float *y, int64_t rows, int64_t cols, const float *b);

/// Causal grouped-query attention of ONE sequence (after RoPE), with the families' options:
///  - `sinks` (nullable) [heads]: a logit per query head that joins every softmax denominator and
///    contributes no value (GPT-OSS: cat(scores, sink) -> softmax -> drop the sink column);
///  - `window` (0 = none): query t attends keys s with t - window < s <= t.
/// Shapes as causalAttention in Kernels.h.
void causalAttentionVariant(const float *q, const float *k, const float *v, int64_t seqLen,
                            int64_t heads, int64_t kvHeads, int64_t headDim, const float *sinks,
                            int64_t window, float *out);

/// The general form: q and k heads of `qkDim`, v heads of `vDim` (MLA: qkDim = nope + rope), an
/// explicit softmax `scale`, optional sinks and window as above.
/// q [seqLen, heads*qkDim], k [seqLen, kvHeads*qkDim], v [seqLen, kvHeads*vDim],
/// out [seqLen, heads*vDim].
void causalAttentionGeneral(const float *q, const float *k, const float *v, int64_t seqLen,
                            int64_t heads, int64_t kvHeads, int64_t qkDim, int64_t vDim,
                            double scale, const float *sinks, int64_t window, float *out);

/// Query rows per block of the attention kernels (forward and backward): the probabilities of one
/// head are formed for this many rows at a time, so memory stays kAttentionRowBlock x seqLen
/// floats.
constexpr int64_t kAttentionRowBlock = 64;

/// The shape and options of one causalAttentionGeneral call.
struct AttentionShape {
  int64_t seqLen, heads, kvHeads, qkDim, vDim;
  double scale;
  const float *sinks; ///< nullable, [heads]
  int64_t window;     ///< 0 = none
};

/// Softmax probabilities of query head h for query rows [t0, t1) of one sequence, over keys
/// [k0, t1) with k0 = max(0, t0 - window + 1) (0 without a window); returns k0.
/// probs [t1 - t0, t1 - k0] row-major: scores = scale * q_t . k_s from cblas_sgemm (fp32), then
/// per row exp(score - max) in fp32 with the denominator summed in double (plus exp(sink - max)),
/// masked keys (s > t, or outside the window) exactly 0. sinkProb (nullable) [t1 - t0]: the sink's
/// probability per row (0 without sinks). Same arithmetic as PyTorch's fp32 matmul + softmax up to
/// summation order; the backward kernels call it to recompute exactly the forward's P.
int64_t attentionProbs(const float *q, const float *k, const AttentionShape &a, int64_t h,
                       int64_t t0, int64_t t1, float *probs, float *sinkProb);

/// The weights of one expert or dense FFN (runtime/backends/KernelTypes.h states the layout).
using kernels::FfnWeights;

/// One expert / dense FFN over `rows` tokens: out = act(x W1 + b1, x W3 + b3) W2 + b2 with
///  - oai = false: act(g, u) = silu(g) * u (SwiGLU, Mixtral/Qwen3/DeepSeek);
///  - oai = true:  g' = min(g, limit), u' = clamp(u, -limit, limit),
///                 act(g, u) = (u' + 1) * g' * sigmoid(alpha * g') (GPT-OSS's reference swiglu).
/// x [rows, hidden], out [rows, hidden] (must not alias x).
void ffnForward(const float *x, int64_t rows, int64_t hidden, int64_t inner, const FfnWeights &w,
                bool oai, float limit, float alpha, float *out);

/// The non-gated activations of onnxruntime's com.microsoft.MoE (KernelTypes.h states them).
using kernels::PlainActivation;

/// act(a) of one value (see PlainActivation).
float plainActivation(float a, PlainActivation act);

/// One non-gated expert over `rows` tokens: out = act(x W1 + b1) W2 + b2 (fc1 -> act -> fc2).
/// x [rows, hidden], w1 [hidden, inner], b1 [inner] (nullable), w2 [inner, hidden], b2 [hidden]
/// (nullable), out [rows, hidden] (must not alias x).
void plainFfnForward(const float *x, int64_t rows, int64_t hidden, int64_t inner, const float *w1,
                     const float *b1, const float *w2, const float *b2, PlainActivation act,
                     float *out);

} // namespace disagmoe::cpu
