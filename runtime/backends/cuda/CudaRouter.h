// The router's top-k and gate weights on the device, with the CPU kernels' semantics exactly
// (runtime/backends/cpu/Kernels.h `topK`, `routerGates`): descending by value, equal values to the
// LOWER index first (ONNX TopK); softmax with an fp32 maximum, exp and sum in double, rounded to
// fp32; renormalisation as an fp32 sum and division (`routing_weights /= routing_weights.sum()`);
// DeepSeek-V3's selection bias (report §2.1.2) added in fp32 for the choice only.
// One thread per row; the k-th choice is the best element after the (k-1)-th in the order
// (value desc, index asc), so no scratch memory is needed (O(k * n) per row, n = experts).
// Rows must not hold NaN. All arrays are device arrays; asynchronous on `stream`.
// Throws KernelArgumentError (checkTopK) for k outside [1, n] and for the sigmoid_group_topk
// scorings (DeepSeek-V3's router: no device kernel yet), CudaError when the launch fails.
#pragma once

#include "runtime/plan/RouterScoring.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace disagmoe::cuda {

/// Per row of x [rows, n] fp32: ids [rows, k] int64 and values [rows, k] fp32 of the top k.
void topK(const float *x, int64_t rows, int64_t n, int64_t k, int64_t *ids, float *values,
          cudaStream_t stream = 0);

/// Router gates from logits [tokens, experts] fp32: ids [tokens, k] int64 (descending score, ties
/// to the lower id) and gates [tokens, k] fp32 per `scoring`; selectionBias [experts] fp32 or null.
void routerGates(const float *logits, int64_t tokens, int64_t experts, int64_t k,
                 RouterScoring scoring, int64_t *ids, float *gates,
                 const float *selectionBias = nullptr, cudaStream_t stream = 0);

} // namespace disagmoe::cuda
