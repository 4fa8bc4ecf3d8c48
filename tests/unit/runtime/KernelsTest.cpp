// CPU kernels on small hand-checked inputs: top-k ties, router scorings, RoPE, attention, errors.
#include "runtime/backends/cpu/Kernels.h"
#include "runtime/backends/cpu/BackwardKernels.h"
#include "runtime/tensor/RopePairs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace disagmoe;
using namespace disagmoe::cpu;

TEST(Kernels, TopKTiesGoToTheLowerIndex) {
  const float row[6] = {0.5f, 2.0f, 1.0f, 2.0f, 2.0f, 1.0f};
  int64_t ids[4];
  float values[4];
  topK(row, 6, 4, ids, values);
  EXPECT_EQ(std::vector<int64_t>(ids, ids + 4), (std::vector<int64_t>{1, 3, 4, 2}));
  EXPECT_EQ(std::vector<float>(values, values + 4), (std::vector<float>{2, 2, 2, 1}));
}

TEST(Kernels, RouterWithEqualLogitsPicksLowestExperts) {
  const std::vector<float> logits(8, 0.25f);
  for (RouterScoring scoring :
       {RouterScoring::SoftmaxTopkRenorm, RouterScoring::SoftmaxTopk, RouterScoring::TopkSoftmax}) {
    int64_t ids[2];
    float gates[2];
    routerGates(logits.data(), 1, 8, 2, scoring, ids, gates);
    EXPECT_EQ(ids[0], 0);
    EXPECT_EQ(ids[1], 1);
    const float expected = scoring == RouterScoring::SoftmaxTopk ? 0.125f : 0.5f;
    EXPECT_FLOAT_EQ(gates[0], expected);
    EXPECT_FLOAT_EQ(gates[1], expected);
  }
}

TEST(Kernels, RouterScoringsFollowTheirDefinitions) {
  const float logits[4] = {1.0f, 3.0f, 2.0f, 0.0f};
  double e[4], sum = 0;
  for (int i = 0; i < 4; ++i)
    sum += e[i] = std::exp(logits[i]);
  int64_t ids[2];
  float gates[2];

  routerGates(logits, 1, 4, 2, RouterScoring::SoftmaxTopk, ids, gates);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 2);
  EXPECT_NEAR(gates[0], e[1] / sum, 1e-7);
  EXPECT_NEAR(gates[1], e[2] / sum, 1e-7);

  routerGates(logits, 1, 4, 2, RouterScoring::SoftmaxTopkRenorm, ids, gates);
  EXPECT_NEAR(gates[0], e[1] / (e[1] + e[2]), 1e-7);
  EXPECT_NEAR(gates[1], e[2] / (e[1] + e[2]), 1e-7);

  routerGates(logits, 1, 4, 2, RouterScoring::TopkSoftmax, ids, gates);
  EXPECT_NEAR(gates[0], e[1] / (e[1] + e[2]), 1e-7);
  EXPECT_NEAR(gates[1], e[2] / (e[1] + e[2]), 1e-7);
}

TEST(Kernels, SoftmaxSubtractsTheMaximum) {
  const float x[3] = {1000.0f, 1001.0f, 1000.0f};
  float y[3];
  softmax(x, 1, 3, y);
  const double e = std::exp(-1.0);
  EXPECT_NEAR(y[1], 1.0 / (1.0 + 2 * e), 1e-7);
  EXPECT_NEAR(y[0], e / (1.0 + 2 * e), 1e-7);
  EXPECT_FALSE(std::isnan(y[2]));
}

TEST(Kernels, RopeIsIdentityAtPositionZeroAndRotatesPairs) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}; // 2 tokens, 1 head, head_dim 4
  const int64_t positions[2] = {0, 1};
  rope(x.data(), 2, 1, 4, positions, 10000.0);
  EXPECT_EQ(std::vector<float>(x.begin(), x.begin() + 4), (std::vector<float>{1, 2, 3, 4}));
  // Position 1: pair (i, i+2) rotates by angle theta^(-i/2): 1 rad for i = 0, 0.01 rad for i = 1.
  EXPECT_NEAR(x[4], 5 * std::cos(1.0) - 7 * std::sin(1.0), 1e-6);
  EXPECT_NEAR(x[6], 7 * std::cos(1.0) + 5 * std::sin(1.0), 1e-6);
  EXPECT_NEAR(x[5], 6 * std::cos(0.01) - 8 * std::sin(0.01), 1e-6);
  EXPECT_NEAR(x[7], 8 * std::cos(0.01) + 6 * std::sin(0.01), 1e-6);
}

