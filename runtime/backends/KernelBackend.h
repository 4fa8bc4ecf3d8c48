// The one kernel interface of a rank's instructions (issue 14): the forward worker
// (runtime/executor/RankWorker.cpp) and the training worker (runtime/train/TrainWorker.h) call
// every kernel through a KernelBackend, so both run on whichever backend implements it:
//   - cpu (runtime/backends/cpu/CpuKernelBackend.h): the fp32 OpenBLAS kernels of Kernels.h,
//     FamilyKernels.h and BackwardKernels.h, unchanged (the CPU results are bit-identical to the
//     direct calls they replace);
//   - cuda: not yet (runtime/backends/cuda holds its kernels; the workers' activations are host
//     vectors, so a device backend cannot be handed their pointers yet).
//
// Conventions (every method):
//   - all tensors are dense row-major fp32 (int64 for ids), addressed by raw pointers in the
//     backend's memory space (space(): host memory for cpu); rows may be 0;
//   - input gradients (dx, dq, ...) are WRITTEN; weight gradients (dW, db, dSinks) are ACCUMULATED
//     (+=), so micro-batches and token sets sum into one buffer;
//   - linear weights are [in, out] (y = x @ W), as in the plan (runtime/plan/Weights.h);
//   - errors: KernelError (std::runtime_error) for an argument that depends on data (an id outside
//     the vocabulary, a backward the form has not); shapes are the caller's to get right.
// The formula and source of each kernel are those of the cpu kernel named beside it (its header
// states them: Hugging Face's modeling code, PyTorch's autograd derivatives).
#pragma once

#include "runtime/backends/KernelTypes.h"
#include "runtime/plan/RouterScoring.h"

#include <cstdint>

namespace disagmoe::kernels {

/// Where a backend's tensors live.
enum class MemorySpace { Host, Device };

class KernelBackend {
public:
  virtual ~KernelBackend() = default;

  /// "cpu" or "cuda" (the --backend spelling).
  virtual const char *name() const = 0;
  /// The memory every pointer argument addresses.
  virtual MemorySpace space() const = 0;

  // ---- forward ------------------------------------------------------------------------------

  /// out[t] = table[ids[t]]; table [vocab, hidden], ids [tokens], out [tokens, hidden]. Throws
  /// KernelError for an id outside [0, vocab) (cpu::embedding).
  virtual void embedding(const float *table, int64_t vocab, int64_t hidden, const int64_t *ids,
                         int64_t tokens, float *out) const = 0;
  /// y[t] = x[t] / sqrt(mean_j x[t,j]^2 + eps) * w; x, y [rows, hidden] (may alias), w [hidden]
  /// (cpu::rmsNorm).
  virtual void rmsNorm(const float *x, int64_t rows, int64_t hidden, const float *w, float eps,
                       float *y) const = 0;
  /// y = x @ w; x [rows, in], w [in, out], y [rows, out] (no alias) (cpu::linear).
  virtual void linear(const float *x, int64_t rows, int64_t in, const float *w, int64_t out,
                      float *y) const = 0;
  /// y[r] += b; y [rows, cols], b [cols] (cpu::addBias).
  virtual void addBias(float *y, int64_t rows, int64_t cols, const float *b) const = 0;
  /// Rotate-half RoPE in place; x [tokens, heads, headDim], positions [tokens], frequencies and
  /// scale from `spec` (KernelTypes.h RopeSpec) (cpu::rope).
  virtual void rope(float *x, int64_t tokens, int64_t heads, int64_t headDim,
                    const int64_t *positions, const RopeSpec &spec) const = 0;
  /// Causal attention of every sequence of `a` (KernelTypes.h AttentionSpec)
  /// (cpu::causalAttentionGeneral, one call per sequence).
  virtual void attention(const float *q, const float *k, const float *v, const AttentionSpec &a,
                         float *out) const = 0;
  /// Router top-k ids and gates from logits [tokens, experts]: ids, gates [tokens, k];
  /// selectionBias [experts] nullable; groups: the sigmoid scorings' group-limited choice
  /// (cpu::routerGates).
  virtual void routerGates(const float *logits, int64_t tokens, int64_t experts, int64_t k,
                           RouterScoring scoring, int64_t *ids, float *gates,
                           const float *selectionBias = nullptr,
                           const RouterGroups &groups = {}) const = 0;
  /// One expert / dense FFN of `form` over x [rows, hidden] -> y [rows, hidden] (no alias)
  /// (cpu::swigluExpert, cpu::ffnForward, cpu::plainFfnForward by form.kind).
  virtual void expertForward(const ExpertForm &form, const FfnWeights &w, const float *x,
                             int64_t rows, int64_t hidden, int64_t inner, float *y) const = 0;
  /// A rank's local experts in one call (a grouped GEMM on a device): expertForward of every
  /// problem, in the given order (ascending expert id). All problems share hidden and inner.
  virtual void expertsForward(const ExpertProblem *problems, int64_t count, int64_t hidden,
                              int64_t inner) const = 0;

