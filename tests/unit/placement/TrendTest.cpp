//===- TrendTest.cpp - attention share against sequence length on 16 x 8 H800 ----===//
//
// Holding the tokens per step constant (16M), the planner's attention share of GPUs must not
// decrease as sequences grow from 4K to 32K (attention FLOPs grow with s^2, FFN FLOPs and exchange
// bytes with s: DisagMoE's roofline argument), for DeepSeek-MoE, GPT-OSS-120B and Qwen3-235B.
// A step back of at most one node is allowed where divisibility or memory binds, and the test
// names the reason; a larger step back is accepted only where memory binds, which the test proves
// by checking that no configuration keeping the previous attention GPU count fits in memory.
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
  EXPECT_TRUE(cost::loadHardwareCatalog(cost::defaultHardwareCatalogPath(), catalog, error)) << error;
  EXPECT_TRUE(cost::loadCluster(kSrc + "/samples/clusters/h800-16x8.yaml", catalog, p.cluster, error))
      << error;
  mlir::MLIRContext context;
  auto module = configfe::importModelConfig(context, kSrc + "/samples/configs/" + config, 1, 16, error);
  EXPECT_TRUE(module) << error;
  if (module)
    EXPECT_TRUE(configfe::extractModelShape(*module, p.model, error)) << error;
  return p;
}

double share(const Solution &s) {
  return double(s.config.cand.attnGpus()) / double(s.config.cand.gpus());
}

/// True when no configuration with at least `attnGpus` attention GPUs fits in memory at `p`.
bool memoryBindsBelow(const Problem &p, int64_t attnGpus, std::string &detail) {
  std::vector<Candidate> cands;
  std::string error;
  if (!enumerateCandidates(p, cands, error))
    return false;
  int64_t checked = 0;
  for (const Candidate &c : cands) {
    if (c.attnGpus() < attnGpus)
      continue;
    ++checked;
    for (bool rc : {false, true})
      if (evaluate(p, Config{c, rc, 1, 1}).fitsMemory)
        return false;
  }
  detail = "memory binds: none of the " + std::to_string(checked) +
           " configurations with >= " + std::to_string(attnGpus) + " attention GPUs fits in " +
           std::to_string(int(p.cluster.gpu.hbmBytes / 1e9)) + " GB";
  return true;
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
      // Infeasible at this length: memory binds for every configuration, named by the planner.
      std::cout << sol.error << "\n";
      EXPECT_TRUE(memoryLimit) << sol.error;
      EXPECT_NE(sol.error.find("does not fit"), std::string::npos) << sol.error;
      continue;
    }
    std::cout << sol.config.cand.attnGpus() << ":" << sol.config.cand.ffnGpus() << " share "
              << share(sol) << "\n";
    if (prev.ok && share(sol) < share(prev)) {
      int64_t back = prev.config.cand.attnGpus() - sol.config.cand.attnGpus();
      std::string reason;
      bool memory = memoryLimit && memoryBindsBelow(p, prev.config.cand.attnGpus(), reason);
      if (!memory) {
        // Divisibility: the same attention GPU count with more FFN GPUs is a share step back
        // without a step back in attention GPUs; otherwise at most one node.
        reason = "divisibility: " + std::to_string(sol.config.cand.attnGpus()) + ":" +
                 std::to_string(sol.config.cand.ffnGpus()) + " after " +
                 std::to_string(prev.config.cand.attnGpus()) + ":" +
                 std::to_string(prev.config.cand.ffnGpus());
        EXPECT_LE(back, node) << config << " s=" << prevSeq << "->" << s << ": attention GPUs "
                              << prev.config.cand.attnGpus() << " -> "
                              << sol.config.cand.attnGpus() << " and memory does not bind";
      }
      std::cout << "  step back from s=" << prevSeq << " (" << back << " attention GPUs): " << reason
                << "\n";
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
