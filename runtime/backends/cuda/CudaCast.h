// fp32 <-> bf16 conversion on the device, for the GEMMs' bf16 operands (CublasGemm.h) and the
// exchanges' bf16 activations (docs/architecture.md, "Training semantics and numerics"). Round to
// nearest even (__float2bfloat16_rn), the same as Bf16.h's host toBf16Bits. x and y are device
// arrays of n elements; asynchronous on `stream`. Throws KernelArgumentError for n < 0, CudaError
// when the launch fails.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace disagmoe::cuda {

void toBf16(const float *x, __nv_bfloat16 *y, int64_t n, cudaStream_t stream = 0);
void toFloat(const __nv_bfloat16 *x, float *y, int64_t n, cudaStream_t stream = 0);

} // namespace disagmoe::cuda
