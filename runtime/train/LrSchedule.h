// Learning-rate warm-up and cosine decay (docs/architecture.md "Training semantics and numerics"),
// the schedule of Megatron-LM's OptimizerParamScheduler (linear warm-up, then cosine) and of
// Hugging Face's get_cosine_schedule_with_warmup, with a floor lr_min:
//
//   step s = 1, 2, ... (the optimizer step being taken)
//   s <= W:        lr(s) = lr_max * s / W
//   W < s <= T:    lr(s) = lr_min + (lr_max - lr_min) * (1 + cos(pi * (s - W) / (T - W))) / 2
//   s > T:         lr(s) = lr_min
//
// W = warmupSteps (0: no warm-up), T = totalSteps (0: no decay, lr stays lr_max after warm-up).
// Warm-up starts at lr_max / W, not 0, so the first step is not wasted.
#pragma once

#include <cstdint>
#include <stdexcept>

namespace disagmoe::train {

struct LrSchedule {
  int64_t warmupSteps = 0; ///< W >= 0
  int64_t totalSteps = 0;  ///< T: 0 = constant after warm-up; otherwise T > W
  double lrMin = 0;        ///< floor of the cosine, 0 <= lrMin <= lr_max

  /// Throws std::invalid_argument naming the field when the schedule is inconsistent with lrMax.
  void validate(double lrMax) const;
  /// lr(s) above for the optimizer step `step` >= 1.
  double lrAt(double lrMax, int64_t step) const;
};

} // namespace disagmoe::train
