// The cpu backend: each method is the cpu kernel its interface declaration names
// (CpuKernelBackend.h).
#include "runtime/backends/cpu/CpuKernelBackend.h"

#include "runtime/backends/cpu/BackwardKernels.h"
#include "runtime/backends/cpu/FamilyKernels.h"
#include "runtime/backends/cpu/Kernels.h"

#include <cmath>

namespace disagmoe {

namespace kernels {

double standardAttentionScale(int64_t headDim) {
  return 1.0 / std::sqrt(static_cast<double>(headDim));
}

const KernelBackend &cpuKernels() {
  static const cpu::CpuKernelBackend backend;
  return backend;
}

} // namespace kernels

namespace cpu {

using kernels::AttentionSpec;
using kernels::ExpertForm;

void CpuKernelBackend::embedding(const float *table, int64_t vocab, int64_t hidden,
                                 const int64_t *ids, int64_t tokens, float *out) const {
  cpu::embedding(table, vocab, hidden, ids, tokens, out);
}

void CpuKernelBackend::rmsNorm(const float *x, int64_t rows, int64_t hidden, const float *w,
                               float eps, float *y) const {
  cpu::rmsNorm(x, rows, hidden, w, eps, y);
}

void CpuKernelBackend::linear(const float *x, int64_t rows, int64_t in, const float *w, int64_t out,
                              float *y) const {
  cpu::linear(x, rows, in, w, out, y);
}

void CpuKernelBackend::addBias(float *y, int64_t rows, int64_t cols, const float *b) const {
  cpu::addBias(y, rows, cols, b);
}

void CpuKernelBackend::rope(float *x, int64_t tokens, int64_t heads, int64_t headDim,
                            const int64_t *positions, const kernels::RopeSpec &spec) const {
  cpu::rope(x, tokens, heads, headDim, positions, spec);
}

void CpuKernelBackend::attention(const float *q, const float *k, const float *v,
                                 const AttentionSpec &a, float *out) const {
  const int64_t qRow = a.heads * a.qkDim, kRow = a.kvHeads * a.qkDim, vRow = a.kvHeads * a.vDim,
                oRow = a.heads * a.vDim;
  for (int64_t s = 0; s < a.sequences; ++s) {
    const int64_t start = s * a.seqLen;
    cpu::causalAttentionGeneral(q + start * qRow, k + start * kRow, v + start * vRow, a.seqLen,
                                a.heads, a.kvHeads, a.qkDim, a.vDim, a.scale, a.sinks, a.window,
                                out + start * oRow);
  }
}

void CpuKernelBackend::routerGates(const float *logits, int64_t tokens, int64_t experts, int64_t k,
                                   RouterScoring scoring, int64_t *ids, float *gates,
                                   const float *selectionBias, const RouterGroups &groups) const {
  cpu::routerGates(logits, tokens, experts, k, scoring, ids, gates, selectionBias, groups);
}

void CpuKernelBackend::expertForward(const ExpertForm &form, const kernels::FfnWeights &w,
                                     const float *x, int64_t rows, int64_t hidden, int64_t inner,
                                     float *y) const {
  switch (form.kind) {
  case ExpertForm::Kind::Swiglu:
    cpu::swigluExpert(x, rows, hidden, inner, w.w1, w.w3, w.w2, y);
    break;
  case ExpertForm::Kind::GatedFamily:
    cpu::ffnForward(x, rows, hidden, inner, w, form.oai, form.limit, form.alpha, y);
    break;
  case ExpertForm::Kind::NonGated:
    cpu::plainFfnForward(x, rows, hidden, inner, w.w1, w.b1, w.w2, w.b2, form.activation, y);
    break;
  }
}

void CpuKernelBackend::expertsForward(const kernels::ExpertProblem *problems, int64_t count,
                                      int64_t hidden, int64_t inner) const {
  for (int64_t e = 0; e < count; ++e) {
    const kernels::ExpertProblem &p = problems[e];
    expertForward(p.form, p.weights, p.x, p.rows, hidden, inner, p.y);
  }
}

void CpuKernelBackend::add(const float *a, const float *b, int64_t n, float *out) const {
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] + b[i];
}

void CpuKernelBackend::accumulate(const float *x, float scale, int64_t n, float *out) const {
  if (scale == 1.0f) { // a plain sum: no product to round
    for (int64_t i = 0; i < n; ++i)
      out[i] += x[i];
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    out[i] += scale * x[i];
}

void CpuKernelBackend::embeddingBackward(const float *dOut, const int64_t *ids, int64_t tokens,
                                         int64_t hidden, float *dW) const {
  cpu::embeddingBackward(dOut, ids, tokens, hidden, dW);
}

void CpuKernelBackend::rmsNormBackward(const float *x, const float *dy, int64_t rows,
                                       int64_t hidden, const float *w, float eps, float *dx,
                                       float *dw) const {
  cpu::rmsNormBackward(x, dy, rows, hidden, w, eps, dx, dw);
}

void CpuKernelBackend::linearBackward(const float *x, const float *dy, int64_t rows, int64_t in,
                                      const float *w, int64_t out, float *dx, float *dW) const {
  cpu::linearBackward(x, dy, rows, in, w, out, dx, dW);
}

void CpuKernelBackend::ropeBackward(float *dx, int64_t tokens, int64_t heads, int64_t headDim,
                                    const int64_t *positions, const kernels::RopeSpec &spec) const {
  cpu::ropeBackward(dx, tokens, heads, headDim, positions, spec);
}

void CpuKernelBackend::attentionBackward(const float *q, const float *k, const float *v,
                                         const float *dOut, const AttentionSpec &a, float *dq,
                                         float *dk, float *dv, float *dSinks) const {
  const int64_t qRow = a.heads * a.qkDim, kRow = a.kvHeads * a.qkDim, vRow = a.kvHeads * a.vDim,
                oRow = a.heads * a.vDim;
  for (int64_t s = 0; s < a.sequences; ++s) {
    const int64_t start = s * a.seqLen;
    cpu::causalAttentionGeneralBackward(q + start * qRow, k + start * kRow, v + start * vRow,
                                        dOut + start * oRow, a.seqLen, a.heads, a.kvHeads, a.qkDim,
                                        a.vDim, a.scale, a.sinks, a.window, dq + start * qRow,
                                        dk + start * kRow, dv + start * vRow, dSinks);
  }
}

void CpuKernelBackend::routerGatesBackward(const float *logits, int64_t tokens, int64_t experts,
                                           int64_t k, RouterScoring scoring, const int64_t *ids,
                                           const float *dGates, float *dLogits) const {
  cpu::routerGatesBackward(logits, tokens, experts, k, scoring, ids, dGates, dLogits);
}

void CpuKernelBackend::expertBackward(const ExpertForm &form, const kernels::FfnWeights &w,
                                      const float *x, const float *dy, int64_t rows, int64_t hidden,
                                      int64_t inner, float *dx, const kernels::FfnGrads &g,
                                      float *y) const {
  switch (form.kind) {
  case ExpertForm::Kind::Swiglu:
    cpu::swigluExpertBackward(x, dy, rows, hidden, inner, w.w1, w.w3, w.w2, dx, g.w1, g.w3, g.w2,
                              y);
    break;
  case ExpertForm::Kind::GatedFamily:
    cpu::ffnBackward(x, dy, rows, hidden, inner, w, form.oai, form.limit, form.alpha, dx, g, y);
    break;
  case ExpertForm::Kind::NonGated:
    throw kernels::KernelError("a non-gated expert (fc1 -> act -> fc2) has no backward kernel");
  }
}

void CpuKernelBackend::biasBackward(const float *dy, int64_t rows, int64_t cols, float *db) const {
  cpu::biasBackward(dy, rows, cols, db);
}

double CpuKernelBackend::crossEntropyBackward(const float *logits, const int64_t *targets,
                                              int64_t rows, int64_t vocab, float gradScale,
                                              float *dLogits) const {
  return cpu::crossEntropyBackward(logits, targets, rows, vocab, gradScale, dLogits);
}

} // namespace cpu
} // namespace disagmoe
