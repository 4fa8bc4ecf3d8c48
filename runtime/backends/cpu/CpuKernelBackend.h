// The cpu implementation of the kernel interface (runtime/backends/KernelBackend.h): every method
// forwards to the fp32 OpenBLAS kernel its declaration names (Kernels.h, FamilyKernels.h,
// BackwardKernels.h) with the same arguments, so a worker calling it computes bit for bit what the
// direct kernel calls computed. Host memory; stateless (one instance serves every rank thread).
#pragma once

#include "runtime/backends/KernelBackend.h"

namespace disagmoe::cpu {

class CpuKernelBackend final : public kernels::KernelBackend {
public:
  const char *name() const override { return "cpu"; }
  kernels::MemorySpace space() const override { return kernels::MemorySpace::Host; }

  void embedding(const float *table, int64_t vocab, int64_t hidden, const int64_t *ids,
                 int64_t tokens, float *out) const override;
  void rmsNorm(const float *x, int64_t rows, int64_t hidden, const float *w, float eps,
               float *y) const override;
  void linear(const float *x, int64_t rows, int64_t in, const float *w, int64_t out,
              float *y) const override;
  void addBias(float *y, int64_t rows, int64_t cols, const float *b) const override;
  void rope(float *x, int64_t tokens, int64_t heads, int64_t headDim, const int64_t *positions,
            const kernels::RopeSpec &spec) const override;
  void attention(const float *q, const float *k, const float *v, const kernels::AttentionSpec &a,
                 float *out) const override;
  void routerGates(const float *logits, int64_t tokens, int64_t experts, int64_t k,
                   RouterScoring scoring, int64_t *ids, float *gates, const float *selectionBias,
                   const RouterGroups &groups) const override;
  void expertForward(const kernels::ExpertForm &form, const kernels::FfnWeights &w, const float *x,
                     int64_t rows, int64_t hidden, int64_t inner, float *y) const override;
  void expertsForward(const kernels::ExpertProblem *problems, int64_t count, int64_t hidden,
                      int64_t inner) const override;

  void add(const float *a, const float *b, int64_t n, float *out) const override;
  void accumulate(const float *x, float scale, int64_t n, float *out) const override;

  void embeddingBackward(const float *dOut, const int64_t *ids, int64_t tokens, int64_t hidden,
                         float *dW) const override;
  void rmsNormBackward(const float *x, const float *dy, int64_t rows, int64_t hidden,
                       const float *w, float eps, float *dx, float *dw) const override;
  void linearBackward(const float *x, const float *dy, int64_t rows, int64_t in, const float *w,
                      int64_t out, float *dx, float *dW) const override;
  void ropeBackward(float *dx, int64_t tokens, int64_t heads, int64_t headDim,
                    const int64_t *positions, const kernels::RopeSpec &spec) const override;
  void attentionBackward(const float *q, const float *k, const float *v, const float *dOut,
                         const kernels::AttentionSpec &a, float *dq, float *dk, float *dv,
                         float *dSinks) const override;
  void routerGatesBackward(const float *logits, int64_t tokens, int64_t experts, int64_t k,
                           RouterScoring scoring, const int64_t *ids, const float *dGates,
                           float *dLogits) const override;
  void expertBackward(const kernels::ExpertForm &form, const kernels::FfnWeights &w, const float *x,
                      const float *dy, int64_t rows, int64_t hidden, int64_t inner, float *dx,
                      const kernels::FfnGrads &g, float *y) const override;
  void biasBackward(const float *dy, int64_t rows, int64_t cols, float *db) const override;
  double crossEntropyBackward(const float *logits, const int64_t *targets, int64_t rows,
                              int64_t vocab, float gradScale, float *dLogits) const override;
};

} // namespace disagmoe::cpu
