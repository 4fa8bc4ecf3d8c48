// RMSNorm kernel, one block per token, fp32 sum of squares in shared memory (CudaRmsNorm.h).
#include "runtime/backends/cuda/CudaRmsNorm.h"

#include <cuda_runtime.h>

#include <stdexcept>

namespace disagmoe::cuda {
namespace {

__global__ void rmsNormKernel(const float *__restrict__ x, const float *__restrict__ w,
                              float *__restrict__ y, int64_t hidden, float eps) {
  extern __shared__ float partial[];
  const float *row = x + blockIdx.x * hidden;
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x)
    sum += row[i] * row[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float scale = rsqrtf(partial[0] / static_cast<float>(hidden) + eps);
  float *out = y + blockIdx.x * hidden;
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x)
    out[i] = row[i] * scale * w[i];
}

bool check(cudaError_t status, const char *call, std::string &error) {
  if (status == cudaSuccess)
    return true;
  error = std::string(call) + ": " + cudaGetErrorString(status);
  return false;
}

} // namespace

int rmsNormBlockSize(int64_t hidden) {
  if (hidden < 1)
    throw std::invalid_argument("rmsNormBlockSize: hidden must be >= 1");
  int block = 32;
  while (block < hidden && block < 1024)
    block *= 2;
  return block;
}

int deviceCount() noexcept {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

bool rmsNorm(const float *x, const float *w, float *y, int64_t tokens, int64_t hidden, float eps,
             std::string &error) {
  const size_t bytes = static_cast<size_t>(tokens * hidden) * sizeof(float);
  float *dx = nullptr, *dw = nullptr, *dy = nullptr;
  bool ok = check(cudaMalloc(&dx, bytes), "cudaMalloc(x)", error) &&
            check(cudaMalloc(&dw, hidden * sizeof(float)), "cudaMalloc(w)", error) &&
            check(cudaMalloc(&dy, bytes), "cudaMalloc(y)", error) &&
            check(cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice), "cudaMemcpy(x)", error) &&
            check(cudaMemcpy(dw, w, hidden * sizeof(float), cudaMemcpyHostToDevice),
                  "cudaMemcpy(w)", error);
  if (ok && tokens > 0) {
    const int block = rmsNormBlockSize(hidden);
    rmsNormKernel<<<static_cast<unsigned>(tokens), block, block * sizeof(float)>>>(dx, dw, dy,
                                                                                   hidden, eps);
    ok = check(cudaGetLastError(), "rmsNormKernel launch", error) &&
         check(cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(y)", error);
  }
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(dy);
  return ok;
}

} // namespace disagmoe::cuda
