//===- ScheduleIR.h - runtime/plan/Schedule.h <-> the `afpipe` dialect -*- C++ -*-===//
//
// One-to-one conversion between the plain C++ schedule (built by AfPipe.h, verified by
// verifySchedule, replayed by runtime/sim, written to plan.json) and its IR form (dialects/afpipe),
// so that the schedule passes (afpipe-schedule, afpipe-verify) and the plan emitter share one data
// model. Instruction i of program P is the i-th op in the `afpipe.program` of role P (the
// verifier's "P[i]" names it).
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_SCHEDULE_SCHEDULEIR_H
#define DISAGMOE_PASSES_SCHEDULE_SCHEDULEIR_H

#include "dialects/afpipe/AfpipeDialect.h"
#include "runtime/plan/Schedule.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Error.h"

#include <string>

namespace disagmoe::afpipe {

/// Builds `afpipe.schedule` at the builder's insertion point.
ScheduleOp buildScheduleOp(mlir::OpBuilder &b, mlir::Location loc, const sched::Schedule &s);

/// Reads an (op-verified) `afpipe.schedule` back into `out`. Fails with one line naming the op at
/// fault (one that is neither a group nor a program, or a non-instruction op in a program).
llvm::Error readScheduleOp(ScheduleOp op, sched::Schedule &out);

/// The instruction op that the verifier's message names first ("<role>[<index>]"), or null.
mlir::Operation *instructionNamedIn(ScheduleOp op, const std::string &message);

} // namespace disagmoe::afpipe

#endif
