//===- CostTest.cpp - machine model, roofline formulas, memory, routing profiles ----===//
#include "runtime/cost/Hardware.h"
#include "runtime/cost/Memory.h"
#include "runtime/cost/Roofline.h"
#include "runtime/cost/RoutingProfile.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>

using namespace disagmoe::cost;

namespace {
const std::string kSrc = DISAGMOE_SOURCE_DIR;
const std::string kTmp = DISAGMOE_TEST_TMP;

HardwareCatalog catalog() {
  HardwareCatalog c;
  std::string error;
  EXPECT_TRUE(loadHardwareCatalog(defaultHardwareCatalogPath(), c, error)) << error;
  return c;
}

std::string writeFile(const std::string &name, const std::string &text) {
  std::string path = kTmp + "/" + name;
  std::ofstream(path) << text;
  return path;
}

/// A small model: h=16, 2 layers (layer 0 dense), 4 heads of 4, 2 KV heads, 8 experts top-2.
ModelShape tinyModel() {
  ModelShape m;
  m.name = "tiny";
  m.hidden = 16;
  m.vocab = 32;
  LayerShape dense;
  dense.heads = 4;
  dense.kvHeads = 2;
  dense.headDim = 4;
  dense.denseHidden = 24;
  LayerShape moe = dense;
  moe.denseHidden = 0;
  moe.experts = 8;
  moe.topK = 2;
  moe.expertHidden = 12;
  moe.sharedHidden = 6;
  m.layers = {dense, moe};
  return m;
}
} // namespace

TEST(Hardware, CatalogHoldsTheReferenceFigures) {
  HardwareCatalog c = catalog();
  // hardware.json: H800 bf16 dense 989.4 TFLOPS, 80 GB, NVLink 400 GB/s bidirectional.
  const GpuSpec *h800 = c.findGpu("H800");
  ASSERT_NE(h800, nullptr);
  EXPECT_DOUBLE_EQ(h800->peakFlops, 989.4e12);
  EXPECT_DOUBLE_EQ(h800->hbmBytes, 80e9);
  EXPECT_DOUBLE_EQ(h800->nvlinkBandwidth, 400e9 / 2);
  // B200: 36 PFLOPS sparse per 8-GPU HGX -> 36e15 / 8 / 2 dense per GPU.
  EXPECT_DOUBLE_EQ(c.findGpu("B200")->peakFlops, 36e15 / 8 / 2);
  EXPECT_DOUBLE_EQ(c.findGpu("A100")->peakFlops, 312e12);
  EXPECT_NE(c.findGpu("H100"), nullptr);
  EXPECT_NE(c.findGpu("H200"), nullptr);
  // 400 Gb/s per direction = 50e9 bytes/s.
  EXPECT_DOUBLE_EQ(c.findNic("CX7-400G")->bandwidth, 400e9 / 8);
  EXPECT_EQ(c.findGpu("V100"), nullptr);
}

TEST(Hardware, TurningPointIsPeakOverBandwidth) {
  HardwareCatalog c = catalog();
  EXPECT_DOUBLE_EQ(turningPoint(*c.findGpu("H800"), *c.findNic("CX7-400G")), 989.4e12 / 50e9);
}

TEST(Hardware, LoadsThePaperCluster) {
  HardwareCatalog c = catalog();
  ClusterSpec cl;
  std::string error;
  ASSERT_TRUE(loadCluster(kSrc + "/samples/clusters/h800-16x8.yaml", c, cl, error)) << error;
  EXPECT_EQ(cl.gpus(), 128);
  EXPECT_EQ(cl.nics(), 128);
  EXPECT_EQ(cl.gpu.name, "H800");
  EXPECT_DOUBLE_EQ(cl.nvlinkBandwidth, 200e9);
  // One NIC per GPU, 50 GB/s below PCIe Gen5's 64 GB/s.
  EXPECT_DOUBLE_EQ(cl.perGpuNetworkBandwidth(), 50e9);
}

