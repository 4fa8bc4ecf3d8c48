// CUDA RMSNorm, the first kernel of the cuda backend (docs/architecture.md, "Training semantics and
// numerics": norms' statistics stay fp32). y[t, :] = x[t, :] / sqrt(mean(x[t, :]^2) + eps) * w,
// one thread block per token; the block reduces the sum of squares in shared memory.
// Source: Zhang & Sennrich 2019, "Root Mean Square Layer Normalization", eq. 4.
//
// The launch configuration is plain host logic, tested everywhere; the kernel itself is tested
// where a GPU is present (tests skip with a message otherwise). Built for sm_90 when nvcc exists.
#pragma once

#include <cstdint>
#include <string>

namespace disagmoe::cuda {

/// Threads per block for rows of `hidden` elements: the smallest power of two >= hidden, clamped
/// to [32, 1024] (a warp at least; CUDA's per-block limit at most). Each thread strides over the
/// row when hidden > 1024. Throws std::invalid_argument for hidden < 1.
int rmsNormBlockSize(int64_t hidden);

/// Number of usable CUDA devices (0 when the driver or a GPU is missing; never throws).
int deviceCount() noexcept;

/// Runs RMSNorm on device 0 for host arrays x [tokens, hidden], w [hidden] -> y [tokens, hidden]
/// (fp32, row-major): copies in, launches, copies out. Returns false with `error` naming the CUDA
/// call that failed.
bool rmsNorm(const float *x, const float *w, float *y, int64_t tokens, int64_t hidden, float eps,
             std::string &error);

} // namespace disagmoe::cuda
