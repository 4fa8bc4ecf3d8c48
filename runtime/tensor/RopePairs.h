// GPT-J's RoPE pairs as rotate-half's halves. RoPE rotates the dims (i, i + d/2) of a head in the
// rotate-half form (RoFormer eq. 34 as Hugging Face writes it) and the dims (2i, 2i+1) in GPT-J's
// interleaved form (onnxruntime's RotaryEmbedding interleaved = 1, DeepSeek-V2's rope dims). The
// kernels compute rotate-half; an interleaved head is gathered into the halves' layout first
// ([x0, x1, x2, x3, ...] -> [x0, x2, ..., x1, x3, ...], the Transpose of [d/2, 2] that
// DeepSeek-V2 writes), and its gradient scattered back by the transpose of that permutation.
// q . k is unchanged when q and k are permuted alike, so attention after the gather needs no
// inverse: only gradients flowing back into the projection's layout do.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace disagmoe {

/// dst[0, d) = src's `dim` floats in the halves' layout (a copy where !interleaved); `dim` even.
inline void ropeGather(const float *src, float *dst, int64_t dim, bool interleaved) {
  if (!interleaved)
    return void(std::copy_n(src, dim, dst));
  for (int64_t i = 0; i < dim / 2; ++i) {
    dst[i] = src[2 * i];
    dst[dim / 2 + i] = src[2 * i + 1];
  }
}

/// The transpose of ropeGather: dSrc[0, dim) = dDst scattered back to the pairs' layout.
inline void ropeScatter(const float *dDst, float *dSrc, int64_t dim, bool interleaved) {
  if (!interleaved)
    return void(std::copy_n(dDst, dim, dSrc));
  for (int64_t i = 0; i < dim / 2; ++i) {
    dSrc[2 * i] = dDst[i];
    dSrc[2 * i + 1] = dDst[dim / 2 + i];
  }
}

/// ropeGather in place over `rows` consecutive heads of `dim` floats ([rows, dim] row-major).
inline void ropeGatherRows(float *x, int64_t rows, int64_t dim) {
  std::vector<float> row(static_cast<size_t>(dim));
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(x + r * dim, dim, row.data());
    ropeGather(row.data(), x + r * dim, dim, true);
  }
}

/// ropeScatter in place over `rows` heads of `dim` floats: the inverse of ropeGatherRows.
inline void ropeScatterRows(float *x, int64_t rows, int64_t dim) {
  std::vector<float> row(static_cast<size_t>(dim));
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(x + r * dim, dim, row.data());
    ropeScatter(row.data(), x + r * dim, dim, true);
  }
}

} // namespace disagmoe