TEST(Hardware, ClusterErrorsNameTheField) {
  HardwareCatalog c = catalog();
  ClusterSpec cl;
  std::string error;
  EXPECT_FALSE(loadCluster(
      writeFile("bad1.yaml",
                "gpu: V100\nnodes: 1\ngpus_per_node: 8\nnic: CX7-400G\nnics_per_node: 8\n"),
      c, cl, error));
  EXPECT_NE(error.find("gpu: unknown GPU 'V100'"), std::string::npos) << error;
  EXPECT_FALSE(loadCluster(
      writeFile("bad2.yaml",
                "gpu: H800\nnodes: 0\ngpus_per_node: 8\nnic: CX7-400G\nnics_per_node: 8\n"),
      c, cl, error));
  EXPECT_NE(error.find("nodes: must be at least 1"), std::string::npos) << error;
  EXPECT_FALSE(
      loadCluster(writeFile("bad3.yaml", "gpu: H800\nnodes: 2\ngpus_per_node: 8\nnic: CX7-400G\n"),
                  c, cl, error));
  EXPECT_NE(error.find("nics_per_node: missing"), std::string::npos) << error;
  EXPECT_FALSE(loadCluster(
      writeFile(
          "bad4.yaml",
          "gpu: H800\nnodes: 2\ngpus_per_node: 8\nnic: CX7-400G\nnics_per_node: 8\nnicks: 3\n"),
      c, cl, error));
  EXPECT_NE(error.find("nicks: unknown key"), std::string::npos) << error;
  EXPECT_FALSE(loadCluster(kTmp + "/missing.yaml", c, cl, error));
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
}

TEST(Roofline, CausalPairsMatchesCounting) {
  for (int64_t s : {1, 2, 7, 64, 100})
    for (int64_t w : {0, 1, 3, 16, 100, 200}) {
      double count = 0;
      for (int64_t i = 0; i < s; ++i)
        for (int64_t j = 0; j <= i; ++j)
          if (w == 0 || i - j < w)
            count += 1;
      EXPECT_DOUBLE_EQ(causalPairs(s, w), count) << "s=" << s << " w=" << w;
    }
}

TEST(Roofline, AttentionFlopsMatchANaiveImplementationsCount) {
  // Count the multiply-adds of a naive implementation of one layer, 2 FLOP each.
  ModelShape m = tinyModel();
  const LayerShape &l = m.layers[1];
  int64_t s = 10, b = 3;
  double macs = 0;
  int64_t q = l.heads * l.headDim, kv = l.kvHeads * l.headDim;
  for (int64_t t = 0; t < b * s; ++t)
    macs += m.hidden * q + 2 * m.hidden * kv + q * m.hidden; // x Wq, x Wk, x Wv, o Wo
  for (int64_t seq = 0; seq < b; ++seq)
    for (int64_t hd = 0; hd < l.heads; ++hd)
      for (int64_t i = 0; i < s; ++i)
        for (int64_t j = 0; j <= i; ++j)
          macs += 2 * l.headDim; // q_i . k_j and p_ij * v_j
  double attn = 2 * macs;
  double router = 2.0 * b * s * m.hidden * l.experts;
  double shared = 2.0 * b * s * 3 * m.hidden * l.sharedHidden; // w1, w3, w2
  AttentionFlops f = attentionSideForwardFlops(m, 1, b, s);
  EXPECT_DOUBLE_EQ(f.projections + f.scores, attn);
  EXPECT_DOUBLE_EQ(f.router, router);
  EXPECT_DOUBLE_EQ(f.sharedAndDense, shared);
  // Routed experts: each token runs top_k SwiGLU experts of three matrices.
  EXPECT_DOUBLE_EQ(routedExpertForwardFlops(m, 1, 30), 2.0 * 30 * 2 * 3 * 16 * 12);
  EXPECT_DOUBLE_EQ(headForwardFlops(m, 30), 2.0 * 30 * 16 * 32);
  EXPECT_EQ(trainingMultiplier(false), 3.0);
  EXPECT_EQ(trainingMultiplier(true), 4.0);
}

TEST(Roofline, AttentionScoreTermGrowsQuadraticallyAndTheRestLinearly) {
  ModelShape m = tinyModel();
  AttentionFlops a = attentionSideForwardFlops(m, 1, 1, 4096);
  AttentionFlops b = attentionSideForwardFlops(m, 1, 1, 8192);
  EXPECT_DOUBLE_EQ(b.projections, 2 * a.projections);
  EXPECT_NEAR(b.scores / a.scores, 4.0, 1e-3);
}

