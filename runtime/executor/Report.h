// Human-readable summaries of a plan and a run, printed by disagmoe-run.
#pragma once

#include "runtime/executor/Executor.h"
#include "runtime/plan/Plan.h"

#include <string>

namespace disagmoe {

/// Where each layer ran: one line per layer for its attention group, one for its experts, e.g.
///   layer 0 attention: group A0 ranks 0,1
///   layer 0 experts 0-3 -> rank 2, 4-7 -> rank 3
/// Expert ranks come from the run's records (where each expert actually ran).
std::string formatPlacement(const Plan &plan, const RunResult &run);

/// Exchange bytes per layer: one row per message kind and src->dst pair (tokens, bytes), a total
/// per kind and per layer, and a grand total.
std::string formatExchanges(const Plan &plan, const RunResult &run);

/// Per layer: the bytes this run's exchanges sent between different ranks (M2N + N2M + residual,
/// whole messages; a residual kept on its own rank is not counted) beside a
/// conventional EP all-to-all dispatch + combine of the same routing (one copy per token-expert
/// assignment each way, same per-copy header), and their ratio.
std::string formatAllToAllComparison(const Plan &plan, const RunResult &run);

/// Weight bytes per rank, and the plan's activation estimate where it states one.
std::string formatMemory(const Plan &plan);

/// "16 tokens in 0.0123 s: 1300.8 tokens/s".
std::string formatThroughput(const RunResult &run);

} // namespace disagmoe
