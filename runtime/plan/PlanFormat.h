// The plan schema's name and version (docs/plan-format.md), defined once: the runtime's loader
// (runtime/plan/Plan.h) refuses any other, and the compiler's emitter (compiler/emit/PlanEmitter.h)
// writes them. Header-only and exception-free, so MLIR targets (-fno-exceptions) include it too.
#pragma once

#include <cstdint>

namespace disagmoe {

constexpr const char *kPlanFormat = "disagmoe-plan";
constexpr int64_t kPlanVersion = 1;

} // namespace disagmoe
