//===- PlannerTest.cpp - Z3 placement against exhaustive enumeration ------===//
//
// Oracles: exhaustive enumeration of every candidate, recomputation choice and NIC split; brute
// force minima computed here; the options' arithmetic.
//
//===----------------------------------------------------------------------===//
#include "passes/placement/solver/Planner.h"
#include "passes/placement/solver/StageTimes.h"

#include "runtime/cost/Roofline.h"

#include <gtest/gtest.h>

#include <regex>

#include <cmath>
#include <set>

using namespace disagmoe;
using namespace disagmoe::placement;

namespace {
/// A small MoE whose memory binds on the smallest clusters of the sweep (GPUs of 0.6 GB).
cost::ModelShape miniModel() {
  cost::ModelShape m;
  m.name = "mini";
  m.hidden = 512;
  m.vocab = 8000;
  cost::LayerShape l;
  l.heads = 8;
  l.kvHeads = 2;
  l.headDim = 64;
  l.experts = 8;
  l.topK = 2;
  l.expertHidden = 1024;
  for (int i = 0; i < 6; ++i)
    m.layers.push_back(l);
  m.layers[1].window = 256; // one sliding-window layer
  return m;
}

cost::ClusterSpec cluster(int nodes, int gpusPerNode, int nicsPerNode, double hbm = 0.6e9) {
  cost::ClusterSpec c;
  c.name = "sweep";
  c.gpu.name = "H800";
  c.gpu.peakFlops = 989.4e12;
  c.gpu.hbmBytes = hbm;
  c.gpu.pcieBandwidth = 64e9;
  c.gpu.nvlinkBandwidth = 200e9;
  c.nic.name = "CX7-400G";
  c.nic.bandwidth = 50e9;
  c.nodes = nodes;
  c.gpusPerNode = gpusPerNode;
  c.nicsPerNode = nicsPerNode;
  c.nvlinkBandwidth = 200e9;
  return c;
}

double usableBytesOf(const Problem &p) { return p.cluster.gpu.hbmBytes - p.options.reserveBytes; }

Problem problem(const cost::ClusterSpec &c, int64_t seqLen) {
  Problem p;
  p.model = miniModel();
  p.cluster = c;
  p.options.seqLen = seqLen;
  p.options.globalTokens = int64_t(1) << 17;
  p.options.reserveBytes = 0;
  return p;
}
} // namespace

// Every cluster of 2..32 GPUs (1, 2, 4 or 8 GPUs per node, one NIC per GPU, and half as many
// NICs for 2+ GPUs per node), two sequence lengths: Z3's optimum has the objective value of the
// exhaustive enumeration (step time, then GPU count), and is proven optimal.
TEST(PlannerSweep, Z3MatchesExhaustiveOnEveryClusterUpTo32Gpus) {
  int compared = 0, infeasible = 0;
  std::set<std::pair<int, int>> levelPairs; // (attention, FFN) levels of the exhaustive optima
  for (int gpn : {1, 2, 4, 8})
    for (int nodes = 1; nodes * gpn <= 32; ++nodes)
      for (int nics : {gpn, gpn / 2}) {
        if (nics < 1 || nodes * gpn < 2 || nodes * nics < 2 || (gpn == 1 && nics != gpn))
          continue;
        for (int64_t s : {2048, 16384}) {
          Problem p = problem(cluster(nodes, gpn, nics), s);
          Solution e = solveExhaustive(p);
          Solution z = solveZ3(p);
          SCOPED_TRACE(std::to_string(nodes) + "x" + std::to_string(gpn) + " GPUs, " +
                       std::to_string(nodes * nics) + " NICs, s=" + std::to_string(s));
          ASSERT_EQ(e.ok, z.ok) << e.error << " | " << z.error;
          if (!e.ok) {
            ++infeasible;
            EXPECT_NE(z.error.find("does not fit"), std::string::npos) << z.error;
            continue;
          }
          EXPECT_TRUE(z.optimal) << z.note;
          EXPECT_EQ(z.eval.stepTime, e.eval.stepTime);
          EXPECT_EQ(z.config.cand.gpus(), e.config.cand.gpus());
          EXPECT_TRUE(z.eval.fitsMemory);
          levelPairs.insert({int(e.config.attnRecompute), int(e.config.ffnRecompute)});
          // The fast exhaustive variant (best FFN NIC count only) is exact too.
          Solution f = solveExhaustive(p, false);
          EXPECT_EQ(f.eval.stepTime, e.eval.stepTime);
          ++compared;
        }
      }
  EXPECT_GT(compared, 80);
  EXPECT_GT(infeasible, 0);         // the sweep reaches clusters where memory binds
  EXPECT_GE(levelPairs.size(), 4u); // and optima at several recomputation levels of each side
}

