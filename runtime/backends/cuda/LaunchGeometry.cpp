// Argument checks and launch geometry of the cuda backend's kernels (LaunchGeometry.h).
#include "runtime/backends/cuda/LaunchGeometry.h"

#include <string>

namespace disagmoe::cuda {
namespace {

void require(bool ok, const char *kernel, const char *field, int64_t value,
             const std::string &rule) {
  if (!ok)
    throw KernelArgumentError(std::string(kernel) + ": " + field + " = " + std::to_string(value) +
                              " (" + rule + ")");
}

} // namespace

int rowBlockSize(int64_t cols) {
  require(cols >= 1, "rowBlockSize", "cols", cols, "must be >= 1");
  int block = 32;
  while (block < cols && block < kMaxThreadsPerBlock)
    block *= 2;
  return block;
}

int64_t blocksFor(int64_t n, int block) {
  require(block >= 1 && block <= kMaxThreadsPerBlock, "blocksFor", "block", block,
          "must be in [1, 1024]");
  require(n >= 0, "blocksFor", "n", n, "must be >= 0");
  const int64_t blocks = (n + block - 1) / block;
  require(blocks <= kMaxGridX, "blocksFor", "n", n, "needs more than 2^31-1 blocks");
  return blocks;
}

void checkRows(const char *kernel, int64_t rows, int64_t cols) {
  require(rows >= 0 && rows <= kMaxGridX, kernel, "rows", rows,
          "must be in [0, 2^31-1]: one block per row");
  require(cols >= 1, kernel, "cols", cols, "must be >= 1");
}

void checkRope(int64_t tokens, int64_t heads, int64_t headDim, double theta) {
  require(tokens >= 0, "rope", "tokens", tokens, "must be >= 0");
  require(heads >= 1, "rope", "heads", heads, "must be >= 1");
  require(headDim >= 2 && headDim % 2 == 0, "rope", "headDim", headDim,
          "must be even and >= 2 (rotate-half)");
  if (!(theta > 0))
    throw KernelArgumentError("rope: theta = " + std::to_string(theta) + " (must be > 0)");
  require(tokens * heads <= kMaxGridX, "rope", "tokens*heads", tokens * heads, "must be <= 2^31-1");
}

void checkTopK(int64_t rows, int64_t n, int64_t k) {
  require(rows >= 0 && rows <= kMaxGridX, "topK", "rows", rows, "must be in [0, 2^31-1]");
  require(n >= 1, "topK", "n", n, "must be >= 1");
  require(k >= 1 && k <= n, "topK", "k", k, "must be in [1, n = " + std::to_string(n) + "]");
}

void checkAttention(const AttentionShape &s) {
  require(s.batch >= 0 && s.batch <= kMaxGridYZ, "attention", "batch", s.batch,
          "must be in [0, 65535]");
  require(s.seqLen >= 0 && s.seqLen <= kMaxGridX, "attention", "seqLen", s.seqLen,
          "must be in [0, 2^31-1]");
  require(s.heads >= 1 && s.heads <= kMaxGridYZ, "attention", "heads", s.heads,
          "must be in [1, 65535]");
  require(s.kvHeads >= 1, "attention", "kvHeads", s.kvHeads, "must be >= 1");
  require(s.heads % s.kvHeads == 0, "attention", "heads", s.heads,
          "must be a multiple of kvHeads = " + std::to_string(s.kvHeads));
  require(s.qkDim >= 1, "attention", "qkDim", s.qkDim, "must be >= 1");
  require(s.vDim >= 1 && s.vDim <= kAttentionMaxVDim, "attention", "vDim", s.vDim,
          "must be in [1, " + std::to_string(kAttentionMaxVDim) + "]");
  require(s.window >= 0, "attention", "window", s.window, "must be >= 0 (0 = no window)");
  require(attentionSharedBytes(s) <= kDefaultSharedBytes, "attention", "qkDim", s.qkDim,
          "query row and score tile exceed 48 KiB of shared memory");
}

int64_t attentionSharedBytes(const AttentionShape &s) {
  return (s.qkDim + kAttentionKeyTile) * static_cast<int64_t>(sizeof(float));
}

} // namespace disagmoe::cuda
