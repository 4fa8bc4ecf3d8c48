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

#include "runtime/plan/Plan.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace disagmoe {

/// Sets plan.schedule (the plan emitPlan built from the same module). Fails with one line when
/// the schedule cannot be read or fails verification (the verifier's message names the rank pair
/// and the instruction). A module without a schedule (the cost model could not size it: its
/// `afpipe.unscheduled` attribute says why) gets none: the result is then a note saying so, and ""
/// when the schedule was added.
llvm::Expected<std::string> emitSchedule(mlir::ModuleOp module, Plan &plan);

} // namespace disagmoe

#endif
