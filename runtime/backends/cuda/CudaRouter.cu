// Router top-k and gate-weight kernels with the CPU kernels' exact semantics (CudaRouter.h).
#include "runtime/backends/cuda/CudaRouter.h"

#include "runtime/backends/cuda/CudaCheck.h"
#include "runtime/backends/cuda/LaunchGeometry.h"

namespace disagmoe::cuda {
namespace {

constexpr int kThreads = 128;

// Scores of one row: the value the CPU kernel's topK sees for element e.
struct RowScores {
  const float *row = nullptr;
  const float *bias = nullptr;
  bool softmax = false;
  float rowMax = 0;
  double sum = 1;

  __device__ float unbiased(int64_t e) const {
    return softmax ? static_cast<float>(exp(static_cast<double>(row[e]) - rowMax) / sum) : row[e];
  }
  __device__ float ranked(int64_t e) const {
    return bias ? __fadd_rn(unbiased(e), bias[e]) : unbiased(e);
  }
};

// Fills ids/values with the top k of `s` over n elements; values are the RANKED scores.
__device__ void selectTopK(const RowScores &s, int64_t n, int64_t k, int64_t *ids, float *values) {
  int64_t prev = -1;
  float prevValue = 0;
  for (int64_t i = 0; i < k; ++i) {
    int64_t best = -1;
    float bestValue = 0;
    for (int64_t e = 0; e < n; ++e) {
      const float v = s.ranked(e);
      // Only elements after the previous choice in the order (value desc, index asc).
      if (prev >= 0 && !(v < prevValue || (v == prevValue && e > prev)))
        continue;
      if (best < 0 || v > bestValue)
        best = e, bestValue = v; // ascending e: ties keep the lower id
    }
    ids[i] = best;
    values[i] = bestValue;
    prev = best, prevValue = bestValue;
  }
}

__global__ void topKKernel(const float *x, int64_t rows, int64_t n, int64_t k, int64_t *ids,
                           float *values) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  RowScores s;
  s.row = x + r * n;
  selectTopK(s, n, k, ids + r * k, values + r * k);
}

// Softmax of v[0..count) in place, as the CPU softmax: fp32 max, double exp and sum, fp32 result.
__device__ void softmaxInPlace(float *v, int64_t count) {
  float m = v[0];
  for (int64_t i = 1; i < count; ++i)
    m = fmaxf(m, v[i]);
  double sum = 0;
  for (int64_t i = 0; i < count; ++i)
    sum += exp(static_cast<double>(v[i]) - m);
  for (int64_t i = 0; i < count; ++i)
    v[i] = static_cast<float>(exp(static_cast<double>(v[i]) - m) / sum);
}

__global__ void routerKernel(const float *logits, int64_t tokens, int64_t experts, int64_t k,
                             RouterScoring scoring, int64_t *ids, float *gates, const float *bias) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= tokens)
    return;
  RowScores s;
  s.row = logits + t * experts;
  s.bias = bias;
  s.softmax = scoring != RouterScoring::TopkSoftmax;
  if (s.softmax) {
    float m = s.row[0];
    for (int64_t e = 1; e < experts; ++e)
      m = fmaxf(m, s.row[e]);
    double sum = 0;
    for (int64_t e = 0; e < experts; ++e)
      sum += exp(static_cast<double>(s.row[e]) - m);
    s.rowMax = m, s.sum = sum;
  }
  int64_t *rowIds = ids + t * k;
  float *rowGates = gates + t * k;
  selectTopK(s, experts, k, rowIds, rowGates);
  for (int64_t i = 0; i < k; ++i) // the gates come from the unbiased scores
    rowGates[i] = s.unbiased(rowIds[i]);
  if (scoring == RouterScoring::TopkSoftmax) {
    softmaxInPlace(rowGates, k);
  } else if (scoring == RouterScoring::SoftmaxTopkRenorm) {
    float sum = 0;
    for (int64_t i = 0; i < k; ++i)
      sum = __fadd_rn(sum, rowGates[i]);
    for (int64_t i = 0; i < k; ++i)
      rowGates[i] = __fdiv_rn(rowGates[i], sum);
  }
}

} // namespace

void topK(const float *x, int64_t rows, int64_t n, int64_t k, int64_t *ids, float *values,
          cudaStream_t stream) {
  checkTopK(rows, n, k);
  const int64_t blocks = blocksFor(rows, kThreads);
  if (blocks == 0)
    return;
  topKKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, rows, n, k, ids, values);
  DISAGMOE_CUDA_CHECK(cudaGetLastError());
}

void routerGates(const float *logits, int64_t tokens, int64_t experts, int64_t k,
                 RouterScoring scoring, int64_t *ids, float *gates, const float *selectionBias,
                 cudaStream_t stream) {
  if (isSigmoidScoring(scoring))
    throw KernelArgumentError("cuda routerGates: the sigmoid_group_topk scorings (DeepSeek-V3's "
                              "group-limited router) have no device kernel yet; run them on cpu");
  checkTopK(tokens, experts, k);
  const int64_t blocks = blocksFor(tokens, kThreads);
  if (blocks == 0)
    return;
  routerKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      logits, tokens, experts, k, scoring, ids, gates, selectionBias);
  DISAGMOE_CUDA_CHECK(cudaGetLastError());
}

} // namespace disagmoe::cuda
