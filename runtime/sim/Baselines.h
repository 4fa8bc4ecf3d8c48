//===- Baselines.h - the schedules DisagMoE is compared against, on the same simulator -*- C++
//-*-===//
//
// Each baseline runs the same model, cluster and global batch as AF-Pipe, with attention and
// experts co-located on every GPU (the conventional layout):
//  - megatron:         Megatron-LM expert parallelism (EP ranks per stage group, attention data
//                      parallel over them) with interleaved 1F1B pipelining (Narayanan et al. 2021,
//                      §2.2; vpp = 1 is plain 1F1B): per layer attention, all-to-all dispatch,
//                      experts, all-to-all combine, all on one stream in Megatron's exact order
//                      (warm-up (pp - s - 1) * 2 + (vpp - 1) * pp units, then one forward and one
//                      backward, then the cool-down), so every exchange is exposed;
//  - megatron-overlap: the same order, with forward and backward compute on their own streams and
//                      the all-to-alls and pipeline sends on a communication stream, so that the
//                      exchanges of one micro-batch hide behind the compute of another (the 1F1B
//                      all-to-all overlap of Megatron-Core and DeepSeek-V3);
//  - dualpipe:         DualPipe's bidirectional pipeline (DeepSeek-V3 §3.2.1; dualpipe.py): half
//                      the micro-batches enter at stage 0 and half at stage pp-1, every rank holds
//                      the two chunks that meet it (two copies of the parameters) and runs
//                      DualPipe's cells in its order (steps 1-8, PipelineOrder.h) one after
//                      another, the forward and backward of an F&B cell side by side on their own
//                      streams, exchanges on a communication stream; the backwards the order marks
//                      compute the input gradient only (B: attention scores, the input side of
//                      every matmul) and their weight gradient (W: one forward's FLOPs of every
//                      weight matmul) runs where the order has a W (the zero-bubble split). A rank
//                      holds pp + 1 units. The gradients of the two copies of a chunk (ranks s and
//                      pp-1-s) are synchronised over each copy's replicas only, not with each
//                      other.
// Gradients: attention weights synchronised over EP x replicas ranks, expert weights over the
// replicas, each chunk's as soon as its last backward is done (overlapped with the tail), as
// BaselineConfig::gradSync says (runtime/sim/GradSync.h, the same as AF-Pipe's).
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_RUNTIME_SIM_BASELINES_H
#define DISAGMOE_RUNTIME_SIM_BASELINES_H

#include "runtime/cost/GradSync.h"
#include "runtime/cost/Memory.h"
#include "runtime/cost/ModelShape.h"
#include "runtime/plan/Schedule.h"

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe::sim {

enum class Baseline { Megatron, MegatronOverlap, DualPipe };
const char *toString(Baseline b);
bool parseBaseline(const std::string &name, Baseline &out);

struct BaselineConfig {
  Baseline kind = Baseline::Megatron;
  int64_t pp = 1;           ///< pipeline stages
  int64_t vpp = 1;          ///< virtual chunks per stage (interleaved 1F1B); 1 for DualPipe
  int64_t ep = 16;          ///< expert parallelism = ranks per stage group
  int64_t replicas = 1;     ///< outer data parallelism
  int64_t microbatches = 0; ///< per replica
  int64_t seqLen = 4096;
  int64_t sequencesPerStep = 0; ///< all replicas
  bool recompute = false;
  double reserveBytes = 4e9;
  double computeEfficiency = 1;
  cost::MemoryOptions memory;
  cost::GradSyncOptions gradSync; ///< distributedOptimizer must equal memory.zero1
};

/// Builds (and verifies) a baseline schedule of `model` on `hw`; ranks: stage s of replica r holds
/// ranks (r pp + s) ep .. + ep - 1, so an EP group of 16 spans two 8-GPU nodes. Refuses (false,
/// `error`) a configuration whose memory does not fit (baselineMemoryRefusal); the schedule's
/// capacityBytes is then 0, since sched::peakMemory's micro-batch bound would count every chunk
/// of a live micro-batch (baselineMemory is the baselines' memory).
bool buildBaseline(const cost::ModelShape &model, const sched::Hardware &hw,
                   const BaselineConfig &config, sched::Schedule &out, std::string &error,
                   bool verify = true);

/// Memory of a rank of one stage (Memory.h's terms): weights, gradients and optimizer state of its
/// chunks (ZeRO-1 over the data-parallel replicas of each parameter when memory.zero1), one
/// micro-batch's bf16 head logits on the stage with the head, and the activations of the units
/// (one chunk of one micro-batch) live at the peak of its unit order (PipelineOrder.h): Megatron
/// 1F1B / interleaved 1F1B holds its warm-up + 1 units, (pp - s - 1) + 1 for vpp = 1 and
/// (pp - s - 1) * 2 + (vpp - 1) * pp + 1 interleaved, at most m * vpp; the overlapped 1F1B one
/// more; DualPipe pp + 1 (DeepSeek-V3, Table 2), a split backward's unit live until its W.
struct BaselineStageMemory {
  double staticBytes = 0, activationBytes = 0;
  int liveUnits = 0;
  double total() const { return staticBytes + activationBytes; }
};
/// Per stage; empty for a configuration buildBaseline refuses for its shape.
std::vector<BaselineStageMemory> baselineMemory(const cost::ModelShape &model,
                                                const BaselineConfig &config);
/// "" when every stage fits the GPU's memory minus config.reserveBytes, else one line naming the
/// stage, its peak and the terms.
std::string baselineMemoryRefusal(const cost::ModelShape &model, const sched::Hardware &hw,
                                  const BaselineConfig &config);

/// A lower bound of the step the simulator gives `config` (0 for an invalid one), from the roofline
/// at the schedule's compute efficiency: over stages s, the forward chains of the chunks before
/// s's first (compute and all-to-alls in sequence, each alone on its links), all of s's compute
/// (plus its all-to-alls for the one-stream megatron), then as long again for the input gradients
/// to flow back. With measured op times (OpTimes) it does not apply.
double baselineLowerBound(const cost::ModelShape &model, const sched::Hardware &hw,
                          const BaselineConfig &config);

} // namespace disagmoe::sim

#endif
