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
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace disagmoe::afpipe {

/// Most micro-batches per step a plan may hold: the schedule lists every instruction of every
/// micro-batch, so its size (and plan.json's) grows linearly with them (5000 gave 100 MB).
inline constexpr int64_t kMaxMicroBatches = 4096;

struct ModuleScheduleOptions {
  int64_t microBatches = 0; ///< 0: 2p; else in [2p, kMaxMicroBatches]
  std::string clusterPath;  ///< cluster YAML (samples/clusters); empty: H800 nodes
};

enum class ModuleScheduleStatus { Built, Unsized };

/// What buildModuleSchedule gives when it does not fail.
struct ModuleSchedule {
  ModuleScheduleStatus status = ModuleScheduleStatus::Built;
  sched::Schedule schedule; ///< Built: the verified schedule
  std::string unsized;      ///< Unsized: why the cost model cannot size the model (one line)
};

/// Builds and verifies (verifySchedule with the placement's world size) the schedule of `module`.
/// Unsized: the cost model cannot size the model (e.g. multi-head latent attention is not in
/// runtime/cost yet); `unsized` says why. Fails with one line naming the option, attribute or
/// check at fault: bad options (micro-batches under 2p, the range [0, kMaxMicroBatches] being
/// checked by the pass's checkAfPipeScheduleOptions; more than max(4, 2 x batch) A-ranks per group,
/// since sequence s of a micro-batch runs on A-rank s mod dA and the rest have no work), no
/// placement, a cluster that cannot be read or holds too few GPUs, or a failed schedule check.
llvm::Expected<ModuleSchedule> buildModuleSchedule(mlir::ModuleOp module,
                                                   const ModuleScheduleOptions &options);

} // namespace disagmoe::afpipe

#endif
