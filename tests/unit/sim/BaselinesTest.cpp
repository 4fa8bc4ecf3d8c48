// The baselines against the closed-form bubbles of 1F1B and interleaved 1F1B (Narayanan et al.
// 2021 §2.2; docs/reference/papers.md: 1F1B (PP-1)(F+B)) on a uniform model with free
// communication, and the orderings between the baselines when exchanges cost time.
#include "runtime/sim/Baselines.h"
#include "runtime/cost/Roofline.h"
#include "runtime/sim/PipelineOrder.h"
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

TEST(Baselines, DualPipeCellsFollowDualPipePy) {
  // dualpipe.py's step: every rank runs n forwards and n backwards per phase, and one W per split
  // backward, after it (FIFO).
  for (int pp : {2, 4, 8})
    for (int n : {pp, pp + 3})
      for (int s = 0; s < pp; ++s) {
        int f[2] = {0, 0}, bk[2] = {0, 0}, pending = 0, splits = 0;
        for (const sim::PipeCell &cell : sim::dualPipeCells(pp, n, s))
          for (const sim::PipeOp &op : cell) {
            if (op.kind == sim::PipeOp::Forward)
              ++f[op.phase];
            else if (op.kind == sim::PipeOp::Backward) {
              EXPECT_LT(bk[op.phase], f[op.phase]) << "backward before its forward";
              ++bk[op.phase];
              if (op.split)
                ++pending, ++splits;
            } else if (op.kind == sim::PipeOp::Weight) {
              ASSERT_GT(pending, 0) << "W without a split backward";
              --pending;
            }
          }
        EXPECT_EQ(f[0], n);
        EXPECT_EQ(f[1], n);
        EXPECT_EQ(bk[0], n);
        EXPECT_EQ(bk[1], n);
        EXPECT_EQ(pending, 0);
        const int H = pp / 2, h = std::min(s, pp - 1 - s);
        EXPECT_EQ(splits, 2 * (H - h - 1) + h + 1) << "steps 3, 6 and 7";
      }
}

TEST(Baselines, DualPipeBubbleMatchesTheClosedForm) {
  // DeepSeek-V3 Table 2 (and the DualPipe README): bubble (PP/2 - 1)(F&B + B - 3W), F a chunk's
  // forward, B its full backward, W its weight-gradient part, F&B a forward and a backward
  // overlapped; against 1F1B's (PP - 1)(F + B). Exact for uniform stages whose input and weight
  // gradients each cost a forward (B = 2F, W = F, the zero-bubble papers' setting): layers of
  // router + experts only (no attention core, whose backward has no weight gradient), ep = 1 and
  // free links (no exchange time), no head (vocab 0). F&B = F + B (the two share the GPU). Each
  // rank computes 2n (F + B); the step is that plus the bubble.
  const Hardware hw = hardware(1e30, 1e30);
  cost::ModelShape m = uniformModel(8);
  m.vocab = 0;
  for (cost::LayerShape &l : m.layers)
    l.heads = l.kvHeads = 0;
  const double t = layerForward(m, hw);
  for (int pp : {2, 4, 8})
    for (int n : {pp, pp + 2}) {
      const double F = 8.0 / pp * t, B = 2 * F, W = F;
      const double bubble = (pp / 2 - 1) * ((F + B) + B - 3 * W);
      const double dual = run(m, hw, config(sim::Baseline::DualPipe, pp, 1, 1, 2 * n));
      EXPECT_NEAR(dual, 2 * n * (F + B) + bubble, 1e-9 * dual) << "pp " << pp << " n " << n;
      const double oneF = run(m, hw, config(sim::Baseline::Megatron, pp, 1, 1, 2 * n));
      EXPECT_NEAR(oneF, 2 * n * (F + B) + (pp - 1) * (F + B), 1e-9 * oneF);
      if (pp > 2)
        EXPECT_LT(dual, oneF);
    }
}

TEST(Baselines, DualPipeWithAttentionStaysWithinTheClosedForm) {
  // With the attention core (S seconds of a chunk's forward, no weights) W = F - S and the input
  // gradient F + S: the closed form (PP/2 - 1)(F&B + B - 3W) is then an upper bound of the bubble
  // (the deferred W cells still fill it), and the bubble stays positive.
  const Hardware hw = hardware(1e30, 1e30);
  cost::ModelShape m = uniformModel(8);
  m.vocab = 0;
  const double S = cost::attentionSideForwardFlops(m, 0, 1, 1024).scores / hw.peakFlops;
  const double t = layerForward(m, hw);
  for (int pp : {4, 8}) {
    const int n = pp + 2;
    const double F = 8.0 / pp * t, B = 2 * F, Sc = 8.0 / pp * S, W = F - Sc;
    const double closed = 2 * n * (F + B) + (pp / 2 - 1) * ((F + B) + B - 3 * W);
    const double dual = run(m, hw, config(sim::Baseline::DualPipe, pp, 1, 1, 2 * n));
    EXPECT_LE(dual, closed * (1 + 1e-12)) << "pp " << pp;
    EXPECT_GT(dual, 2 * n * (F + B)) << "pp " << pp;
  }
}

