//===- PlannerInternal.h - per-candidate cost tables shared by the solvers -*- C++ -*-===//
#ifndef DISAGMOE_PASSES_PLACEMENT_SOLVER_PLANNERINTERNAL_H
#define DISAGMOE_PASSES_PLACEMENT_SOLVER_PLANNERINTERNAL_H

#include "passes/placement/solver/Planner.h"

#include <utility>
#include <vector>

namespace disagmoe::placement::detail {

/// The costs of one (candidate, recomputation) pair that do not depend on the NIC split, and the
/// two monotone side-time functions of the NIC counts. stepTime(nA, nF) = max(sideA(nA),
/// sideF(nF)).
struct CandidateCosts {
  Candidate cand;
  cost::Recomputation attnRecompute = cost::Recomputation::None;
  cost::Recomputation ffnRecompute = cost::Recomputation::None;
  /// One layer kind of a group: compute seconds, exchange bytes, and how many such layers.
  struct Term {
    double compute = 0, bytes = 0, count = 1;
  };
  /// Per group: its layers (equal layers merged, equal groups dropped), and extra compute (head).
  std::vector<std::vector<Term>> attnLayers, ffnLayers;
  std::vector<double> attnExtra;
  double attnFlopsBusiest = 0, ffnFlopsBusiest = 0, attnBytesBusiest = 0, ffnBytesBusiest = 0;
  double K = 0, D = 0;
  /// Side times with unlimited NICs (compute only): lower bounds of sideA / sideF.
  double attnLowerBound = 0, ffnLowerBound = 0;
  double nicBandwidth = 0, attnPcieCap = 0, ffnPcieCap = 0; ///< bytes/s
  double groupsTotal = 1;                                   ///< r * p
  cost::MemoryBreakdown attnMemory, ffnMemory;
  bool fits = false;
  int64_t capA = 0, capF = 0;

  double attnBandwidth(int64_t nics) const;
  double ffnBandwidth(int64_t nics) const;
  /// max over groups of the sum of roofline stage times, seconds per micro-batch.
  double attnBusy(int64_t nics) const;
  double ffnBusy(int64_t nics) const;
  double sideA(int64_t nics) const { return K * attnBusy(nics) + D; }
  double sideF(int64_t nics) const { return K * ffnBusy(nics) + D; }
  /// Smallest NIC count in [1, cap] whose side time is <= tau (< tau when strict); 0 if none.
  int64_t minNicsA(double tau, bool strict) const;
  int64_t minNicsF(double tau, bool strict) const;
};

CandidateCosts buildCosts(const Problem &problem, const Candidate &cand,
                          cost::Recomputation attnRecompute, cost::Recomputation ffnRecompute);

/// Recomputation levels the options allow on one side, lightest first (Redispatch: FFN side only).
std::vector<cost::Recomputation> recomputeChoices(const PlannerOptions &o, bool ffnSide);

/// Busiest GPU's memory of each side of `cand` at the given levels (what buildCosts stores).
void candidateMemory(const Problem &problem, const Candidate &cand,
                     cost::Recomputation attnRecompute, cost::Recomputation ffnRecompute,
                     cost::MemoryBreakdown &attn, cost::MemoryBreakdown &ffn);

/// Each side's lightest allowed level whose memory fits; false when a side fits at none. Exact for
/// the step time: a lighter level never has a longer stage time (fewer FLOPs, the same bytes) and
/// a side's memory does not depend on the other side's level.
bool lightestFittingLevels(const Problem &problem, const Candidate &cand,
                           cost::Recomputation &attnRecompute, cost::Recomputation &ffnRecompute);

/// Usable bytes per GPU.
double usableBytes(const Problem &problem);

/// Fills an Evaluation from costs and a NIC split.
Evaluation evaluateCosts(const Problem &problem, const CandidateCosts &c, int64_t nA, int64_t nF);

} // namespace disagmoe::placement::detail

#endif
