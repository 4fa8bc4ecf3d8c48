//===- PlanEmitter.h - placed `moe` IR -> plan.json -----------*- C++ -*-===//
//
// Translates a module that went through raise, partition, exchange fusion and placement into the
// versioned plan format of docs/plan-format.md (schema version 1): model hyper-parameters and
// components, the weight manifest (file, byte offset, byte length, holding ranks; never the bytes),
// placement, per-role programs, exchanges with capacity bounds, and per-rank memory.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_COMPILER_EMIT_PLANEMITTER_H
#define DISAGMOE_COMPILER_EMIT_PLANEMITTER_H

#include "runtime/plan/PlanFormat.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace disagmoe {

/// Builds the plan JSON. Returns false and sets `error` (one line) when the module is not fully
/// placed (missing `moe.placement`, stages or exchanges).
bool emitPlan(mlir::ModuleOp module, const std::string &sourcePath, llvm::json::Object &plan,
              std::string &error);

/// Writes `plan` to `<dir>/plan.json` atomically (temporary file, then rename), creating `dir`.
bool writePlan(const llvm::json::Object &plan, const std::string &dir, std::string &error);

} // namespace disagmoe

#endif
