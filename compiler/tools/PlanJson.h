//===- PlanJson.h - `disagmoe plan --json`: the chosen plan as one JSON document -*- C++ -*-===//
//
// The pieces of the plan report as llvm::json values, so that scripts (the memory bars of
// scripts/, docs/results.md) read the same numbers `disagmoe plan` prints. Units: seconds for
// times, bytes for memory and exchange sizes, FLOPs for work; GPU and NIC counts are integers.
// Schema (top level, written by PlanCommand.cpp): "model", "cluster", "gpus", "seq_len",
// "global_tokens", "z3" (configJson + "optimal", "seconds", "candidates", "queries", "note"),
// "alternatives" (one configJson per feasible attention GPU count), "search" (searchJson, absent
// with --no-search), "local_search" and "exhaustive" when asked.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_COMPILER_TOOLS_PLANJSON_H
#define DISAGMOE_COMPILER_TOOLS_PLANJSON_H

#include "passes/placement/search/PlanSearch.h"
#include "passes/placement/solver/Planner.h"

#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace disagmoe::tools {

/// A configuration and its roofline evaluation: GPUs, NICs, p, r, ranks per group, micro-batches,
/// cp, recomputation per side, step time and its terms (K, U_a, U_f, D), MFU, the busiest group's
/// FLOPs and exchanged bytes per micro-batch, and each side's memory breakdown (bytes).
llvm::json::Object configJson(const placement::Config &config, const placement::Evaluation &eval);

/// The simulated search: configurations tried, wall seconds, Z3's optimum as simulated, the
/// chosen configuration (its layout, micro-batches in flight, peak bytes), why it won, and
/// `compileArgs`, the `disagmoe compile` arguments that realise one replica.
llvm::json::Object searchJson(const search::SearchResult &found, const placement::Problem &problem,
                              const std::vector<std::string> &compileArgs);

/// The `disagmoe compile` arguments (after MODEL.onnx) that realise one replica of `chosen`:
/// --groups, --attn-ranks, --ffn-ranks, --micro-batches, --batch (sequences per micro-batch per
/// replica) and --seq-len.
std::vector<std::string> compileArgsOf(const placement::Config &chosen,
                                       const placement::PlannerOptions &options);

/// Writes `doc` to `path` ("-": standard output) through a temporary file and a rename, so that
/// `path` is never half-written; "" on success, otherwise one line naming the path and the fault.
std::string writeJson(const std::string &path, llvm::json::Value doc);

} // namespace disagmoe::tools

#endif
