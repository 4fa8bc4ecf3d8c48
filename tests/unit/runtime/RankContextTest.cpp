// RankContext (runtime/executor/RankContext.h), the token bookkeeping the forward and training
// workers share, on a hand-built placement (InstructionRunnerTest's shape: 2 A-ranks per attention
// group, FFN groups of 1 and 2 ranks), against values derived by hand from docs/plan-format.md:
// sequence s on A-rank s mod D_A, FFN-side dense work of sequence s on F-rank s mod D_F.
#include "runtime/executor/RankContext.h"
#include "runtime/executor/RankWorker.h"
#include "runtime/plan/Plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace disagmoe;

namespace {

// Layers 0 and 2 on A0 {0, 1} and F0 {4}; layer 1 on A1 {2, 3} and F1 {5, 6}. Expert e of each
// layer on F-rank 4 (layers 0, 2) or on rank 5 + e % 2 (layer 1).
Plan handBuilt() {
  Plan plan;
  plan.path = "hand.json";
  plan.model.numLayers = 3;
  plan.model.numExperts = 4;
  plan.model.layers.resize(3);
  Placement &p = plan.placement;
  p.worldSize = 7;
  p.groups = {{GroupRole::Attention, 0, {0, 1}, {0, 2}},
              {GroupRole::Ffn, 0, {4}, {0, 2}},
              {GroupRole::Attention, 1, {2, 3}, {1}},
              {GroupRole::Ffn, 1, {5, 6}, {1}}};
  p.attentionGroups = {0, 2};
  p.ffnGroups = {1, 3};
  p.layerAttention = {0, 2, 0};
  p.layerFfn = {1, 3, 1};
  p.groupOfRank = {0, 0, 2, 2, 1, 3, 3};
  p.expertToRank = {{4, 4, 4, 4}, {5, 6, 5, 6}, {4, 4, 4, 4}};
  return plan;
}

TEST(RankContext, SequencesGoToAttentionRankSModDa) {
  const Plan plan = handBuilt();
  // 5 sequences of 3 tokens; D_A = 2: index 0 holds sequences 0, 2, 4; index 1 holds 1, 3.
  const RankContext a0(plan, 0, 5, 3), a1(plan, 3, 5, 3);
  EXPECT_EQ(a0.tokens(), (std::vector<int64_t>{0, 1, 2, 6, 7, 8, 12, 13, 14}));
  EXPECT_EQ(a1.index, 1);
  EXPECT_EQ(a1.tokens(), (std::vector<int64_t>{3, 4, 5, 9, 10, 11}));
  EXPECT_EQ(a0.localRow(7), 4);
  EXPECT_EQ(a0.localRow(3), -1);
  EXPECT_EQ(a1.localRow(11), 5);
  const RankContext f(plan, 6, 5, 3);
  EXPECT_EQ(f.tokenCount(), 0) << "an F-rank holds no tokens of its own";
  EXPECT_EQ(&f.group, &plan.placement.groups[3]);
}

TEST(RankContext, FfnSideWorkOfSequenceSGoesToPositionSModDf) {
  const Plan plan = handBuilt();
  const RankContext a(plan, 0, 5, 3);
  // Layer 1's FFN group has 2 ranks: token 7 is sequence 2 -> position 0; token 10 (sequence 3)
  // -> 1. Layer 0's has 1 rank: always position 0.
  EXPECT_EQ(a.homeFfnIndex(1, 7), 0);
  EXPECT_EQ(a.homeFfnIndex(1, 10), 1);
  EXPECT_EQ(a.homeFfnIndex(0, 10), 0);
  const RankContext f1(plan, 6, 5, 3); // position 1 of F1
  EXPECT_TRUE(f1.homeOfSequence(3));
  EXPECT_FALSE(f1.homeOfSequence(4));
}

TEST(RankContext, M2nRoutesToExpertsElsewhereAreRefusedNamingTheSender) {
  const Plan plan = handBuilt();
  const RankContext f(plan, 5, 2, 2); // layer 1's experts 0 and 2
  M2nMessage ok;
  ok.routes = {{{0, 0.5f}, {2, 0.5f}}};
  EXPECT_NO_THROW(f.checkM2nRoutes(ok, 1, 2));
  for (int64_t expert : {1, 4, -1}) {
    M2nMessage bad;
    bad.routes = {{{0, 0.5f}}, {{expert, 0.5f}}};
    try {
      f.checkM2nRoutes(bad, 1, 3);
      FAIL() << "expert " << expert << " accepted";
    } catch (const ExecError &e) {
      EXPECT_EQ(std::string(e.what()), "M2N from rank 3 routes a token to expert " +
                                           std::to_string(expert) + ", which is not on this rank");
    }
  }
}

} // namespace
