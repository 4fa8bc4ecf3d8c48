// Every option of disagmoe-run in one table: the forward flags (disagmoe-run.cpp) and the training
// and one-process-per-rank ones (DistributedRun.cpp). It is what a run config (RunConfig.h) may
// give as keys and what "did you mean" suggests from; each parser still reads its own flags.
#pragma once

#include <string>
#include <vector>

namespace disagmoe::tools {

/// Which runs take a flag: every run, only the forward pass (disagmoe-run.cpp), or only --train and
/// --comm mpi runs (DistributedRun.cpp).
enum class RunMode { Any, Forward, Train };

struct RunFlag {
  const char *name; ///< without the leading "--": "lr-min"
  bool takesValue;  ///< false for the switches --train and --debug-nan-fill
  RunMode mode;
};

/// Every flag, in the order of `disagmoe-run --help`.
const std::vector<RunFlag> &runFlags();

/// The flag called `name` (without "--"), or nullptr.
const RunFlag *findRunFlag(const std::string &name);

/// The flag nearest to `name` (without "--"; '_' counts as '-') by edit distance, when at most 2
/// edits and fewer than half of its letters away; "" when none is that near. "lr_min" -> "lr-min",
/// "chekpoint-every" -> "checkpoint-every", "frobnicate" -> "".
std::string suggestRunFlag(const std::string &name);

} // namespace disagmoe::tools
