// Expert permutation on the device: the dispatch gathers each expert's tokens into one contiguous
// block of rows (experts ascending, tokens ascending within an expert) so that every expert runs
// one GEMM; the combine scatters the experts' outputs back, out[t] = sum of g_e * y_e[t] over the
// token's routes in ascending expert id, starting from zero (docs/architecture.md, "Exchanges": the
// fixed order makes results independent of placement). The plan (counts, offsets, gather and
// combine lists) is host logic: DispatchPlan.h. The combine is deterministic (no atomics): one
// thread per (token, column) walks the token's routes in order, each step an fp32 multiply then add
// (no fused multiply-add), as the CPU executor (runtime/executor/RankWorker.cpp `experts`).
//
// Device arrays; asynchronous on `stream`. Errors: KernelArgumentError for negative sizes,
// CudaError when a launch or upload fails.
#pragma once

#include "runtime/backends/cuda/DeviceBuffer.h"
#include "runtime/backends/cuda/DispatchPlan.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace disagmoe::cuda {

/// A DispatchPlan's index lists on the device.
struct DevicePermutation {
  int64_t tokens = 0, rows = 0;
  DeviceBuffer<int32_t> sourceRow, combineStart, combineRow;
  DeviceBuffer<float> combineGate;

  static DevicePermutation upload(const DispatchPlan &plan);
};

/// permuted[p] = x[sourceRow[p]] for p < rows. x [tokens, hidden], permuted [rows, hidden].
void dispatchRows(const float *x, int64_t hidden, const int32_t *sourceRow, int64_t rows,
                  float *permuted, cudaStream_t stream = 0);
/// The same for bf16 activations (what the exchanges carry).
void dispatchRows(const __nv_bfloat16 *x, int64_t hidden, const int32_t *sourceRow, int64_t rows,
                  __nv_bfloat16 *permuted, cudaStream_t stream = 0);

/// out[t] = sum_{r in combineStart[t]..combineStart[t+1]} combineGate[r] * y[combineRow[r]] in that
/// order, from zero. y [rows, hidden] fp32 (the experts' outputs in dispatch order),
/// out [tokens, hidden] fp32 (overwritten; a token with no route gets zeros).
void combineRows(const float *y, int64_t hidden, const int32_t *combineStart,
                 const int32_t *combineRow, const float *combineGate, int64_t tokens, float *out,
                 cudaStream_t stream = 0);

} // namespace disagmoe::cuda
