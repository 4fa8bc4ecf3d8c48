// Fresh activation and gradient buffers, and the NaN-fill debug mode (issue 7, "Buffers never leak
// garbage"). Every buffer a kernel fully overwrites is allocated with freshFloats; in debug mode it
// starts as quiet NaNs, so a read of any element that was never written (a padding row, an expert
// that was skipped, a stale micro-batch) turns the loss or the logits into NaN and the equivalence
// tests fail. Buffers that are MEANT to start at zero (accumulators) say so with assign(n, 0.0f).
//
// The mode is on when the environment has DISAGMOE_DEBUG_NAN_FILL set to anything but "" or "0"
// (read once), or after setDebugNanFill(true) (disagmoe-run --debug-nan-fill). Off, freshFloats
// gives zeros, as std::vector<float>(n) did.
#pragma once

#include <cstddef>
#include <vector>

namespace disagmoe {

bool debugNanFill();
void setDebugNanFill(bool on);

/// `n` floats: quiet NaN in debug mode, 0 otherwise.
std::vector<float> freshFloats(size_t n);
/// Replaces `v` by freshFloats(n) (every element, not only new ones as resize would).
void freshAssign(std::vector<float> &v, size_t n);

} // namespace disagmoe
