// The AF-Pipe schedule: warm-up bubble against the closed form reported for AF-Pipe
// (docs/reference/papers.md: ((PP-1)/(2v)) * [max(T_a, T_f) + T_M2N]), a timeline computed by
// hand, and the frozen plan replaying the run that ordered it.
#include "Uniform.h"

#include "runtime/sim/Simulator.h"

#include <gtest/gtest.h>

using namespace disagmoe;
using namespace disagmoe::sched;

namespace {

Schedule afpipeSchedule(int layers, int groups, int microbatches, double t, double tm) {
  Schedule s;
  std::string error;
  EXPECT_TRUE(afpipe::buildAfPipe(simtest::uniformWorkload(layers, t, tm),
                                  simtest::uniformHardware(),
                                  simtest::uniformConfig(groups, microbatches), s, error))
      << error;
  return s;
}

} // namespace

// The ring has PP = 2p stages (A0, F0, ..., A(p-1), F(p-1)); v = L/p layers per group. With
// per-micro-batch busy times per group T_a = T_f = v t and one exchange hop T_M2N = v tm per group,
// the first micro-batch reaches stage k after k hops of (t + tm), so the stages idle on average
// (PP-1)/2 (t + tm) = ((PP-1)/(2v)) [max(T_a, T_f) + T_M2N] before their first work.
TEST(AfPipe, WarmupBubbleMatchesTheClosedForm) {
  const double t = 1e-3;
  for (int p : {1, 2, 4})
    for (int v : {1, 2, 3})
      for (double tm : {0.0, 0.3e-3, 1e-3}) {
        const int L = p * v, PP = 2 * p;
        Schedule s = afpipeSchedule(L, p, 2 * p + 2, t, tm);
        sim::SimResult r = sim::simulate(s);
        ASSERT_TRUE(r.ok) << r.error;
        double mean = 0;
        for (const sim::GroupStats &g : r.groups)
          mean += g.firstStart;
        mean /= static_cast<double>(r.groups.size());
        const double Ta = v * t, Tf = v * t, Tm2n = v * tm;
        const double closedForm = (PP - 1) / (2.0 * v) * (std::max(Ta, Tf) + Tm2n);
        EXPECT_NEAR(mean, closedForm, 1e-12) << "p " << p << " v " << v << " tm " << tm;
        // Stage k itself starts after exactly k hops.
        for (size_t g = 0; g < s.groups.size(); ++g) {
          int stage = 2 * s.groups[g].index + (s.groups[g].role == "ffn" ? 1 : 0);
          EXPECT_NEAR(r.groups[g].firstStart, stage * (t + tm), 1e-12);
        }
      }
}

TEST(AfPipe, SmallScheduleByHand) {
  // One layer, one group per side, two micro-batches, free exchanges, free head. By hand:
  // A: f0 [0,t], f1 [t,2t]. F: f0 [t,2t]; at 2t the loss returns mb 0, so F runs f1 (t left) and
  // b0 (2t) together at half speed: f1 ends at 4t, b0 at 5t; b1 [5t,7t]. A: b0 [5t,7t], b1 [7t,9t].
  const double t = 1e-3;
  Schedule s = afpipeSchedule(1, 1, 2, t, 0);
  sim::SimResult r = sim::simulate(s);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NEAR(r.stepTime, 9 * t, 1e-12);
  // F computes 6t of work in [t, 7t]: busy 6t; A: 2t + 4t in [0, 2t] and [5t, 9t].
  for (size_t g = 0; g < s.groups.size(); ++g)
    EXPECT_NEAR(r.groups[g].busy, 6 * t, 1e-12) << s.groups[g].role;
  EXPECT_NEAR(r.bubbleFraction, 1 - 6.0 / 9.0, 1e-12);
}

TEST(AfPipe, FrozenPlanReplaysTheOrderingRun) {
  for (int p : {1, 2, 3}) {
    Schedule s = afpipeSchedule(2 * p, p, 4 * p, 1e-3, 0.4e-3);
    sim::SimResult ordered = sim::simulate(s);
    sim::SimOptions o;
    o.dynamicCompute = o.dynamicComm = true;
    sim::SimResult dynamic = sim::simulate(s, o);
    ASSERT_TRUE(ordered.ok && dynamic.ok);
    EXPECT_NEAR(ordered.stepTime, dynamic.stepTime, 1e-12 * dynamic.stepTime) << p;
  }
}

TEST(AfPipe, SteadyStateApproachesTheComputeBound) {
  // Free exchanges, many micro-batches: each group is busy 3 v t per micro-batch, and the fill and
  // drain add at most the ring's round trip. Step / (m * 3 v t) falls toward 1 as m grows.
  const double t = 1e-3;
  double prev = 1e9;
  for (int m : {4, 16, 64}) {
    Schedule s = afpipeSchedule(4, 2, m, t, 0);
    sim::SimResult r = sim::simulate(s);
    ASSERT_TRUE(r.ok) << r.error;
    double ratio = r.stepTime / (m * 3 * 2 * t);
    EXPECT_GE(ratio, 1 - 1e-12);
    EXPECT_LT(ratio, prev);
    prev = ratio;
  }
  EXPECT_LT(prev, 1.15);
}

