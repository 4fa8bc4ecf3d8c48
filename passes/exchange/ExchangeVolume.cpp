//===- ExchangeVolume.cpp - bytes moved by M2N/N2M vs an EP all-to-all ---===//
#include "passes/exchange/ExchangeVolume.h"

#include <algorithm>
#include <numeric>

namespace disagmoe {

ExchangeVolume concreteExchangeVolume(const std::vector<std::vector<int64_t>> &topkIds,
                                      const std::vector<int64_t> &expertToRank, int64_t hidden,
                                      int64_t bytesPerElement, bool residualCrossesGroups) {
  ExchangeVolume v;
  if (topkIds.empty())
    return v;
  const double copyBytes = static_cast<double>(hidden * bytesPerElement);
  int64_t copies = 0, assignments = 0;
  std::vector<int64_t> ranks;
  for (const std::vector<int64_t> &experts : topkIds) {
    ranks.clear();
    for (int64_t e : experts)
      ranks.push_back(expertToRank.at(static_cast<size_t>(e)));
    std::sort(ranks.begin(), ranks.end());
    copies += std::unique(ranks.begin(), ranks.end()) - ranks.begin();
    assignments += static_cast<int64_t>(experts.size());
  }
  const double tokens = static_cast<double>(topkIds.size());
  v.m2nBytes = v.n2mBytes = copies * copyBytes;
  v.residualBytes = residualCrossesGroups ? tokens * copyBytes : 0;
  v.dispatchBytes = v.combineBytes = assignments * copyBytes;
  v.destinationsPerToken = copies / tokens;
  return v;
}

namespace {
/// C(n - m, k) / C(n, k) = prod_{i=0}^{k-1} (n - m - i) / (n - i); 0 when n - m < k.
double binomialRatio(int64_t n, int64_t m, int64_t k) {
  double ratio = 1.0;
  for (int64_t i = 0; i < k; ++i) {
    if (n - m - i <= 0)
      return 0.0;
    ratio *= static_cast<double>(n - m - i) / static_cast<double>(n - i);
  }
  return ratio;
}
} // namespace

double expectedDestinationRanks(const std::vector<int64_t> &expertsPerRank, int64_t topK) {
  const int64_t experts = std::accumulate(expertsPerRank.begin(), expertsPerRank.end(), int64_t{0});
  double sum = 0;
  for (int64_t held : expertsPerRank)
    sum += 1.0 - binomialRatio(experts, held, topK);
  return sum;
}

ExchangeVolume expectedExchangeVolume(int64_t tokens, int64_t topK,
                                      const std::vector<int64_t> &expertsPerRank, int64_t hidden,
                                      int64_t bytesPerElement, bool residualCrossesGroups) {
  ExchangeVolume v;
  const double copyBytes = static_cast<double>(hidden * bytesPerElement);
  v.destinationsPerToken = expectedDestinationRanks(expertsPerRank, topK);
  v.m2nBytes = v.n2mBytes = tokens * v.destinationsPerToken * copyBytes;
  v.residualBytes = residualCrossesGroups ? tokens * copyBytes : 0;
  v.dispatchBytes = v.combineBytes = static_cast<double>(tokens * topK) * copyBytes;
  return v;
}

} // namespace disagmoe
