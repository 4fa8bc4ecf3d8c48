// One rank's place in a plan and its tokens (RankContext.h).
#include "runtime/executor/RankContext.h"
#include "runtime/executor/RankWorker.h"

#include <algorithm>
#include <string>

namespace disagmoe {

RankContext::RankContext(const Plan &plan, int rank_, int64_t batch_, int64_t seqLen_)
    : placement(plan.placement), rank(rank_), group(placement.groupOf(rank_)),
      index(placement.indexInGroup(rank_)), batch(batch_), seqLen(seqLen_), model_(plan.model) {
  if (group.role != GroupRole::Attention)
    return;
  const int64_t da = placement.attentionSize();
  for (int64_t s = index; s < batch; s += da)
    for (int64_t p = 0; p < seqLen; ++p)
      tokens_.push_back(s * seqLen + p);
}

int64_t RankContext::localRow(int64_t id) const {
  auto it = std::lower_bound(tokens_.begin(), tokens_.end(), id);
  return it != tokens_.end() && *it == id ? it - tokens_.begin() : -1;
}

int64_t RankContext::homeFfnIndex(int64_t layer, int64_t id) const {
  return (id / seqLen) % static_cast<int64_t>(placement.ffnGroupOfLayer(layer).ranks.size());
}

bool RankContext::homeOfSequence(int64_t s) const {
  return s % static_cast<int64_t>(group.ranks.size()) == index;
}

void RankContext::checkM2nRoutes(const M2nMessage &m, int64_t layer, int src) const {
  for (const auto &route : m.routes)
    for (const ExpertGate &eg : route)
      if (eg.expert < 0 || eg.expert >= model_.numExperts ||
          placement.expertToRank[layer][eg.expert] != rank)
        throw ExecError("M2N from rank " + std::to_string(src) + " routes a token to expert " +
                        std::to_string(eg.expert) + ", which is not on this rank");
}

} // namespace disagmoe
