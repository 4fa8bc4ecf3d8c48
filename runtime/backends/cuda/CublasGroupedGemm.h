// A rank's experts as one grouped GEMM on the device (issue 14): cublasGemmGroupedBatchedEx over
// the descriptors of GroupedGemm.h (shapes, layouts, the column-major mapping and the cuBLAS
// documentation it follows are stated there).
//   X [rows, in] bf16, W [E, in, out] or [E, out, in] bf16, Y [rows, out] bf16, row-major device
//   arrays; CUBLAS_COMPUTE_32F: products and sums in fp32, alpha/beta fp32, each output rounded to
//   bf16 once at the end (cuBLAS's only bf16 form of this call: Ctype CUDA_R_16BF).
//   Rows of Y belong to the experts with tokens; nothing outside Y's rows * out elements is
//   written.
// Errors: GroupedGemmError (std::invalid_argument) for a misaligned pointer, before any CUDA call;
// CudaError naming the call when an allocation, the pointer upload or cuBLAS fails.
#pragma once

#include "runtime/backends/cuda/CublasGemm.h"
#include "runtime/backends/cuda/DeviceBuffer.h"
#include "runtime/backends/cuda/GroupedGemm.h"

#include <cuda_bf16.h>

namespace disagmoe::cuda {

/// One prepared grouped GEMM: the device array of the problems' A, B and C pointers (3 *
/// problem_count, uploaded once by the constructor, synchronously) for fixed X, W and Y. `run`
/// enqueues the call on the handle's stream; the object must outlive the call's completion (its
/// pointer array is read by the device).
class GroupedGemmBf16 {
public:
  /// Checks the pointers' alignment (checkPointerAlignment) and uploads the pointer arrays.
  GroupedGemmBf16(const GroupedExpertGemm &plan, const __nv_bfloat16 *w, const __nv_bfloat16 *x,
                  __nv_bfloat16 *y);
  /// Y = alpha * X_e W_e + beta * Y for every expert with tokens; nothing for zero problems.
  void run(CublasHandle &handle) const;

private:
  GroupedExpertGemm plan_;
  DeviceBuffer<void *> pointers_; ///< [A pointers | B pointers | C pointers], problem order
};

} // namespace disagmoe::cuda
