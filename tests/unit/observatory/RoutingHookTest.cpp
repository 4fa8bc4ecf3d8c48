// The executor's routing hook (ExecutorOptions::recordRouting) against PyTorch: the recorded top-k
// ids of layer 0 equal the golden l0_topk_ids of the eager model, whatever the placement.
#include "../runtime/TestSupport.h"

#include "runtime/executor/Executor.h"

#include <gtest/gtest.h>

using namespace disagmoe;
using namespace disagmoe::test;

namespace {

RunResult runLayer0(int attnRanks, bool record) {
  TinyPlacement p;
  p.numLayers = 1;
  std::vector<int> a, f;
  for (int r = 0; r < attnRanks; ++r)
    a.push_back(r);
  for (int r = 0; r < 2; ++r)
    f.push_back(attnRanks + r);
  p.attentionGroups = {a};
  p.ffnGroups = {f};
  p.expertToRank = {{f[1], f[0], f[1], f[0], f[1], f[0], f[1], f[0]}};
  const Plan plan = loadPlan(writePlan(tinyPlan(p), "hook"));
  ExecutorOptions options;
  options.recordRouting = record;
  std::vector<int64_t> shape;
  const std::vector<int64_t> ids = loadGoldenIds("ids_b2_s8.npy", shape);
  return Executor(plan, options).run(ids, shape[0], shape[1]);
}

TEST(RoutingHook, RecordsTheRoutersTopKIdsInFlatTokenOrder) {
  std::vector<int64_t> shape;
  const std::vector<int64_t> golden = loadGoldenIds("l0_topk_ids.npy", shape);
  ASSERT_EQ(shape, (std::vector<int64_t>{16, 2}));
  for (int attnRanks : {1, 2}) {
    const RunResult r = runLayer0(attnRanks, true);
    ASSERT_EQ(r.routing.size(), 1u);
    EXPECT_EQ(r.routing[0], golden) << attnRanks << " attention ranks";
  }
}

TEST(RoutingHook, OffByDefault) { EXPECT_TRUE(runLayer0(2, false).routing.empty()); }

} // namespace
