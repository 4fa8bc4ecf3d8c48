// Host logic of the cuda backend's kernels: argument validation and launch geometry. Pure C++ (no
// CUDA headers), so it is unit-tested on machines without nvcc or a GPU. Every kernel launcher in
// runtime/backends/cuda calls these before it launches, so a bad shape is a clear exception naming
// the kernel and the field, never a launch failure or an out-of-bounds access.
#pragma once

#include <cstdint>
#include <stdexcept>

namespace disagmoe::cuda {

/// Raised for kernel arguments outside what a kernel supports; the message names kernel and field.
class KernelArgumentError : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

/// CUDA's limits that the launchers respect (CUDA C++ Programming Guide, "Compute Capabilities",
/// table of technical specifications, compute capability 9.0).
inline constexpr int64_t kMaxThreadsPerBlock = 1024;
inline constexpr int64_t kMaxGridX = 2147483647; // 2^31 - 1
inline constexpr int64_t kMaxGridYZ = 65535;
inline constexpr int64_t kDefaultSharedBytes = 48 * 1024; // without the opt-in attribute

/// Threads for one block that reduces over a row of `cols` elements: the smallest power of two
/// >= cols, clamped to [32, 1024]; threads stride over longer rows. Throws for cols < 1.
int rowBlockSize(int64_t cols);

/// Blocks of `block` threads covering `n` elements (one thread each): ceil(n / block), 0 for n = 0.
/// Throws when the count exceeds the grid's x limit or n < 0 or block outside [1, 1024].
int64_t blocksFor(int64_t n, int block);

/// Throws unless 0 <= rows <= kMaxGridX (row kernels launch one block per row) and cols >= 1.
void checkRows(const char *kernel, int64_t rows, int64_t cols);

/// RoPE (rotate-half) on x [tokens, heads, headDim]: headDim must be even and >= 2, heads >= 1,
/// tokens >= 0, theta > 0.
void checkRope(int64_t tokens, int64_t heads, int64_t headDim, double theta);

/// Top-k of rows of n values: 1 <= k <= n; rows within the grid limit.
void checkTopK(int64_t rows, int64_t n, int64_t k);

/// The causal GQA attention kernel's shapes (CudaAttention.h). One thread block per (query
/// position, query head, sequence); keys are visited in tiles of kAttentionKeyTile with an
/// online softmax, so any seqLen fits; each thread keeps kAttentionValuesPerThread accumulators.
struct AttentionShape {
  int64_t batch = 1, seqLen = 0, heads = 1, kvHeads = 1, qkDim = 0, vDim = 0;
  int64_t window = 0; ///< 0 = full causal; else query t sees keys t - window < s <= t
};
inline constexpr int kAttentionThreads = 128;
inline constexpr int kAttentionKeyTile = 256;
inline constexpr int kAttentionValuesPerThread = 4;
inline constexpr int64_t kAttentionMaxVDim =
    int64_t{kAttentionThreads} * kAttentionValuesPerThread; // 512

/// Throws unless batch >= 0, seqLen >= 0, heads >= 1, kvHeads >= 1, heads % kvHeads == 0,
/// 1 <= qkDim, 1 <= vDim <= kAttentionMaxVDim, window >= 0, grid within limits (seqLen <= 2^31-1,
/// heads and batch <= 65535) and shared memory (attentionSharedBytes) <= 48 KiB.
void checkAttention(const AttentionShape &s);

/// Dynamic shared memory of one attention block in bytes: the query row (qkDim floats) and one
/// tile of scores (kAttentionKeyTile floats).
int64_t attentionSharedBytes(const AttentionShape &s);

} // namespace disagmoe::cuda
