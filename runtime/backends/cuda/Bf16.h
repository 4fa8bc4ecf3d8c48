// bfloat16 on the host: the 16 high bits of an IEEE fp32 value, rounded to nearest even (what
// CUDA's __float2bfloat16_rn does; NaN stays NaN). The cuda backend's GEMMs take bf16 operands
// (docs/architecture.md, "Training semantics and numerics"); the tests and the bench build their
// references from operands rounded by this function. Pure C++, header only.
// Source: Google's bfloat16 format (1 sign, 8 exponent, 7 mantissa bits); round-to-nearest-even
// as in PyTorch's c10/util/BFloat16.h `round_to_nearest_even`.
#pragma once

#include <cstdint>
#include <cstring>

namespace disagmoe::cuda {

/// The bf16 bit pattern of `x`, rounded to nearest even.
inline uint16_t toBf16Bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u); // quiet NaN
  const uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + roundingBias) >> 16);
}

/// The fp32 value of a bf16 bit pattern (exact).
inline float fromBf16Bits(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

/// `x` rounded to the nearest bf16 value, as fp32.
inline float roundToBf16(float x) { return fromBf16Bits(toBf16Bits(x)); }

} // namespace disagmoe::cuda
