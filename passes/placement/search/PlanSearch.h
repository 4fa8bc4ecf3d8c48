//===- PlanSearch.h - DisagMoE configurations scored by the simulator -*- C++ -*-===//
//
// The roofline planner (passes/placement/solver) assumes that 2p micro-batches in flight fill the
// ring, that every exchange crosses NICs and that a side's time is its busiest group's; the
// simulator (runtime/sim) replays the AF-Pipe schedule with the window that fits memory, NVLink
// inside a node and the gradient synchronisation. As DisagMoE refines its roofline start by a
// local search on measured stage times (seeds/000 §3.3), this search:
//   1. seeds: Z3's optimum and the `seeds` fastest structural candidates of the roofline
//      (placement::rankByRoofline: r, p, dA, eF, m with each side's recomputation and every NIC
//      handed out), each in every allowed rank layout (afpipe::Config::Layout);
//   2. builds each seed's AF-Pipe schedule (window: the largest of 8p..2p that fits memory, as
//      the schedule counts what is live) and simulates it;
//   3. climbs from the fastest: each side's recomputation level moved by one (trading compute
//      for a larger window), the layout flipped, the window one step below the largest that fits,
//      keeping the fastest until no move improves or the time budget is spent;
//   4. verifies the winner's schedule (verifySchedule) and keeps it with its simulation.
// Within each step, configurations are simulated best compute bound first
// (afpipe::computeBoundSeconds, the busiest group's FLOPs at peak: no simulation is shorter), and
// one whose bound exceeds the fastest simulated step is not simulated (SearchResult::pruned): the
// winner is the one simulating every configuration would pick.
// Times in seconds. Functions never throw.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_PLACEMENT_SEARCH_PLANSEARCH_H
#define DISAGMOE_PASSES_PLACEMENT_SEARCH_PLANSEARCH_H

#include "passes/placement/solver/Planner.h"
#include "passes/schedule/AfPipe.h"
#include "runtime/plan/Schedule.h"
#include "runtime/sim/Simulator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe::search {

struct SearchOptions {
  /// Everything of the AF-Pipe configuration that the search does not choose: sequence length,
  /// sequences per step, reserve, compute efficiency, memory and gradient synchronisation,
  /// window (0: by memory).
  afpipe::Config base;
  size_t seeds = 16; ///< roofline candidates simulated beside Z3's optimum
  std::vector<afpipe::Config::Layout> layouts{afpipe::Config::Layout::Separate,
                                              afpipe::Config::Layout::Packed};
  /// Wall time of the whole search: a seed or move that would start later is not simulated (Z3's
  /// optimum always is). A safety net, not the normal end: the climb ends when no move improves or
  /// after maxMoves, so the result does not depend on the machine's speed unless
  /// SearchResult::budgetHit says so (60 s: the bound for planning 1024 GPUs).
  double budgetSeconds = 60;
  const sim::OpTimes *opTimes = nullptr;
  int64_t maxMoves = 64;
};

struct Trial {
  placement::Config config;
  afpipe::Config::Layout layout = afpipe::Config::Layout::Separate;
  std::string origin;    ///< "z3", "roofline #k", "climb: <move>"
  double predicted = 0;  ///< the roofline's step time (placement::evaluate)
  double simulated = 0;  ///< the simulator's step time (0 when it failed)
  int64_t inflight = 0;  ///< micro-batches in flight of the busiest group
  double peakMemory = 0; ///< bytes, busiest rank
  bool ok = false;
  std::string error;
};

struct SearchResult {
  bool ok = false;
  std::string error;
  Trial best, seed;          ///< the winner; Z3's optimum as simulated
  std::vector<Trial> trials; ///< every configuration simulated, in order
  afpipe::Config afpipe;     ///< the winner's AF-Pipe configuration
  sched::Schedule schedule;  ///< the winner's verified schedule
  sim::SimResult run;        ///< its simulation (SimOptions::recordTimes when asked)
  double seconds = 0;
  bool budgetHit = false; ///< seeds were skipped or the climb stopped on budgetSeconds
  /// Trials not simulated because their compute bound (afpipe::computeBoundSeconds) exceeded the
  /// fastest step simulated before them: they could not win. How many depends on the order in
  /// which the threads finish; the winner does not.
  int64_t pruned = 0;
  std::string why; ///< one line: what made the winner faster than Z3's optimum
};

/// The AF-Pipe settings `problem` already fixes: sequence length, sequences per step, reserve,
/// memory and gradient synchronisation (the rest at afpipe::Config's defaults).
afpipe::Config baseOf(const placement::Problem &problem);

/// The AF-Pipe configuration of a placement under `base`.
afpipe::Config toAfPipe(const placement::Config &c, const placement::Problem &problem,
                        const afpipe::Config &base, afpipe::Config::Layout layout);

/// One line naming a configuration: "64:64 GPUs, 64:64 NICs, p 2, r 16, dA 2, eF 2, m 32,
/// recompute none/none, layout packed".
std::string describe(const placement::Config &c, afpipe::Config::Layout layout);

/// Runs the search; `z3` is Z3's solution for `problem` (placement::solveZ3), the first seed.
/// `recordTimes` asks the winner's simulation for per-instruction times (traces).
SearchResult searchPlan(const placement::Problem &problem, const placement::Solution &z3,
                        const SearchOptions &options, bool recordTimes = false) noexcept;

} // namespace disagmoe::search

#endif
