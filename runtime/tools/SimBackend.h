// The `sim` backend of disagmoe-run: replays the plan's `schedule` section (verified when the plan
// was loaded, runtime/plan/PlanSchedule.h) through the discrete-event simulator (runtime/sim/
// Simulator.h: roofline times from runtime/cost, or measured per-op times; NVLink and NIC links
// shared by concurrent flows) instead of running kernels.
//
// Prints: step time (s), per group and its ranks the busy and idle seconds, the exposed
// (non-overlapped) communication seconds, the bubble fraction (mean idle share over all ranks),
// MFU (model FLOPs / (step x ranks x peak)), and optionally writes a Chrome trace.
// Errors: std::runtime_error with one line (the plan has no schedule, bad --op-times file, trace
// not writable).
#pragma once

#include "runtime/plan/Plan.h"

#include <cstdint>
#include <ostream>
#include <string>

namespace disagmoe::tools {

struct SimRunOptions {
  std::string
      opTimes;       ///< "disagmoe-op-times" JSON (docs/results.md, "Calibration"); empty: roofline
  std::string trace; ///< Chrome trace output path; empty: none
  int64_t hostCores =
      0; ///< > 0: ranks are threads on that many CPU cores (sim::SimOptions::hostCores)
};

/// Replays `plan.schedule`; returns the process exit code (0).
int runSimBackend(const Plan &plan, const SimRunOptions &options, std::ostream &out);

} // namespace disagmoe::tools
