// cuBLAS GEMMs of the cuda backend (docs/architecture.md, "Training semantics and numerics": GEMMs
// in bf16 with fp32 accumulation, fp32 master weights). Row-major operands on the device; the
// mapping onto cuBLAS's column-major API is GemmMapping.h (host logic, unit-tested everywhere).
//   gemmBf16: A, B bf16; C fp32 or bf16; cublasGemmEx with CUBLAS_COMPUTE_32F (fp32 accumulate,
//             tensor cores allowed: CUBLAS_GEMM_DEFAULT).
//   gemmF32:  A, B, C fp32; cublasSgemm in CUBLAS_DEFAULT_MATH (no TF32 down-conversion).
// Errors: GemmShapeError (std::invalid_argument) for a bad shape, before any call; CudaError
// (std::runtime_error) naming the cuBLAS call, file and line when cuBLAS fails.
#pragma once

#include "runtime/backends/cuda/CudaCheck.h"
#include "runtime/backends/cuda/GemmMapping.h"

#include <cuda_bf16.h>

namespace disagmoe::cuda {

/// One cuBLAS handle (cublasCreate/cublasDestroy), bound to a stream (default: the legacy one).
class CublasHandle {
public:
  CublasHandle();
  ~CublasHandle();
  CublasHandle(const CublasHandle &) = delete;
  CublasHandle &operator=(const CublasHandle &) = delete;
  void setStream(cudaStream_t stream);
  cublasHandle_t get() const { return handle_; }

private:
  cublasHandle_t handle_ = nullptr;
};

/// C = alpha * op(A) op(B) + beta * C, row-major (`g` gives shapes and strides), A and B bf16,
/// accumulation in fp32, C fp32.
void gemmBf16(CublasHandle &handle, const RowMajorGemm &g, const __nv_bfloat16 *a,
              const __nv_bfloat16 *b, float *c, float alpha = 1.0f, float beta = 0.0f);
/// The same with a bf16 C (fp32 accumulation, rounded to bf16 once at the end).
void gemmBf16(CublasHandle &handle, const RowMajorGemm &g, const __nv_bfloat16 *a,
              const __nv_bfloat16 *b, __nv_bfloat16 *c, float alpha = 1.0f, float beta = 0.0f);
/// C = alpha * op(A) op(B) + beta * C, all fp32, row-major.
void gemmF32(CublasHandle &handle, const RowMajorGemm &g, const float *a, const float *b, float *c,
             float alpha = 1.0f, float beta = 0.0f);

} // namespace disagmoe::cuda
