// fp32 CPU kernels of the backward pass: for every forward kernel of Kernels.h, the vector-Jacobian
// product that turns the gradient of its output (dy) into the gradients of its input (dx) and of
// its weights (dW). Shapes use T = tokens (rows); all tensors are dense row-major float32 (int64
// ids); rows may be 0.
//
// Conventions:
//   - input gradients (dx, dq, ...) are WRITTEN (overwritten); callers add them where a value feeds
//     several consumers (the residual stream);
//   - weight gradients (dW) are ACCUMULATED (+=), so micro-batches and several token sets (an
//     expert's tokens from every A-rank) sum into one buffer; zero it before the first use.
//   - linear weights are [in, out] (y = x @ W), as in the forward kernels and the plan.
// Reductions accumulate in double where they are short loops, and GEMMs use cblas_sgemm (OpenBLAS)
// as the forward does, so results are within a few fp32 ulps of PyTorch's autograd.
//
// Sources of the formulas: the forward definitions in Kernels.h (Hugging Face Mixtral,
// transformers/models/mixtral/modeling_mixtral.py) differentiated by hand; they match PyTorch's
// autograd derivatives (tools/autograd/derivatives.yaml: mm, softmax_backward_data, rsqrt, silu,
// embedding_dense_backward, nll_loss/log_softmax) and are tested against the autograd goldens of
// samples/models/mixtral_tiny/export_grads.py and against finite differences.
#pragma once

#include "runtime/backends/cpu/FamilyKernels.h"
#include "runtime/plan/RouterScoring.h"

#include <cstdint>

