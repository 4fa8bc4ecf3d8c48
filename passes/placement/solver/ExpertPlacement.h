//===- ExpertPlacement.h - experts to F-ranks from a routing profile -*- C++ -*-===//
//
// Maps the experts of one MoE layer to the F-ranks of its FFN group so that the most loaded rank
// (sum of the (token, expert) assignments of the experts it holds, routing-profile.json) is as
// light as possible; each rank holds at most `slots` expert replicas (memory). Methods:
//  - contiguous: expert e on rank floor(e * R / E) (the walking skeleton's split);
//  - greedy LPT: experts by decreasing load, each to the least-loaded rank with a free slot
//    (Graham 1969, "Bounds on multiprocessing timing anomalies": <= 4/3 - 1/(3R) of optimal
//    without slot limits);
//  - balanced (ours): optionally replicate hot experts (each extra replica goes to the expert with
//    the highest load per replica; a replicated expert's tokens are split evenly over its
//    replicas), LPT over the replicas (two replicas of one expert never share a rank), then local
//    refinement: move or swap replicas off the most loaded rank while the maximum decreases.
// Loads are token-expert counts; no unit conversion.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_PLACEMENT_SOLVER_EXPERTPLACEMENT_H
#define DISAGMOE_PASSES_PLACEMENT_SOLVER_EXPERTPLACEMENT_H

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe::placement {

struct ExpertPlacement {
  /// ranksOf[e]: the ranks (0..R-1) holding a replica of expert e, ascending.
  std::vector<std::vector<int64_t>> ranksOf;
  std::vector<double> rankLoad; ///< per rank
  double maxLoad() const;
  double meanLoad() const;
  /// max / mean rank load (1 = perfectly balanced).
  double imbalance() const;
  /// Checks every expert has >= 1 replica on distinct ranks, slots respected, loads consistent.
  std::string check(const std::vector<int64_t> &loads, int64_t ranks, int64_t slots) const;
};

ExpertPlacement placeContiguous(const std::vector<int64_t> &loads, int64_t ranks);
ExpertPlacement placeGreedyLpt(const std::vector<int64_t> &loads, int64_t ranks, int64_t slots);
/// `extraReplicas`: replicas beyond one per expert (0: no replication); needs
/// ranks * slots >= experts + extraReplicas.
ExpertPlacement placeBalanced(const std::vector<int64_t> &loads, int64_t ranks, int64_t slots,
                              int64_t extraReplicas = 0);
/// A lower bound on the maximum rank load of any placement with that many replicas in total:
/// max(total / R, the largest per-replica load when extra replicas go to the hottest experts).
double maxLoadLowerBound(const std::vector<int64_t> &loads, int64_t ranks, int64_t extraReplicas);

} // namespace disagmoe::placement

#endif