TEST(Baselines, LiveMemoryMatchesTheClosedForm) {
  // Megatron's memory from the units live (one chunk of one micro-batch): stage s holds its
  // warm-up + 1 units under 1F1B, (pp - s - 1) + 1 for vpp = 1 and (pp - s - 1) * 2 + (vpp - 1) *
  // pp
  // + 1 interleaved (megatron/core/pipeline_parallel/schedules.py's num_warmup_microbatches), at
  // most m * vpp; the overlapped 1F1B one more; DualPipe pp + 1 (DeepSeek-V3 Table 2). Each unit
  // weighs the activations its forward computes keep (read from the built schedule).
  const Hardware hw = hardware(1e30, 1e30);
  const cost::ModelShape m = uniformModel(8);
  auto unitBytes = [](const Schedule &s, int group, int chunksOfMb0) {
    double a = 0;
    for (const Program &p : s.programs)
      for (const Instr &i : p.instrs)
        if (i.group == group && i.kind == Kind::Compute && i.phase == Phase::Forward && i.mb == 0)
          a += i.activationBytes;
    return a / chunksOfMb0;
  };
  for (sim::Baseline kind : {sim::Baseline::Megatron, sim::Baseline::MegatronOverlap})
    for (int pp : {2, 4})
      for (int vpp : {1, 2})
        for (int mb : {pp, 2 * pp, 8}) {
          const sim::BaselineConfig c = config(kind, pp, vpp, 1, mb);
          Schedule s;
          std::string error;
          ASSERT_TRUE(sim::buildBaseline(m, hw, c, s, error)) << error;
          const std::vector<sim::BaselineStageMemory> mem = sim::baselineMemory(m, c);
          ASSERT_EQ(static_cast<int>(mem.size()), pp);
          for (int st = 0; st < pp; ++st) {
            const int warmup = vpp == 1 ? pp - st - 1 : (pp - st - 1) * 2 + (vpp - 1) * pp;
            const int extra = kind == sim::Baseline::MegatronOverlap ? 2 : 1;
            const int want = std::min(mb * vpp, warmup + extra);
            EXPECT_EQ(mem[st].liveUnits, want) << sim::toString(kind) << " pp " << pp << " vpp "
                                               << vpp << " m " << mb << " s " << st;
            EXPECT_NEAR(mem[st].activationBytes, want * unitBytes(s, st, vpp),
                        1e-12 * mem[st].activationBytes);
          }
        }
  for (int pp : {2, 4, 8})
    for (int n : {pp, pp + 3}) {
      const sim::BaselineConfig c = config(sim::Baseline::DualPipe, pp, 1, 1, 2 * n);
      Schedule s;
      std::string error;
      ASSERT_TRUE(sim::buildBaseline(m, hw, c, s, error)) << error;
      const std::vector<sim::BaselineStageMemory> mem = sim::baselineMemory(m, c);
      for (int st = 0; st < pp; ++st) {
        EXPECT_EQ(mem[st].liveUnits, pp + 1) << "pp " << pp << " n " << n << " s " << st;
        EXPECT_NEAR(mem[st].activationBytes, (pp + 1) * unitBytes(s, st, 1),
                    1e-12 * mem[st].activationBytes);
      }
    }
}

TEST(Baselines, MemoryRefusalNamesTheStage) {
  Hardware hw = hardware(1e30, 1e30);
  const cost::ModelShape m = uniformModel(8);
  sim::BaselineConfig c = config(sim::Baseline::Megatron, 2, 1, 1, 8);
  const std::vector<sim::BaselineStageMemory> mem = sim::baselineMemory(m, c);
  hw.hbmBytes = mem[0].total() - 1; // stage 0 holds the most units
  Schedule s;
  std::string error;
  EXPECT_FALSE(sim::buildBaseline(m, hw, c, s, error));
  EXPECT_NE(error.find("stage 0: peak memory"), std::string::npos) << error;
  hw.hbmBytes = std::max(mem[0].total(), mem[1].total());
  EXPECT_TRUE(sim::buildBaseline(m, hw, c, s, error)) << error;
}
