//===- PipelineOrder.h - per-stage unit orders of 1F1B and DualPipe, and what they keep live -*- C++
//-*-===//
//
// The order in which one pipeline stage runs its units (one chunk of one micro-batch), as the
// baselines (Baselines.h) emit them, and the activations live at each point of that order:
//  - oneFOneB: Megatron-LM's (interleaved) 1F1B (megatron/core/pipeline_parallel/schedules.py,
//    Narayanan et al. 2021 §2.2): warm-up pp - s - 1 forwards (vpp = 1) or
//    (pp - s - 1) * 2 + (vpp - 1) * pp (interleaved), then one forward and one backward, then the
//    cool-down backwards;
//  - dualPipeCells: DeepSeek's DualPipe (DeepSeek-V3 §3.2.1; deepseek-ai/DualPipe, dualpipe.py,
//    DualPipe.step, steps 1-8), as cells that run one after another; a cell holds one op, or a
//    forward and a backward of the two directions that overlap (F&B). Phase 0 is the direction in
//    which the rank sits at position min(s, pp-1-s), phase 1 the other. Backwards marked `split`
//    compute only the input gradient (B); their weight gradient (W) runs later, FIFO, where the
//    order has a W.
// A unit's activations are live from its forward to the end of its backward, or to its W when the
// backward is split (the weight gradient reads the layer inputs).
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_RUNTIME_SIM_PIPELINEORDER_H
#define DISAGMOE_RUNTIME_SIM_PIPELINEORDER_H

#include <cstdint>
#include <vector>

namespace disagmoe::sim {

/// Megatron's unit order of stage s: (forward?, unit index k in 0 .. m * vpp - 1).
std::vector<std::pair<bool, int>> oneFOneB(int pp, int vpp, int m, int s);

/// Megatron's warm-up forwards of stage s (before the first backward), capped at m * vpp.
int oneFOneBWarmup(int pp, int vpp, int m, int s);

struct PipeOp {
  /// Wait: no work; the cell also waits for the input of the next forward of `phase` (dualpipe.py
  /// posts that receive before the cell and _commit_and_wait_comm waits for every posted one).
  enum Kind { Forward, Backward, Weight, Wait } kind = Forward;
  int phase = 0;      ///< 0 or 1 (Forward, Backward, Wait); unused for Weight
  bool split = false; ///< Backward: input gradient only, its W deferred
};
using PipeCell = std::vector<PipeOp>;

/// DualPipe's cells on rank s of pp (even) ranks with n micro-batches per direction (n >= pp,
/// dualpipe.py's num_chunks >= 2 num_ranks). Every phase gets n forwards and n backwards; every
/// split backward one later W.
std::vector<PipeCell> dualPipeCells(int pp, int n, int s);

/// Peak number of units live on a stage running `cells` one after another (each op of a cell may
/// still be running while the others of its cell start), each unit weighing `unitBytes[phase]`
/// (DualPipe: the chunk of that direction). Returns the peak bytes; `peakUnits` the units then.
double dualPipeLiveBytes(const std::vector<PipeCell> &cells, const double unitBytes[2],
                         int *peakUnits = nullptr);

/// Peak bytes live on stage s under (interleaved) 1F1B with m micro-batches, where a forward unit
/// k starts once the backward units before it in the order are done and, with `window` > 0, only
/// once backward unit k - window is done (the overlapped 1F1B, whose forward and backward streams
/// run apart: window = warm-up + 2). `chunkBytes[c]`: activations of one micro-batch's chunk c of
/// this stage. `peakUnits`: the units live at that peak.
double oneFOneBLiveBytes(int pp, int vpp, int m, int s, bool overlapped,
                         const std::vector<double> &chunkBytes, int *peakUnits = nullptr);

/// Unit k of stage s's order -> (micro-batch, chunk c of the stage: virtual stage c * pp + s).
std::pair<int, int> oneFOneBUnit(int pp, int vpp, int k, bool forward);

} // namespace disagmoe::sim

#endif
