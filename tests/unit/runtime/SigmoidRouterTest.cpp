// DeepSeek-V3's sigmoid group-limited router (cpu::routerGates / routerGatesBackward with the
// sigmoid_group_topk scorings) against torch: oracle/sigmoid_router.json, written by
// oracle/make_sigmoid_router.py from transformers' DeepseekV3TopkRouter (forward values and
// autograd's logit gradient), plus hand-checked cases of the group mask.
#include "runtime/backends/cpu/BackwardKernels.h"
#include "runtime/backends/cpu/Kernels.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cfloat>
#include <cmath>
#include <fstream>
#include <map>
#include <vector>

using namespace disagmoe;
using namespace disagmoe::cpu;

namespace {

nlohmann::json oracle() {
  std::ifstream in(DISAGMOE_SIGMOID_ROUTER_ORACLE);
  EXPECT_TRUE(in) << "cannot read " << DISAGMOE_SIGMOID_ROUTER_ORACLE;
  return nlohmann::json::parse(in);
}

float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }

} // namespace

// Forward: the chosen set and the gates; backward: the logit gradient. The worker (TrainWorker,
// RankWorker) multiplies the gates by routed_scaling_factor after the kernel and the gate
// gradient by it before the backward kernel; the test does the same.
TEST(SigmoidRouter, MatchesTorch) {
  const nlohmann::json cases = oracle()["cases"];
  ASSERT_FALSE(cases.empty());
  for (const auto &c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const int64_t T = c["tokens"], E = c["experts"], k = c["top_k"];
    const RouterGroups groups{c["n_group"].get<int64_t>(), c["topk_group"].get<int64_t>()};
    const RouterScoring scoring = c["scoring"] == "sigmoid_group_topk_renorm"
                                      ? RouterScoring::SigmoidGroupTopkRenorm
                                      : RouterScoring::SigmoidGroupTopk;
    const float scale = c["routed_scaling_factor"];
    const auto logits = c["logits"].get<std::vector<float>>();
    const auto bias = c["bias"].get<std::vector<float>>();
    bool anyBias = false;
    for (float b : bias)
      anyBias |= b != 0.0f;
    const auto wantIds = c["ids"].get<std::vector<int64_t>>();
    const auto wantGates = c["gates"].get<std::vector<float>>();
    std::vector<int64_t> ids(T * k);
    std::vector<float> gates(T * k);
    routerGates(logits.data(), T, E, k, scoring, ids.data(), gates.data(),
                anyBias ? bias.data() : nullptr, groups);
    // Each fp32 gate is sigmoid (torch's vectorised exp vs libm: a few ulp), at most k - 1 sums
    // and a division and a multiply, each rounded: (k + 4) ulp of the value, doubled for headroom.
    for (int64_t t = 0; t < T; ++t) {
      std::map<int64_t, float> want;
      for (int64_t i = 0; i < k; ++i)
        want[wantIds[t * k + i]] = wantGates[t * k + i];
      for (int64_t i = 0; i < k; ++i) {
        const int64_t id = ids[t * k + i];
        ASSERT_TRUE(want.count(id))
            << "token " << t << " chose expert " << id << ", which torch did not";
        const float g = gates[t * k + i] * scale, tol = 2.0f * (k + 4) * FLT_EPSILON * want[id];
        EXPECT_NEAR(g, want[id], tol) << "token " << t << " expert " << id;
      }
      // Descending by the (biased, masked) choice, as torch's sorted top-k lists them.
      for (int64_t i = 0; i < k; ++i)
        EXPECT_EQ(ids[t * k + i], wantIds[t * k + i]) << "token " << t << " slot " << i;
    }

    const auto dGatesTorch = c["dgates"].get<std::vector<float>>();
    const auto wantDLogits = c["dlogits"].get<std::vector<float>>();
    std::vector<float> dGates(T * k), dLogits(T * E);
    for (size_t i = 0; i < dGates.size(); ++i)
      dGates[i] = dGatesTorch[i] * scale;
    routerGatesBackward(logits.data(), T, E, k, scoring, ids.data(), dGates.data(), dLogits.data());
    // torch's fp32 autograd rounds each of its ~(k + 6) operations per term; ours is in double.
    // The bound is that many ulp of the row's largest term |dg| s (1 - s) / D, doubled.
    for (int64_t t = 0; t < T; ++t) {
      double d = 0, termMax = 0;
      for (int64_t i = 0; i < k; ++i)
        d += sigmoid(logits[t * E + ids[t * k + i]]);
      if (scoring == RouterScoring::SigmoidGroupTopk)
        d = 1;
      for (int64_t i = 0; i < k; ++i)
        termMax = std::max(termMax, std::abs(static_cast<double>(dGates[t * k + i])) / d);
      const double tol = 2.0 * (k + 6) * FLT_EPSILON * termMax;
      std::vector<char> chosen(E, 0);
      for (int64_t i = 0; i < k; ++i)
        chosen[ids[t * k + i]] = 1;
      for (int64_t e = 0; e < E; ++e) {
        EXPECT_NEAR(dLogits[t * E + e], wantDLogits[t * E + e], tol)
            << "token " << t << " expert " << e;
        if (!chosen[e])
          EXPECT_EQ(dLogits[t * E + e], 0.0f) << "an unchosen expert has no gradient";
      }
    }
  }
}

