// Checked CUDA runtime and cuBLAS calls for the cuda backend: a failing call throws
// std::runtime_error naming the call's source text, the file and line, and CUDA's own error name
// and description (exceptions are on in the runtime libraries).
//   DISAGMOE_CUDA_CHECK(cudaMalloc(&p, bytes));
//   DISAGMOE_CUBLAS_CHECK(cublasGemmEx(...));
// Kernel launches are checked with DISAGMOE_CUDA_CHECK(cudaGetLastError()) right after <<<...>>>.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>

namespace disagmoe::cuda {

/// Raised for a failed CUDA runtime or cuBLAS call.
class CudaError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Throws CudaError "<call> failed at <file>:<line>: <name>: <description>" unless status is
/// success.
void checkCuda(cudaError_t status, const char *call, const char *file, int line);
void checkCublas(cublasStatus_t status, const char *call, const char *file, int line);

/// cuBLAS's name for a status (cublasGetStatusName), e.g. "CUBLAS_STATUS_INVALID_VALUE".
const char *cublasStatusName(cublasStatus_t status);

} // namespace disagmoe::cuda

#define DISAGMOE_CUDA_CHECK(call) ::disagmoe::cuda::checkCuda((call), #call, __FILE__, __LINE__)
#define DISAGMOE_CUBLAS_CHECK(call) ::disagmoe::cuda::checkCublas((call), #call, __FILE__, __LINE__)
