// The training API: data-parallel attention groups, expert-parallel FFN groups, one step at a time
// (docs/training.md). It holds each rank's fp32 master weights, gradients and optimizer state and
// runs trainRank (TrainStep.h) on every rank: all ranks in this process over the local comm
// (step), or this process's one rank over any Comm such as MPI (stepRank).
//
// Usage:
//   Plan plan = loadPlan("out/plan");
//   TrainOptions o;  o.optimizer = {OptimizerKind::AdamW, 1e-3};  o.microBatches = 2;
//   Trainer trainer(plan, o);                            // binds the weights (throws WeightError)
//   StepResult r = trainer.step(ids, targets, batch, seq);  // r.loss: mean CE over the targets
//   trainer.saveGradients("grads/");  trainer.saveWeights("weights/");
#pragma once

#include "runtime/comm/Comm.h"
#include "runtime/plan/Plan.h"
#include "runtime/tensor/Tensor.h"
#include "runtime/train/LrSchedule.h"
#include "runtime/train/Optimizer.h"
#include "runtime/train/TrainStep.h"

#include <chrono>
#include <string>
#include <vector>

namespace disagmoe {
class OpProfile;
}

namespace disagmoe::train {

struct TrainOptions {
  OptimizerConfig optimizer; ///< optimizer.lr is the schedule's lr_max
  LrSchedule schedule;       ///< warm-up and cosine decay (LrSchedule.h); default: constant lr
  /// > 0: clip the gradients to this global L2 norm (GradientClipping.h); 0: no clipping.
  double clipGradNorm = 0;
  /// >= 0: coefficient alpha of the Switch load-balancing auxiliary loss (StepConfig::auxLossCoef).
  double auxLossCoef = 0;
  /// > 0: capacity factor C (StepConfig::capacityFactor); 0: dropless routing (default).
  double capacityFactor = 0;
  /// > 0: DeepSeek-V3 router bias update rate u (StepConfig::routerBiasUpdateRate); 0: none.
  double routerBiasUpdateRate = 0;
  /// Micro-batches per step (consecutive sequences; splitMicroBatches); gradients accumulate.
  int64_t microBatches = 1;
  /// A receive's deadline; half of it is the heartbeat deadline of a silent rank (Heartbeat.h).
  std::chrono::milliseconds recvTimeout{60000};
  /// >= 0: this process runs only that rank (stepRank), so only its weights are bound.
  int onlyRank = -1;
  /// Non-null: step() times every instruction of every rank into it (runtime/executor/OpProfile.h),
  /// tagged with the step number; the all-reduce, clipping and optimizer as one "optimizer" event.
  OpProfile *profile = nullptr;
  /// Non-empty: the initial weights come from here instead of the plan's files
  /// (runtime/plan/Weights.h; disagmoe-run --init-weights, HfWeights.h).
  WeightSource weights;
};

struct StepResult {
  double loss = 0;          ///< mean cross-entropy over the global batch's target tokens
  int64_t targetTokens = 0; ///< N
  int64_t step = 0;         ///< optimizer steps taken so far
  double wallSeconds = 0;
  double lr = 0;       ///< learning rate this step used (the schedule's)
  double gradNorm = 0; ///< global gradient L2 norm before clipping
  double clipCoef = 1; ///< clipping factor applied (1: none)
  double auxLoss = 0;  ///< load-balancing auxiliary loss (0 without auxLossCoef); not in `loss`
  /// [numLayers][numExperts]: token-expert assignments of the global batch (top-k choices, before
  /// any drop), summed over micro-batches and ranks.
  std::vector<std::vector<int64_t>> expertLoad;
  /// [numLayers]: assignments dropped by the capacity factor (all zero when dropless).
  std::vector<int64_t> dropped;
  bool capacityLimited = false; ///< whether a capacity factor was set (the step line reports drops)
  /// The lowest layer whose forward output held a NaN or Inf, over the ranks in this process
  /// (ties: the lower rank); layer -1 when none (or not known: stepRank reports its own rank only).
  NonFinite firstNonFinite;
};

class Trainer {
public:
  /// Binds the weights of every rank of `plan` (or only options.onlyRank's); `plan` must outlive
  /// it. Throws ExecError for an invalid schedule or clip norm.
  explicit Trainer(const Plan &plan, TrainOptions options = {});