TEST(Roofline, ExpectedDistinctRanksMatchesEnumeration) {
  struct Case {
    int64_t e, k, r;
  };
  for (Case c : {Case{8, 2, 3}, Case{8, 2, 4}, Case{6, 3, 4}, Case{10, 4, 5}, Case{8, 8, 2}}) {
    // Enumerate every k-subset of experts (contiguous split: expert e on rank floor(e*R/E)).
    double total = 0, subsets = 0;
    std::function<void(int64_t, int64_t, uint64_t)> rec = [&](int64_t next, int64_t left,
                                                              uint64_t ranks) {
      if (left == 0) {
        total += __builtin_popcountll(ranks);
        subsets += 1;
        return;
      }
      for (int64_t e = next; e < c.e; ++e)
        rec(e + 1, left - 1, ranks | (1ull << (e * c.r / c.e)));
    };
    rec(0, c.k, 0);
    EXPECT_NEAR(expectedDistinctRanks(c.e, c.k, c.r), total / subsets, 1e-12)
        << c.e << " " << c.k << " " << c.r;
  }
  EXPECT_DOUBLE_EQ(expectedDistinctRanks(128, 8, 1), 1.0);
  EXPECT_NEAR(expectedDistinctRanks(128, 8, 128), 8.0, 1e-12);
}

TEST(Roofline, ExchangeBytesFollowTheMessageLayouts) {
  ModelShape m = tinyModel();
  // EP degree = experts: every token meets top_k = 2 distinct ranks.
  ExchangeBytes b = exchangeBytes(m, 1, 100, 8, false);
  double pair = 8 + 2 * 16;
  EXPECT_NEAR(b.attnSend, 100 * (2 * (pair + 8) + 12 * 2) + 100 * 2 * pair, 1e-6);
  EXPECT_NEAR(b.attnRecv, 100 * 2 * pair + 100 * (2 * pair + 4 * 2), 1e-6);
  EXPECT_DOUBLE_EQ(b.ffnRecv, b.attnSend);
  EXPECT_DOUBLE_EQ(b.ffnSend, b.attnRecv);
  ExchangeBytes r = exchangeBytes(m, 1, 100, 8, true);
  EXPECT_NEAR(r.attnSend - b.attnSend, 2 * 100 * pair, 1e-6);
  EXPECT_DOUBLE_EQ(r.ffnSend, b.ffnSend);
  ExchangeBytes dense = exchangeBytes(m, 0, 100, 8, true);
  EXPECT_EQ(dense.attnMax() + dense.ffnMax(), 0.0);
}

TEST(Memory, AttentionGpuHoldsWeightsGradientsShardedOptimizerAndActivations) {
  ModelShape m = tinyModel();
  double h = 16, q = 16, kv = 8;
  double layer1 = h * q + 2 * h * kv + q * h + 2 * h + h * 8 + 3 * h * 6;
  EXPECT_DOUBLE_EQ(m.attentionSideParams(1), layer1);
  const Recomputation none = Recomputation::None, full = Recomputation::Full;
  MemoryBreakdown b = attentionGpuMemory(m, {1}, false, false, 4, 50, 3, none, none);
  EXPECT_DOUBLE_EQ(b.weights, 2 * layer1);
  EXPECT_DOUBLE_EQ(b.gradients, 4 * layer1);
  EXPECT_DOUBLE_EQ(b.optimizer, 12 * layer1 / 4);
  double act = 8 * h + 4 * q + 4 * kv + 4 * 4 + 8 * 8 + 8 * 6;
  EXPECT_DOUBLE_EQ(b.activations, act * 50 * 3);
  MemoryBreakdown rc = attentionGpuMemory(m, {1}, false, false, 4, 50, 3, full, none);
  // Full: the layer input of each in-flight micro-batch, and the layer being recomputed.
  EXPECT_DOUBLE_EQ(rc.activations, (2 * h * 3 + act) * 50);
  // Full while the FFN side redispatches: the M2N payload (2h + 12 top_k) is kept as well.
  MemoryBreakdown rd =
      attentionGpuMemory(m, {1}, false, false, 4, 50, 3, full, Recomputation::Redispatch);
  EXPECT_DOUBLE_EQ(rd.activations, ((2 * h + 2 * h + 12 * 2) * 3 + act) * 50);
  // Selective: norm outputs and shared SwiGLU silu/product recomputed (4h and 4I fewer).
  MemoryBreakdown sel =
      attentionGpuMemory(m, {1}, false, false, 4, 50, 3, Recomputation::Selective, none);
  EXPECT_DOUBLE_EQ(sel.activations, (act - 4 * h - 4 * 6) * 50 * 3);
  MemoryOptions noZero;
  noZero.zero1 = false;
  EXPECT_DOUBLE_EQ(attentionGpuMemory(m, {1}, false, false, 4, 50, 3, none, none, noZero).optimizer,
                   12 * layer1);
  MemoryBreakdown head = attentionGpuMemory(m, {1}, true, true, 1, 50, 3, none, none);
  EXPECT_DOUBLE_EQ(head.weights, 2 * (layer1 + 2 * 32 * 16 + 16));
}