// Keeping only the largest micro-batch count loses nothing (docs/placement.md, "Exactness").
TEST(PlannerSweep, MicrobatchPruningIsExact) {
  for (int nodes : {2, 3, 4})
    for (int64_t s : {2048, 16384}) {
      Problem p = problem(cluster(nodes, 8, 8, 2e9), s);
      Solution pruned = solveExhaustive(p, false);
      p.options.allMicrobatchCounts = true;
      Solution all = solveExhaustive(p, false);
      ASSERT_EQ(pruned.ok, all.ok);
      EXPECT_TRUE(pruned.ok) << pruned.error;
      if (pruned.ok) {
        EXPECT_EQ(pruned.eval.stepTime, all.eval.stepTime);
        EXPECT_EQ(pruned.config.cand.gpus(), all.config.cand.gpus());
        EXPECT_GT(all.candidates, pruned.candidates);
      }
    }
}

TEST(Planner, StepTimeIsTheSlowerSideTimesTheBubbleFactorPlusSync) {
  Problem p = problem(cluster(2, 8, 8, 80e9), 4096);
  Config c;
  c.cand = Candidate{1, 2, 4, 4, 8};
  c.attnNics = 6;
  c.ffnNics = 8;
  Evaluation e = evaluate(p, c);
  // K = m + (2p - 1) / ceil(L / p) = 8 + 3 / 3.
  EXPECT_DOUBLE_EQ(e.bubbleFactor, 9.0);
  EXPECT_DOUBLE_EQ(e.stepTime, e.bubbleFactor * std::max(e.attnBusy, e.ffnBusy) + e.gradSync);
  // Each side's busy time is at least its compute and its exchange time.
  EXPECT_GE(e.attnBusy * (1 + 1e-12), std::max(e.attnCompute, e.attnComm));
  EXPECT_GE(e.ffnBusy * (1 + 1e-12), std::max(e.ffnCompute, e.ffnComm));
  // Group bandwidth: 6 NICs over r*p = 2 groups, below 4 GPUs' PCIe.
  EXPECT_DOUBLE_EQ(e.attnBandwidth, 3 * 50e9);
  // Gradient synchronisation over r*dA = 4 ranks of the busiest attention GPU's parameters:
  // group 0 holds layers 0, 2, 4 and the embedding; group 1 layers 1, 3, 5 and the head
  // (head group = L mod p = 0: the head is on group 0 too). Default: the distributed optimizer,
  // a ring reduce-scatter of fp32 gradients and all-gather of bf16 weights, (n-1)/n x (4 + 2)
  // bytes per parameter; an fp32 all-reduce sends 2 (n-1)/n x 4.
  cost::ModelShape m = p.model;
  double params0 = m.attentionSideParams(0) * 3 + 2.0 * m.vocab * m.hidden + m.hidden;
  double syncA = 3.0 / 4 * (4 + 2) * params0 / 50e9;
  EXPECT_NEAR(e.gradSync, syncA, 1e-12 * syncA);
  Problem allReduce = p;
  allReduce.options.gradSync.distributedOptimizer = false;
  double syncAllReduce = 2.0 * 3 / 4 * 4 * params0 / 50e9;
  EXPECT_NEAR(evaluate(allReduce, c).gradSync, syncAllReduce, 1e-12 * syncAllReduce);
  Problem bf16 = allReduce;
  bf16.options.gradSync.reduceBytes = 2;
  EXPECT_NEAR(evaluate(bf16, c).gradSync, syncAllReduce / 2, 1e-12 * syncAllReduce);
  // MFU: 3 x forward model FLOPs over step time x GPUs x peak.
  double tokens = double(int64_t(1) << 17), flops = 3 * cost::headForwardFlops(m, tokens);
  for (int64_t l = 0; l < 6; ++l)
    flops += 3 * (cost::attentionSideForwardFlops(m, l, tokens / 4096, 4096).total() +
                  cost::routedExpertForwardFlops(m, l, tokens));
  EXPECT_NEAR(e.mfu, flops / (e.stepTime * 16 * 989.4e12), 1e-12);
}

