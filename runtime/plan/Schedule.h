//===- Schedule.h - the pipeline schedule of a plan (AF-Pipe and baselines) -*- C++ -*-===//
//
// The optional `schedule` section of plan.json (docs/plan-format.md, "schedule"): per group role,
// an ordered program of explicit forward, backward, exchange and update instructions per
// component and micro-batch, each on one of three streams (forward compute, backward compute,
// communication), parametrised by group (every rank of a group runs the same instructions, and
// every pipeline replica runs the same groups), so a 1024-rank plan stays as small as one replica
// of groups.
//
// The simulator (runtime/sim) replays it; the verifier (verifySchedule) checks, at compile time and
// when a plan is loaded, that every send has exactly one receive of the same size in the same order
// per pair of ranks, that no rank waits forever (an untimed execution of all groups completes),
// that no rank is without work, and that peak memory per rank fits.
//
// Plain C++ (no MLIR, no JSON in this header); functions never throw.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_RUNTIME_PLAN_SCHEDULE_H
#define DISAGMOE_RUNTIME_PLAN_SCHEDULE_H

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe::sched {

enum class Stream : uint8_t { Forward = 0, Backward = 1, Comm = 2 };
/// What an instruction belongs to: a micro-batch's forward or backward, or the step's update
/// (gradient all-reduce, optimizer).
enum class Phase : uint8_t { Forward = 0, Backward = 1, Update = 2 };
enum class Kind : uint8_t {
  Compute,       ///< FLOPs and HBM bytes on this rank
  Send,          ///< to the ranks of `peer` (see Peers); `bytes` per rank pair
  Recv,          ///< from the ranks of `peer`; `bytes` per rank pair
  AllToAll,      ///< every rank of the group to every other rank of it; `bytes` per rank pair
  AllReduce,     ///< all-reduce of `bytes` per rank over the group's ranks in every replica
  ReduceScatter, ///< reduce-scatter of `bytes` per rank (each keeps 1/n, reduced); as AllReduce
  AllGather      ///< all-gather to `bytes` per rank (each holds 1/n before); as AllReduce
};
/// True for the three collectives (AllReduce, ReduceScatter, AllGather): members and `peers` as
/// AllReduce's. The simulator prices them hierarchically (NVLink inside a node, then the NICs),
/// Simulator.h.
bool isCollective(Kind k);
/// Which ranks a Send/Recv pairs: every rank of one group with every rank of the other (M2N,
/// N2M), or rank i with rank i (the residual route, pipeline point-to-point). For collectives:
/// All = every rank of the group in every replica (data-parallel attention weights), Same = rank i
/// of the group in every replica (expert weights, sharded inside the group).
enum class Peers : uint8_t { All, Same };

const char *toString(Stream s);
const char *toString(Phase p);
const char *toString(Kind k);
const char *toString(Peers p);

/// The machine the schedule was compiled for (per GPU, per direction; bytes, bytes/s, FLOP/s).
struct Hardware {
  std::string name;
  double peakFlops = 0; ///< dense bf16
  double hbmBandwidth = 0;
  double hbmBytes = 0;
  double nvlinkBandwidth = 0; ///< per GPU per direction
  double nicBandwidth = 0; ///< NIC bandwidth per GPU per direction (node NICs / GPUs, PCIe-capped)
  int gpusPerNode = 8;
};

struct Group {
  std::string role; ///< "attention", "ffn" (AF-Pipe) or "stage" (baselines)
  int index = 0;    ///< within its role
  /// ranks[replica][i]: global rank of position i in this group of pipeline replica `replica`.
  std::vector<std::vector<int>> ranks;
  double staticBytes =
      0; ///< weights, gradients and optimizer state per rank (trainable parameters only)
  /// The head's bf16 logits of one micro-batch (2 * vocab bytes per token, Memory.h) on the group
  /// running the head, held from its forward to its backward and counted once at the peak. They
  /// grow with the sequence, so they are not part of staticBytes (nor of the optimizer's traffic).
  double headLogitsBytes = 0;
  double nicBandwidth = 0; ///< per rank (bytes/s); 0 = Hardware::nicBandwidth
  int size() const { return ranks.empty() ? 0 : static_cast<int>(ranks[0].size()); }
};

struct Instr {
  Kind kind = Kind::Compute;
  Stream stream = Stream::Forward;
  Phase phase = Phase::Forward;
  std::string op; ///< compute: attention, experts, head, stage, optimizer; exchange: m2n, n2m,
                  ///< residual, ...
  int group = 0;  ///< index into Schedule::groups; must have the program's role
  int mb = -1, layer = -1;
  int peer = -1; ///< Send/Recv: the other group
  Peers peers = Peers::All;
  double flops = 0,
         memBytes = 0; ///< Compute: FLOPs and HBM bytes per rank (time = max of the two rooflines)
  double bytes = 0;    ///< exchanges: see Kind
  double activationBytes =
      0; ///< forward Compute: activations kept until this micro-batch's backward
  std::vector<int>
      after; ///< indices (in this program) of instructions of the same group to wait for
};

struct Program {
  std::string role;
  std::vector<Instr> instrs;
};

struct Schedule {
  std::string kind; ///< "afpipe", "1f1b-interleaved", "1f1b-interleaved-overlap", "dualpipe"
  int replicas = 1, microBatches = 0, virtualStages = 1, pipelineStages = 0;
  double capacityBytes = 0; ///< usable memory per rank (0: not checked)
  double modelFlops = 0; ///< training FLOPs of one step, all replicas, without recomputation (MFU)
  double computeEfficiency = 1; ///< fraction of peak FLOP/s compute instructions reach
  /// How a rank's forward and backward streams share its GPU: "equal" (concurrent kernels split it
  /// evenly), "backward" (the backward stream preempts: CUDA stream priorities) or "exclusive" (one
  /// compute kernel at a time at full speed, the backward stream's first when both are ready;
  /// exchanges run beside it).
  enum class Sharing : uint8_t { Equal, Backward, Exclusive };
  Sharing sharing = Sharing::Equal;
  Hardware hw;
  std::vector<Group> groups;
  std::vector<Program> programs;

  int worldSize() const;
  const Program *program(const std::string &role) const;
};

/// One line naming an instruction: "attention[12] (group attention 0): send m2n forward mb 1 layer
/// 0 to ffn 0".
std::string describe(const Schedule &s, int program, int index);

/// Options of the verifier.
struct VerifyOptions {
  /// Global ranks the plan places; every one must be in some group (empty: not checked).
  int worldSize = 0;
};

/// Verifies `s`; returns an empty string when it is valid, else one line naming the first problem
/// (the instruction, the pair of ranks, the sizes). Checks, in order: structure (groups, ranks,
/// dependency indices, roles), one exchange stream per group, send/receive matching per ordered
/// pair of groups (hence per pair of ranks) in program order with equal sizes, an untimed
/// execution of every group in which every instruction completes (no rank waits forever), that
/// every rank has compute work, and that peak memory fits Schedule::capacityBytes.
std::string verifySchedule(const Schedule &s, const VerifyOptions &options = {});

/// Upper bound of the bytes a rank of `group` holds at once: staticBytes + headLogitsBytes + the
/// most micro-batches whose activations can be live together (from the stream orders and
/// dependencies) times the largest per-micro-batch activation bytes; `inflight` receives that
/// micro-batch count.
double peakMemory(const Schedule &s, int group, int *inflight = nullptr);

/// JSON text of the schedule section and its parser (docs/plan-format.md, "schedule").
std::string scheduleToJson(const Schedule &s, int indent = -1);
/// Parses a schedule section; false with `error` naming the field ("schedule.groups[2].ranks").
bool scheduleFromJson(const std::string &text, Schedule &out, std::string &error);

} // namespace disagmoe::sched

#endif
