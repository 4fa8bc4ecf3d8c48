//===- Planner.h - GPU/NIC split, groups, DP/EP and micro-batches ---*- C++ -*-===//
//
// The placement problem of DisagMoE (docs/architecture.md, "Placement problem";
// docs/placement.md): choose
//   r  pipeline replicas (outer data parallelism),
//   p  groups per side (layer l on group l mod p, the interleaved assignment),
//   dA A-ranks per attention group (attention DP degree r*dA; M = r*p*dA attention GPUs),
//   cp context-parallel degree of the attention side, in {1, 2, 4, 8}, dividing dA and the GPUs of
//      a node: a micro-batch's sequence is split over cp A-ranks of one node (ring attention with
//      load-balanced causal chunks, runtime/cost/Roofline.h kvRingChunkBytes): per A-rank s/cp
//      tokens per micro-batch (activations and logits / cp), the attention core as ring passes
//      whose K/V transfers over NVLink overlap with compute (ringAttentionSeconds), the M2N/N2M of
//      a micro-batch the same in total but sent from its cp GPUs; a micro-batch holds dA/cp
//      sequences per group, so the largest micro-batch count grows with cp (a smaller bubble);
//   eF F-ranks per FFN group (the EP degree; F-rank j holds a contiguous block of floor or ceil of
//      E/eF experts, the busiest ceil(E/eF); W-M = r*p*eF FFN GPUs),
//   nA, nF NICs of each side, m micro-batches per replica per step, and each side's activation
//      recomputation: none, selective (elementwise ops) or full (one extra forward of the stage),
//      trading compute for memory (runtime/cost/Memory.h),
// for a fixed number of tokens per step, under the per-GPU memory limit (runtime/cost/Memory.h),
// minimising the step time  K * max(U_a, U_f) + D  (stage alignment: the pipeline runs at the
// pace of the slower side), with ties broken by MFU (fewer GPUs for the same time):
//   U_x  busy time of the busiest group of side x per micro-batch: the sum over its layers of the
//        roofline stage time max(FLOPs / (GPUs * peak), bytes / min(NICs * NIC bw, GPUs * PCIe bw))
//        (DisagMoE roofline, docs/reference/papers.md), plus the LM head on the head group;
//   K    m + (2p - 1) / v: m micro-batches, and the fill/drain bubble of the ring of 2p stages,
//        (2p - 1) stage times of U/v each (v = ceil(L/p) layers per group) — the interleaved 1F1B
//        bubble (PP - 1) * (t_f + t_b) / v of Narayanan et al. 2021 §2.2.2 with PP = 2p;
//   D    gradient synchronisation after the drain: PlannerOptions::gradSync's wire bytes over each
//        parameter's DP replicas (runtime/cost/GradSync.h: a ring all-reduce sends 2 (n-1)/n of
//        the gradients, the distributed optimizer (n-1)/n of the gradients and of the bf16
//        weights; Patarasuk & Yuan 2009) / per-GPU NIC bandwidth.
// All times in seconds, FLOP/s, bytes, bytes/s. Plain C++ (no MLIR, no Z3 in this header; errors
// as llvm::Error from LLVMSupport); functions never throw.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_PLACEMENT_SOLVER_PLANNER_H
#define DISAGMOE_PASSES_PLACEMENT_SOLVER_PLANNER_H

#include "runtime/cost/GradSync.h"
#include "runtime/cost/Hardware.h"
#include "runtime/cost/Memory.h"
#include "runtime/cost/ModelShape.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace disagmoe::placement {

/// Recomputation the options allow on both sides: Auto lets the solver choose each side's level;
/// Never = none, Always = full, Selective = selective on both sides.
enum class Recompute { Auto, Never, Always, Selective };