  /// One step of all ranks in this process (local comm, one thread per rank). `targets`:
  /// [batch*seqLen], the target id of each position, negative for none (nextTokenTargets gives the
  /// causal LM's). Throws ExecError for bad input or the first rank failure (ExecError /
  /// CommError).
  StepResult step(const std::vector<int64_t> &ids, const std::vector<int64_t> &targets,
                  int64_t batch, int64_t seqLen);

  /// One step of `comm.rank()` only (every other rank runs stepRank in its own process at the
  /// same time); the loss is gathered to rank 0 and sent back, so every rank returns the same
  /// StepResult. Bit-identical to step() for the same plan and input.
  StepResult stepRank(Comm &comm, const std::vector<int64_t> &ids,
                      const std::vector<int64_t> &targets, int64_t batch, int64_t seqLen);

  /// Whether weight `index` has a holder in this process; its current value and last gradient
  /// (after the all-reduce) from the lowest-ranked holder here. Throws ExecError when not held.
  bool holds(int index) const;
  const Tensor &weight(int index) const;
  const Tensor &gradient(int index) const;
  const RankState &state(int rank) const { return states_.at(static_cast<size_t>(rank)); }

  /// Optimizer steps taken (the schedule's step count; restored from a checkpoint).
  int64_t steps() const { return steps_; }
  const TrainOptions &options() const { return options_; }
  /// AdamW moments of weight `index` from its lowest holder here (empty before the first AdamW
  /// step).
  const Tensor &firstMoment(int index) const;
  const Tensor &secondMoment(int index) const;
  /// Sets weight `index` and its AdamW moments (nullptr: none yet) on every holder in this process,
  /// for resuming from a checkpoint. Throws ExecError when a shape differs from the plan's.
  void restore(int index, const Tensor &weight, const Tensor *m, const Tensor *v);
  /// Sets the step count of the trainer and of every rank (AdamW's bias correction, the schedule).
  void restoreSteps(int64_t steps);
  /// Sets layer `layer`'s router selection bias (RankState::routerBias, [numExperts]) on every rank
  /// of its attention group held here, for resuming. Throws ExecError for another length.
  void restoreRouterBias(int64_t layer, const std::vector<float> &bias);

  /// Writes DIR/<key>.npy (weightKeys) for every weight whose LOWEST holder (spec.ranks[0]) runs in
  /// this process, so one process per rank writes each weight exactly once. Creates DIR. With a
  /// router bias update rate, saveWeights also writes DIR/l{l}_router_selection_bias.npy (float32
  /// [numExperts]) from the lowest rank of layer l's attention group, when it runs here.
  void saveWeights(const std::string &dir) const;
  void saveGradients(const std::string &dir) const;

private:
  StepConfig stepConfig() const; // the optimizer with the schedule's lr for step steps_ + 1
  StepResult finish(const std::vector<RankStepResult> &results, int64_t N,
                    std::chrono::steady_clock::time_point start);
  void checkInput(const std::vector<int64_t> &ids, const std::vector<int64_t> &targets,
                  int64_t batch, int64_t seqLen, const std::vector<MicroBatch> &microBatches) const;
  const RankState *holder(int index) const;
  void save(const std::string &dir, bool gradients) const;

  const Plan &plan_;
  TrainOptions options_;
  std::vector<RankState> states_; // [worldSize]; only onlyRank's filled when set
  int64_t steps_ = 0;
};

/// "step N expert load: l0 [c0 c1 ...] l1 [...]\n": StepResult::expertLoad, one list per layer;
/// with a capacity factor followed by " | dropped per layer [d0 d1 ...]" (StepResult::dropped).
std::string expertLoadLine(const StepResult &r);
/// One line in place of expertLoadLine where E x L numbers would not be read (disagmoe-run's
/// default output): "step N expert load (L layers x E experts): tokens per expert 0-11, busiest
/// 11 = 2.75 x the mean (layer 0 expert 0), 1 idle expert slot (--verbose: every count)\n", with
/// " | dropped D" after a capacity factor dropped assignments.
std::string expertLoadSummary(const StepResult &r);
/// The same as a JSON array of arrays ("[[c0, c1], [..]]"), for the loss log.
std::string expertLoadJson(const StepResult &r);
/// StepResult::dropped as a JSON array.
std::string droppedJson(const StepResult &r);

/// The number of non-negative entries of `targets`.
int64_t countTargets(const std::vector<int64_t> &targets);

} // namespace disagmoe::train
