// Row-wise softmax on the device, numerically stable: y[r] = exp(x[r] - max) / sum(exp(x[r] -
// max)), with the maximum in fp32 and exp and the sum in double, rounded to fp32 once, as the CPU
// kernel (runtime/backends/cpu/Kernels.h `softmax`). One block per row; the block reduces in a
// fixed order. x, y [rows, cols] fp32, device arrays (may alias). Asynchronous on `stream`. Throws
// KernelArgumentError for rows < 0 or cols < 1, CudaError when the launch fails.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace disagmoe::cuda {

void softmax(const float *x, int64_t rows, int64_t cols, float *y, cudaStream_t stream = 0);

} // namespace disagmoe::cuda
