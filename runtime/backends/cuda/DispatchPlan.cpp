// Host plan of the expert permutation: counts, offsets, gather and combine lists (DispatchPlan.h).
#include "runtime/backends/cuda/DispatchPlan.h"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

namespace disagmoe::cuda {

DispatchPlan planDispatch(const int64_t *expertIds, const float *gates, int64_t tokens, int64_t k,
                          int64_t numExperts) {
  if (tokens < 0 || k < 0 || numExperts < 0)
    throw DispatchError("planDispatch: tokens = " + std::to_string(tokens) +
                        ", k = " + std::to_string(k) +
                        ", numExperts = " + std::to_string(numExperts) + " (each must be >= 0)");
  if (k > 0 && tokens > INT32_MAX / k)
    throw DispatchError("planDispatch: tokens * k = " + std::to_string(tokens) + " * " +
                        std::to_string(k) +
                        " exceeds INT32_MAX (the kernels index rows with int32)");
  DispatchPlan plan;
  plan.tokens = tokens;
  plan.numExperts = numExperts;
  plan.counts.assign(static_cast<size_t>(numExperts), 0);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = expertIds[t * k + j];
      if (e < 0)
        continue;
      if (e >= numExperts)
        throw DispatchError("planDispatch: token " + std::to_string(t) + " slot " +
                            std::to_string(j) + " names expert " + std::to_string(e) +
                            ", outside [0, " + std::to_string(numExperts) + ")");
      for (int64_t i = 0; i < j; ++i)
        if (expertIds[t * k + i] == e)
          throw DispatchError("planDispatch: token " + std::to_string(t) + " names expert " +
                              std::to_string(e) + " twice (slots " + std::to_string(i) + " and " +
                              std::to_string(j) + ")");
      ++plan.counts[e];
    }
  plan.offsets.assign(static_cast<size_t>(numExperts) + 1, 0);
  for (int64_t e = 0; e < numExperts; ++e)
    plan.offsets[e + 1] = plan.offsets[e] + plan.counts[e];
  const int64_t rows = plan.offsets[numExperts];
  // Tokens ascending fill each expert's segment in ascending token order.
  std::vector<int64_t> next(plan.offsets.begin(), plan.offsets.end() - 1);
  plan.sourceRow.assign(static_cast<size_t>(rows), 0);
  plan.combineStart.assign(static_cast<size_t>(tokens) + 1, 0);
  plan.combineRow.reserve(static_cast<size_t>(rows));
  plan.combineGate.reserve(static_cast<size_t>(rows));
  std::vector<std::pair<int64_t, int64_t>> routes; // (expert, slot) of one token
  for (int64_t t = 0; t < tokens; ++t) {
    routes.clear();
    for (int64_t j = 0; j < k; ++j)
      if (expertIds[t * k + j] >= 0)
        routes.push_back({expertIds[t * k + j], j});
    std::sort(routes.begin(), routes.end()); // ascending expert id: the combine's fixed order
    for (const auto &[e, j] : routes) {
      const int64_t row = next[e]++;
      plan.sourceRow[row] = static_cast<int32_t>(t);
      plan.combineRow.push_back(static_cast<int32_t>(row));
      plan.combineGate.push_back(gates[t * k + j]);
    }
    plan.combineStart[t + 1] = static_cast<int32_t>(plan.combineRow.size());
  }
  return plan;
}

} // namespace disagmoe::cuda
