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

#include <string>

namespace disagmoe::tools {

/// Fills `problem.cluster` and `problem.model`; `configFile` receives the config path actually
/// read. On failure returns false with `error` naming the file at fault.
bool loadProblemInputs(const std::string &hardware, const std::string &cluster,
                       const std::string &config, placement::Problem &problem,
                       std::string &configFile, std::string &error);

/// Reads `--recompute` (auto, on, off, and selective where `allowSelective`) into `out`; on any
/// other value returns false with `error` listing the accepted ones.
bool parseRecompute(const std::string &value, bool allowSelective, placement::Recompute &out,
                    std::string &error);

} // namespace disagmoe::tools

#endif
