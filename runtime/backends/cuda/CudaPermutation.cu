// Expert dispatch gather and fixed-order, atomic-free combine kernels (CudaPermutation.h).
#include "runtime/backends/cuda/CudaPermutation.h"

#include "runtime/backends/cuda/LaunchGeometry.h"

#include <string>

#include <algorithm>

namespace disagmoe::cuda {
namespace {

constexpr int kThreads = 256;

// One block per permuted row; threads stride over the columns.
template <typename T>
__global__ void dispatchKernel(const T *__restrict__ x, int64_t hidden,
                               const int32_t *__restrict__ sourceRow, T *__restrict__ permuted) {
  const T *src = x + static_cast<int64_t>(sourceRow[blockIdx.x]) * hidden;
  T *dst = permuted + static_cast<int64_t>(blockIdx.x) * hidden;
  for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x)
    dst[j] = src[j];
}

// One block per token; threads stride over the columns; routes in the plan's fixed order.
__global__ void combineKernel(const float *__restrict__ y, int64_t hidden,
                              const int32_t *__restrict__ combineStart,
                              const int32_t *__restrict__ combineRow,
                              const float *__restrict__ combineGate, float *__restrict__ out) {
  const int64_t t = blockIdx.x;
  const int32_t begin = combineStart[t], end = combineStart[t + 1];
  for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
    float sum = 0.0f;
    for (int32_t r = begin; r < end; ++r)
      sum = __fadd_rn(
          sum, __fmul_rn(combineGate[r], y[static_cast<int64_t>(combineRow[r]) * hidden + j]));
    out[t * hidden + j] = sum;
  }
}

template <typename T>
void launchDispatch(const T *x, int64_t hidden, const int32_t *sourceRow, int64_t rows, T *permuted,
                    cudaStream_t stream) {
  checkRows("dispatchRows", rows, hidden);
  if (rows == 0)
    return;
  dispatchKernel<<<static_cast<unsigned>(rows), std::min(rowBlockSize(hidden), kThreads), 0,
                   stream>>>(x, hidden, sourceRow, permuted);
  DISAGMOE_CUDA_CHECK(cudaGetLastError());
}

} // namespace

DevicePermutation DevicePermutation::upload(const DispatchPlan &plan) {
  DevicePermutation d;
  d.tokens = plan.tokens;
  d.rows = plan.rows();
  d.sourceRow = DeviceBuffer<int32_t>(plan.sourceRow);
  d.combineStart = DeviceBuffer<int32_t>(plan.combineStart);
  d.combineRow = DeviceBuffer<int32_t>(plan.combineRow);
  d.combineGate = DeviceBuffer<float>(plan.combineGate);
  return d;
}

void dispatchRows(const float *x, int64_t hidden, const int32_t *sourceRow, int64_t rows,
                  float *permuted, cudaStream_t stream) {
  launchDispatch(x, hidden, sourceRow, rows, permuted, stream);
}

void dispatchRows(const __nv_bfloat16 *x, int64_t hidden, const int32_t *sourceRow, int64_t rows,
                  __nv_bfloat16 *permuted, cudaStream_t stream) {
  launchDispatch(x, hidden, sourceRow, rows, permuted, stream);
}

void combineRows(const float *y, int64_t hidden, const int32_t *combineStart,
                 const int32_t *combineRow, const float *combineGate, int64_t tokens, float *out,
                 cudaStream_t stream) {
  checkRows("combineRows", tokens, hidden);
  if (tokens == 0)
    return;
  combineKernel<<<static_cast<unsigned>(tokens), std::min(rowBlockSize(hidden), kThreads), 0,
                  stream>>>(y, hidden, combineStart, combineRow, combineGate, out);
  DISAGMOE_CUDA_CHECK(cudaGetLastError());
}

} // namespace disagmoe::cuda
