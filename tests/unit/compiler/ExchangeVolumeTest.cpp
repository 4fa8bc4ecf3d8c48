//===- ExchangeVolumeTest.cpp - M2N/N2M volume against brute force --------===//
//
// Oracles: exhaustive enumeration of every k-subset of experts (the exact expectation under
// uniform routing), Monte Carlo averages of concrete routings, and hand-built routings whose
// destination counts are known.
//
//===----------------------------------------------------------------------===//
#include "passes/exchange/ExchangeVolume.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>
#include <set>

namespace {
using disagmoe::concreteExchangeVolume;
using disagmoe::expectedDestinationRanks;

/// Contiguous placement of `experts` over ranks holding `perRank[r]` experts each.
std::vector<int64_t> placement(const std::vector<int64_t> &perRank) {
  std::vector<int64_t> map;
  for (size_t r = 0; r < perRank.size(); ++r)
    map.insert(map.end(), perRank[r], static_cast<int64_t>(r));
  return map;
}

/// Mean number of distinct ranks over all C(E, k) expert subsets, by enumeration.
double enumeratedDestinations(const std::vector<int64_t> &perRank, int64_t k) {
  std::vector<int64_t> map = placement(perRank);
  const int64_t experts = static_cast<int64_t>(map.size());
  double total = 0, subsets = 0;
  std::vector<int64_t> chosen;
  std::function<void(int64_t)> recurse = [&](int64_t next) {
    if (static_cast<int64_t>(chosen.size()) == k) {
      std::set<int64_t> ranks;
      for (int64_t e : chosen)
        ranks.insert(map[e]);
      total += static_cast<double>(ranks.size());
      subsets += 1;
      return;
    }
    for (int64_t e = next; e < experts; ++e) {
      chosen.push_back(e);
      recurse(e + 1);
      chosen.pop_back();
    }
  };
  recurse(0);
  return total / subsets;
}

TEST(ExchangeVolume, ClosedFormEqualsEnumerationOverAllExpertSubsets) {
  const std::vector<std::pair<std::vector<int64_t>, int64_t>> cases = {
      {{4, 4}, 2},       {{2, 2, 2, 2}, 2},    {{2, 2, 2, 2}, 4},
      {{8}, 2},          {{3, 3, 2}, 2},       {{1, 1, 1, 1, 1, 1, 1, 1}, 3},
      {{4, 4, 4, 4}, 6}, {{5, 3, 3, 3, 2}, 4}, {{8, 8}, 8}};
  for (const auto &[perRank, k] : cases)
    EXPECT_NEAR(expectedDestinationRanks(perRank, k), enumeratedDestinations(perRank, k), 1e-12)
        << "ranks " << perRank.size() << " k " << k;
}

TEST(ExchangeVolume, EvenSplitMatchesTheIssueFormula) {
  // R * [1 - C(E - E/R, k) / C(E, k)] with E = 64, R = 8, k = 6: C(56,6)/C(64,6).
  double ratio = 1.0;
  for (int i = 0; i < 6; ++i)
    ratio *= (56.0 - i) / (64.0 - i);
  EXPECT_NEAR(expectedDestinationRanks(std::vector<int64_t>(8, 8), 6), 8 * (1 - ratio), 1e-12);
}

TEST(ExchangeVolume, MonteCarloOfConcreteRoutingsConvergesToTheExpectation) {
  const std::vector<int64_t> perRank = {4, 4, 4, 4};
  const std::vector<int64_t> map = placement(perRank);
  std::mt19937_64 rng(7);
  std::vector<std::vector<int64_t>> routing;
  for (int t = 0; t < 20000; ++t) {
    std::vector<int64_t> experts(16);
    std::iota(experts.begin(), experts.end(), 0);
    std::shuffle(experts.begin(), experts.end(), rng);
    routing.emplace_back(experts.begin(), experts.begin() + 4);
  }
  auto v = concreteExchangeVolume(routing, map, 64, 2, false);
  EXPECT_NEAR(v.destinationsPerToken, expectedDestinationRanks(perRank, 4), 0.02);
}

TEST(ExchangeVolume, SkewedRoutingCountsEachTokenOncePerDistinctRank) {
  // 4 experts on 2 ranks: {0,1} on rank 0, {2,3} on rank 1; H = 8 fp32 elements (32 bytes).
  const std::vector<int64_t> map = {0, 0, 1, 1};
  const std::vector<std::vector<int64_t>> routing = {{0, 1}, {0, 2}, {3, 2}, {1, 0}};
  auto v = concreteExchangeVolume(routing, map, 8, 4, /*residualCrossesGroups=*/true);
  // Distinct ranks per token: 1, 2, 1, 1 -> 5 copies.
  EXPECT_DOUBLE_EQ(v.destinationsPerToken, 5.0 / 4.0);
  EXPECT_DOUBLE_EQ(v.m2nBytes, 5 * 32.0);
  EXPECT_DOUBLE_EQ(v.n2mBytes, 5 * 32.0);
  EXPECT_DOUBLE_EQ(v.residualBytes, 4 * 32.0);
  EXPECT_DOUBLE_EQ(v.dispatchBytes, 8 * 32.0);
  EXPECT_DOUBLE_EQ(v.combineBytes, 8 * 32.0);
}

TEST(ExchangeVolume, ReductionReachesOneOverKWhenATokensExpertsShareARank) {
  const int64_t k = 4;
  const std::vector<int64_t> map(16, 0); // every expert on one F-rank
  std::vector<std::vector<int64_t>> routing(10, std::vector<int64_t>{3, 7, 11, 15});
  auto v = concreteExchangeVolume(routing, map, 16, 2, false);
  EXPECT_DOUBLE_EQ(v.m2nBytes / v.dispatchBytes, 1.0 / k);
  EXPECT_DOUBLE_EQ(expectedDestinationRanks({16}, k), 1.0);
}

TEST(ExchangeVolume, ZeroTokensMoveNothing) {
  auto v = concreteExchangeVolume({}, {0, 1}, 8, 4, true);
  EXPECT_EQ(v.disagmoeBytes(), 0.0);
  EXPECT_EQ(v.allToAllBytes(), 0.0);
}
} // namespace
