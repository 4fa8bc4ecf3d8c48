//===- TrendTest.cpp - attention share against sequence length on 16 x 8 H800 ----===//
//
// Holding the tokens per step constant (16M), the planner's attention share of GPUs must not
// decrease as sequences grow from 4K to 32K (attention FLOPs grow with s^2, FFN FLOPs and exchange
// bytes with s: DisagMoE's roofline argument), for DeepSeek-MoE, GPT-OSS-120B and Qwen3-235B.
// A step back of at most one node (8 GPUs) is allowed, and only where the solver's account
// (explainShareBound) says that no configuration keeping the previous share satisfies the
// integer constraints (divisibility) or fits in memory at any recomputation level (memory); the
// test prints that account. A step back where configurations with the previous share fit and are
// merely slower fails, as does any step back of more than one node. The memory-limited runs use
// Z3 (proven optimal, checked); the roofline-only runs the exhaustive search. Where the share with
// memory is below the roofline-only share, the solver's account must name memory as the reason.
// Every config must fit at every length with the memory limit on (no "does not fit"): the solver
// may split sequences over cp A-ranks (context parallelism, Planner.h).
//
//===----------------------------------------------------------------------===//
#include "frontends/config/ConfigFrontend.h"
#include "frontends/config/CostExtraction.h"
#include "passes/placement/solver/Planner.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <iostream>

using namespace disagmoe;
using namespace disagmoe::placement;

namespace {
const std::string kSrc = DISAGMOE_SOURCE_DIR;
const int64_t kSeqLens[] = {4096, 8192, 16384, 32768};

Problem paperProblem(const std::string &config) {
  Problem p;
  std::string error;
  cost::HardwareCatalog catalog;
  EXPECT_TRUE(cost::loadHardwareCatalog(cost::defaultHardwareCatalogPath(), catalog, error))
      << error;
  EXPECT_TRUE(
      cost::loadCluster(kSrc + "/samples/clusters/h800-16x8.yaml", catalog, p.cluster, error))
      << error;
  mlir::MLIRContext context;
  auto module = configfe::importModelConfig(context, kSrc + "/samples/configs/" + config, 1, 16);
  EXPECT_TRUE(static_cast<bool>(module)) << llvm::toString(module.takeError());
  if (module) {
    llvm::Error e = configfe::extractModelShape(**module, p.model);
    EXPECT_FALSE(static_cast<bool>(e)) << llvm::toString(std::move(e));
  }
  return p;
}

double share(const Solution &s) {
  return double(s.config.cand.attnGpus()) / double(s.config.cand.gpus());
}

std::string describe(const Solution &s) {
  const Config &c = s.config;
  return std::to_string(c.cand.attnGpus()) + ":" + std::to_string(c.cand.ffnGpus()) + " (r " +
         std::to_string(c.cand.replicas) + ", p " + std::to_string(c.cand.groups) + ", dA " +
         std::to_string(c.cand.attnRanks) + ", eF " + std::to_string(c.cand.ffnRanks) + ", m " +
         std::to_string(c.cand.microbatches) + ", cp " + std::to_string(c.cand.cp) +
         ", recomputation " + cost::recomputationName(c.attnRecompute) + "/" +
         cost::recomputationName(c.ffnRecompute) + ", memory " +
         std::to_string(int(s.eval.attnMemory.total() / 1e9)) + "/" +
         std::to_string(int(s.eval.ffnMemory.total() / 1e9)) + " GB)";
}

void checkTrend(const std::string &config, bool memoryLimit) {
  Problem p = paperProblem(config);
  if (!memoryLimit)
    p.options.reserveBytes = -1e18; // the pure compute-communication roofline
  const int64_t node = p.cluster.gpusPerNode;
  Solution prev;
  int64_t prevSeq = 0;
  for (int64_t s : kSeqLens) {
    p.options.seqLen = s;
    Solution sol = memoryLimit ? solveZ3(p) : solveExhaustive(p, false);
    std::cout << config << (memoryLimit ? "" : " (no memory limit)") << " s=" << s << ": ";
    if (!sol.ok) {
      // Every config fits at every length, with the memory limit too: context parallelism (the
      // solver's cp) splits a 32K sequence's activations and logits over up to 8 A-ranks, as the
      // DisagMoE paper trains Qwen3-235B at 32K on this cluster. The planner's account is printed.
      std::cout << sol.error << "\n";
      ADD_FAILURE() << config << " s=" << s << " does not fit: " << sol.error;
      continue;
    }
    EXPECT_TRUE(sol.optimal) << sol.note;
    std::cout << describe(sol) << " share " << share(sol) << "\n";
    if (memoryLimit) {
      // Below the roofline-only share only because memory binds, by the solver's account.
      Problem unlimited = p;
      unlimited.options.reserveBytes = -1e18;
      Solution roof = solveExhaustive(unlimited, false);
      ASSERT_TRUE(roof.ok) << roof.error;
      if (share(sol) < share(roof)) {
        ShareBound why = explainShareBound(p, roof.config.cand.attnGpus(), roof.config.cand.gpus(),
                                           sol.eval.stepTime);
        std::cout << "  below the roofline-only " << roof.config.cand.attnGpus() << ":"
                  << roof.config.cand.ffnGpus() << ": " << why.text << "\n";
        EXPECT_EQ(why.reason, ShareBound::Reason::Memory) << why.text;
      }
    }
    if (prev.ok && share(sol) < share(prev)) {
      // A step back: the attention GPUs the chosen split lacks to keep the previous share.
      const int64_t pm = prev.config.cand.attnGpus(), pg = prev.config.cand.gpus();
      const int64_t g = sol.config.cand.gpus();
      const int64_t back = (pm * g + pg - 1) / pg - sol.config.cand.attnGpus();
      // The solver's account of why no configuration keeping the previous share was chosen.
      ShareBound why = explainShareBound(p, pm, pg, sol.eval.stepTime);
      std::cout << "  step back from s=" << prevSeq << " by " << back
                << " attention GPUs: " << why.text << "\n";
      EXPECT_LE(back, node) << config << " s=" << prevSeq << "->" << s
                            << ": the attention share steps back by more than one node";
      EXPECT_NE(why.reason, ShareBound::Reason::Slower)
          << config << " s=" << prevSeq << "->" << s << ": " << why.text
          << " (neither divisibility nor memory binds; chosen step " << sol.eval.stepTime << " s)";
      if (!memoryLimit)
        EXPECT_NE(why.reason, ShareBound::Reason::Memory) << why.text;
    }
    prev = sol;
    prevSeq = s;
  }
}
} // namespace

TEST(AttentionShareTrend, RooflineDeepSeekMoE) { checkTrend("deepseek-moe-16b.json", false); }
TEST(AttentionShareTrend, RooflineGptOss120B) { checkTrend("gpt-oss-120b.json", false); }
TEST(AttentionShareTrend, RooflineQwen3_235B) { checkTrend("qwen3-235b.json", false); }
TEST(AttentionShareTrend, WithMemoryDeepSeekMoE) { checkTrend("deepseek-moe-16b.json", true); }
TEST(AttentionShareTrend, WithMemoryGptOss120B) { checkTrend("gpt-oss-120b.json", true); }
TEST(AttentionShareTrend, WithMemoryQwen3_235B) { checkTrend("qwen3-235b.json", true); }