// Context parallelism (Roofline.h, Memory.h): one ring step moves K and V of s/cp tokens in bf16;
// a ring pass hides a transfer shorter than a step's compute and exposes a longer one; the ring's
// buffers are four chunks.
TEST(ContextParallel, RingChunkRingTimeAndBuffersFollowTheClosedForms) {
  ModelShape m = tinyModel(); // kv_heads 2 x head_dim 4 = 8
  EXPECT_DOUBLE_EQ(kvRingChunkBytes(m, 1, 64, 4), 2 * (64 / 4) * 8 * 2);
  EXPECT_DOUBLE_EQ(kvRingChunkBytes(m, 0, 64, 2), 2 * 32 * 8 * 2);
  // core 8 s over cp 4: steps of 2 s. Transfer 1 s: hidden (2 + 3 x 2); 3 s: exposed (2 + 3 x 3).
  EXPECT_DOUBLE_EQ(ringAttentionSeconds(8, 1, 4), 8);
  EXPECT_DOUBLE_EQ(ringAttentionSeconds(8, 3, 4), 11);
  EXPECT_DOUBLE_EQ(ringAttentionSeconds(8, 100, 1), 8); // no ring without CP
  EXPECT_DOUBLE_EQ(contextParallelBufferBytes(m, {0, 1}, 64, 4), 4 * 512);
  EXPECT_DOUBLE_EQ(contextParallelBufferBytes(m, {0, 1}, 64, 1), 0);
}

TEST(Memory, FfnGpuHoldsItsExpertsOfMoeLayersOnly) {
  ModelShape m = tinyModel();
  // 30 tokens received, 40 (token, expert) pairs computed per micro-batch, 2 in flight.
  MemoryBreakdown b = ffnGpuMemory(m, {0, 1}, 2, 1, 30, 40, 2, Recomputation::None);
  double params = 2 * 3 * 16 * 12;
  EXPECT_DOUBLE_EQ(b.weights, 2 * params);
  EXPECT_DOUBLE_EQ(b.optimizer, 12 * params);
  EXPECT_DOUBLE_EQ(b.activations, (2 * 16 + 8 * 12) * 40 * 2);
  EXPECT_EQ(b.dominant(), "optimizer state");
  MemoryBreakdown sel = ffnGpuMemory(m, {0, 1}, 2, 1, 30, 40, 2, Recomputation::Selective);
  EXPECT_DOUBLE_EQ(sel.activations, (2 * 16 + 4 * 12) * 40 * 2);
  // Full: the received M2N buffer, once per token (id, bf16 vector, count) and 12 bytes per pair.
  MemoryBreakdown full = ffnGpuMemory(m, {0, 1}, 2, 1, 30, 40, 2, Recomputation::Full);
  // (plus, with Full and Redispatch, the layer being recomputed at level None: (2h + 8I) * 40).
  double transient = (2 * 16 + 8 * 12) * 40;
  EXPECT_DOUBLE_EQ(full.activations, ((2 * 16 + 16) * 30 + 12 * 40) * 2 + transient);
  MemoryBreakdown redispatch = ffnGpuMemory(m, {0, 1}, 2, 1, 30, 40, 2, Recomputation::Redispatch);
  EXPECT_DOUBLE_EQ(redispatch.activations, transient);
}

