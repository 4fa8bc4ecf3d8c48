//===- PlannerFlags.h - the flags `disagmoe plan` and `simulate` share -*- C++ -*-===//
//
// Both commands place one model on one cluster with the same planner, so they take the same
// flags for it: the inputs (--config, --cluster, --hardware), the step (--seq-len,
// --global-tokens), what the planner may be told to fix (--groups, --attn-gpus, --ffn-gpus,
// --micro-batches, --replicas, --recompute), its limits (--reserve-gb, --time-limit), the simulated
// search (--no-search, --search-seeds, --search-budget) and the gradient reduction dtype
// (--grad-reduce). Declared once here so that a flag means the same and is checked the same way in
// both.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_COMPILER_TOOLS_PLANNERFLAGS_H
#define DISAGMOE_COMPILER_TOOLS_PLANNERFLAGS_H

#include "compiler/tools/CommandLine.h"
#include "passes/placement/solver/Planner.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace disagmoe::tools {

class PlannerFlags {
  // First, so that it outlives the options: cl::desc keeps a StringRef to it.
  const std::string globalTokensHelp_;

public:
  /// Registers the flags in `category`. `defaultGlobalTokens` (a power of two) is the default of
  /// --global-tokens; `allowSelective` whether --recompute accepts "selective" (the planner's
  /// memory model has it, the simulator's schedules do not).
  PlannerFlags(llvm::cl::OptionCategory &category, int64_t defaultGlobalTokens,
               bool allowSelective);

  llvm::cl::opt<std::string> config, cluster;
  NumberOpt<int64_t> seqLen, globalTokens;
  llvm::cl::opt<std::string> hardware, recompute;
  NumberOpt<int64_t> groups, attnGpus, ffnGpus, microbatches;
  /// --microbatches, the earlier spelling: the compiler and disagmoe-run say --micro-batches.
  llvm::cl::alias microbatchesAlias;
  NumberOpt<int64_t> replicas;
  NumberOpt<double> reserveGb, timeLimit;
  llvm::cl::opt<bool> noSearch;
  NumberOpt<int64_t> searchSeeds;
  NumberOpt<double> searchBudget;
  llvm::cl::opt<std::string> gradReduce;

  /// Checks every value that needs no file and writes them into `o` (seqLen, globalTokens,
  /// recompute, fixed*, reserveBytes, timeLimitSeconds, gradSync.reduceBytes). Fails with one line
  /// naming the flag: a negative fixed count, --seq-len outside [1, --global-tokens] or not
  /// dividing it, --reserve-gb < 0, --time-limit or --search-budget <= 0, --search-seeds < 0, an
  /// unknown --recompute or --grad-reduce value.
  llvm::Error fill(placement::PlannerOptions &o) const;

private:
  const bool allowSelective_;
};

/// With DISAGMOE_PARSE_ONLY=1 (runtime/tools/ParseOnly.h), exits 0 here: called by a subcommand
/// after its value checks and before it opens a file, where it parsed its flags with
/// parseCommandLine(..., /*valueChecksFollow=*/true).
void exitIfParseOnly();

} // namespace disagmoe::tools

#endif
