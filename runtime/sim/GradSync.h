//===- GradSync.h - gradient synchronisation instructions in a schedule -*- C++ -*-===//
//
// Emits cost::GradSyncOptions (runtime/cost/GradSync.h) into a schedule, the same way for AF-Pipe
// and the baselines, on the communication stream of the group holding the parameters:
//  - reduce(): after the last backward of the parameters' layer(s), an all_reduce (or, with the
//    distributed optimizer, a reduce_scatter) of params x reduceBytes, so that a layer's gradients
//    travel while the rest of the backward runs; the optimizer waits for it;
//  - gather(): with the distributed optimizer, the all_gather of the updated bf16 weights. In the
//    steady state of training it overlaps the next step's forward (Megatron-LM's
//    --overlap-param-gather), so a one-step schedule issues it at the start of the step and the
//    forwards that read the weights wait for it. Without the distributed optimizer: none.
// Both go on the stream of the group's exchanges (the comm stream, or the one stream of a
// schedule without overlap).
// The simulator prices the collectives hierarchically (Simulator.h).
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_RUNTIME_SIM_GRADSYNC_H
#define DISAGMOE_RUNTIME_SIM_GRADSYNC_H

#include "runtime/cost/GradSync.h"
#include "runtime/sim/ScheduleBuilder.h"

#include <string>

namespace disagmoe::sim {

class GradSync {
public:
  /// `stream`: the stream of the group's exchanges (Comm, or Forward where one stream runs all).
  GradSync(ScheduleBuilder &b, cost::GradSyncOptions o, sched::Stream stream = sched::Stream::Comm)
      : b_(b), o_(o), stream_(stream) {}
  /// `params` parameters per rank of `group`, synchronised over `peers` (Schedule.h); `what` names
  /// them ("attention", "experts", ...; the ops are grad_<what> and weights_<what>). Returns the
  /// handle the optimizer waits for, or -1 when params is 0.
  int reduce(int group, sched::Peers peers, const std::string &what, int layer, double params,
             int after);
  /// Returns the handle every forward reading the weights waits for, or -1 (no distributed
  /// optimizer, or params 0).
  int gather(int group, sched::Peers peers, const std::string &what, int layer, double params);
  const cost::GradSyncOptions &options() const { return o_; }

private:
  ScheduleBuilder &b_;
  cost::GradSyncOptions o_;
  sched::Stream stream_;
};

} // namespace disagmoe::sim

#endif