// GPT-J's interleaved RoPE (runtime/tensor/RopePairs.h): the gather into the halves' layout,
// rotate-half RoPE and the scatter back equal the closed form on pairs (2i, 2i+1),
// y[2i] = x[2i] cos(p w_i) - x[2i+1] sin(p w_i), y[2i+1] = x[2i+1] cos(p w_i) + x[2i] sin(p w_i),
// w_i = theta^(-2i/d); the scatter inverts the gather.
TEST(Kernels, RopeOnInterleavedPairsIsGptJsRotation) {
  const int64_t tokens = 3, heads = 2, d = 6;
  std::vector<float> x(tokens * heads * d);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.25f * static_cast<float>(i % 7) - 0.5f + 0.01f * static_cast<float>(i);
  const int64_t positions[tokens] = {0, 1, 5};
  const double theta = 100.0;
  std::vector<float> y = x;
  ropeGatherRows(y.data(), tokens * heads, d);
  rope(y.data(), tokens, heads, d, positions, theta);
  ropeScatterRows(y.data(), tokens * heads, d);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < d / 2; ++i) {
        const float *v = &x[(t * heads + h) * d];
        const double a = static_cast<double>(positions[t]) * std::pow(theta, -2.0 * i / d);
        const double even = v[2 * i] * std::cos(a) - v[2 * i + 1] * std::sin(a);
        const double odd = v[2 * i + 1] * std::cos(a) + v[2 * i] * std::sin(a);
        // fp32 angles (<= 5 rad: rounding <= 2 * 2^-24 * 5 = 6e-7), cos/sin and products, times
        // |v| <= 1.4, twice: <= 2.2e-6; a wrong pairing errs by O(0.1).
        EXPECT_NEAR(y[(t * heads + h) * d + 2 * i], even, 4e-6) << t << " " << h << " " << i;
        EXPECT_NEAR(y[(t * heads + h) * d + 2 * i + 1], odd, 4e-6) << t << " " << h << " " << i;
      }
  std::vector<float> z = x;
  ropeGatherRows(z.data(), tokens * heads, d);
  EXPECT_EQ(z[1], x[2]); // [x0, x2, x4, x1, x3, x5]
  EXPECT_EQ(z[3], x[1]);
  ropeScatterRows(z.data(), tokens * heads, d);
  EXPECT_EQ(z, x);
}

// A scaled RoPE (YaRN): explicit frequencies w_i and an attention factor m, closed form
// v'[i] = m (v[i] cos(p w_i) - v[i+d/2] sin(p w_i)), v'[i+d/2] = m (v[i+d/2] cos + v[i] sin); the
// backward is the transpose: <rope(x), y> = <x, ropeBackward(y)> for any x, y.
TEST(Kernels, RopeWithExplicitFrequenciesAndAttentionFactor) {
  const int64_t tokens = 2, heads = 1, d = 4;
  const float invFreq[2] = {0.75f, 0.002f}; // not theta^(-2i/d) for any theta
  const float m = 1.3465736f;               // 0.1 ln 32 + 1
  const kernels::RopeSpec spec(10000.0, invFreq, m);
  std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, 1.5f, 0.75f, -0.5f, 1.0f};
  const int64_t positions[tokens] = {3, 7};
  std::vector<float> y = x;
  rope(y.data(), tokens, heads, d, positions, spec);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t i = 0; i < d / 2; ++i) {
      const double a = static_cast<double>(positions[t]) * invFreq[i];
      const double lo = x[t * d + i], hi = x[t * d + i + d / 2];
      // fp32 angle (<= 5.25 rad, rounding <= 3.2e-7), cos/sin, the factor and two products, on
      // |v| <= 2 times m: <= 2.5e-6.
      EXPECT_NEAR(y[t * d + i], m * (lo * std::cos(a) - hi * std::sin(a)), 5e-6);
      EXPECT_NEAR(y[t * d + i + d / 2], m * (hi * std::cos(a) + lo * std::sin(a)), 5e-6);
    }
  std::vector<float> g = {0.3f, 0.1f, -0.7f, 0.2f, -0.4f, 0.9f, 0.6f, -0.2f}, gb = g;
  ropeBackward(gb.data(), tokens, heads, d, positions, spec);
  double fwd = 0, bwd = 0;
  for (size_t k = 0; k < x.size(); ++k)
    fwd += static_cast<double>(y[k]) * g[k], bwd += static_cast<double>(x[k]) * gb[k];
  EXPECT_NEAR(fwd, bwd, 1e-5); // both sums of 8 products of fp32 values below 3 in magnitude
}

