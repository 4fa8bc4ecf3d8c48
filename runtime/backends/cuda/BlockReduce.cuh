// Block-wide reductions shared by the cuda backend's row kernels (device code only; include from
// .cu files). Every thread of the block gets the result. `scratch` is shared memory of at least
// blockDim.x / 32 elements; blockDim.x must be a multiple of 32 (LaunchGeometry.h's sizes are).
#pragma once

namespace disagmoe::cuda {

template <typename T> __device__ T warpSum(T v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

template <typename T> __device__ T warpMax(T v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = max(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// Sum over the block, in a fixed order for a fixed blockDim (so results repeat bit for bit).
template <typename T> __device__ T blockSum(T v, T *scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warpSum(v);
  __syncthreads(); // scratch may still be read by a previous reduction
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  T total = scratch[0];
  for (int w = 1; w < warps; ++w)
    total += scratch[w];
  return total;
}

template <typename T> __device__ T blockMax(T v, T *scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warpMax(v);
  __syncthreads();
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  T best = scratch[0];
  for (int w = 1; w < warps; ++w)
    best = max(best, scratch[w]);
  return best;
}

} // namespace disagmoe::cuda
