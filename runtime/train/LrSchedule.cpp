// Linear warm-up then cosine decay to lr_min learning-rate schedule (LrSchedule.h).
#include "runtime/train/LrSchedule.h"
#include "runtime/tools/DecimalNumber.h"

#include <cmath>
#include <string>

namespace disagmoe::train {

void LrSchedule::validate(double lrMax) const {
  if (warmupSteps < 0)
    throw std::invalid_argument("warmup steps must be >= 0, got " + std::to_string(warmupSteps));
  if (totalSteps < 0)
    throw std::invalid_argument("total steps must be >= 0, got " + std::to_string(totalSteps));
  if (totalSteps > 0 && totalSteps <= warmupSteps)
    throw std::invalid_argument("total steps (" + std::to_string(totalSteps) +
                                ") must exceed the warm-up steps (" + std::to_string(warmupSteps) +
                                ") for the cosine decay");
  if (!(lrMin >= 0) || lrMin > lrMax)
    throw std::invalid_argument("lr-min " + tools::decimalText(lrMin) + " must lie in [0, lr " +
                                tools::decimalText(lrMax) + "]");
}

double LrSchedule::lrAt(double lrMax, int64_t step) const {
  if (step < 1)
    throw std::invalid_argument("optimizer steps count from 1, got " + std::to_string(step));
  if (step <= warmupSteps)
    return lrMax * static_cast<double>(step) / static_cast<double>(warmupSteps);
  if (totalSteps == 0)
    return lrMax;
  if (step > totalSteps)
    return lrMin;
  const double progress =
      static_cast<double>(step - warmupSteps) / static_cast<double>(totalSteps - warmupSteps);
  return lrMin + (lrMax - lrMin) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

} // namespace disagmoe::train
