// fp32 <-> bf16 conversion kernels, round to nearest even (CudaCast.h).
#include "runtime/backends/cuda/CudaCast.h"

#include "runtime/backends/cuda/CudaCheck.h"
#include "runtime/backends/cuda/LaunchGeometry.h"

namespace disagmoe::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void toBf16Kernel(const float *__restrict__ x, __nv_bfloat16 *__restrict__ y,
                             int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = __float2bfloat16_rn(x[i]);
}

__global__ void toFloatKernel(const __nv_bfloat16 *__restrict__ x, float *__restrict__ y,
                              int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = __bfloat162float(x[i]);
}

} // namespace

void toBf16(const float *x, __nv_bfloat16 *y, int64_t n, cudaStream_t stream) {
  const int64_t blocks = blocksFor(n, kThreads);
  if (blocks == 0)
    return;
  toBf16Kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, y, n);
  DISAGMOE_CUDA_CHECK(cudaGetLastError());
}

void toFloat(const __nv_bfloat16 *x, float *y, int64_t n, cudaStream_t stream) {
  const int64_t blocks = blocksFor(n, kThreads);
  if (blocks == 0)
    return;
  toFloatKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, y, n);
  DISAGMOE_CUDA_CHECK(cudaGetLastError());
}

} // namespace disagmoe::cuda