TEST(Roofline, RankHitProbabilityMatchesEnumeration) {
  // Oracle: enumerate every k-subset of E experts and count those touching the first `held`.
  for (int E : {8, 12})
    for (int k : {1, 2, 3})
      for (int held : {1, 3, 6}) {
        int64_t total = 0, hit = 0;
        for (int mask = 0; mask < (1 << E); ++mask) {
          if (__builtin_popcount(mask) != k)
            continue;
          ++total;
          hit += (mask & ((1 << held) - 1)) != 0;
        }
        EXPECT_NEAR(rankHitProbability(E, k, held), double(hit) / double(total), 1e-12)
            << E << " " << k << " " << held;
      }
}

TEST(RoutingProfile, RoundTripsAndChecksSums) {
  RoutingProfile p;
  p.model = "m";
  p.data = "mock";
  p.tokens = 10;
  p.topK = 2;
  p.layers = {{0, {5, 5, 10, 0}}, {2, {1, 2, 3, 14}}};
  std::string error, path = kTmp + "/profile.json";
  ASSERT_TRUE(writeRoutingProfile(path, p, error)) << error;
  RoutingProfile q;
  ASSERT_TRUE(readRoutingProfile(path, q, error, 4)) << error;
  ASSERT_EQ(q.layers.size(), 2u);
  EXPECT_EQ(q.layers[1].layer, 2);
  EXPECT_EQ(q.layers[1].expertLoads, (std::vector<int64_t>{1, 2, 3, 14}));
  EXPECT_EQ(q.tokens, 10);
  EXPECT_FALSE(readRoutingProfile(path, q, error, 8));
  EXPECT_NE(error.find("layers[0].expert_loads: 4 experts, the model has 8"), std::string::npos)
      << error;
}

TEST(RoutingProfile, RefusesBadFiles) {
  RoutingProfile q;
  std::string error;
  auto bad = [&](const std::string &text, const std::string &expect) {
    EXPECT_FALSE(readRoutingProfile(writeFile("p.json", text), q, error)) << text;
    EXPECT_NE(error.find(expect), std::string::npos) << error;
  };
  bad(R"({"format":"other","version":1,"layers":[]})", "format");
  bad(R"({"format":"disagmoe-routing-profile","version":2,"layers":[]})", "version: expected 1");
  bad(R"({"format":"disagmoe-routing-profile","version":1,"layers":[{"layer":0,"expert_loads":[1,-1]}]})",
      "layers[0].expert_loads[1]: must be an integer >= 0");
  bad(R"({"format":"disagmoe-routing-profile","version":1,"tokens":3,"top_k":1,"layers":[{"layer":4,"expert_loads":[1,1]}]})",
      "sum 2 differs from tokens * top_k = 3 (layer 4)");
  bad(R"({"format":"disagmoe-routing-profile","version":1,"layers":[{"layer":1,"expert_loads":[1]},{"layer":1,"expert_loads":[1]}]})",
      "not in ascending order");
}

// Non-gated routed experts (onnxruntime's com.microsoft.MoE relu/gelu/silu/identity without fc3)
// have two [hidden, expert_hidden] matrices instead of SwiGLU's three. Closed form for tinyModel's
// MoE layer (h = 16, I = 12, top-2): params 2 * 16 * 12 = 384 (SwiGLU 576); forward FLOPs of 10
// tokens 2 FLOP * 2 matrices * 10 * 2 * 16 * 12 = 15,360 (SwiGLU 23,040).
TEST(Roofline, NonGatedExpertsHaveTwoMatrices) {
  ModelShape m = tinyModel();
  EXPECT_DOUBLE_EQ(m.expertParams(1), 576.0);
  EXPECT_DOUBLE_EQ(routedExpertForwardFlops(m, 1, 10), 23040.0);
  m.layers[1].expertMatrices = 2;
  EXPECT_DOUBLE_EQ(m.expertParams(1), 384.0);
  EXPECT_DOUBLE_EQ(routedExpertForwardFlops(m, 1, 10), 15360.0);
}
