//===- GradSync.h - how a step synchronises data-parallel gradients -*- C++ -*-===//
//
// One choice for DisagMoE and every baseline alike (runtime/sim/GradSync.h emits it into a
// schedule, the planner's D term prices it):
//  - the reduction dtype: fp32 (4 bytes per gradient on the wire; Megatron-LM's default with
//    --accumulate-allreduce-grads-in-fp32) or bf16 (2 bytes; --grad-reduce-in-bf16);
//  - the algorithm: a ring all-reduce of the gradients (every replica then updates the whole
//    parameter), or the distributed optimizer (ZeRO-1, Rajbhandari et al. 2020; Megatron-LM's
//    --use-distributed-optimizer): a reduce-scatter of the gradients, each replica updates its
//    1/n shard, then an all-gather of the updated bf16 weights. Its optimizer state is sharded,
//    which is what MemoryOptions::zero1 budgets, so the two must agree (checked by the callers).
// Wire bytes per rank of n replicas (ring, Patarasuk & Yuan 2009): all-reduce 2 (n-1)/n x G,
// reduce-scatter and all-gather (n-1)/n x G and (n-1)/n x W, with G = params x reduceBytes and
// W = params x weightBytes.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_RUNTIME_COST_GRADSYNC_H
#define DISAGMOE_RUNTIME_COST_GRADSYNC_H

#include <string>

namespace disagmoe::cost {

struct GradSyncOptions {
  double reduceBytes = 4;           ///< bytes per gradient element on the wire: 4 fp32, 2 bf16
  bool distributedOptimizer = true; ///< reduce-scatter + all-gather (ZeRO-1) instead of all-reduce
  double weightBytes = 2;           ///< bytes per weight all-gathered after the sharded update

  /// Bytes one rank sends (= receives) to synchronise `params` parameters over n replicas.
  double wireBytes(double params, double n) const {
    if (n < 2)
      return 0;
    const double f = (n - 1) / n;
    return distributedOptimizer ? f * params * (reduceBytes + weightBytes)
                                : 2 * f * params * reduceBytes;
  }
  /// "fp32 all-reduce", "bf16 reduce-scatter + all-gather".
  std::string describe() const {
    return std::string(reduceBytes == 2 ? "bf16" : "fp32") +
           (distributedOptimizer ? " reduce-scatter + all-gather" : " all-reduce");
  }
};

/// Parses "fp32" / "bf16" into reduceBytes; false on anything else.
inline bool parseReduceDtype(const std::string &name, double &bytes) {
  if (name == "fp32")
    bytes = 4;
  else if (name == "bf16")
    bytes = 2;
  else
    return false;
  return true;
}

} // namespace disagmoe::cost

#endif