  // ---- element-wise -------------------------------------------------------------------------

  /// out[i] = a[i] + b[i] for i < n (fp32; out may alias a or b).
  virtual void add(const float *a, const float *b, int64_t n, float *out) const = 0;
  /// out[i] += scale * x[i] for i < n (fp32: one product, one sum, rounded each; scale 1 is a
  /// plain sum).
  virtual void accumulate(const float *x, float scale, int64_t n, float *out) const = 0;

  // ---- backward -----------------------------------------------------------------------------

  /// dW[ids[t]] += dOut[t] in ascending t; dOut [tokens, hidden], dW [vocab, hidden]
  /// (cpu::embeddingBackward).
  virtual void embeddingBackward(const float *dOut, const int64_t *ids, int64_t tokens,
                                 int64_t hidden, float *dW) const = 0;
  /// RMSNorm's vector-Jacobian product; dx may alias dy, dw nullable (cpu::rmsNormBackward).
  virtual void rmsNormBackward(const float *x, const float *dy, int64_t rows, int64_t hidden,
                               const float *w, float eps, float *dx, float *dw) const = 0;
  /// dx = dy W^T (nullable), dW += x^T dy (nullable) (cpu::linearBackward).
  virtual void linearBackward(const float *x, const float *dy, int64_t rows, int64_t in,
                              const float *w, int64_t out, float *dx, float *dW) const = 0;
  /// RoPE's transpose in place on dx [tokens, heads, headDim] (cpu::ropeBackward).
  virtual void ropeBackward(float *dx, int64_t tokens, int64_t heads, int64_t headDim,
                            const int64_t *positions, const RopeSpec &spec) const = 0;
  /// attention's backward for every sequence: dq, dk, dv written, dSinks [heads] += (nullable)
  /// (cpu::causalAttentionGeneralBackward, one call per sequence).
  virtual void attentionBackward(const float *q, const float *k, const float *v, const float *dOut,
                                 const AttentionSpec &a, float *dq, float *dk, float *dv,
                                 float *dSinks) const = 0;
  /// dLogits [tokens, experts] from dGates [tokens, k] (cpu::routerGatesBackward).
  virtual void routerGatesBackward(const float *logits, int64_t tokens, int64_t experts, int64_t k,
                                   RouterScoring scoring, const int64_t *ids, const float *dGates,
                                   float *dLogits) const = 0;
  /// expertForward's backward: dx [rows, hidden] written, weight gradients +=, y (nullable) the
  /// forward output (cpu::swigluExpertBackward, cpu::ffnBackward). Throws KernelError for a
  /// NonGated form (no backward kernel).
  virtual void expertBackward(const ExpertForm &form, const FfnWeights &w, const float *x,
                              const float *dy, int64_t rows, int64_t hidden, int64_t inner,
                              float *dx, const FfnGrads &g, float *y) const = 0;
  /// db [cols] += sum_r dy[r] (cpu::biasBackward).
  virtual void biasBackward(const float *dy, int64_t rows, int64_t cols, float *db) const = 0;
  /// Cross-entropy sum over rows with targets >= 0 and dLogits = (softmax - onehot) * gradScale
  /// (cpu::crossEntropyBackward).
  virtual double crossEntropyBackward(const float *logits, const int64_t *targets, int64_t rows,
                                      int64_t vocab, float gradScale, float *dLogits) const = 0;
};

/// The process's cpu backend (CpuKernelBackend.h); stateless, shared by every rank thread.
const KernelBackend &cpuKernels();

} // namespace disagmoe::kernels
