// The local executor end to end on mixtral_tiny's layer-0 weights, without the compiler: plans are
// built by TestSupport with weights read in place from the golden .npy files.
#include "TestSupport.h"

#include "runtime/backends/cpu/Kernels.h"
#include "runtime/executor/Executor.h"
#include "runtime/executor/Report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

using namespace disagmoe;
using namespace disagmoe::test;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

constexpr int64_t H = 64, V = 256;

RunResult runPlan(const json &planJson, const std::vector<int64_t> &ids, int64_t batch, int64_t seq,
                  ExecutorOptions options = {}) {
  const Plan plan = loadPlan(writePlan(planJson, "exec"));
  return Executor(plan, options).run(ids, batch, seq);
}

std::vector<int64_t> goldenIds() {
  std::vector<int64_t> shape;
  return loadGoldenIds("ids_b2_s8.npy", shape);
}

// A one-layer plan's residual stream after layer 0 is the golden l0_out; its logits are the head
// applied to the final norm of it (computed here with the same kernels from the golden l0_out).
void expectLayer0Golden(const RunResult &r, const char *what) {
  const double err = maxAbsDiff(r.hidden.data, loadGolden("l0_out.npy").data);
  std::printf("[ golden   ] %-34s layer-0 output max abs err %.3g\n", what, err);
  EXPECT_LE(err, 1e-5);
  EXPECT_EQ(r.hidden.shape, (std::vector<int64_t>{2, 8, H}));
  EXPECT_EQ(r.logits.shape, (std::vector<int64_t>{2, 8, V}));
  const Tensor out = loadGolden("l0_out.npy");
  std::vector<float> normed(16 * H), logits(16 * V);
  cpu::rmsNorm(out.data.data(), 16, H, loadGolden("w_final_norm.npy").data.data(), 1e-5f,
               normed.data());
  cpu::linear(normed.data(), 16, H, loadGolden("w_head.npy").data.data(), V, logits.data());
  const double logitsErr = maxAbsDiff(r.logits.data, logits);
  std::printf("[ golden   ] %-34s logits max abs err %.3g\n", what, logitsErr);
  EXPECT_LE(logitsErr, 1e-4);
}

TinyPlacement placement(std::vector<std::vector<int>> attention, std::vector<std::vector<int>> ffn,
                        std::vector<std::vector<int>> expertToRank) {
  TinyPlacement p;
  p.numLayers = static_cast<int64_t>(expertToRank.size());
  p.attentionGroups = std::move(attention);
  p.ffnGroups = std::move(ffn);
  p.expertToRank = std::move(expertToRank);
  return p;
}

uint64_t bytesOf(const RunResult &r, ExchangeKind kind, int src, int dst) {
  uint64_t total = 0;
  for (const ExchangeRecord &e : r.exchanges)
    if (e.kind == kind && e.src == src && e.dst == dst)
      total += e.bytes;
  return total;
}

} // namespace

TEST(Executor, TwoAttentionAndTwoFfnRanksMatchGoldenLayer0) {
  const json plan = tinyPlan(placement({{0, 1}}, {{2, 3}}, {{2, 2, 2, 2, 3, 3, 3, 3}}));
  const RunResult r = runPlan(plan, goldenIds(), 2, 8);
  expectLayer0Golden(r, "2 A-ranks + 2 F-ranks");

  // Experts ran where the plan put them, on 32 token-expert pairs in all (16 tokens, top-2).
  ASSERT_EQ(r.experts.size(), 8u);
  int64_t pairs = 0;
  for (const ExpertRecord &e : r.experts) {
    EXPECT_EQ(e.rank, e.expert < 4 ? 2 : 3);
    pairs += e.tokens;
  }
  EXPECT_EQ(pairs, 32);

  // Message sizes follow the wire format: each A-rank sends 8 tokens of residual to itself.
  EXPECT_EQ(bytesOf(r, ExchangeKind::Residual, 0, 0), 8u + 8 * (8 + 4 * H));
  EXPECT_EQ(bytesOf(r, ExchangeKind::Residual, 1, 1), 8u + 8 * (8 + 4 * H));
  uint64_t m2n = 0, expectedM2n = 0;
  for (const ExchangeRecord &e : r.exchanges)
    if (e.kind == ExchangeKind::M2n) {
      m2n += e.bytes;
      expectedM2n += 8 + e.tokens * (8 + 4 * H + 8);
    }
  EXPECT_EQ(m2n, expectedM2n + 32 * 12); // plus one (expert id, gate) pair per token-expert pair
  EXPECT_EQ(r.exchanges.size(), 2u * 2 + 2u * 2 + 2u); // m2n 2x2, n2m 2x2, residual 2

  const std::string placementText = formatPlacement(loadPlan(writePlan(plan, "exec")), r);
  EXPECT_NE(placementText.find("layer 0 attention: group A0 ranks 0,1\n"), std::string::npos)
      << placementText;
  EXPECT_NE(placementText.find("layer 0 experts 0-3 -> rank 2, 4-7 -> rank 3"), std::string::npos)
      << placementText;
}