struct PlannerOptions {
  int64_t seqLen = 4096;
  int64_t globalTokens = int64_t(1) << 24; ///< tokens per step, all replicas (16M)
  Recompute recompute = Recompute::Auto;
  cost::MemoryOptions memory;
  /// How gradients are synchronised (D); its distributedOptimizer should equal memory.zero1.
  cost::GradSyncOptions gradSync;
  double reserveBytes = 4e9;  ///< per GPU, not usable by the model (CUDA context, NCCL buffers)
  double expertImbalance = 1; ///< busiest F-rank load / mean (1: balanced; from expert placement)
  // Optional fixed choices (0 = free). Contradictions are reported by name.
  int64_t fixedGroups = 0, fixedAttnGpus = 0, fixedFfnGpus = 0, fixedMicrobatches = 0;
  int64_t fixedReplicas = 0;
  int64_t fixedCp = 0; ///< context-parallel degree (0 = free: the solver picks from {1, 2, 4, 8})
  /// fixedCp was set by the tool, not by the user's --cp (disagmoe simulate pins cp 1): the
  /// "does not fit" line then does not name --cp among the options that narrowed the choice.
  bool cpPinnedByTool = false;
  double timeLimitSeconds = 60; ///< Z3 safety net: past it, the best configuration found so far
  /// Under the roofline the largest micro-batch count (one sequence per CP group of cp A-ranks per
  /// micro-batch) dominates every smaller one: the same GPUs, a smaller bubble share and fewer
  /// activations in flight (docs/placement.md, "Exactness"). Candidates keep only it unless this is
  /// set (the tests set it to check the pruning) or --microbatches fixes m.
  bool allMicrobatchCounts = false;
};

/// Structural choice; NICs and recomputation are chosen on top of it.
struct Candidate {
  int64_t replicas = 1, groups = 1, attnRanks = 1, ffnRanks = 1, microbatches = 1;
  int64_t cp = 1; ///< context-parallel degree: A-ranks sharing one sequence (divides attnRanks)
  int64_t attnGpus() const { return replicas * groups * attnRanks; }
  int64_t ffnGpus() const { return replicas * groups * ffnRanks; }
  int64_t gpus() const { return attnGpus() + ffnGpus(); }
};

struct Config {
  Candidate cand;
  cost::Recomputation attnRecompute = cost::Recomputation::None;
  cost::Recomputation ffnRecompute = cost::Recomputation::None;
  int64_t attnNics = 1, ffnNics = 1;
  /// True when either side recomputes anything.
  bool anyRecompute() const {
    return attnRecompute != cost::Recomputation::None || ffnRecompute != cost::Recomputation::None;
  }
};

/// Everything the planner knows about one configuration.
struct Evaluation {
  double stepTime = 0;                    ///< seconds
  double attnBusy = 0, ffnBusy = 0;       ///< U_a, U_f: seconds per micro-batch (busiest group)
  double attnCompute = 0, ffnCompute = 0; ///< compute-only parts of U_a, U_f
  double attnComm = 0, ffnComm = 0;       ///< communication-only parts (each layer's bytes / bw)
  double bubbleFactor = 0;                ///< K = m + (2p - 1) / v
  double gradSync = 0;                    ///< D
  double attnFlops = 0, ffnFlops = 0;     ///< training FLOPs per micro-batch of the busiest group
  double attnBytes = 0, ffnBytes = 0;     ///< exchange bytes per micro-batch (larger direction)
  double attnBandwidth = 0, ffnBandwidth = 0;  ///< bytes/s of a group's NICs
  cost::MemoryBreakdown attnMemory, ffnMemory; ///< busiest GPU of each side
  bool fitsMemory = false;
  double mfu = 0; ///< model FLOPs (no recomputation) / (step time * GPUs * peak)
};

struct Problem {
  cost::ModelShape model;
  cost::ClusterSpec cluster;
  PlannerOptions options;
};

/// The structural candidates (all integer constraints but NICs, memory and time applied). Fails
/// with one line naming the options (or the model or cluster) when they contradict each other or
/// the cluster, or when no configuration satisfies the integer constraints.
llvm::Expected<std::vector<Candidate>> enumerateCandidates(const Problem &problem) noexcept;

/// The roofline evaluation of one configuration.
Evaluation evaluate(const Problem &problem, const Config &config);

/// Largest NIC counts each side may have: NICs of the nodes its GPUs occupy (attention GPUs fill
/// the first nodes, FFN GPUs the next), and at least one NIC left to the other side.
std::pair<int64_t, int64_t> nicCaps(const Problem &problem, const Candidate &cand);

struct Solution {
  bool ok = false;
  std::string error; ///< why there is no solution (infeasible input: smallest memory needed)
  Config config;
  Evaluation eval;
  bool optimal = false; ///< proven optimal (false: time limit hit, best found so far)
  std::string note;     ///< e.g. "Z3 time limit of 5 s reached: best configuration found so far"
  int64_t candidates = 0, queries = 0;
  double seconds = 0;
};

/// Enumerates every candidate, recomputation level of each side and NIC split (the oracle of the
/// tests; it does not use the per-side dominance of lighter recomputation that solveZ3 uses).
/// With `everyNicPair` false, each attention NIC count is paired only with the most FFN NICs left
/// (exact because the FFN side time is non-increasing in its NICs; the tests check both agree),
/// which makes it usable as the benchmark's peer on 128+ GPUs.
Solution solveExhaustive(const Problem &problem, bool everyNicPair = true) noexcept;

