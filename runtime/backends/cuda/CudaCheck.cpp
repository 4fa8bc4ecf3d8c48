// CudaError messages of failed CUDA runtime and cuBLAS calls (CudaCheck.h).
#include "runtime/backends/cuda/CudaCheck.h"

#include <string>

namespace disagmoe::cuda {
namespace {

[[noreturn]] void fail(const char *call, const char *file, int line, const char *name,
                       const char *text) {
  throw CudaError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                  name + ": " + text);
}

} // namespace

void checkCuda(cudaError_t status, const char *call, const char *file, int line) {
  if (status != cudaSuccess)
    fail(call, file, line, cudaGetErrorName(status), cudaGetErrorString(status));
}

const char *cublasStatusName(cublasStatus_t status) { return cublasGetStatusName(status); }

void checkCublas(cublasStatus_t status, const char *call, const char *file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(call, file, line, cublasGetStatusName(status), cublasGetStatusString(status));
}

} // namespace disagmoe::cuda
