// Rotate-half rotary position embedding kernel, in place, CPU kernel's steps (CudaRope.h).
#include "runtime/backends/cuda/CudaRope.h"

#include "runtime/backends/cuda/CudaCheck.h"
#include "runtime/backends/cuda/LaunchGeometry.h"

#include <algorithm>

namespace disagmoe::cuda {
namespace {

__global__ void ropeKernel(float *__restrict__ x, int64_t heads, int64_t headDim,
                           const int64_t *__restrict__ positions, double theta) {
  const int64_t row = blockIdx.x, t = row / heads, half = headDim / 2;
  float *v = x + row * headDim;
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    const float invFreq = static_cast<float>(
        1.0 / pow(theta, static_cast<double>(2 * i) / static_cast<double>(headDim)));
    const float angle = __fmul_rn(static_cast<float>(positions[t]), invFreq);
    const float c = static_cast<float>(cos(static_cast<double>(angle)));
    const float s = static_cast<float>(sin(static_cast<double>(angle)));
    const float a = v[i], b = v[i + half];
    // _rn intrinsics: no contraction into FMA, so each product rounds as on the CPU.
    v[i] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
    v[i + half] = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
  }
}

} // namespace

void rope(float *x, int64_t tokens, int64_t heads, int64_t headDim, const int64_t *positions,
          double theta, cudaStream_t stream) {
  checkRope(tokens, heads, headDim, theta);
  if (tokens == 0)
    return;
  const int threads = std::min(rowBlockSize(headDim / 2), 128);
  ropeKernel<<<static_cast<unsigned>(tokens * heads), threads, 0, stream>>>(x, heads, headDim,
                                                                            positions, theta);
  DISAGMOE_CUDA_CHECK(cudaGetLastError());
}

} // namespace disagmoe::cuda