TEST(AfPipe, RefusesTooFewMicrobatches) {
  Schedule s;
  std::string error;
  EXPECT_FALSE(afpipe::buildAfPipe(simtest::uniformWorkload(4, 1e-3, 0), simtest::uniformHardware(),
                                   simtest::uniformConfig(2, 3), s, error));
  EXPECT_EQ(error,
            "afpipe: 3 micro-batches cannot fill the ring of 2p = 4 stages (need at least 2p)");
}

TEST(AfPipe, WindowIsTheLargestThatFitsMemory) {
  // Each group holds 2 layers x 1 MB of activations per micro-batch: 8p micro-batches need 32 MB,
  // 6p 24 MB, 4p 16 MB, 3p 12 MB.
  for (double capacity : {1e9, 30e6, 20e6, 13e6, 9e6}) {
    afpipe::Config c = simtest::uniformConfig(2, 16);
    sched::Hardware hw = simtest::uniformHardware();
    hw.hbmBytes = capacity;
    Schedule s;
    std::string error;
    ASSERT_TRUE(afpipe::buildAfPipe(simtest::uniformWorkload(4, 1e-3, 1e-4), hw, c, s, error))
        << error;
    int inflight = 0;
    peakMemory(s, 0, &inflight);
    EXPECT_EQ(inflight, capacity > 32e6   ? 16
                        : capacity > 24e6 ? 12
                        : capacity > 16e6 ? 8
                        : capacity > 12e6 ? 6
                                          : 4)
        << capacity;
  }
}

TEST(AfPipe, EveryInstructionIsExplicit) {
  // Forward and backward compute per component and micro-batch; M2N/N2M/residual both ways.
  const int L = 4, p = 2, m = 4;
  Schedule s = afpipeSchedule(L, p, m, 1e-3, 1e-4);
  int fwdAttn = 0, bwdAttn = 0, fwdExp = 0, bwdExp = 0, sends = 0, recvs = 0;
  for (const Program &P : s.programs)
    for (const Instr &i : P.instrs) {
      if (i.kind == Kind::Compute && i.op == "attention")
        (i.phase == Phase::Forward ? fwdAttn : bwdAttn)++;
      if (i.kind == Kind::Compute && i.op == "experts")
        (i.phase == Phase::Forward ? fwdExp : bwdExp)++;
      sends += i.kind == Kind::Send;
      recvs += i.kind == Kind::Recv;
    }
  EXPECT_EQ(fwdAttn, L * m);
  EXPECT_EQ(bwdAttn, L * m);
  EXPECT_EQ(fwdExp, L * m);
  EXPECT_EQ(bwdExp, L * m);
  EXPECT_EQ(sends, 6 * L * m); // m2n, n2m, residual; forward and backward
  EXPECT_EQ(recvs, sends);
}

// Per-side recomputation levels (runtime/cost/Memory.h) in the workload the schedule replays:
// Redispatch keeps no expert activations and sends the layer's M2N again in the backward (A->F),
// Full keeps the received M2N buffer ((2h + 16) per token + 12 per pair), and each side's backward
// grows by one forward at Full/Redispatch only on that side.
TEST(AfPipe, RecomputationLevelsPerSide) {
  cost::ModelShape m;
  m.name = "two-layer";
  m.hidden = 16;
  m.vocab = 32;
  cost::LayerShape ls;
  ls.heads = 4;
  ls.kvHeads = 2;
  ls.headDim = 4;
  ls.experts = 8;
  ls.topK = 2;
  ls.expertHidden = 12;
  m.layers = {ls, ls};
  cost::ClusterSpec cl;
  cl.nodes = 1;
  cl.gpusPerNode = 8;
  cl.nicsPerNode = 8;
  cl.gpu.peakFlops = 1e15;
  cl.gpu.hbmBytes = 80e9;
  cl.gpu.nvlinkBandwidth = 1e11;
  cl.gpu.pcieBandwidth = 5e10;
  cl.nic.bandwidth = 5e10;
  afpipe::Config c;
  c.groups = 1;
  c.attnRanks = 2;
  c.ffnRanks = 2;
  c.microbatches = 2;
  c.seqLen = 8;
  c.sequencesPerStep = 8;
  const afpipe::Workload none = afpipe::workloadFromModel(m, cl, c);
  c.ffnRecompute = cost::Recomputation::Redispatch;
  const afpipe::Workload redispatch = afpipe::workloadFromModel(m, cl, c);
  c.ffnRecompute = cost::Recomputation::Full;
  const afpipe::Workload full = afpipe::workloadFromModel(m, cl, c);
  const afpipe::LayerWork &n = none.layers[0], &r = redispatch.layers[0], &f = full.layers[0];
  EXPECT_DOUBLE_EQ(r.ffnActivationBytes, 0.0);
  EXPECT_DOUBLE_EQ(r.m2nBwdBytes, n.m2nBwdBytes + n.m2nBytes);
  EXPECT_DOUBLE_EQ(r.ffnBwdFlops, 1.5 * n.ffnBwdFlops);
  EXPECT_DOUBLE_EQ(r.attnBwdFlops, n.attnBwdFlops); // the attention side's level is unchanged
  // Full: per group 4 sequences x 8 tokens = 32 tokens; 8 experts on 2 F-ranks, top-2: the busiest
  // rank holds 4 experts (share 1/2) -> 32 pairs; a token reaches a given rank with probability
  // d / D_F, d = 2 [1 - C(4,2)/C(8,2)] = 2 (1 - 6/28) = 11/7.
  const double d = 2.0 * (1.0 - 6.0 / 28.0), tokens = 32.0 * d / 2.0, pairs = 32.0;
  EXPECT_NEAR(f.ffnActivationBytes, (2.0 * 16 + 16) * tokens + 12.0 * pairs, 1e-9);
  EXPECT_DOUBLE_EQ(f.m2nBwdBytes, n.m2nBwdBytes);
  // None: per pair 2h + 8I.
  EXPECT_NEAR(n.ffnActivationBytes, (2.0 * 16 + 8.0 * 12) * pairs, 1e-9);
}

