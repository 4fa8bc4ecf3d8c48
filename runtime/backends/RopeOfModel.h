// The RoPE of a plan's model as the kernel interface takes it (KernelTypes.h RopeSpec): plain
// theta, or the scaled frequencies and attention factor that plan.json's model carries
// (rope_inv_freq, rope_attention_factor; docs/plan-format.md).
#pragma once

#include "runtime/backends/KernelTypes.h"
#include "runtime/plan/Plan.h"

namespace disagmoe::kernels {

/// Points into `m` (its ropeInvFreq): valid while `m` is.
inline RopeSpec ropeSpecOf(const ModelSpec &m) {
  return RopeSpec(m.ropeTheta, m.ropeInvFreq.empty() ? nullptr : m.ropeInvFreq.data(),
                  m.ropeAttentionFactor);
}

} // namespace disagmoe::kernels
