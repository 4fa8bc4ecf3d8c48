//===- AfPipeBound.h - a lower bound on any simulation of an AF-Pipe schedule -*- C++ -*-===//
//
// The simulator (runtime/sim/Simulator.h) runs a compute instruction for max(FLOPs / (peak x
// efficiency), HBM bytes / HBM bandwidth) seconds of a GPU, and a group's concurrent compute
// instructions share its GPU (their rates sum to at most 1). So a group's compute instructions
// take at least the sum of their FLOPs / (peak x efficiency) seconds, and no simulated step of
// the schedule buildAfPipe builds (afpipe/AfPipe.h) is shorter than that sum for its busiest
// group. Counted here, per micro-batch and group, from the Workload the schedule is built from:
// an attention group g, the forward and backward FLOPs of its layers l = g (mod p); an FFN group
// g, the routed experts' forward and backward FLOPs of its MoE layers and its FFN-side dense FFN
// or shared experts; times the micro-batches (one replica is simulated, the replicas being
// alike). The head, the embedding and the optimizer are left out, which only lowers the bound.
//
// Not a bound with measured op times (sim::OpTimes replace the FLOP model). Units: seconds.
// Never throws.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_SCHEDULE_AFPIPEBOUND_H
#define DISAGMOE_PASSES_SCHEDULE_AFPIPEBOUND_H

#include "passes/schedule/AfPipe.h"

namespace disagmoe::afpipe {

/// The busiest group's compute seconds (above) of the AF-Pipe schedule of `work` under `config`
/// on `hw` (peakFlops > 0; 0 when it is not). Any window: the bound does not depend on it.
double computeBoundSeconds(const Workload &work, const Config &config, const sched::Hardware &hw);

} // namespace disagmoe::afpipe

#endif