// Recomputation costs against the formulas (docs/cost-model.md), one group holding every layer:
// Full adds one forward of the side; Selective adds 5 FLOP per expert-intermediate element;
// Redispatch adds Full's FLOPs and the forward M2N once more to the attention side's sends.
TEST(Planner, RecomputationLevelsAddTheirComputeAndExchange) {
  using cost::Recomputation;
  Problem p = problem(cluster(2, 8, 8, 80e9), 4096);
  const cost::ModelShape &m = p.model;
  Config c;
  c.cand = Candidate{1, 1, 4, 4, 8};
  c.attnNics = c.ffnNics = 8;
  auto at = [&](Recomputation a, Recomputation f) {
    Config k = c;
    k.attnRecompute = a;
    k.ffnRecompute = f;
    return evaluate(p, k);
  };
  Evaluation none = at(Recomputation::None, Recomputation::None);
  const double tokens = double(int64_t(1) << 17) / 8; // per micro-batch
  const double h = 512, I = 1024, k = 2, L = 6;
  // Forward expert FLOPs of the group: 6 T k h I per layer; training 3x, Full 4x.
  const double expertFwd = L * 6 * tokens * k * h * I;
  EXPECT_NEAR(none.ffnFlops, 3 * expertFwd, 1e-9 * expertFwd);
  EXPECT_NEAR(at(Recomputation::None, Recomputation::Full).ffnFlops, 4 * expertFwd,
              1e-9 * expertFwd);
  EXPECT_NEAR(at(Recomputation::None, Recomputation::Selective).ffnFlops,
              3 * expertFwd + L * 5 * I * tokens * k, 1e-9 * expertFwd);
  Evaluation rd = at(Recomputation::None, Recomputation::Redispatch);
  EXPECT_NEAR(rd.ffnFlops, 4 * expertFwd, 1e-9 * expertFwd);
  // The forward M2N per layer: each token once per F-rank it meets (d of 4 ranks holding 2 of 8
  // experts; d by the complement of C(6,2)/C(8,2) per rank) with id, vector and count, and 12
  // bytes per token-expert; the attention side then sends it twice. p = 1: no residual route.
  const double d = 4 * (1 - 15.0 / 28.0);
  const double m2n = tokens * (d * (8 + 2 * h + 8) + 12 * k);
  const double n2mBackward = tokens * d * (8 + 2 * h);
  const double recv = tokens * d * (8 + 2 * h) + tokens * (d * (8 + 2 * h) + 4 * k);
  EXPECT_NEAR(none.attnBytes, L * std::max(m2n + n2mBackward, recv), 1e-9 * none.attnBytes);
  EXPECT_NEAR(rd.attnBytes, L * std::max(2 * m2n + n2mBackward, recv), 1e-9 * rd.attnBytes);
  // Attention side: Full adds one forward of the attention-side layers (the head is not
  // recomputed: its backward follows its forward at once).
  Evaluation fullA = at(Recomputation::Full, Recomputation::None);
  const double head = 3 * cost::headForwardFlops(m, tokens);
  EXPECT_NEAR((fullA.attnFlops - head) / (none.attnFlops - head), 4.0 / 3.0, 1e-12);
  // Memory falls level by level on each side.
  EXPECT_GT(none.ffnMemory.activations,
            at(Recomputation::None, Recomputation::Selective).ffnMemory.activations);
  EXPECT_GT(at(Recomputation::None, Recomputation::Selective).ffnMemory.activations,
            at(Recomputation::None, Recomputation::Full).ffnMemory.activations);
  EXPECT_GT(at(Recomputation::None, Recomputation::Full).ffnMemory.activations,
            rd.ffnMemory.activations);
  EXPECT_GT(none.attnMemory.activations,
            at(Recomputation::Selective, Recomputation::None).attnMemory.activations);
  EXPECT_GT(at(Recomputation::Selective, Recomputation::None).attnMemory.activations,
            fullA.attnMemory.activations);
}

