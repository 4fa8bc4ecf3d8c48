//===- GradSync.cpp - gradient synchronisation instructions in a schedule -----------===//
#include "runtime/sim/GradSync.h"

namespace disagmoe::sim {

using namespace sched;

int GradSync::reduce(int group, Peers peers, const std::string &what, int layer, double params,
                     int after) {
  if (params <= 0)
    return -1;
  // Issued as soon as ready, after whatever the comm stream already holds (priority last).
  const Kind kind = o_.distributedOptimizer ? Kind::ReduceScatter : Kind::AllReduce;
  return b_.collective(kind, group, peers, "grad_" + what, layer, params * o_.reduceBytes, stream_,
                       1e18, {after});
}

int GradSync::gather(int group, Peers peers, const std::string &what, int layer, double params) {
  if (!o_.distributedOptimizer || params <= 0)
    return -1;
  // Ahead of every exchange of the step (priority -1): the next step's weights come first.
  return b_.collective(Kind::AllGather, group, peers, "weights_" + what, layer,
                       params * o_.weightBytes, stream_, -1, {});
}

} // namespace disagmoe::sim
