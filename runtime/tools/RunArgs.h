// disagmoe-run's one command-line parser (CLI11, Debian's libcli11-dev): the positional plan and
// every flag of RunFlags.h, as "--flag value" or "--flag=value", the last occurrence winning (so a
// flag given after a run config's overrides it, RunConfig.h). The forward run (disagmoe-run.cpp)
// and the --train / --comm mpi run (DistributedRun.cpp) both read their options from its result and
// convert the values they take; a flag of the other kind of run is refused by name.
// Errors (RunArgsError, one line): "--batch needs a value", "--output: empty value", "unknown
// option --lr-mn (did you mean --lr-min? see --help)", "unexpected argument \"x\" (the plan is
// \"p\")", "--lr needs --train (see --help)", "--warmup applies to the forward run
// only (not to --train or --comm mpi runs)".
// DISAGMOE_PARSE_ONLY=1 (ParseOnly.h): both runs stop after these checks and their own checks of
// values and combinations, exit 0 and open nothing (a --config file is still read: it holds flags);
// a backend or comm this build lacks is then accepted.
#pragma once

#include "runtime/tools/RunFlags.h"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace disagmoe::tools {

class RunArgsError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// "--steps needs --train (see --help)": a training flag without --train, in a single process or
/// under --comm mpi/nccl alike.
std::string trainOnlyRefusal(const std::string &flag);

struct RunArgs {
  std::string plan; ///< the positional argument ("" when none)
  /// Every flag given, once, in the order of its first occurrence, with its last value ("--batch",
  /// "4"); a switch (--train, --debug-nan-fill) with the value "".
  std::vector<std::pair<std::string, std::string>> flags;
};

/// Parses argv[1..argc) for a run of `mode` (RunMode::Forward or RunMode::Train): a flag of the
/// other mode is refused. Throws RunArgsError.
RunArgs parseRunArgs(int argc, char **argv, RunMode mode);

} // namespace disagmoe::tools
