//===- ScheduleEmitter.h - the `schedule` section of an emitted plan -*- C++ -*-===//
//
// Writes the module's `afpipe.schedule` (built by the afpipe-schedule pass, the pipeline's
// "schedule" stage, and checked by afpipe-verify) into the plan as its optional `schedule` section
// (docs/plan-format.md, "schedule"): per group role, explicit forward and backward instructions per
// component and micro-batch over at least 2p micro-batches, parametrised by group. It verifies the
// schedule once more against the plan's world size before writing it.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_COMPILER_EMIT_SCHEDULEEMITTER_H
#define DISAGMOE_COMPILER_EMIT_SCHEDULEEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace disagmoe {

/// Adds `schedule` to `plan` (which emitPlan filled from the same module). Returns false with
/// `error` (one line) when the schedule cannot be read or fails verification (the verifier's
/// message names the rank pair and the instruction). A module without a schedule (the cost model
/// could not size it: its `afpipe.unscheduled` attribute says why) gets no section; `note` says
/// so and the result is true.
bool emitSchedule(mlir::ModuleOp module, llvm::json::Object &plan, std::string &error,
                  std::string &note);

} // namespace disagmoe

#endif