TEST(Planner, InfeasibleModelNamesTheSmallestMemoryAndTheDominantTerm) {
  Problem p = problem(cluster(1, 4, 4, 0.05e9), 2048);
  Solution z = solveZ3(p);
  ASSERT_FALSE(z.ok);
  // Oracle: the least max(attention GPU, FFN GPU) bytes over every candidate and choice.
  llvm::Expected<std::vector<Candidate>> enumerated = enumerateCandidates(p);
  ASSERT_TRUE(static_cast<bool>(enumerated)) << llvm::toString(enumerated.takeError());
  const std::vector<Candidate> cands = std::move(*enumerated);
  double least = 1e300;
  using cost::Recomputation;
  const Recomputation levels[] = {Recomputation::None, Recomputation::Selective,
                                  Recomputation::Full, Recomputation::Redispatch};
  for (const Candidate &c : cands)
    for (Recomputation ra : {levels[0], levels[1], levels[2]})
      for (Recomputation rf : levels) {
        Evaluation e = evaluate(p, Config{c, ra, rf, 1, 1});
        least = std::min(least, std::max(e.attnMemory.total(), e.ffnMemory.total()));
      }
  char expect[64];
  std::snprintf(expect, sizeof expect, "any configuration needs is %.1f GB", least / 1e9);
  EXPECT_NE(z.error.find(expect), std::string::npos) << z.error;
  EXPECT_NE(z.error.find("the dominant term is the "), std::string::npos) << z.error;
  Solution e = solveExhaustive(p);
  EXPECT_EQ(e.error, z.error);
}

// The options named in the "does not fit" line are the ones the user fixed, in the flags' own
// spelling; --cp only when the user gave it (disagmoe simulate pins cp 1 itself).
TEST(Planner, FixedOptionsNameTheFlagsThatFixedAChoice) {
  PlannerOptions o;
  EXPECT_EQ(fixedOptions(o), "");
  o.fixedGroups = 2;
  o.fixedMicrobatches = 8;
  o.recompute = Recompute::Never;
  EXPECT_EQ(fixedOptions(o), "--groups 2 --micro-batches 8 --recompute off");
  o.fixedCp = 1;
  o.cpPinnedByTool = true;
  EXPECT_EQ(fixedOptions(o), "--groups 2 --micro-batches 8 --recompute off");
  o.cpPinnedByTool = false;
  EXPECT_EQ(fixedOptions(o), "--groups 2 --micro-batches 8 --cp 1 --recompute off");
  Problem p = problem(cluster(1, 4, 4, 0.05e9), 2048);
  p.options.fixedGroups = 1;
  const Solution z = solveZ3(p);
  ASSERT_FALSE(z.ok);
  EXPECT_NE(z.error.find("any configuration allowed by --groups 1 needs is "), std::string::npos)
      << z.error;
  // The configuration named: its replica count too, each count with its noun in agreement (issue
  // 17: "1 groups", "1 A-ranks"); --groups 1 fixes "1 group".
  const std::regex counts("with ([0-9]+) replica(s?), ([0-9]+) group(s?), ([0-9]+) A-rank(s?) and "
                          "([0-9]+) F-rank(s?) per group");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(z.error, m, counts)) << z.error;
  EXPECT_EQ(m[3].str(), "1");
  for (int i = 1; i <= 7; i += 2)
    EXPECT_EQ(m[i + 1].str(), m[i].str() == "1" ? "" : "s") << z.error;
}

