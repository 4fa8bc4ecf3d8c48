// The training loop of `disagmoe-run --train --data FILE` (docs/training.md, "Training on token
// files"): batches from a token file (TokenData.h) or one fixed batch, one Trainer::step each, a
// progress line per step (loss, tokens/s, lr, gradient norm), a loss log in JSON lines, periodic
// and final checkpoints (Checkpoint.h), resuming from one, and a stop on a NaN or Inf loss.
#pragma once

#include "runtime/plan/Plan.h"
#include "runtime/train/Progress.h"
#include "runtime/train/TokenData.h"
#include "runtime/train/Trainer.h"

#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace disagmoe::train {

/// The loss became NaN or Inf: the run stops (no checkpoint is written from that state).
class DivergedError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct CheckpointInfo;

struct LoopOptions {
  int64_t steps = 1;   ///< run until this many optimizer steps in total (a resumed run counts on)
  std::string lossLog; ///< JSON lines, one per step; appended to when resuming
  std::string checkpoint;      ///< one file, replaced every checkpointEvery steps and at the end
  std::string checkpointDir;   ///< or: DIR/step-<N>.safetensors + DIR/latest (CheckpointDir.h)
  int64_t keepCheckpoints = 0; ///< with checkpointDir: keep the newest N step files (0: all)
  int64_t checkpointEvery = 0; ///< 0: only after the last step
  std::string resume;          ///< a checkpoint file to continue from (resolveCheckpoint's)
  std::string dataName;        ///< the token file's path, recorded in checkpoints
  std::string config;          ///< the run's options (a JSON object), recorded in checkpoints
  /// Called with the resumed checkpoint's info once it is loaded, before any step: throws to
  /// refuse options that differ from the checkpoint's, or warns (disagmoe-run's RunConfig.h).
  std::function<void(const CheckpointInfo &resumed)> checkResumed;
  /// Set when the caller has already loaded `resume` (resumeTraining, before its header lines):
  /// the loop then only prints the "resumed from" line.
  const CheckpointInfo *resumed = nullptr;
  /// What is printed (Progress.h): Verbose (this API's default) prints every step's expert-load
  /// line; Summary one expertLoadSummary line after the last step; Quiet only the last step's
  /// line. disagmoe-run passes its --quiet / --verbose level.
  OutputLevel output = OutputLevel::Verbose;
  bool progress = false; ///< a StepProgress line (Progress.h) after each step
};

/// Step r's stdout line, without its newline. With token data (`data` not null):
///   "step S/N | loss L | X tokens/s | lr R | grad norm G[ (clipped)] | data position P[ | aux loss
///   A]"
/// Without (one fixed batch: --input, --batch/--seq-len/--seed): the line of every other --train
/// run, so that --loss-log, --save-checkpoint or --resume never change it:
///   "step S: loss L over T target tokens (W s), lr R, grad norm G[ (clipped)][, aux loss A]"
/// `tokens`: batch x seq-len, for tokens/s.
std::string stepLine(const StepResult &r, int64_t steps, int64_t tokens, const TokenBatcher *data);

/// Throws DivergedError when step r's loss or global gradient norm is NaN or Inf:
///   "step S: loss is NaN (gradient norm G, lr X)[; the first non-finite value appeared in the
///   output of <instruction> of layer L on rank R]; stopping without writing a checkpoint or
///   weights"
/// (or "step S: gradient norm is Inf (loss L, lr X)..."). Every `disagmoe-run --train` run calls it
/// after each step, with or without --data.
void checkFinite(const StepResult &r);

/// Loads options.resume into `trainer` (and its data position into `data`, when given), runs
/// options.checkResumed on it, and refuses a checkpoint already at options.steps steps or more.
/// Called before a run prints anything, so a bad --resume fails alone. Throws
/// std::invalid_argument "--resume FILE: <what>" (a missing, unreadable or foreign file, a tensor
/// or metadata the plan does not match; CheckpointError's text after the flag) or "--resume FILE
/// is at step S and --steps N counts the total: nothing left to run (...)"; checkResumed's own
/// errors pass through.
CheckpointInfo resumeTraining(const Plan &plan, Trainer &trainer, TokenBatcher *data,
                              const LoopOptions &options);

/// How the loop steps and saves: runTrainingLoop's default is the local comm (Trainer::step and
/// saveCheckpoint, every rank in this process); with one process per rank (--comm mpi) the caller
/// gives Trainer::stepRank and saveCheckpointGathered, and only rank 0 reports.
struct LoopRuntime {
  std::function<StepResult(const std::vector<int64_t> &ids, const std::vector<int64_t> &targets)>
      step;
  std::function<void(const std::string &path, const CheckpointInfo &info)> saveCheckpoint;
  bool report = true; ///< print the progress lines and write the loss log
  /// This process writes the checkpoint files (rank 0 under mpi): it creates checkpointDir,
  /// writes `latest` and prunes old step files after each saveCheckpoint.
  bool writesCheckpoints = true;
};

/// Runs the loop. `data`: the batch source, or nullptr to train on `ids`/`targets` every step.
/// Each step prints to `out`:
///   step S/N | loss L | T tokens/s | lr X | grad norm G[ (clipped)] | data position P
/// and appends {"step", "loss", "lr", "grad_norm", "clip_coef", "target_tokens", "tokens_per_s",
/// "seconds", "data_position"} to the loss log. Each checkpoint prints
///   checkpoint at step S written to PATH[; removed step-... (keeping the newest K)]
/// With checkpointDir the file is DIR/step-<S>.safetensors, then DIR/latest names it, then the
/// step files beyond keepCheckpoints are deleted (CheckpointDir.h). Throws DivergedError("step S:
/// loss is NaN ...", naming the first forward output that held a NaN/Inf: instruction, layer, rank)
/// on a non-finite loss or gradient norm (checkFinite), std::invalid_argument when a resumed
/// checkpoint already holds options.steps steps or more (nothing left to run), CheckpointError /
/// DataError / ExecError otherwise. When the data wraps to position 0 it prints one line
///   data: end of FILE reached after T tokens; wrapping to position 0 (epoch E)
void runTrainingLoop(const Plan &plan, Trainer &trainer, TokenBatcher *data,
                     std::vector<int64_t> ids, std::vector<int64_t> targets, int64_t batch,
                     int64_t seqLen, const LoopOptions &options, std::ostream &out);
/// The same loop over `runtime` (every process of an mpi job calls it with the same arguments).
void runTrainingLoop(const Plan &plan, Trainer &trainer, TokenBatcher *data,
                     std::vector<int64_t> ids, std::vector<int64_t> targets, int64_t batch,
                     int64_t seqLen, const LoopOptions &options, const LoopRuntime &runtime,
                     std::ostream &out);

} // namespace disagmoe::train