TEST(Executor, OneAttentionRankAndThreeFfnRanksWithUnevenSplit) {
  const RunResult r = runPlan(tinyPlan(placement({{0}}, {{1, 2, 3}}, {{1, 2, 2, 2, 2, 2, 3, 3}})),
                              goldenIds(), 2, 8);
  expectLayer0Golden(r, "1 A-rank + 3 F-ranks (1/5/2)");
  EXPECT_EQ(bytesOf(r, ExchangeKind::Residual, 0, 0), 8u + 16 * (8 + 4 * H));
}

TEST(Executor, FfnRankWithoutTokensStillCompletes) {
  // Rank 2 owns no expert: it receives and returns zero-token messages.
  const RunResult r =
      runPlan(tinyPlan(placement({{0}}, {{1, 2}}, {{1, 1, 1, 1, 1, 1, 1, 1}})), goldenIds(), 2, 8);
  expectLayer0Golden(r, "F-rank with zero tokens");
  EXPECT_EQ(bytesOf(r, ExchangeKind::M2n, 0, 2), 8u);
  EXPECT_EQ(bytesOf(r, ExchangeKind::N2m, 2, 0), 8u);
}

TEST(Executor, AttentionRankWithoutSequencesStillCompletes) {
  // Batch 1 on two A-ranks: rank 1 holds no sequence. Compare with the one-A-rank placement.
  std::vector<int64_t> ids = goldenIds();
  ids.resize(8);
  const RunResult two =
      runPlan(tinyPlan(placement({{0, 1}}, {{2}}, {{2, 2, 2, 2, 2, 2, 2, 2}})), ids, 1, 8);
  const RunResult one =
      runPlan(tinyPlan(placement({{0}}, {{1}}, {{1, 1, 1, 1, 1, 1, 1, 1}})), ids, 1, 8);
  EXPECT_EQ(two.logits.data, one.logits.data);
  EXPECT_EQ(bytesOf(two, ExchangeKind::M2n, 1, 2), 8u);
  // The first sequence's layer-0 output matches the golden's first 8 rows.
  const Tensor out = loadGolden("l0_out.npy");
  EXPECT_LE(
      maxAbsDiff(two.hidden.data, std::vector<float>(out.data.begin(), out.data.begin() + 8 * H)),
      1e-5);
}

// The tiny plan's longest fp32 chain (tests/numerics/error_model.py layer_chain with hidden 64, 4
// heads of 16, sequences of 8, 8 experts of 128, top-2): per layer the attention block (norm 64, q
// 64, q.k 16, softmax 8 + 1, probs.v 8, o 64, residual 1) and the FFN block (norm 64, router 64,
// softmax 8, expert 64 and 128, combine 2, residual 1), plus the final norm and head (64 each).
constexpr int64_t kTinyLayerChain =
    (64 + 64 + 16 + 8 + 1 + 8 + 64 + 1) + (64 + 64 + 8 + 64 + 128 + 2 + 1);

TEST(Executor, AttentionPlacementIsBitIdenticalWhereRanksComputeTheSameShapes) {
  // Two layers (both with layer-0 weights), experts 0-3 on one F-rank and 4-7 on another. Two
  // A-ranks with one sequence each, in one group or in p = 2 interleaved groups: every rank
  // computes the same shapes in the same order and the reduction order is fixed (F-ranks ascending,
  // experts ascending), so the results are identical bit for bit on any BLAS kernel.
  const std::vector<TinyPlacement> placements = {
      placement({{0, 1}}, {{2, 3}}, {{2, 2, 2, 2, 3, 3, 3, 3}, {2, 2, 2, 2, 3, 3, 3, 3}}),
      placement({{0, 1}, {2, 3}}, {{4, 5}, {6, 7}},
                {{4, 4, 4, 4, 5, 5, 5, 5}, {6, 6, 6, 6, 7, 7, 7, 7}}),
  };
  std::vector<RunResult> results;
  for (const TinyPlacement &p : placements)
    results.push_back(runPlan(tinyPlan(p), goldenIds(), 2, 8));
  EXPECT_EQ(results[1].hidden.data, results[0].hidden.data);
  EXPECT_EQ(results[1].logits.data, results[0].logits.data);
  // With p = 2, layer 0's output crosses from group A0 to A1 and layer 1's back to A0.
  EXPECT_EQ(bytesOf(results[1], ExchangeKind::Residual, 0, 2), 8u + 8 * (8 + 4 * H));
  EXPECT_EQ(bytesOf(results[1], ExchangeKind::Residual, 3, 1), 8u + 8 * (8 + 4 * H));
  EXPECT_GT(bytesOf(results[1], ExchangeKind::N2m, 4, 2), 8u);
}