// Context parallelism against hand-written closed forms (Roofline.h, Memory.h): 32 sequences of
// 4096 per step, one group of 4 A-ranks. cp 2 halves the tokens per A-rank per micro-batch (16
// micro-batches of 2 sequences instead of 8 of 4), so the activations and the logits; adds four
// K/V chunks of ring buffers; runs each layer's attention core as ring passes over NVLink; and
// leaves the exchange bytes per step unchanged.
TEST(Planner, ContextParallelSplitsActivationsRingsTheCoreAndKeepsExchangeVolume) {
  Problem p = problem(cluster(2, 8, 8, 80e9), 4096);
  const double peak = 989.4e12, nvlink = 200e9, s = 4096, h = 512, q = 512, kv = 128, V = 8000;
  Config c1, c2;
  c1.cand = Candidate{1, 1, 4, 4, 8, 1};
  c2.cand = Candidate{1, 1, 4, 4, 16, 2};
  c1.attnNics = c2.attnNics = c1.ffnNics = c2.ffnNics = 8;
  Evaluation e1 = evaluate(p, c1), e2 = evaluate(p, c2);
  // Memory, recomputation none: per token and layer 8h + 4q + 4kv + 4 heads + 8 E (Memory.h), six
  // layers, min(m, 2p) = 2 micro-batches in flight, s/cp = 2048 tokens per A-rank; the head's bf16
  // logits of those tokens; four chunks of 2 (s/cp) kv bf16.
  const double perToken = 6 * (8 * h + 4 * q + 4 * kv + 4 * 8 + 8 * 8);
  const double chunk = 2 * (s / 2) * kv * 2;
  EXPECT_NEAR(e2.attnMemory.activations, perToken * 2 * 2048 + 2 * 2048 * V + 4 * chunk, 1e-6);
  EXPECT_NEAR(e1.attnMemory.activations, perToken * 2 * 4096 + 2 * 4096 * V, 1e-6);
  // Compute per micro-batch (2 sequences = 8192 tokens over 4 A-ranks): projections and router
  // 3 x forward spread over the A-ranks; per layer the score FLOPs 4 q P(s, w) per sequence as one
  // forward ring pass and one backward pass (2 x the FLOPs, K/V and dK/dV: 2 x the chunk).
  const double T = 8192;
  auto ring = [](double core, double transfer, double cp) {
    return core / cp + (cp - 1) * std::max(core / cp, transfer);
  };
  double expected = 3 * 2 * T * h * V / (4 * peak); // the head
  for (int l = 0; l < 6; ++l) {
    double pairs = l == 1 ? 256.0 * 257 / 2 + (s - 256) * 256 : s * (s + 1) / 2;
    double scores = 2 * 4 * q * pairs;
    double rest = 2 * T * h * (q + 2 * kv) + 2 * T * q * h + 2 * T * h * 8;
    expected += 3 * rest / (4 * peak) + ring(scores / (4 * peak), chunk / nvlink, 2) +
                ring(2 * scores / (4 * peak), 2 * chunk / nvlink, 2);
  }
  EXPECT_NEAR(e2.attnCompute, expected, 1e-9 * expected);
  // The exchange volume per step is the same: half the bytes per micro-batch, twice the
  // micro-batches.
  EXPECT_NEAR(e2.attnBytes * 16, e1.attnBytes * 8, 1e-9 * e1.attnBytes);
  EXPECT_NEAR(e2.ffnBytes * 16, e1.ffnBytes * 8, 1e-9 * e1.ffnBytes);
  // Training FLOPs per step are the same too (load-balanced chunks: total / GPUs).
  EXPECT_NEAR(e2.attnFlops * 16, e1.attnFlops * 8, 1e-9 * e1.attnFlops);
}

