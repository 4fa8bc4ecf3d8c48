// Row-wise stable softmax kernel, fp32 max, double sum, one block per row (CudaSoftmax.h).
#include "runtime/backends/cuda/CudaSoftmax.h"

#include "runtime/backends/cuda/BlockReduce.cuh"
#include "runtime/backends/cuda/CudaCheck.h"
#include "runtime/backends/cuda/LaunchGeometry.h"

namespace disagmoe::cuda {
namespace {

__global__ void softmaxKernel(const float *x, int64_t cols, float *y) {
  __shared__ float maxScratch[32];
  __shared__ double sumScratch[32];
  const float *row = x + blockIdx.x * cols;
  float localMax = -INFINITY;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    localMax = fmaxf(localMax, row[j]);
  const float rowMax = blockMax(localMax, maxScratch);
  double localSum = 0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    localSum += exp(static_cast<double>(row[j]) - rowMax);
  const double sum = blockSum(localSum, sumScratch);
  float *out = y + blockIdx.x * cols;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    out[j] = static_cast<float>(exp(static_cast<double>(row[j]) - rowMax) / sum);
}

} // namespace

void softmax(const float *x, int64_t rows, int64_t cols, float *y, cudaStream_t stream) {
  checkRows("softmax", rows, cols);
  if (rows == 0)
    return;
  softmaxKernel<<<static_cast<unsigned>(rows), rowBlockSize(cols), 0, stream>>>(x, cols, y);
  DISAGMOE_CUDA_CHECK(cudaGetLastError());
}

} // namespace disagmoe::cuda
