//===- ModuleSchedule.h - the AF-Pipe schedule of a placed `moe` module -*- C++ -*-===//
//
// What the afpipe-schedule pass computes: the AF-Pipe training schedule (AfPipe.h) for a module
// that went through placement. Inputs: the model's shape from the IR (frontends/config/
// CostExtraction.h), the placement (`moe.placement`: p groups of dA A-ranks and eF F-ranks, one
// pipeline replica), the compiled static [batch, seq] as one micro-batch, and a cluster (default:
// H800 nodes of 8 GPUs with one 400 Gb/s NIC per GPU, as many nodes as the world needs) whose
// roofline sizes each instruction. At least 2p micro-batches (default 2p).
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_SCHEDULE_MODULESCHEDULE_H
#define DISAGMOE_PASSES_SCHEDULE_MODULESCHEDULE_H

#include "runtime/plan/Schedule.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>

namespace disagmoe::afpipe {

struct ModuleScheduleOptions {
  int64_t microBatches = 0; ///< 0: 2p
  std::string clusterPath;  ///< cluster YAML (samples/clusters); empty: H800 nodes
};

enum class ModuleScheduleStatus { Built, Unsized, Failed };

/// Builds and verifies (verifySchedule with the placement's world size) the schedule of `module`.
/// Unsized: the cost model cannot size the model (e.g. multi-head latent attention is not in
/// runtime/cost yet); `error` says why. Failed: bad options, no placement, or a failed check.
ModuleScheduleStatus buildModuleSchedule(mlir::ModuleOp module, const ModuleScheduleOptions &options,
                                         sched::Schedule &out, std::string &error);

} // namespace disagmoe::afpipe

#endif