namespace disagmoe::cpu {

/// Embedding (out[t] = W[ids[t]]): dW[ids[t]] += dOut[t] for every t, in ascending t (a token id
/// that occurs several times sums its rows, like PyTorch's embedding_dense_backward).
/// dOut [T, hidden], ids [T] (in [0, vocab), checked by the forward), dW [vocab, hidden] (+=).
void embeddingBackward(const float *dOut, const int64_t *ids, int64_t tokens, int64_t hidden,
                       float *dW);

/// RMSNorm (y = w * x * r, r = 1/sqrt(mean_j x_j^2 + eps), r rounded to fp32 as in the forward):
///   u = dy * w,  dx = r * u - x * r^3 * (sum_j u_j x_j) / hidden,  dw += sum_t dy[t] * x[t] *
///   r[t].
/// x, dy, dx [T, hidden] (dx may alias dy, not x), w, dw [hidden]; dw may be null (no weight
/// gradient).
void rmsNormBackward(const float *x, const float *dy, int64_t rows, int64_t hidden, const float *w,
                     float eps, float *dx, float *dw);

/// Linear without bias (y = x @ W, W [in, out]):  dx = dy @ W^T,  dW += x^T @ dy.
/// x [rows, in], dy [rows, out], dx [rows, in] (written; null to skip), dW [in, out] (+=; null to
/// skip).
void linearBackward(const float *x, const float *dy, int64_t rows, int64_t in, const float *w,
                    int64_t out, float *dx, float *dW);

/// RoPE (Kernels.h rope: a rotation of each (v[i], v[i+d/2]) pair by angle p * inv_freq[i], scaled
/// by the attention factor m): the transpose of m times a rotation is m times the rotation by the
/// opposite angle, so in place (cos, sin including m)
///   da = da' cos + db' sin,  db = db' cos - da' sin.
/// dx [T, heads, headDim] (the gradient of rope's output, replaced by that of its input), positions
/// [T].
void ropeBackward(float *dx, int64_t tokens, int64_t heads, int64_t headDim,
                  const int64_t *positions, const kernels::RopeSpec &spec);

/// Causal GQA attention of ONE sequence (Kernels.h causalAttention; q and k after RoPE). With
/// S = q k^T / sqrt(d) masked to s <= t, P = softmax(S), O = P v, per query head h and kv head
/// g(h):
///   dv[s,g] = sum_{h in g} sum_t P[h,t,s] dO[t,h]
///   dP[h,t,s] = dO[t,h] . v[s,g],  dS = P * (dP - sum_s P dP)          (softmax backward)
///   dq[t,h] = sum_s dS[h,t,s] k[s,g] / sqrt(d),  dk[s,g] = sum_{h in g} sum_t dS[h,t,s] q[t,h] /
///   sqrt(d)
/// P is recomputed from q and k by the forward's attentionProbs (FamilyKernels.h), so it is exactly
/// the forward's fp32 P; the four products run on cblas_sgemm in fp32 (as PyTorch's autograd),
/// <P, dP> per row in double. KV-head gradients sum over the heads/kvHeads query heads sharing the
/// kv head (HF repeat_kv's backward), in fp32, in ascending head order.
/// q, dOut, dq [seqLen, heads*headDim]; k, v, dk, dv [seqLen, kvHeads*headDim] (all written).
void causalAttentionBackward(const float *q, const float *k, const float *v, const float *dOut,
                             int64_t seqLen, int64_t heads, int64_t kvHeads, int64_t headDim,
                             float *dq, float *dk, float *dv);

/// Router gates (Kernels.h routerGates) from logits: the gradient of the logits given the gradient
/// of the k gate weights. The top-k selection is piecewise constant, so the gradient flows through
/// the selected gates only (PyTorch's topk backward scatters into the chosen indices):
///   softmax_topk_renorm: g_j = p_j / s (s = sum of the k chosen p), dp_j = (dg_j - sum_i dg_i g_i)
///   / s
///                        for chosen j, 0 otherwise; then dz = p * (dp - <dp, p>) over all experts;
///   softmax_topk:        dp_j = dg_j for chosen j; dz = p * (dp - <dp, p>);
///   topk_softmax:        dz_j = g_j (dg_j - sum_i dg_i g_i) for chosen j, 0 otherwise;
///   sigmoid_group_topk_renorm: g_j = s_j / D (s = sigmoid(z), D = sum of the k chosen s + 1e-20),
///                        ds_j = (dg_j - sum_i dg_i g_i) / D, dz_j = ds_j s_j (1 - s_j) for
///                        chosen j, 0 otherwise;
///   sigmoid_group_topk:  dz_j = dg_j s_j (1 - s_j) for chosen j, 0 otherwise.
/// (The selection bias and the group mask only choose, so they have no gradient.)
/// p = softmax(logits) (or s) is recomputed in double. The router's input and weight gradients are
/// then linearBackward(x, dLogits, ...). logits [T, experts], ids [T, k] (the forward's choice),
/// dGates [T, k] (aligned with ids), dLogits [T, experts] (written).
void routerGatesBackward(const float *logits, int64_t tokens, int64_t experts, int64_t k,
                         RouterScoring scoring, const int64_t *ids, const float *dGates,
                         float *dLogits);

/// SwiGLU expert (y = (silu(x W1) * (x W3)) W2), with a = x W1 and b = x W3 recomputed:
///   dh = dy W2^T,  dW2 += (silu(a) b)^T dy,  da = dh * b * silu'(a),  db = dh * silu(a),
///   silu'(a) = sigmoid(a) (1 + a (1 - sigmoid(a))),  dW1 += x^T da,  dW3 += x^T db,
///   dx = da W1^T + db W3^T.
/// x, dy, dx [rows, hidden] (dx written); w1, w3, dw1, dw3 [hidden, expertHidden]; w2, dw2
/// [expertHidden, hidden] (weight gradients +=). `y` (optional, null to skip) receives the forward
/// output E(x) [rows, hidden], which the gate gradient dL/dg = <dL/dy_combined, E(x)> needs.
void swigluExpertBackward(const float *x, const float *dy, int64_t rows, int64_t hidden,
                          int64_t expertHidden, const float *w1, const float *w3, const float *w2,
                          float *dx, float *dw1, float *dw3, float *dw2, float *y = nullptr);

/// Cross-entropy of logits against target ids, the causal LM loss's building block:
///   loss_t = logsumexp(logits[t]) - logits[t, target[t]]   for target[t] >= 0 (negative: ignored),
///   dLogits[t] = (softmax(logits[t]) - onehot(target[t])) * gradScale  (0 for ignored rows).
/// Returns sum_t loss_t (double). For the mean over the N target tokens of a global batch, pass
/// gradScale = 1/N and divide the (summed over micro-batches and ranks) return value by N.
/// logits, dLogits [T, vocab]; targets [T] (< vocab).
double crossEntropyBackward(const float *logits, const int64_t *targets, int64_t rows,
                            int64_t vocab, float gradScale, float *dLogits);

/// Next-token targets of a [batch, seq] batch: target[s, i] = ids[s, i+1] for i < seq-1 and -1
/// (ignored) at the last position of every sequence ("token t predicts t+1 within its sequence").
/// ids, targets [batch * seq].
void nextTokenTargets(const int64_t *ids, int64_t batch, int64_t seq, int64_t *targets);

// ---- model families (FamilyKernels.h)
// ------------------------------------------------------------

/// causalAttentionBackward of FamilyKernels' causalAttentionVariant (GPT-OSS): with `sinks`
/// (nullable) [heads], a per-head logit in every softmax denominator that carries no value, and a
/// sliding `window` (0 = none; query t attends t - window < s <= t). With p_sink = exp(sink - m)/Z,
/// d sink_h += sum_t -p_sink(t) * <p(t), dp(t)> (the softmax backward with dp_sink = 0), as
/// PyTorch's autograd of cat(scores, sink) -> softmax -> drop the sink column. dSinks [heads] (+=;
/// nullable). Other shapes as causalAttentionBackward.
void causalAttentionVariantBackward(const float *q, const float *k, const float *v,
                                    const float *dOut, int64_t seqLen, int64_t heads,
                                    int64_t kvHeads, int64_t headDim, const float *sinks,
                                    int64_t window, float *dq, float *dk, float *dv, float *dSinks);

/// The general form (FamilyKernels' causalAttentionGeneral; DeepSeek-V2's MLA): q and k heads of
/// `headDim`, v heads of `vDim`, softmax `scale`. q, dq [seqLen, heads*headDim], k, dk
/// [seqLen, kvHeads*headDim], v, dv [seqLen, kvHeads*vDim], dOut [seqLen, heads*vDim].
void causalAttentionGeneralBackward(const float *q, const float *k, const float *v,
                                    const float *dOut, int64_t seqLen, int64_t heads,
                                    int64_t kvHeads, int64_t headDim, int64_t vDim, double scale,
                                    const float *sinks, int64_t window, float *dq, float *dk,
                                    float *dv, float *dSinks);

/// Bias (y[r] += b): db [cols] += sum_r dy[r] (double accumulation). dy [rows, cols].
void biasBackward(const float *dy, int64_t rows, int64_t cols, float *db);

/// Weight gradients of one expert / dense FFN (runtime/backends/KernelTypes.h).
using kernels::FfnGrads;

/// Backward of FamilyKernels' ffnForward (x W1 + b1, fused interleaved gate/up or separate W3 + b3,
/// SwiGLU or GPT-OSS's clamped SwiGLU, W2 + b2), recomputing the pre-activations:
///   SwiGLU:  dg = da * u * s(g) (1 + g (1 - s(g))),  du = da * silu(g);
///   clamped: g' = min(g, limit), u' = clamp(u, -limit, limit), a = (u' + 1) g' s(alpha g'):
///            dg = da (u' + 1) (s + alpha g' s (1 - s)) where g <= limit (else 0),
///            du = da g' s where -limit <= u <= limit (else 0)  (torch.clamp's gradient mask);
/// weight gradients as linearBackward / biasBackward; with fusedGateUp dg and du interleave into
/// the columns of dW1 / db1 as g and u do in W1. x, dy, dx [rows, hidden] (dx written); `y`
/// (nullable) receives the forward output [rows, hidden] (the gate gradient needs it).
void ffnBackward(const float *x, const float *dy, int64_t rows, int64_t hidden, int64_t inner,
                 const FfnWeights &w, bool oai, float limit, float alpha, float *dx,
                 const FfnGrads &g, float *y);

} // namespace disagmoe::cpu
