// Elementwise SwiGLU and GPT-OSS clamped swiglu kernels of the experts (CudaSwiglu.h).
#include "runtime/backends/cuda/CudaSwiglu.h"

#include "runtime/backends/cuda/CudaCheck.h"
#include "runtime/backends/cuda/LaunchGeometry.h"

#include <string>

namespace disagmoe::cuda {
namespace {

constexpr int kThreads = 256;

// expf and the _rn intrinsics keep each step an fp32 operation, as the CPU computes it.
__global__ void swigluKernel(const float *gate, const float *up, float *out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  const float g = gate[i];
  out[i] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), up[i]);
}

__global__ void swigluOaiKernel(const float *gateUp, int64_t inner, int64_t n, float limit,
                                float alpha, float *out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  const int64_t r = i / inner, c = i % inner;
  const float g = fminf(gateUp[r * 2 * inner + 2 * c], limit);
  const float u = fminf(fmaxf(gateUp[r * 2 * inner + 2 * c + 1], -limit), limit);
  const float glu = __fmul_rn(g, __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-__fmul_rn(g, alpha)))));
  out[i] = __fmul_rn(__fadd_rn(u, 1.0f), glu);
}

} // namespace

void swiglu(const float *gate, const float *up, float *out, int64_t n, cudaStream_t stream) {
  const int64_t blocks = blocksFor(n, kThreads);
  if (blocks == 0)
    return;
  swigluKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(gate, up, out, n);
  DISAGMOE_CUDA_CHECK(cudaGetLastError());
}

void swigluOai(const float *gateUp, int64_t rows, int64_t inner, float limit, float alpha,
               float *out, cudaStream_t stream) {
  if (rows < 0 || inner < 1)
    throw KernelArgumentError("swigluOai: rows = " + std::to_string(rows) + ", inner = " +
                              std::to_string(inner) + " (rows must be >= 0, inner >= 1)");
  const int64_t blocks = blocksFor(rows * inner, kThreads);
  if (blocks == 0)
    return;
  swigluOaiKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      gateUp, inner, rows * inner, limit, alpha, out);
  DISAGMOE_CUDA_CHECK(cudaGetLastError());
}

} // namespace disagmoe::cuda
