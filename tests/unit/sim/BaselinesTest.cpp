// The baselines against the closed-form bubbles of 1F1B and interleaved 1F1B (Narayanan et al.
// 2021 §2.2; docs/reference/papers.md: 1F1B (PP-1)(F+B)) on a uniform model with free
// communication, and the orderings between the baselines when exchanges cost time.
#include "runtime/sim/Baselines.h"
#include "runtime/cost/Roofline.h"
#include "runtime/sim/Simulator.h"

#include <gtest/gtest.h>

using namespace disagmoe;
using namespace disagmoe::sched;

namespace {

cost::ModelShape uniformModel(int layers) {
  cost::ModelShape m;
  m.name = "uniform";
  m.hidden = 1024;
  m.vocab = 2;
  for (int l = 0; l < layers; ++l) {
    cost::LayerShape s;
    s.heads = s.kvHeads = 8;
    s.headDim = 128;
    s.experts = 8;
    s.topK = 2;
    s.expertHidden = 1024;
    m.layers.push_back(s);
  }
  return m;
}

Hardware hardware(double nic, double nvlink) {
  Hardware hw;
  hw.name = "test";
  hw.peakFlops = 1e15;
  hw.hbmBandwidth = 1e30; // the optimizer step is free
  hw.hbmBytes = 1e15;
  hw.nvlinkBandwidth = nvlink;
  hw.nicBandwidth = nic;
  hw.gpusPerNode = 8;
  return hw;
}

sim::BaselineConfig config(sim::Baseline kind, int pp, int vpp, int ep, int m) {
  sim::BaselineConfig c;
  c.kind = kind;
  c.pp = pp;
  c.vpp = vpp;
  c.ep = ep;
  c.replicas = 1;
  c.microbatches = m;
  c.seqLen = 1024;
  c.sequencesPerStep = static_cast<int64_t>(m) * ep;
  c.reserveBytes = 0;
  return c;
}

/// Forward seconds of one layer for one sequence of 1024 tokens (one rank's share, ep = 1).
double layerForward(const cost::ModelShape &m, const Hardware &hw) {
  return (cost::attentionSideForwardFlops(m, 0, 1, 1024).total() +
          cost::routedExpertForwardFlops(m, 0, 1024)) /
         hw.peakFlops;
}

double run(const cost::ModelShape &m, const Hardware &hw, const sim::BaselineConfig &c) {
  Schedule s;
  std::string error;
  EXPECT_TRUE(sim::buildBaseline(m, hw, c, s, error)) << error;
  sim::SimResult r = sim::simulate(s);
  EXPECT_TRUE(r.ok) << r.error;
  return r.stepTime;
}

} // namespace

TEST(Baselines, OneFOneBBubbleMatchesTheClosedForm) {
  // ep = 1 (no all-to-all), p2p over infinitely fast links: stage time F = (L/pp) t, B = 2F.
  const Hardware hw = hardware(1e30, 1e30);
  const cost::ModelShape m = uniformModel(8);
  const double t = layerForward(m, hw), head = cost::headForwardFlops(m, 1024) * 3 / hw.peakFlops;
  for (int pp : {1, 2, 4})
    for (int mb : {4, 8}) {
      const double F = 8.0 / pp * t, B = 2 * F;
      double step = run(m, hw, config(sim::Baseline::Megatron, pp, 1, 1, mb));
      EXPECT_NEAR(step, (mb + pp - 1) * (F + B) + mb * head, 1e-9 * step)
          << "pp " << pp << " m " << mb;
    }
}

TEST(Baselines, InterleavedBubbleShrinksByVpp) {
  // Interleaved 1F1B: bubble (pp - 1)(F + B) / vpp (Narayanan et al. 2021, §2.2.2).
  const Hardware hw = hardware(1e30, 1e30);
  const cost::ModelShape m = uniformModel(8);
  const double t = layerForward(m, hw), head = cost::headForwardFlops(m, 1024) * 3 / hw.peakFlops;
  for (int vpp : {2, 4}) {
    const int pp = 2, mb = 8;
    const double F = 8.0 / pp * t, B = 2 * F;
    double step = run(m, hw, config(sim::Baseline::Megatron, pp, vpp, 1, mb));
    EXPECT_NEAR(step, mb * (F + B) + (pp - 1) * (F + B) / vpp + mb * head, 1e-9 * step)
        << "vpp " << vpp;
  }
}

TEST(Baselines, OverlapAndBidirectionalHelpWhenExchangesCost) {
  // EP 16 over two 8-GPU nodes: the all-to-alls cost about as much as the compute.
  const Hardware hw = hardware(5e10, 2e11);
  const cost::ModelShape m = uniformModel(8);
  double plain = run(m, hw, config(sim::Baseline::Megatron, 2, 1, 16, 8));
  double overlap = run(m, hw, config(sim::Baseline::MegatronOverlap, 2, 1, 16, 8));
  double dual = run(m, hw, config(sim::Baseline::DualPipe, 2, 1, 16, 8));
  EXPECT_LT(overlap, plain);
  EXPECT_LT(dual, plain);
}

TEST(Baselines, DualPipeHoldsAtMostPpPlusOneMicrobatches) {
  const Hardware hw = hardware(1e30, 1e30);
  const cost::ModelShape m = uniformModel(8);
  Schedule s;
  std::string error;
  ASSERT_TRUE(sim::buildBaseline(m, hw, config(sim::Baseline::DualPipe, 4, 1, 1, 16), s, error))
      << error;
  for (size_t g = 0; g < s.groups.size(); ++g) {
    int inflight = 0;
    peakMemory(s, static_cast<int>(g), &inflight);
    EXPECT_LE(inflight, 4 + 1) << g;
  }
  // Both ends start at once: stage 0 and stage pp-1 begin at time 0.
  sim::SimResult r = sim::simulate(s);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.groups.front().firstStart, 0);
  EXPECT_EQ(r.groups.back().firstStart, 0);
}
