// Host logic of the cuda backend's expert permutation (CudaPermutation.h): from each token's
// routes (expert ids and gate weights of the router's top-k), the per-expert counts, their prefix
// sum (offsets), the gather list of the dispatch and the fixed-order list of the combine.
// Pure C++ (no CUDA headers): unit-tested on machines without nvcc or a GPU.
//
// Order (docs/architecture.md, "Exchanges"; runtime/executor/RankWorker.cpp `experts`): the
// permuted rows of expert e are its tokens in ascending token index, experts in ascending id; the
// combine adds g_e * E_e(x) for each token in ascending expert id, starting from zero. The same
// order as the CPU executor, so the two agree up to each GEMM's rounding.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace disagmoe::cuda {

/// Raised for routes the permutation cannot place; the message names the token and slot.
class DispatchError : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

/// The permutation of `tokens` tokens with up to k routes each onto `numExperts` experts.
/// Indices are int32 (what the kernels take); P = the number of routes kept (<= tokens * k).
struct DispatchPlan {
  int64_t tokens = 0, numExperts = 0;
  std::vector<int64_t> counts;       ///< [numExperts]: tokens routed to expert e
  std::vector<int64_t> offsets;      ///< [numExperts + 1]: exclusive prefix sum of counts
  std::vector<int32_t> sourceRow;    ///< [P]: the token of permuted row p (dispatch gather)
  std::vector<int32_t> combineStart; ///< [tokens + 1]: token t's routes are combineStart[t]..[t+1]
  std::vector<int32_t>
      combineRow; ///< [P]: permuted row of each route, ascending expert id per token
  std::vector<float> combineGate; ///< [P]: gate weight of each route, same order as combineRow

  int64_t rows() const { return static_cast<int64_t>(sourceRow.size()); }
};

/// Builds the plan from expertIds and gates [tokens, k] (row-major). A negative id marks a slot
/// with no route here (an expert on another rank); gates of such slots are ignored.
/// Throws DispatchError when an id is >= numExperts, a token names one expert twice, tokens * k
/// exceeds INT32_MAX, or tokens, k or numExperts is negative (numExperts 0 with no routes is fine).
DispatchPlan planDispatch(const int64_t *expertIds, const float *gates, int64_t tokens, int64_t k,
                          int64_t numExperts);

} // namespace disagmoe::cuda
