// SwiGLU activations of the experts on the device, elementwise fp32, the CPU kernels' formulas
// (runtime/backends/cpu/FamilyKernels.cpp `ffnForward`, Kernels.cpp `swigluExpert`):
//   swiglu:    out = silu(g) * u = g / (1 + exp(-g)) * u            (Mixtral, Qwen3, DeepSeek;
//              Shazeer 2020, "GLU Variants Improve Transformer", eq. 6)
//   swigluOai: g' = min(g, limit), u' = clamp(u, -limit, limit),
//              out = (u' + 1) * g' * sigmoid(alpha * g')            (GPT-OSS's reference swiglu),
//              with gate and up interleaved in one fused projection: gateUp[r, 2i] = g, [r, 2i+1] =
//              u.
// Device arrays; asynchronous on `stream`. Throws KernelArgumentError for negative sizes (or
// rows * inner beyond the grid), CudaError when the launch fails.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace disagmoe::cuda {

/// gate, up, out [n] fp32 (out may alias gate or up).
void swiglu(const float *gate, const float *up, float *out, int64_t n, cudaStream_t stream = 0);

/// gateUp [rows, 2*inner] fp32 (interleaved), out [rows, inner] fp32.
void swigluOai(const float *gateUp, int64_t rows, int64_t inner, float limit, float alpha,
               float *out, cudaStream_t stream = 0);

} // namespace disagmoe::cuda