TEST(Kernels, CausalAttentionFirstTokenSeesOnlyItselfAndKvHeadsAreShared) {
  // 2 tokens, 2 query heads sharing 1 kv head, head_dim 2.
  const float q[8] = {1, 0, 0, 1, /*t1*/ 1, 0, 0, 1};
  const float k[4] = {1, 0, /*t1*/ 0, 1};
  const float v[4] = {10, 20, /*t1*/ 30, 40};
  float out[8];
  causalAttention(q, k, v, 2, 2, 1, 2, out);
  EXPECT_FLOAT_EQ(out[0], 10);
  EXPECT_FLOAT_EQ(out[1], 20);
  EXPECT_FLOAT_EQ(out[2], 10);
  // Token 1, head 0: scores (1, 0) / sqrt(2).
  const double p0 = 1.0 / (1.0 + std::exp(-1.0 / std::sqrt(2.0)));
  EXPECT_NEAR(out[4], p0 * 10 + (1 - p0) * 30, 1e-5);
  // Head 1 prefers token 1 by the same margin.
  EXPECT_NEAR(out[6], (1 - p0) * 10 + p0 * 30, 1e-5);
}

TEST(Kernels, EmbeddingRejectsIdsOutsideTheVocabulary) {
  const float table[4] = {1, 2, 3, 4};
  const int64_t ids[2] = {1, 2};
  float out[4];
  EXPECT_THROW(embedding(table, 2, 2, ids, 2, out), KernelError);
  embedding(table, 2, 2, ids, 1, out);
  EXPECT_EQ(out[0], 3);
  EXPECT_EQ(out[1], 4);
}

TEST(Kernels, LinearAndExpertAcceptZeroRows) {
  const float w[4] = {1, 2, 3, 4};
  float y[1] = {42};
  linear(nullptr, 0, 2, w, 2, y);
  swigluExpert(nullptr, 0, 2, 2, w, w, w, y);
  EXPECT_EQ(y[0], 42);
}

// DeepSeek-V3 selection bias: it changes the CHOICE only; the gates are the unbiased scores.
TEST(Kernels, SelectionBiasChangesTheChoiceNotTheGates) {
  const float logits[4] = {0.0f, 1.0f, 2.0f, 3.0f};
  const float bias[4] = {1.0f, 0.0f, 0.0f,
                         0.0f}; // lifts expert 0 (p = 0.032) above expert 3 (p = 0.644)
  double e[4], sum = 0;
  for (int i = 0; i < 4; ++i)
    sum += e[i] = std::exp(logits[i]);
  int64_t ids[2];
  float gates[2];
  routerGates(logits, 1, 4, 2, RouterScoring::SoftmaxTopk, ids, gates, bias);
  EXPECT_EQ(ids[0], 0);
  EXPECT_EQ(ids[1], 3);
  EXPECT_NEAR(gates[0], e[0] / sum, 1e-7);
  EXPECT_NEAR(gates[1], e[3] / sum, 1e-7);
  routerGates(logits, 1, 4, 2, RouterScoring::SoftmaxTopkRenorm, ids, gates, bias);
  EXPECT_NEAR(gates[0], e[0] / (e[0] + e[3]), 1e-6);
  // topk_softmax ranks the logits + bias {2, 1, 2, 3}: experts 0 and 2 tie below 3; the lower id
  // wins.
  const float logitBias[4] = {2.0f, 0.0f, 0.0f, 0.0f};
  routerGates(logits, 1, 4, 2, RouterScoring::TopkSoftmax, ids, gates, logitBias);
  EXPECT_EQ(ids[0], 3);
  EXPECT_EQ(ids[1], 0);
  EXPECT_NEAR(gates[0], std::exp(3.0) / (std::exp(3.0) + std::exp(0.0)), 1e-6);
}
