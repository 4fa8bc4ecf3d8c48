//===- BaselineSearch.h - each baseline tuned over its own knobs on the simulator -*- C++ -*-===//
//
// For one baseline kind (Baselines.h) on `gpus` GPUs, the fastest simulated configuration over:
//  - ep: every divisor of the GPUs that also divides the routed expert count (EP inside one node,
//    1, 2, 4, 8 on 8-GPU nodes, and across nodes, 16, 32, ...);
//  - pp: every divisor of gpus / ep with at least one layer per chunk (DualPipe: even pp);
//  - vpp in {1, 2, 4} (Megatron kinds; vpp > 1 needs the micro-batches divisible by pp);
//  - micro-batches m per replica: q sequences per rank per micro-batch for every divisor q of
//    sequences / (replicas x ep), m = sequences / (replicas x ep x q), with m >= pp (Megatron) or
//    m even and >= 2 pp (DualPipe, dualpipe.py's num_chunks >= 2 num_ranks);
//  - recomputation off and on (BaselineSearchOptions::recompute).
// A configuration whose memory (Baselines.h, baselineMemory: Memory.h's terms, activations of the
// units live under its pipeline order) exceeds the GPU's memory minus the reserve is refused by
// buildBaseline before it is built; the last refusal's reason is kept. The others are built and
// simulated; the result is the fastest overall and the fastest at the given EP (the paper's
// setting, EP 16).
//
// Speed: candidates are simulated in increasing order of a lower bound of their step
// (baselineLowerBound, which no simulation undercuts), and a candidate whose bound is not below
// both the best step so far and (at the given EP) the best at that EP is not simulated: the
// minimum is the same as simulating every candidate. Threads (std::thread, at most
// hardware_concurrency) take candidates in that order; a wall budget stops the search early
// (BaselineSearchResult::budgetHit says so). Ties on the step go to the earlier candidate of the
// enumeration order above, so the result does not depend on the threads.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_RUNTIME_SIM_BASELINESEARCH_H
#define DISAGMOE_RUNTIME_SIM_BASELINESEARCH_H

#include "runtime/sim/Baselines.h"
#include "runtime/sim/Simulator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe::sim {

struct BaselineSearchOptions {
  /// seqLen, sequencesPerStep (all replicas), reserveBytes, computeEfficiency, memory, gradSync;
  /// kind, ep, pp, vpp, replicas, microbatches and recompute are searched.
  BaselineConfig base;
  int64_t gpus = 0;
  int64_t fixedEp = 16;                     ///< the EP of BaselineSearchResult::atEp
  std::vector<bool> recompute{false, true}; ///< the recomputation settings tried
  unsigned threads = 0;                     ///< 0: hardware_concurrency (at least 1)
  double wallBudgetSeconds = 30;            ///< stop (budgetHit) once exceeded; <= 0: no limit
  const OpTimes *opTimes = nullptr;         ///< measured op times: the bound is not used then
};

struct BaselineTrial {
  bool ok = false;
  BaselineConfig config;
  std::string error;
  SimResult result;           ///< the simulation (ok)
  double peakMemoryBytes = 0; ///< the busiest stage's, baselineMemory
  int64_t liveUnits = 0;      ///< at that peak: (micro-batch, chunk) units holding activations
};

struct BaselineSearchResult {
  bool ok = false, okAtEp = false;
  BaselineTrial best, atEp;    ///< fastest overall; fastest with ep == fixedEp
  std::string lastRefusal;     ///< why the last configuration refused was refused ("" if none)
  std::string lastRefusalAtEp; ///< the same among those with ep == fixedEp
  std::string error;           ///< when !ok: why nothing ran (no candidate, or every one refused)
  int64_t candidates = 0, simulated = 0, refused = 0, pruned = 0;
  bool budgetHit = false;
  double seconds = 0;
};

/// Every configuration of the search space above, in enumeration order (ep, pp, vpp, q, recompute
/// ascending).
std::vector<BaselineConfig> baselineSearchSpace(Baseline kind, const cost::ModelShape &model,
                                                const BaselineSearchOptions &options);

BaselineSearchResult searchBaseline(Baseline kind, const cost::ModelShape &model,
                                    const sched::Hardware &hw,
                                    const BaselineSearchOptions &options);

/// "ep 8, pp 4, vpp 2, m 32, recompute off".
std::string describeSetting(const BaselineConfig &c);

} // namespace disagmoe::sim

#endif
