// BaselineSearch against an exhaustive oracle: on a small cluster (16 GPUs, two 8-GPU nodes) the
// test enumerates every valid configuration of each baseline itself (its own loops over ep, pp,
// vpp, micro-batches and recomputation, the rules of Baselines.h and dualpipe.py), builds and
// simulates each, and checks that the search returns the minimum overall and at the given EP,
// although it prunes on its lower bound (which the test also checks against every simulation).
#include "runtime/sim/BaselineSearch.h"
#include "runtime/sim/Simulator.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <limits>

using namespace disagmoe;
using namespace disagmoe::sched;

namespace {

cost::ModelShape smallModel() {
  cost::ModelShape m;
  m.name = "small";
  m.hidden = 1024;
  m.vocab = 1024;
  for (int l = 0; l < 8; ++l) {
    cost::LayerShape s;
    s.heads = s.kvHeads = 8;
    s.headDim = 128;
    s.experts = 16; // EP up to 16: the all-to-all crosses the two nodes
    s.topK = 2;
    s.expertHidden = 1024;
    m.layers.push_back(s);
  }
  return m;
}

Hardware smallCluster(double hbm) {
  Hardware hw;
  hw.name = "small";
  hw.peakFlops = 1e14;
  hw.hbmBandwidth = 1e12;
  hw.hbmBytes = hbm;
  hw.nvlinkBandwidth = 1e11;
  hw.nicBandwidth = 1e10;
  hw.gpusPerNode = 8;
  return hw;
}

sim::BaselineSearchOptions options(int64_t gpus, int64_t sequences) {
  sim::BaselineSearchOptions o;
  o.gpus = gpus;
  o.fixedEp = 4;
  o.base.seqLen = 1024;
  o.base.sequencesPerStep = sequences;
  o.base.reserveBytes = 0;
  o.wallBudgetSeconds = 0;
  return o;
}

struct Oracle {
  double best = std::numeric_limits<double>::infinity(), atEp = best;
  int valid = 0, fit = 0;
};

/// Every configuration by brute force (not through baselineSearchSpace).
Oracle bruteForce(sim::Baseline kind, const cost::ModelShape &m, const Hardware &hw,
                  const sim::BaselineSearchOptions &o) {
  Oracle r;
  const bool dual = kind == sim::Baseline::DualPipe;
  const int64_t G = o.gpus, S = o.base.sequencesPerStep;
  for (int64_t ep = 1; ep <= G; ++ep)
    for (int64_t pp = 1; pp <= G; ++pp)
      for (int64_t vpp = 1; vpp <= 4; vpp *= 2)
        for (int64_t mb = 1; mb <= S; ++mb)
          for (bool rc : {false, true}) {
            if (G % (ep * pp) || m.numExperts() % ep || m.numLayers() < pp * vpp)
              continue;
            const int64_t R = G / (ep * pp);
            if (S % (R * ep * mb)) // whole sequences per rank and micro-batch
              continue;
            if (dual && (vpp > 1 || pp % 2 || mb % 2 || mb < 2 * pp))
              continue;
            if (!dual && (mb < pp || (vpp > 1 && (pp == 1 || mb % pp))))
              continue;
            ++r.valid;
            sim::BaselineConfig c = o.base;
            c.kind = kind;
            c.ep = ep;
            c.pp = pp;
            c.vpp = vpp;
            c.replicas = R;
            c.microbatches = mb;
            c.recompute = rc;
            Schedule s;
            std::string error;
            if (!sim::buildBaseline(m, hw, c, s, error))
              continue;
            ++r.fit;
            sim::SimResult run = sim::simulate(s);
            EXPECT_TRUE(run.ok) << run.error;
            // The search prunes on this bound: it must never exceed a simulated step.
            EXPECT_LE(sim::baselineLowerBound(m, hw, c), run.stepTime * (1 + 1e-12))
                << sim::describeSetting(c);
            r.best = std::min(r.best, run.stepTime);
            if (ep == o.fixedEp)
              r.atEp = std::min(r.atEp, run.stepTime);
          }
  return r;
}

} // namespace

TEST(BaselineSearch, ReturnsTheExhaustiveMinimum) {
  const cost::ModelShape m = smallModel();
  // Memory tight enough that some configurations are refused (recomputation then matters).
  const Hardware hw = smallCluster(2.0e9);
  const sim::BaselineSearchOptions o = options(16, 64);
  for (sim::Baseline kind :
       {sim::Baseline::Megatron, sim::Baseline::MegatronOverlap, sim::Baseline::DualPipe}) {
    const Oracle want = bruteForce(kind, m, hw, o);
    ASSERT_GT(want.fit, 0) << sim::toString(kind);
    sim::BaselineSearchResult got = sim::searchBaseline(kind, m, hw, o);
    ASSERT_TRUE(got.ok) << got.error;
    EXPECT_EQ(got.candidates, want.valid) << sim::toString(kind);
    EXPECT_DOUBLE_EQ(got.best.result.stepTime, want.best) << sim::toString(kind);
    ASSERT_TRUE(got.okAtEp) << sim::toString(kind);
    EXPECT_EQ(got.atEp.config.ep, 4);
    EXPECT_DOUBLE_EQ(got.atEp.result.stepTime, want.atEp) << sim::toString(kind);
    EXPECT_FALSE(got.budgetHit);
    // The case exercises both the bound (some candidates not simulated) and the memory refusals.
    EXPECT_GT(got.pruned, 0) << sim::toString(kind);
    EXPECT_LT(want.fit, want.valid) << sim::toString(kind);
    EXPECT_FALSE(got.lastRefusal.empty()) << sim::toString(kind);
    std::printf("%s: %d valid, %d fit; searched %lld simulated, %lld refused, %lld pruned\n",
                sim::toString(kind), want.valid, want.fit, static_cast<long long>(got.simulated),
                static_cast<long long>(got.refused), static_cast<long long>(got.pruned));
  }
}

TEST(BaselineSearch, SameAnswerOnOneThread) {
  const cost::ModelShape m = smallModel();
  const Hardware hw = smallCluster(80e9);
  sim::BaselineSearchOptions o = options(16, 32);
  sim::BaselineSearchResult many = sim::searchBaseline(sim::Baseline::MegatronOverlap, m, hw, o);
  o.threads = 1;
  sim::BaselineSearchResult one = sim::searchBaseline(sim::Baseline::MegatronOverlap, m, hw, o);
  ASSERT_TRUE(many.ok && one.ok);
  EXPECT_EQ(sim::describeSetting(many.best.config), sim::describeSetting(one.best.config));
  EXPECT_EQ(many.best.result.stepTime, one.best.result.stepTime);
}

TEST(BaselineSearch, NothingToTryIsAnError) {
  const cost::ModelShape m = smallModel();
  sim::BaselineSearchOptions o = options(16, 3); // 3 sequences on 16 GPUs: no ep * replicas divides
  sim::BaselineSearchResult r =
      sim::searchBaseline(sim::Baseline::DualPipe, m, smallCluster(80e9), o);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("no configuration"), std::string::npos) << r.error;
}
