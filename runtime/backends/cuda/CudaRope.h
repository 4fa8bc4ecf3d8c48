// Rotary position embedding on the device, rotate-half form, in place: the same formula and the
// same fp32/double steps as the CPU kernel (runtime/backends/cpu/Kernels.h `rope`, HF
// `apply_rotary_pos_emb`): inv_freq[i] = fp32(1 / theta^(2i/d)) computed in double, angle =
// fp32(position) * inv_freq (fp32), cos/sin of that angle in double rounded to fp32, then
// v'[i] = v[i] cos - v[i+d/2] sin, v'[i+d/2] = v[i+d/2] cos + v[i] sin (fp32, no fused
// multiply-add, as on the CPU). Source: Su et al. 2021, "RoFormer", eq. 34, in Hugging Face's
// rotate-half layout.
//
// x [tokens, heads, headDim] fp32 (a q or k projection), positions [tokens] int64; device arrays;
// one block per (token, head). Asynchronous on `stream`.
// Throws KernelArgumentError (LaunchGeometry.h checkRope) for an odd headDim etc., CudaError when
// the launch fails.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace disagmoe::cuda {

void rope(float *x, int64_t tokens, int64_t heads, int64_t headDim, const int64_t *positions,
          double theta, cudaStream_t stream = 0);

} // namespace disagmoe::cuda
