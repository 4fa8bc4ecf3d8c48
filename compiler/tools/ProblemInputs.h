//===- ProblemInputs.h - model and cluster of `disagmoe plan` / `simulate` -===//
//
// Both commands read the same inputs: a GPU/NIC catalog, a cluster spec and a model config.json
// (a bare name is looked up under samples/clusters/ and samples/configs/ of the source tree), and
// turn the config into the cost model's ModelShape through the config frontend.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_COMPILER_TOOLS_PROBLEMINPUTS_H
#define DISAGMOE_COMPILER_TOOLS_PROBLEMINPUTS_H

#include "passes/placement/solver/Planner.h"

#include "llvm/Support/Error.h"

#include <string>

namespace disagmoe::tools {

/// Fills `problem.cluster` and `problem.model` and returns the config path actually read. Fails
/// with one line naming the file at fault (catalog, cluster or config) and what is wrong there.
llvm::Expected<std::string> loadProblemInputs(const std::string &hardware,
                                              const std::string &cluster, const std::string &config,
                                              placement::Problem &problem);

/// `path` itself if it exists, else the file of that name in samples/<folder>/ of the source tree
/// (folder "clusters" or "configs"); `path` unchanged when neither exists.
std::string resolveSample(const std::string &path, const char *folder);

/// Reads `--recompute` (auto, on, off, and selective where `allowSelective`). Fails on any other
/// value with one line listing the accepted ones.
llvm::Expected<placement::Recompute> parseRecompute(const std::string &value, bool allowSelective);

} // namespace disagmoe::tools

#endif
