//===- Passes.h - the disagmoe pipeline passes ---------------------------===//
#ifndef DISAGMOE_PASSES_PASSES_H
#define DISAGMOE_PASSES_PASSES_H

#include "dialects/afpipe/AfpipeDialect.h"
#include "dialects/moe/MoeDialect.h"
#include "dialects/onnx/OnnxDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <optional>
#include <string>

namespace disagmoe {
#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// An option value a pass refuses: the option (its pass-option argument, e.g. "dense-side") and the
/// problem ("must be attention or ffn, got 'gpu'"). Each pass checks its options with the function
/// below, and the compile pipeline (passes/CompilePipeline.h) calls the same functions before it
/// loads a model, so a value is validated in one place.
struct OptionError {
  std::string option;
  std::string problem;
};

/// Most ranks per group, and in all (the runtime runs one thread or process per rank).
inline constexpr int64_t kMaxRanksPerGroup = 65536, kMaxWorldSize = int64_t{1} << 20;

/// assign-groups: p in [1, kMaxRanksPerGroup]; each side "attention" or "ffn".
std::optional<OptionError> checkAssignGroupsOptions(const AssignGroupsOptions &options);
/// place-groups: attn-ranks and ffn-ranks in [1, kMaxRanksPerGroup], and with `groups` (p) the
/// world p x (A + F) at most kMaxWorldSize.
std::optional<OptionError> checkPlaceGroupsOptions(const PlaceGroupsOptions &options,
                                                   int64_t groups);
/// afpipe-schedule: micro-batches in [0, afpipe::kMaxMicroBatches] (0: 2p; the 2p lower bound is
/// checked against the module's p when the pass runs).
std::optional<OptionError> checkAfPipeScheduleOptions(const AfPipeScheduleOptions &options);

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"
} // namespace disagmoe

#endif