TEST(Planner, ContradictoryOptionsAreNamed) {
  Problem p = problem(cluster(2, 8, 8, 80e9), 4096);
  auto fails = [&](Problem q, const std::string &expect) {
    Solution s = solveZ3(q);
    EXPECT_FALSE(s.ok);
    EXPECT_NE(s.error.find(expect), std::string::npos) << s.error;
  };
  Problem q = p;
  q.options.fixedAttnGpus = 10;
  q.options.fixedFfnGpus = 8;
  fails(q, "--attn-gpus 10 and --ffn-gpus 8 exceed the cluster's 16 GPUs");
  q = p;
  q.options.fixedGroups = 7;
  fails(q, "--groups 7 exceeds the model's 6 layers");
  q = p;
  q.options.fixedGroups = 3;
  q.options.fixedAttnGpus = 4;
  fails(q, "--attn-gpus 4 is not a multiple of --groups 3");
  q = p;
  q.options.fixedGroups = 3;
  q.options.fixedMicrobatches = 4;
  fails(q, "--micro-batches 4 is below 2 x --groups 3");
  q = p;
  q.options.globalTokens = 5000;
  fails(q, "--global-tokens 5000 is not a multiple of --seq-len 4096");
  q = p;
  q.options.fixedAttnGpus = 15;
  q.options.fixedGroups = 5;
  fails(q, "no configuration satisfies the integer constraints");
  q = p;
  q.options.fixedCp = 3;
  fails(q, "--cp 3 is not one of 1, 2, 4, 8");
  q = p;
  q.cluster = cluster(4, 4, 4, 80e9);
  q.options.fixedCp = 8;
  fails(q, "--cp 8 does not divide the cluster's 4 GPUs per node");
  q = p;
  q.options.fixedCp = 8;
  q.options.fixedAttnGpus = 4;
  fails(q, "with --attn-gpus 4 --cp 8");
}

TEST(Planner, RecomputationIsChosenWhenMemoryBinds) {
  // Find an HBM size at which the best configuration needs recomputation: feasible with it,
  // infeasible without.
  bool seen = false;
  for (double hbm = 0.2e9; hbm < 3e9 && !seen; hbm *= 1.15) {
    Problem p = problem(cluster(1, 8, 8, hbm), 16384);
    Problem never = p;
    never.options.recompute = Recompute::Never;
    Solution a = solveExhaustive(p, false), n = solveExhaustive(never, false);
    if (a.ok && !n.ok) {
      Solution z = solveZ3(p);
      ASSERT_TRUE(z.ok);
      EXPECT_TRUE(z.config.anyRecompute());
      EXPECT_EQ(z.eval.stepTime, a.eval.stepTime);
      seen = true;
    }
  }
  EXPECT_TRUE(seen);
}

// explainShareBound's three reasons against the exhaustive search: a share no candidate has
// (divisibility); the share the memory-unlimited optimum has, where memory pushes the optimum to a
// smaller share (memory, and its unlimited step is that optimum's); the same share without the
// memory limit (not bound: nothing is faster than the optimum itself).
TEST(Planner, ShareBoundNamesDivisibilityMemoryOrNeither) {
  bool seen = false;
  for (double hbm = 0.2e9; hbm < 4e9 && !seen; hbm *= 1.1)
    for (int64_t s : {2048, 16384}) {
      Problem p = problem(cluster(2, 8, 8, hbm), s);
      // Without context parallelism, so that memory lowers the share somewhere in this range
      // (cp > 1 splits the activations and lets the larger shares fit).
      p.options.fixedCp = 1;
      Problem q = p;
      q.options.reserveBytes = -1e18; // no memory limit
      Solution lim = solveExhaustive(p, false), free = solveExhaustive(q, false);
      if (!lim.ok || !free.ok)
        continue;
      const Candidate &a = lim.config.cand, &b = free.config.cand;
      if (a.attnGpus() * b.gpus() >= b.attnGpus() * a.gpus())
        continue; // memory did not lower the share
      seen = true;
      ShareBound mem = explainShareBound(p, b.attnGpus(), b.gpus(), lim.eval.stepTime);
      EXPECT_EQ(mem.reason, ShareBound::Reason::Memory) << mem.text;
      EXPECT_EQ(mem.bestUnlimitedStep, free.eval.stepTime) << mem.text;
      EXPECT_GT(mem.bestUnlimitedBytes, usableBytesOf(p)) << mem.text;
      EXPECT_NE(mem.text.find("memory binds"), std::string::npos) << mem.text;
      ShareBound none = explainShareBound(q, b.attnGpus(), b.gpus(), free.eval.stepTime);
      EXPECT_EQ(none.reason, ShareBound::Reason::Slower) << none.text;
      const int64_t W = p.cluster.gpus();
      ShareBound div = explainShareBound(p, W, W, lim.eval.stepTime); // no FFN GPU at all
      EXPECT_EQ(div.reason, ShareBound::Reason::Divisibility) << div.text;
      EXPECT_EQ(div.candidates, 0);
      break;
    }
  EXPECT_TRUE(seen);
}

