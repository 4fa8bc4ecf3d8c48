// Per-op timing of executed steps, for calibration and tracing (issue 7, "Calibration" and
// "Observability"): each rank's streams append one event per executed instruction and per send or
// receive of its comm stream (one vector per rank, behind the rank's RankRecorder lock), and after
// the run the profile is written as
//  - measured op times in the sim backend's "disagmoe-op-times" format (docs/plan-format.md,
//    "Measured op times"; read by disagmoe-run --backend sim --op-times), or
//  - a Chrome trace (Trace Event Format: "X" complete events, "ts"/"dur" in microseconds, one
//    track per stream of each rank; chrome://tracing and Perfetto open it).
//
// Mapping to the schedule's compute ops (passes/schedule/AfPipe.cpp): on an A-rank the embedding,
// norms, attention, residual add, router and an attention-side dense FFN of layer l are the
// schedule's `attention` of layer l (embedding: layer 0), the final norm and head are `head`; on an
// F-rank the routed experts are `experts` and an FFN-side dense FFN is `dense_ffn`; the gradient
// clipping and optimizer step are `optimizer` (phase update). Sends, receives and the all-reduce
// are not compute: the simulator keeps its network model for them.
//
// Aggregation (writeOpTimes): per (role, op, phase, group, layer, micro-batch, step) the seconds of
// each rank are summed and the busiest rank of the group taken (the simulator runs every rank of a
// group on its busiest rank's work, runtime/sim/Simulator.h); one entry per layer is the median of
// those over micro-batches, groups and steps, and one with layer -1 (any layer) the median over all
// layers too. Units: seconds.
// Errors: std::runtime_error naming the output file (not writable); files are written to a
// temporary name and renamed, so nothing is half-written.
#pragma once

#include "runtime/plan/Plan.h"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace disagmoe {

struct OpEvent {
  std::string name;  ///< the instruction, e.g. "attention", "rms_norm attn_norm", "m2n_send"
  std::string simOp; ///< the schedule's compute op it belongs to ("" = not compute: exchanges)
  std::string phase; ///< "forward", "backward" or "update"
  int group = -1;    ///< index of the rank's group within its role
  int64_t layer = -1, microBatch = -1, step = -1;
  double start = 0, end = 0; ///< seconds since the profile's origin
  int stream = 0; ///< the rank's stream that ran it: kForwardStream, kBackwardStream, kCommStream
  /// Comm-stream messages: the other rank, the message tag, its bytes, and whether it was sent
  /// (else received). -1 / false for every other event.
  int peer = -1, tag = -1;
  int64_t bytes = -1;
  bool sent = false;
};

/// A rank's streams (RankWorker.h, TrainStep.h): each is one thread and one trace track.
constexpr int kForwardStream = 0, kBackwardStream = 1, kCommStream = 2, kStreams = 3;

class OpProfile {
public:
  explicit OpProfile(int worldSize);
  /// Seconds since construction (steady clock).
  double now() const;
  /// The events of `rank` (each rank thread touches only its own).
  std::vector<OpEvent> &events(int rank) { return events_[static_cast<size_t>(rank)]; }
  const std::vector<OpEvent> &events(int rank) const { return events_[static_cast<size_t>(rank)]; }
  int worldSize() const { return static_cast<int>(events_.size()); }
  /// The step being recorded (TrainStep tags its events with it).
  int64_t step = 0;

private:
  std::chrono::steady_clock::time_point origin_;
  std::vector<std::vector<OpEvent>> events_;
};

/// Records one rank thread's instructions into an OpProfile. The trainer installs one per rank
/// thread (ScopedRecorder) and TrainStep asks current() for it, so the step's signatures stay
/// unchanged. A micro-batch starts at the first forward instruction after a backward one.
class RankRecorder {
public:
  RankRecorder(OpProfile &profile, const Plan &plan, int rank);
  /// This thread's recorder, or null when none is installed (the normal, untimed run).
  static RankRecorder *current();
  double now() const { return profile_.now(); }
  /// Appends the instruction `index` of the rank's program, run from `start` until now.
  void record(const Instruction &ins, size_t index, bool backward, double start);
  /// The same for a caller that knows the micro-batch (the training step's concurrent streams);
  /// thread-safe, like recordComm.
  void record(const Instruction &ins, bool backward, double start, int64_t microBatch);
  /// Appends a send to or receive from rank `peer` of the comm stream (CommStream.h): a message
  /// of `bytes` bytes with `tag`, from `start` until now.
  void recordComm(const std::string &name, double start, int peer, int tag, int64_t bytes,
                  bool sent);
  /// End of the last recordComm event (0: none).
  double lastCommEnd() const { return lastCommEnd_; }
  /// Appends an event that is not a program instruction (e.g. the optimizer step).
  void recordOther(const std::string &name, const std::string &simOp, const std::string &phase,
                   double start);
  double lastEnd() const { return lastEnd_; }

private:
  OpProfile &profile_;
  int rank_, group_;
  GroupRole role_;
  int64_t microBatch_ = -1;
  double lastEnd_ = 0, lastCommEnd_ = 0;
  bool lastBackward_ = false;
  std::mutex mutex_; // the rank's streams append to one event list
};

/// Installs `recorder` as this thread's RankRecorder::current() for the scope's lifetime.
class ScopedRecorder {
public:
  explicit ScopedRecorder(RankRecorder *recorder);
  ~ScopedRecorder();
  ScopedRecorder(const ScopedRecorder &) = delete;
  ScopedRecorder &operator=(const ScopedRecorder &) = delete;

private:
  RankRecorder *previous_;
};

/// The schedule op an executed instruction's time counts toward ("" for exchanges), see above.
std::string simOpOf(const Instruction &ins, GroupRole role);

/// Writes the "disagmoe-op-times" JSON (version 1) of `profile`: per (role, op, phase) one entry
/// per layer and one with layer -1, each with "samples" (how many values the median is of). Throws
/// std::runtime_error if `path` cannot be written or no compute event was recorded.
void writeOpTimes(const Plan &plan, const OpProfile &profile, const std::string &path);

/// Writes a Chrome trace (Trace Event Format) of the events of step `step` (-1: every step), in
/// the layout the simulator's traces share (runtime/sim/Simulator.h, writeTrace): one process per
/// rank (pid = rank, named "rank R (role group G)"), one track per stream of it (tid 0 "forward",
/// always present, 1 "backward" and 2 "comm" when they have events); an "X" event per instruction
/// with its layer, micro-batch ("mb"), phase and step (1-based) in "args" (category "compute",
/// "send" or "recv"; the backward of a send instruction receives its gradient, so it is a "recv"),
/// and per send or receive the comm worker performed, category "comm" ("send to D tag T" from
/// taking it off the queue until handed to the Comm, "recv from S tag T" from its post, or the comm
/// track's previous event, until its message was taken) with the message's "bytes", "peer" and
/// "tag", and a flow ("s" on the send, "f" on its receive, one id per message: the k-th message
/// from a to b with tag t). Throws std::runtime_error if `path` cannot be written.
void writeExecutionTrace(const Plan &plan, const OpProfile &profile, int64_t step,
                         const std::string &path);

} // namespace disagmoe
