//===- ExpertPlacementTest.cpp - experts to F-ranks -----------------------===//
//
// Oracles: brute-force optimal placements of small layers, hand sums, the lower bound.
//
//===----------------------------------------------------------------------===//
#include "passes/placement/solver/ExpertPlacement.h"

#include "runtime/cost/RoutingProfile.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

using namespace disagmoe;
using namespace disagmoe::placement;

namespace {
/// Optimal max rank load by enumerating every assignment with at most `slots` experts per rank.
double bruteForce(const std::vector<int64_t> &loads, int64_t ranks, int64_t slots) {
  std::vector<double> load(ranks, 0);
  std::vector<int64_t> used(ranks, 0);
  double best = 1e300;
  std::function<void(size_t)> rec = [&](size_t e) {
    if (e == loads.size()) {
      best = std::min(best, *std::max_element(load.begin(), load.end()));
      return;
    }
    for (int64_t r = 0; r < ranks; ++r) {
      if (used[r] >= slots)
        continue;
      load[r] += loads[e];
      ++used[r];
      rec(e + 1);
      load[r] -= loads[e];
      --used[r];
    }
  };
  rec(0);
  return best;
}
} // namespace

TEST(ExpertPlacement, ContiguousSplitsExpertIdsInBlocks) {
  ExpertPlacement p = placeContiguous({1, 2, 3, 4, 5, 6, 7, 8}, 3);
  // floor(e * 3 / 8): 0 0 0 1 1 1 2 2.
  EXPECT_EQ(p.ranksOf[2], (std::vector<int64_t>{0}));
  EXPECT_EQ(p.ranksOf[3], (std::vector<int64_t>{1}));
  EXPECT_EQ(p.rankLoad, (std::vector<double>{6, 15, 15}));
  EXPECT_DOUBLE_EQ(p.imbalance(), 15 / 12.0);
  EXPECT_EQ(p.check({1, 2, 3, 4, 5, 6, 7, 8}, 3, 3), "");
}

TEST(ExpertPlacement, BalancedIsValidNoWorseThanLptAndWithinGrahamsBoundOfOptimal) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    int64_t experts = 6 + trial % 3, ranks = 2 + trial % 2;
    int64_t slots = (experts + ranks - 1) / ranks;
    std::vector<int64_t> loads;
    std::uniform_int_distribution<int64_t> d(0, trial % 2 ? 1000 : 50);
    for (int64_t e = 0; e < experts; ++e)
      loads.push_back(d(rng));
    ExpertPlacement lpt = placeGreedyLpt(loads, ranks, slots);
    ExpertPlacement ours = placeBalanced(loads, ranks, slots);
    EXPECT_EQ(lpt.check(loads, ranks, slots), "");
    EXPECT_EQ(ours.check(loads, ranks, slots), "");
    double opt = bruteForce(loads, ranks, slots);
    EXPECT_LE(ours.maxLoad(), lpt.maxLoad());
    EXPECT_GE(ours.maxLoad(), opt);
    EXPECT_LE(ours.maxLoad(), opt * (4.0 / 3 - 1.0 / (3 * ranks)) + 1e-9);
  }
}

TEST(ExpertPlacement, ReplicatingAHotExpertApproachesTheLowerBound) {
  std::vector<int64_t> loads(16, 100);
  loads[3] = 4000; // one expert takes 4000 / 5500 of the tokens
  int64_t ranks = 4, slots = 6;
  ExpertPlacement plain = placeBalanced(loads, ranks, slots, 0);
  EXPECT_GE(plain.maxLoad(), 4000);
  ExpertPlacement rep = placeBalanced(loads, ranks, slots, 3);
  EXPECT_EQ(rep.check(loads, ranks, slots), "");
  EXPECT_EQ(rep.ranksOf[3].size(), 4u); // one replica per rank
  double bound = maxLoadLowerBound(loads, ranks, 3);
  EXPECT_DOUBLE_EQ(bound, 5500.0 / 4);
  EXPECT_LE(rep.maxLoad(), bound * 1.02);
}

TEST(ExpertPlacement, PlacesEveryLayerOfARoutingProfile) {
  cost::RoutingProfile prof;
  prof.tokens = 100;
  prof.topK = 2;
  prof.layers = {{0, {50, 50, 50, 50}}, {1, {170, 10, 10, 10}}};
  std::string error, path = std::string(DISAGMOE_TEST_TMP) + "/place-profile.json";
  ASSERT_TRUE(cost::writeRoutingProfile(path, prof, error)) << error;
  cost::RoutingProfile read;
  ASSERT_TRUE(cost::readRoutingProfile(path, read, error, 4)) << error;
  for (const auto &layer : read.layers) {
    ExpertPlacement p = placeBalanced(layer.expertLoads, 2, 2);
    EXPECT_EQ(p.check(layer.expertLoads, 2, 2), "");
    EXPECT_DOUBLE_EQ(p.maxLoad(), layer.layer == 0 ? 100 : 180);
  }
}
