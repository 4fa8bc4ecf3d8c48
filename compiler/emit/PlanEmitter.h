//===- PlanEmitter.h - placed `moe` IR -> Plan ----------------*- C++ -*-===//
//
// Builds the runtime's in-memory Plan (runtime/plan/Plan.h, schema of docs/plan-format.md) from a
// module that went through raise, partition, exchange fusion and placement: model hyper-parameters
// and components, the weight manifest (file, byte offset, byte length, holding ranks; never the
// bytes), placement, per-role programs, exchanges with capacity bounds, and per-rank memory. The
// plan is written by the runtime's writePlan, so the compiler never spells a key of its own.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_COMPILER_EMIT_PLANEMITTER_H
#define DISAGMOE_COMPILER_EMIT_PLANEMITTER_H

#include "runtime/plan/Plan.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace disagmoe {

/// The plan of a placed module. Fails with one line (no file prefix) when the module is not fully
/// placed: no `moe.placement`, not one function, a dynamic [batch, seq] input, a layer without
/// expert placement, or an FFN-side dense_ffn outside an FFN stage.
llvm::Expected<Plan> emitPlan(mlir::ModuleOp module, const std::string &sourcePath);

/// Writes `plan` to `<dir>/plan.json` atomically (runtime writePlan: temporary file, then rename),
/// creating `dir`; the error is one line naming the path.
llvm::Error savePlan(const Plan &plan, const std::string &dir);

} // namespace disagmoe

#endif