TEST(Planner, TimeLimitIsReported) {
  Problem p = problem(cluster(4, 8, 8, 80e9), 4096);
  p.options.timeLimitSeconds = 0;
  Solution z = solveZ3(p);
  EXPECT_FALSE(z.ok && z.optimal);
  EXPECT_NE((z.error + z.note).find("time limit"), std::string::npos) << z.error << z.note;
}

TEST(LocalSearch, RooflineOptimumIsALocalOptimum) {
  Problem p = problem(cluster(2, 8, 8, 80e9), 4096);
  Solution z = solveZ3(p);
  ASSERT_TRUE(z.ok);
  RooflineStageTimes roofline;
  LocalSearchResult r = localSearch(p, z.config, roofline);
  EXPECT_EQ(r.stepTime, z.eval.stepTime);
  EXPECT_GT(r.evaluated, 0);
}

TEST(LocalSearch, MeasuredSlowAttentionMovesGpusToAttention) {
  Problem p = problem(cluster(4, 8, 8, 80e9), 16384);
  Solution z = solveZ3(p);
  ASSERT_TRUE(z.ok);
  // Measured: the attention stage is three times the roofline's, the FFN stage as predicted.
  MeasuredStageTimes measured;
  MeasuredStageTimes::Entry e;
  e.seqLen = 16384;
  e.replicas = z.config.cand.replicas;
  e.groups = z.config.cand.groups;
  e.attnRanks = z.config.cand.attnRanks;
  e.ffnRanks = z.config.cand.ffnRanks;
  e.microbatches = z.config.cand.microbatches;
  e.attnRecompute = z.config.attnRecompute;
  e.ffnRecompute = z.config.ffnRecompute;
  e.attnSeconds = 3 * z.eval.attnBusy;
  e.ffnSeconds = z.eval.ffnBusy;
  measured.entries.push_back(e);
  std::string path = std::string(DISAGMOE_TEST_TMP) + "/stage-times.json";
  llvm::Error saved = measured.save(path);
  ASSERT_FALSE(static_cast<bool>(saved)) << llvm::toString(std::move(saved));
  MeasuredStageTimes loaded;
  llvm::Error read = loaded.load(path);
  ASSERT_FALSE(static_cast<bool>(read)) << llvm::toString(std::move(read));
  ASSERT_EQ(loaded.entries.size(), 1u);
  bool ok = false;
  double start = stepTimeWith(p, z.config, loaded, ok);
  ASSERT_TRUE(ok);
  LocalSearchResult r = localSearch(p, z.config, loaded);
  EXPECT_LT(r.stepTime, start);
  EXPECT_GT(double(r.config.cand.attnGpus()) / r.config.cand.gpus(),
            double(z.config.cand.attnGpus()) / z.config.cand.gpus());
}

TEST(Roofline, AttentionIntensityGrowsWithSequenceLengthAndFfnsDoesNot) {
  cost::ModelShape m = miniModel();
  double prevA = 0, prevF = -1;
  for (int64_t s : {4096, 8192, 16384, 32768}) {
    double tokens = 65536;
    cost::ExchangeBytes x = cost::exchangeBytes(m, 0, tokens, 4, false);
    double a = cost::flopsPerByte(cost::attentionSideForwardFlops(m, 0, tokens / s, s).total(),
                                  x.attnMax());
    double f = cost::flopsPerByte(cost::routedExpertForwardFlops(m, 0, tokens), x.ffnMax());
    EXPECT_GT(a, prevA);
    if (prevF >= 0)
      EXPECT_DOUBLE_EQ(f, prevF);
    prevA = a;
    prevF = f;
  }
}