/// Every structural candidate at its roofline-fastest pair of recomputation levels and NIC split
/// (the FFN side takes every NIC the attention side leaves, up to its cap), fastest first, at most
/// `limit` of them: the seeds of the simulated search (passes/placement/search).
std::vector<Solution> rankByRoofline(const Problem &problem, size_t limit) noexcept;

/// For each attention GPU count M, the best configuration with exactly M attention GPUs
/// (exhaustive, `everyNicPair` false), ascending M: the runner-ups that explain why a split won.
std::vector<Solution> bestPerAttentionGpus(const Problem &problem) noexcept;

/// The Z3 model (Z3Placement.cpp): one Boolean per candidate (with each side's recomputation level:
/// the lightest that fits memory, an exact dominance), integer NIC counts under linear constraints
/// (exactly one candidate, NIC budget and locality),
/// with the objective bounded by a threshold that is bisected, then tightened strictly until
/// unsatisfiable (exact); then GPUs are minimised at the optimal time (the MFU tie-break).
Solution solveZ3(const Problem &problem) noexcept;

/// Stage times of a configuration from some source: the roofline (Planner.cpp), the simulation
/// backend (AF-Pipe issue, once it exists) or measured per-stage times (StageTimes.h).
class StageTimeSource {
public:
  virtual ~StageTimeSource() = default;
  virtual std::string name() const = 0;
  /// U_a and U_f in seconds per micro-batch for `config`; false when the source cannot say.
  virtual bool busyTimes(const Problem &problem, const Config &config, double &attn,
                         double &ffn) const = 0;
};

class RooflineStageTimes : public StageTimeSource {
public:
  std::string name() const override { return "roofline"; }
  bool busyTimes(const Problem &problem, const Config &config, double &attn,
                 double &ffn) const override;
};

/// Step time of `config` with the busy times of `source` (K and D from the roofline model).
double stepTimeWith(const Problem &problem, const Config &config, const StageTimeSource &source,
                    bool &ok);

/// Hill climbing from `start` over neighbouring configurations (one of p, dA, eF, m, r moved to
/// the next allowed value, NICs moved by one or by a node's worth, a side's recomputation level
/// moved by one),
/// keeping memory feasibility, scored by `source`. Returns the local optimum.
struct LocalSearchResult {
  Config config;
  double stepTime = 0;
  int64_t moves = 0, evaluated = 0;
};
LocalSearchResult localSearch(const Problem &problem, const Config &start,
                              const StageTimeSource &source, int64_t maxMoves = 1000) noexcept;

/// For infeasible inputs: the smallest per-GPU memory any configuration needs, with its
/// dominant term, as one line.
/// With any fixed choice the line says "any configuration allowed by --groups 1 --micro-batches 8
/// needs ..." (fixedOptions), so the user sees which options narrowed the search.
std::string explainInfeasible(const Problem &problem, const std::vector<Candidate> &cands);

/// The options that fix a choice, as the user gave them ("--groups 1 --attn-gpus 2 --recompute
/// off"; --cp unless cpPinnedByTool); "" when every choice is free.
std::string fixedOptions(const PlannerOptions &options);

/// Why no configuration whose attention share of GPUs is at least attnGpus / gpus was chosen over
/// one whose step takes `chosenStep` seconds, from the candidates themselves (for reports and the
/// trend test):
///   Divisibility  no structural candidate has that share (the integer constraints);
///   Memory        with the memory limit lifted, one of them (at the lightest recomputation) would
///                 be faster than chosenStep: the per-GPU memory limit is what excludes it;
///   Slower        even with the memory limit lifted none of them is faster (the roofline itself
///                 prefers the smaller share).
struct ShareBound {
  enum class Reason { Divisibility, Memory, Slower } reason = Reason::Slower;
  int64_t candidates = 0, fitting = 0; ///< with that share; of them, fitting memory
  double bestFitStep = 0;              ///< fastest of those that fit (seconds; inf if none)
  double bestUnlimitedStep = 0;        ///< fastest with the memory limit lifted (seconds)
  double bestUnlimitedBytes = 0;       ///< per-GPU memory that one needs (larger side, bytes)
  std::string text;                    ///< one line naming the reason with the numbers
};
ShareBound explainShareBound(const Problem &problem, int64_t attnGpus, int64_t gpus,
                             double chosenStep) noexcept;

} // namespace disagmoe::placement

#endif