// Weights, gradients and optimizer state count trainable parameters only, so they do not change
// with the sequence length; the head's logits (which do) are a separate per-group term. Closed
// form for a two-layer model on one group (p = 1, D_A = D_F = 2, one replica):
//   A-rank: 2 layers x (Wq 16x16 + Wk 16x8 + Wv 16x8 + Wo 16x16 + 2 norms of 16 + router 16x8)
//           + embedding 32x16 + head 32x16 + final norm 16 = 2 x 928 + 512 + 528 = 2896 params,
//           at 2 (bf16) + 4 (fp32 grad) + 12 / 2 (Adam state, ZeRO-1 over D_A = 2) = 12 bytes each;
//   F-rank: 2 layers x 4 experts (8 on 2 ranks) x 3 x 16 x 12 = 4608 params at 2 + 4 + 12 bytes
//           (one replica: no ZeRO sharding);
//   logits: 2 bytes x 32 vocab x (8 sequences / 2 micro-batches / 2 A-ranks) x seq_len tokens.
TEST(AfPipe, StaticBytesCountParametersOnlyAndLogitsApart) {
  cost::ModelShape m;
  m.name = "two-layer";
  m.hidden = 16;
  m.vocab = 32;
  cost::LayerShape ls;
  ls.heads = 4;
  ls.kvHeads = 2;
  ls.headDim = 4;
  ls.experts = 8;
  ls.topK = 2;
  ls.expertHidden = 12;
  m.layers = {ls, ls};
  cost::ClusterSpec cl;
  cl.nodes = 1;
  cl.gpusPerNode = 8;
  cl.nicsPerNode = 8;
  cl.gpu.peakFlops = 1e15;
  cl.gpu.hbmBytes = 80e9;
  cl.gpu.nvlinkBandwidth = 1e11;
  cl.gpu.pcieBandwidth = 5e10;
  cl.nic.bandwidth = 5e10;
  sched::Hardware hw = simtest::uniformHardware();
  hw.hbmBytes = 1e18; // the memory check is not what this test is about
  for (int64_t seqLen : {8, 4096, 10000000}) {
    afpipe::Config c;
    c.groups = 1;
    c.attnRanks = 2;
    c.ffnRanks = 2;
    c.microbatches = 2;
    c.seqLen = seqLen;
    c.sequencesPerStep = 8;
    Schedule s;
    std::string error;
    ASSERT_TRUE(afpipe::buildAfPipe(afpipe::workloadFromModel(m, cl, c), hw, c, s, error)) << error;
    ASSERT_EQ(s.groups.size(), 2u);
    EXPECT_EQ(s.groups[0].role, "attention");
    EXPECT_DOUBLE_EQ(s.groups[0].staticBytes, 2896.0 * 12) << seqLen;
    EXPECT_DOUBLE_EQ(s.groups[1].staticBytes, 4608.0 * 18) << seqLen;
    EXPECT_DOUBLE_EQ(s.groups[0].headLogitsBytes, 2.0 * 32 * 2 * static_cast<double>(seqLen))
        << seqLen;
    EXPECT_DOUBLE_EQ(s.groups[1].headLogitsBytes, 0.0);
    // The peak holds them once, on top of the static bytes.
    EXPECT_GE(peakMemory(s, 0), s.groups[0].staticBytes + s.groups[0].headLogitsBytes);
  }
}