TEST(Executor, AttentionDataSplitChangesResultsOnlyWithinTheFp32Bound) {
  // One A-rank holding both sequences against two A-ranks holding one each: the GEMMs see 16 rows
  // instead of 8, and a BLAS kernel may round a row differently by the row count (OpenBLAS's
  // Haswell kernel does), so the claim is the error model's bound, not bit identity.
  const RunResult one = runPlan(
      tinyPlan(placement({{0}}, {{1, 2}}, {{1, 1, 1, 1, 2, 2, 2, 2}, {1, 1, 1, 1, 2, 2, 2, 2}})),
      goldenIds(), 2, 8);
  const RunResult two = runPlan(
      tinyPlan(placement({{0, 1}}, {{2, 3}}, {{2, 2, 2, 2, 3, 3, 3, 3}, {2, 2, 2, 2, 3, 3, 3, 3}})),
      goldenIds(), 2, 8);
  EXPECT_TRUE(Fp32Bound(2 * kTinyLayerChain).check(two.hidden.data, one.hidden.data));
  EXPECT_TRUE(Fp32Bound(2 * kTinyLayerChain + 2 * H).check(two.logits.data, one.logits.data));
}

TEST(Executor, ExpertPlacementChangesResultsOnlyByRounding) {
  // Moving experts between F-ranks changes how a token's expert outputs associate with the
  // residual ((h + a) + b instead of h + (a + b)), so results agree to rounding, not bit for bit.
  const std::vector<int> all1(8, 1), split = {1, 2, 1, 2, 1, 2, 1, 2};
  const RunResult together =
      runPlan(tinyPlan(placement({{0}}, {{1, 2}}, {all1, all1})), goldenIds(), 2, 8);
  const RunResult apart =
      runPlan(tinyPlan(placement({{0}}, {{1, 2}}, {split, split})), goldenIds(), 2, 8);
  const double hiddenErr = maxAbsDiff(apart.hidden.data, together.hidden.data);
  const double logitsErr = maxAbsDiff(apart.logits.data, together.logits.data);
  std::printf("[ placement] experts on 1 vs 2 F-ranks: hidden max abs diff %.3g, logits %.3g\n",
              hiddenErr, logitsErr);
  EXPECT_LE(hiddenErr, 1e-5);
  EXPECT_LE(logitsErr, 1e-5);
}

TEST(Executor, RejectsInputsOutsideVocabularyOrCapacity) {
  const Plan plan =
      loadPlan(writePlan(tinyPlan(placement({{0}}, {{1}}, {{1, 1, 1, 1, 1, 1, 1, 1}})), "exec"));
  const Executor exec(plan);
  std::vector<int64_t> ids = goldenIds();
  ids[9] = 256;
  try {
    exec.run(ids, 2, 8);
    FAIL();
  } catch (const ExecError &e) {
    EXPECT_STREQ(e.what(), "input id 256 at [1,1] is outside the vocabulary [0, 256)");
  }
  try {
    exec.run(std::vector<int64_t>(5 * 16, 1), 5, 16);
    FAIL();
  } catch (const ExecError &e) {
    EXPECT_STREQ(e.what(), "input [5,16] puts 80 tokens on an attention rank, above "
                           "capacity_tokens 64 of exchange \"residual.0\" "
                           "(compile the plan for this shape with --batch/--seq-len)");
  }
}

TEST(Executor, InstructionsOutOfOrderFailFastOnEveryRank) {
  // attention before its attn_norm: rank 0 fails; rank 1 (waiting for M2N) is aborted, not timed
  // out.
  json plan = tinyPlan(placement({{0}}, {{1}}, {{1, 1, 1, 1, 1, 1, 1, 1}}));
  std::swap(plan["programs"]["attention"][1], plan["programs"]["attention"][2]);
  ExecutorOptions options;
  options.recvTimeout = 30000ms;
  const auto start = std::chrono::steady_clock::now();
  try {
    runPlan(plan, goldenIds(), 2, 8, options);
    FAIL();
  } catch (const ExecError &e) {
    EXPECT_STREQ(
        e.what(),
        "rank 0 (attention group 0): programs.attention[1] attention of layer 0: needs attn_norm "
        "output of layer 0, which has not been computed on this rank (instructions out of order)");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10000ms);
}

TEST(Executor, MismatchedProgramsTimeOutNamingThePeer) {
  // n2m_recv moved before m2n_send: the A-rank waits for N2M while the F-rank waits for M2N.
  json plan = tinyPlan(placement({{0}}, {{1}}, {{1, 1, 1, 1, 1, 1, 1, 1}}));
  json &attention = plan["programs"]["attention"];
  json m2nSend = attention[6];
  attention.erase(6);
  attention.insert(attention.begin() + 9, m2nSend); // after residual_send, residual_recv, n2m_recv
  ExecutorOptions options;
  options.recvTimeout = 200ms;
  try {
    runPlan(plan, goldenIds(), 2, 8, options);
    FAIL();
  } catch (const std::exception &e) {
    const std::string message = e.what();
    const bool attentionSide =
        message == "rank 0 (attention group 0): programs.attention[8] n2m_recv of layer 0: "
                   "rank 0: recv from rank 1 (tag 1) timed out after 200 ms";
    const bool ffnSide = message == "rank 1 (ffn group 0): programs.ffn[0] m2n_recv of layer 0: "
                                    "rank 1: recv from rank 0 (tag 0) timed out after 200 ms";
    EXPECT_TRUE(attentionSide || ffnSide) << message;
  }
}
