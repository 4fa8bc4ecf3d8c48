// Causal GQA attention kernel, one block per query/head, online softmax (CudaAttention.h).
#include "runtime/backends/cuda/CudaAttention.h"

#include "runtime/backends/cuda/BlockReduce.cuh"
#include "runtime/backends/cuda/CudaCheck.h"

namespace disagmoe::cuda {
namespace {

__global__ void __launch_bounds__(kAttentionThreads)
    attentionKernel(const float *__restrict__ q, const float *__restrict__ k,
                    const float *__restrict__ v, int64_t seqLen, int64_t heads, int64_t kvHeads,
                    int64_t qkDim, int64_t vDim, int64_t window, float scale,
                    const float *__restrict__ sinks, float *__restrict__ out) {
  extern __shared__ float shared[];
  float *qRow = shared;         // [qkDim]
  float *tile = shared + qkDim; // [kAttentionKeyTile] scores, then probabilities
  __shared__ float scratch[kAttentionThreads / 32];
  const int64_t t = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int64_t g = h / (heads / kvHeads);
  const int64_t rowBase = b * seqLen;
  const float *qv = q + ((rowBase + t) * heads + h) * qkDim;
  for (int64_t d = threadIdx.x; d < qkDim; d += blockDim.x)
    qRow[d] = qv[d];
  __syncthreads();

  const int64_t first = window > 0 ? max(int64_t{0}, t - window + 1) : 0;
  float runningMax = sinks ? sinks[h] : -INFINITY;
  float denom = sinks ? 1.0f : 0.0f; // exp(sink - runningMax) with runningMax = sink
  float acc[kAttentionValuesPerThread] = {};
  for (int64_t start = first; start <= t; start += kAttentionKeyTile) {
    const int64_t count = min(int64_t{kAttentionKeyTile}, t + 1 - start);
    float localMax = -INFINITY;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const float *kv = k + ((rowBase + start + j) * kvHeads + g) * qkDim;
      float dot = 0;
      for (int64_t d = 0; d < qkDim; ++d)
        dot += qRow[d] * kv[d];
      tile[j] = dot * scale;
      localMax = fmaxf(localMax, tile[j]);
    }
    const float newMax = fmaxf(runningMax, blockMax(localMax, scratch));
    const float correction = expf(runningMax - newMax); // 0 while runningMax is -inf
    float localSum = 0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      tile[j] = expf(tile[j] - newMax);
      localSum += tile[j];
    }
    denom = denom * correction + blockSum(localSum, scratch); // blockSum syncs: tile is complete
    for (int r = 0; r < kAttentionValuesPerThread; ++r) {
      const int64_t d = threadIdx.x + r * int64_t{blockDim.x};
      if (d >= vDim)
        break;
      float a = acc[r] * correction;
      const float *vv = v + ((rowBase + start) * kvHeads + g) * vDim + d;
      for (int64_t j = 0; j < count; ++j)
        a += tile[j] * vv[j * kvHeads * vDim];
      acc[r] = a;
    }
    runningMax = newMax;
    __syncthreads(); // the next tile overwrites `tile`
  }
  float *o = out + ((rowBase + t) * heads + h) * vDim;
  for (int r = 0; r < kAttentionValuesPerThread; ++r) {
    const int64_t d = threadIdx.x + r * int64_t{blockDim.x};
    if (d < vDim)
      o[d] = acc[r] / denom;
  }
}

} // namespace

void causalAttention(const float *q, const float *k, const float *v, const AttentionShape &shape,
                     float scale, const float *sinks, float *out, cudaStream_t stream) {
  checkAttention(shape);
  if (shape.batch == 0 || shape.seqLen == 0)
    return;
  const dim3 grid(static_cast<unsigned>(shape.seqLen), static_cast<unsigned>(shape.heads),
                  static_cast<unsigned>(shape.batch));
  attentionKernel<<<grid, kAttentionThreads, static_cast<size_t>(attentionSharedBytes(shape)),
                    stream>>>(q, k, v, shape.seqLen, shape.heads, shape.kvHeads, shape.qkDim,
                              shape.vDim, shape.window, scale, sinks, out);
  DISAGMOE_CUDA_CHECK(cudaGetLastError());
}

} // namespace disagmoe::cuda