// HF's masked_fill sets the experts of the dropped groups to 0.0, so a dropped expert outranks a
// kept one whose biased score is negative; ties at 0.0 go to the lower id (ONNX TopK).
TEST(SigmoidRouter, DroppedGroupsScoreZero) {
  // Groups {0, 1}, {2, 3}; one group kept, top-2.
  const float logits[4] = {2.0f, 0.5f, 1.0f, 1.5f};
  const float bias[4] = {0.0f, -2.0f, -2.0f, -2.0f};
  // Biased: 0.881, -1.378 (sum -0.497) vs -1.269, -1.182 (sum -2.451): group 0 is kept.
  int64_t ids[2];
  float gates[2];
  routerGates(logits, 1, 4, 2, RouterScoring::SigmoidGroupTopk, ids, gates, bias, {2, 1});
  EXPECT_EQ(ids[0], 0);
  EXPECT_EQ(ids[1], 2) << "dropped expert 2 (0.0) outranks kept expert 1 (-1.378)";
  EXPECT_FLOAT_EQ(gates[0], sigmoid(2.0f));
  EXPECT_FLOAT_EQ(gates[1], sigmoid(1.0f)) << "the gate is the unbiased score";

  // Without the bias, group 1 (0.731 + 0.818) beats group 0 (0.881 + 0.622).
  routerGates(logits, 1, 4, 2, RouterScoring::SigmoidGroupTopkRenorm, ids, gates, nullptr, {2, 1});
  EXPECT_EQ(ids[0], 3);
  EXPECT_EQ(ids[1], 2);
  const float s2 = sigmoid(1.0f), s3 = sigmoid(1.5f);
  EXPECT_FLOAT_EQ(gates[0], s3 / (s3 + s2));
  EXPECT_FLOAT_EQ(gates[1], s2 / (s3 + s2));
}

// The group score is the sum of the group's top 2, not its maximum: group 1 has the best expert,
// group 0 the best pair.
TEST(SigmoidRouter, GroupScoreIsTheSumOfTheTopTwo) {
  const float logits[6] = {1.0f, 1.0f, 0.9f, 3.0f, -3.0f, -3.0f};
  int64_t ids[1];
  float gates[1];
  routerGates(logits, 1, 6, 1, RouterScoring::SigmoidGroupTopk, ids, gates, nullptr, {2, 1});
  // Group 0 {0, 1, 2}: 0.731 + 0.731 = 1.462; group 1 {3, 4, 5}: 0.953 + 0.047 = 1.0.
  EXPECT_EQ(ids[0], 0);
}
