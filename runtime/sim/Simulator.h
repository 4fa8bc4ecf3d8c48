//===- Simulator.h - discrete-event replay of a schedule at cluster scale -*- C++ -*-===//
//
// The `sim` backend (disagmoe-run --backend sim, disagmoe simulate): replays a plan's schedule
// (runtime/plan/Schedule.h) with a clock instead of kernels. Model (docs/results.md lists every
// assumption):
//  - Compute: an instruction takes max(FLOPs / (peak x efficiency), HBM bytes / HBM bandwidth)
//    (the roofline of runtime/cost), or the measured time of its op from a calibration file.
//    The forward and backward streams of a rank share its GPU: concurrent compute instructions
//    progress at 1/n of the GPU's rate each (processor sharing).
//  - Network: each rank has an NVLink port and a NIC share per direction; an exchange is a flow
//    that loads each link class (NVLink/NIC, in/out, per group) by the bytes of its busiest rank:
//    peers on the same node over NVLink, others over the NIC. Concurrent flows share links
//    max-min fairly (progressive filling on each flow's fraction of its stand-alone speed).
//    Collectives (all_reduce, reduce_scatter, all_gather) are hierarchical rings, NCCL's
//    intra-node then inter-node rings pipelined over chunks: per member (k-1)/k of the payload
//    over NVLink for each intra-node half and 2 (N-1)/N of its 1/k shard over its NIC (k members
//    per node, N nodes; a reduce-scatter or all-gather alone is half of each), the slower link
//    class setting the pace.
//  - Streams: a compute stream runs its instructions one after another; the comm stream issues
//    its instructions in order without waiting for them (sends are buffered; a receive completes
//    when its message has arrived). An instruction starts once its `after` instructions are done.
//  - Symmetry: the ranks of a group run the same instructions on the same amount of work (the
//    busiest rank's, e.g. the F-rank with the most experts), and every pipeline replica behaves
//    alike, so one replica of groups is simulated and per-rank figures are their group's.
//
// Plain C++ (no MLIR, no Z3). simulate() never throws.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_RUNTIME_SIM_SIMULATOR_H
#define DISAGMOE_RUNTIME_SIM_SIMULATOR_H

#include "runtime/plan/Schedule.h"

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe::sim {

/// Measured per-op times that replace the roofline (format "disagmoe-op-times", version 1;
/// docs/results.md, "Calibration"): entries {role, op, phase, layer (-1: any), seconds}.
/// An entry whose op is "exchange:<op>" (e.g. "exchange:m2n", role = the SENDING group's role)
/// replaces the network model for the sends of that exchange: each is done, and its message
/// delivered, that many seconds after it starts (a measured in-process handoff: pack, enqueue,
/// wake-up, unpack; bench/calibration/calibrate.py measures it from an execution trace).
struct OpTimes {
  static constexpr const char *kExchangePrefix = "exchange:";
  struct Entry {
    std::string role; ///< "" = any role
    std::string op;
    sched::Phase phase = sched::Phase::Forward;
    int layer = -1;
    double seconds = 0;
  };
  std::vector<Entry> entries;
  /// The most specific entry (exact layer before any layer); null when none matches.
  const Entry *find(const std::string &role, const std::string &op, sched::Phase phase,
                    int layer) const;
  bool load(const std::string &path, std::string &error);
};

struct SimOptions {
  /// Dynamic streams, which schedule builders use once to fix the stream orders (freezeOrder; the
  /// replay of the frozen plan then follows them): a dynamic compute stream runs, among its ready
  /// instructions, the one with the smallest `priority` (list scheduling); a dynamic comm stream
  /// issues each instruction as soon as it is ready. Otherwise streams follow program order.
  bool dynamicCompute = false, dynamicComm = false;
  const std::vector<std::vector<double>> *priority = nullptr; ///< [program][instruction]
  const OpTimes *opTimes = nullptr;
  /// > 0: the ranks are threads of one CPU host with this many cores (disagmoe-run's cpu backend,
  /// bench/calibration) instead of one device each: every running compute instruction of every
  /// rank is a thread (a group of D ranks runs D of them), and all progress at min(1, cores /
  /// threads) of their measured rate (processor sharing over the host). 0: one device per rank.
  double hostCores = 0;
  bool recordTimes = false; ///< fill SimResult::start / end
};

struct GroupStats {
  double busy = 0;        ///< seconds with at least one compute instruction running
  double commActive = 0;  ///< seconds with at least one flow of this group in progress
  double exposedComm = 0; ///< seconds with a flow in progress and no compute running
  double firstStart = -1; ///< start of its first compute instruction
  double lastEnd = 0;     ///< end of its last instruction
  double flops = 0;       ///< per rank
};

struct SimResult {
  bool ok = false;
  std::string error;
  double stepTime = 0;
  std::vector<GroupStats> groups;
  /// Means over all ranks (every replica): idle share of the step, exposed and total
  /// communication seconds.
  double bubbleFraction = 0, exposedComm = 0, commActive = 0, busy = 0;
  double mfu = 0; ///< Schedule::modelFlops / (step x ranks x peak)
  int64_t instructions = 0, events = 0, flows = 0;
  double wallSeconds = 0;
  /// Per program and instruction (with SimOptions::recordTimes): start (issue for exchanges) and
  /// end.
  std::vector<std::vector<double>> start, end;
  /// Per program and instruction: the global order in which instructions started (ties in time).
  std::vector<std::vector<int64_t>> startOrder;
};

SimResult simulate(const sched::Schedule &s, const SimOptions &options = {});

/// Writes a Chrome trace (Perfetto, chrome://tracing) of a simulation that recorded times, in the
/// runtime's layout (runtime/executor/OpProfile.h, writeExecutionTrace): one process per group,
/// standing for its ranks (pid = its first rank, named "rank R (role group G, N ranks)"), tracks
/// tid 0 "forward", 1 "backward", 2.. "comm K" (overlapping exchanges on extra comm lanes); "X"
/// events with args mb, layer, phase and step (1); exchanges with their bytes per rank pair, and a
/// flow arrow from each Send to the Recv of the same message. At most `maxEvents` "X" events.
bool writeChromeTrace(const sched::Schedule &s, const SimResult &r, const std::string &path,
                      std::string &error, int64_t maxEvents = 2000000);

/// Freezes the stream orders of a dynamic run into `s`: each group's instructions sorted per stream
/// by start time (exchanges by issue time, a receive at the issue time of its send, so that every
/// pair of groups posts receives in send order), with `after` indices remapped. Needs recordTimes.
void freezeOrder(sched::Schedule &s, const SimResult &dynamicRun);

} // namespace disagmoe::sim

#endif
