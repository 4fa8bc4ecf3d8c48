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

/// disagmoe-run's default output in place of the four tables above (--verbose prints them): a few
/// lines whatever the number of layers and ranks, one per side, then the exchange totals:
///   attention side: 1 group of 2 ranks (A0 ranks 0,1), layers 0-3, embedding and head; weights
///     338176 bytes per rank
///   ffn side: 1 group of 2 ranks (F0 ranks 2,3), 8 experts x 4 MoE layers, 4 per rank per
///     layer; weights 1572864 bytes per rank
///   exchange bytes: m2n 31040, n2m 28640, residual 16960, all 76640 (4 layers, 18088-20232 each)
///   against an expert-parallel all-to-all of the same routing: 59680 vs 69120 bytes, ratio 0.863
/// (each on one line; min-max where ranks or layers differ).
std::string formatSummary(const Plan &plan, const RunResult &run);

/// "16 tokens in 0.0123 s: 1300.8 tokens/s".
std::string formatThroughput(const RunResult &run);

} // namespace disagmoe
