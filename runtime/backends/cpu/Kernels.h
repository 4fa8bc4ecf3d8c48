// fp32 CPU kernels of the forward pass. All tensors are dense row-major float32 (int64 for ids),
// passed as raw pointers with their sizes; rows may be 0. Shapes below use T = tokens (rows).
//
// Each kernel follows the Hugging Face Mixtral reference (transformers/models/mixtral/
// modeling_mixtral.py), which is what samples/models/mixtral_tiny/export.py traces and the golden
// tests compare against. Short reductions (norm statistics, softmax denominators) accumulate in
// double and GEMMs (linear, attention) run on fp32 cblas_sgemm, so results are within a few fp32
// ulps of PyTorch's fp32 results.
#pragma once

#include "runtime/backends/KernelTypes.h"
#include "runtime/plan/RouterScoring.h"

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace disagmoe::cpu {

/// Raised for invalid kernel arguments that depend on data (an id outside the vocabulary); the
/// kernel interface's error (runtime/backends/KernelTypes.h).
using kernels::KernelError;

/// Embedding gather: out[t] = table[ids[t]].
/// table [vocab, hidden], ids [T], out [T, hidden]. Throws KernelError if an id is outside [0,
/// vocab).
void embedding(const float *table, int64_t vocab, int64_t hidden, const int64_t *ids,
               int64_t tokens, float *out);

/// RMSNorm (MixtralRMSNorm): y[t] = x[t] / sqrt(mean_j(x[t,j]^2) + eps) * w.
/// x, y [T, hidden] (may alias), w [hidden].
void rmsNorm(const float *x, int64_t rows, int64_t hidden, const float *w, float eps, float *y);

/// Linear without bias: y = x @ w, with w stored [in, out] (cblas_sgemm, OpenBLAS).
/// x [rows, in], w [in, out], y [rows, out] (must not alias x).
void linear(const float *x, int64_t rows, int64_t in, const float *w, int64_t out, float *y);

/// Rotary position embedding, rotate-half form (HF `apply_rotary_pos_emb`), in place:
/// for head vector v of size d = headDim and position p, with inv_freq[i] = theta^(-2i/d) (or
/// spec.invFreq), angle[i] = angle[i + d/2] = p * inv_freq[i] and m = spec.attentionFactor:
/// v' = v * m cos(angle) + rotate_half(v) * m sin(angle), rotate_half(v) = [-v[d/2:], v[:d/2]].
/// x [T, heads, headDim] (a q or k projection), positions [T]. headDim must be even.
void rope(float *x, int64_t tokens, int64_t heads, int64_t headDim, const int64_t *positions,
          const kernels::RopeSpec &spec);

/// rope's cos/sin of every distinct position among `positions` [tokens], computed once (a batch
/// repeats positions 0..seqLen-1 per sequence); ropeBackward uses the same table, so both see the
/// same fp32 values. cos(t), sin(t): the headDim/2 values of token t.
struct RopeTable {
  RopeTable(const int64_t *positions, int64_t tokens, int64_t headDim,
            const kernels::RopeSpec &spec);
  const float *cos(int64_t t) const { return cosv.data() + rowOf[t] * half; }
  const float *sin(int64_t t) const { return sinv.data() + rowOf[t] * half; }
  int64_t half;
  std::vector<float> cosv, sinv; ///< [distinct positions, half]
  std::vector<int64_t> rowOf;    ///< [tokens]
};

/// Causal grouped-query attention of ONE sequence (positions 0..seqLen-1), after RoPE:
/// out[t, h] = sum_{s<=t} softmax_s(q[t,h] . k[s,g] / sqrt(headDim)) v[s,g], g = h /
/// (heads/kvHeads) (HF `repeat_kv`: kv head g serves query heads g*n_rep .. g*n_rep+n_rep-1). The
/// softmax subtracts the row maximum before exp. fp32 like PyTorch: scores and P V on cblas_sgemm,
/// the softmax's denominator summed in double (FamilyKernels.h attentionProbs, which this calls).
/// q [seqLen, heads*headDim], k, v [seqLen, kvHeads*headDim], out [seqLen, heads*headDim].
void causalAttention(const float *q, const float *k, const float *v, int64_t seqLen, int64_t heads,
                     int64_t kvHeads, int64_t headDim, float *out);

/// Row-wise softmax with max-subtraction: y[t] = exp(x[t] - max) / sum(exp(x[t] - max)).
/// x, y [rows, cols] (may alias).
void softmax(const float *x, int64_t rows, int64_t cols, float *y);

/// Top-k of one row, descending by value; equal values go to the LOWER index first (ONNX TopK).
/// row [n], ids [k], values [k]; requires 1 <= k <= n.
void topK(const float *row, int64_t n, int64_t k, int64_t *ids, float *values);

/// Router gates from logits (fp32): per token the top-k expert ids (descending score, ties to the
/// lower id) and their gate weights per `scoring`.
/// `selectionBias` [experts] (optional; DeepSeek-V3's auxiliary-loss-free balancing, report
/// §2.1.2): added in fp32 to the score the top-k ranks (the softmax probability, or the logit for
/// topk_softmax) for the CHOICE only; the gates are computed from the unbiased scores.
/// The sigmoid scorings (DeepSeek-V3, transformers modeling_deepseek_v3.py DeepseekV3TopkRouter):
/// s = 1 / (1 + exp(-z)) in fp32; the choice ranks s + selectionBias (e_score_correction_bias)
/// restricted to the `groups.topkGroup` best of `groups.nGroup` groups (RouterScoring.h
/// RouterGroups: the others score 0.0); gates = s at the chosen ids, divided by (their fp32 sum
/// + 1e-20) for sigmoid_group_topk_renorm. `groups` is read by the sigmoid scorings only.
/// logits [T, experts], ids [T, k], gates [T, k].
void routerGates(const float *logits, int64_t tokens, int64_t experts, int64_t k,
                 RouterScoring scoring, int64_t *ids, float *gates,
                 const float *selectionBias = nullptr, const RouterGroups &groups = {});

/// SwiGLU expert (MixtralBlockSparseTop2MLP): out = (silu(x @ w1) * (x @ w3)) @ w2, silu(z) = z *
/// sigmoid(z). x [rows, hidden], w1, w3 [hidden, expertHidden], w2 [expertHidden, hidden], out
/// [rows, hidden].
void swigluExpert(const float *x, int64_t rows, int64_t hidden, int64_t expertHidden,
                  const float *w1, const float *w3, const float *w2, float *out);

} // namespace disagmoe::cpu
