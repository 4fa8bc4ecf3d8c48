// CPU forward kernels of the MoE families (runtime/backends/cpu/FamilyKernels.h, with Kernels.h)
// against the PyTorch goldens of samples/models/{qwen3_moe_tiny,deepseek_moe_tiny,gpt_oss_tiny}
// (golden/l*_*.npy: layer intermediates at the trace shape [2, 8], T = 16 tokens; weights [in,
// out]). Each test starts from the golden input of its component, so the errors are the kernel's
// own. Tolerance 1e-5 (observed errors are printed).
#include "runtime/backends/cpu/FamilyKernels.h"
#include "runtime/backends/cpu/Kernels.h"
#include "runtime/io/Npy.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

using namespace disagmoe;
using namespace disagmoe::cpu;

namespace {

constexpr int64_t T = 16, S = 8;
constexpr double kTol = 1e-5;

std::vector<float> load(const std::string &sample, const std::string &name) {
  return readNpyFloat32(std::string(DISAGMOE_SAMPLES_DIR) + "/" + sample + "/golden/" + name).data;
}

/// A hyper-parameter of the sample's exporter (golden/config.json), never a copy of it in the test.
double config(const std::string &sample, const std::string &key) {
  std::ifstream in(std::string(DISAGMOE_SAMPLES_DIR) + "/" + sample + "/golden/config.json");
  const nlohmann::json cfg = nlohmann::json::parse(in);
  return cfg.at(key).get<double>();
}

std::vector<int64_t> loadIds(const std::string &sample, const std::string &name) {
  std::vector<int64_t> shape;
  return readNpyInt64(std::string(DISAGMOE_SAMPLES_DIR) + "/" + sample + "/golden/" + name, shape);
}

void expectClose(const char *what, const std::vector<float> &got, const std::vector<float> &want) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double err = 0;
  for (size_t i = 0; i < got.size(); ++i)
    err = std::max(err, std::fabs(static_cast<double>(got[i]) - want[i]));
  std::printf("[ golden   ] %-34s max abs err %.3g\n", what, err);
  EXPECT_LE(err, kTol) << what;
}

/// Per token, the (expert id, gate) pairs sorted by expert id: top-k with sorted = False (DeepSeek)
/// leaves PyTorch's order unspecified.
std::vector<std::pair<int64_t, float>> byExpert(const std::vector<int64_t> &ids,
                                                const std::vector<float> &gates, int64_t k) {
  std::vector<std::pair<int64_t, float>> out;
  for (size_t t = 0; t * k < ids.size(); ++t) {
    std::vector<std::pair<int64_t, float>> row;
    for (int64_t j = 0; j < k; ++j)
      row.push_back({ids[t * k + j], gates[t * k + j]});
    std::sort(row.begin(), row.end());
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

/// Router: logits = x W (+ b), gates per scoring, times `scale`; compared with the golden top-k.
void checkRouter(const std::string &sample, const std::string &layer, int64_t H, int64_t E,
                 int64_t K, RouterScoring scoring, const char *biasFile, float scale) {
  std::vector<float> logits(T * E), gates(T * K);
  std::vector<int64_t> ids(T * K);
  linear(load(sample, layer + "_ffn_in.npy").data(), T, H,
         load(sample, "w_" + layer + "_router.npy").data(), E, logits.data());
  if (biasFile)
    addBias(logits.data(), T, E, load(sample, biasFile).data());
  routerGates(logits.data(), T, E, K, scoring, ids.data(), gates.data());
  for (float &g : gates)
    g *= scale;
  auto got = byExpert(ids, gates, K);
  auto want = byExpert(loadIds(sample, layer + "_topk_ids.npy"),
                       load(sample, layer + "_topk_weights.npy"), K);
  ASSERT_EQ(got.size(), want.size());
  std::vector<float> g1, g2;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first) << sample << " router: token " << i / K;
    g1.push_back(got[i].second);
    g2.push_back(want[i].second);
  }
  expectClose((sample + " router gates").c_str(), g1, g2);
}

} // namespace

// Qwen3: per-head q/k RMSNorm over head_dim before RoPE (theta 1e6), GQA 4/2, q width 64 !=
// hidden 32.
TEST(FamilyKernels, Qwen3AttentionWithQkNorm) {
  const std::string s = "qwen3_moe_tiny";
  const int64_t H = 32, heads = 4, kvHeads = 2, hd = 16, Q = heads * hd, KV = kvHeads * hd;
  const std::vector<float> in = load(s, "l0_attn_in.npy");
  std::vector<float> q(T * Q), k(T * KV), v(T * KV), o(T * Q), out(T * H);
  linear(in.data(), T, H, load(s, "w_l0_q.npy").data(), Q, q.data());
  linear(in.data(), T, H, load(s, "w_l0_k.npy").data(), KV, k.data());
  linear(in.data(), T, H, load(s, "w_l0_v.npy").data(), KV, v.data());
  const float eps = static_cast<float>(config(s, "rms_norm_eps"));
  rmsNorm(q.data(), T * heads, hd, load(s, "w_l0_q_norm.npy").data(), eps, q.data());
  rmsNorm(k.data(), T * kvHeads, hd, load(s, "w_l0_k_norm.npy").data(), eps, k.data());
  std::vector<int64_t> pos(T);
  for (int64_t t = 0; t < T; ++t)
    pos[t] = t % S;
  rope(q.data(), T, heads, hd, pos.data(), config(s, "rope_theta"));
  rope(k.data(), T, kvHeads, hd, pos.data(), config(s, "rope_theta"));
  for (int64_t b = 0; b < T / S; ++b)
    causalAttention(q.data() + b * S * Q, k.data() + b * S * KV, v.data() + b * S * KV, S, heads,
                    kvHeads, hd, o.data() + b * S * Q);
  linear(o.data(), T, Q, load(s, "w_l0_o.npy").data(), H, out.data());
  expectClose("qwen3 attention (q/k norm)", out, load(s, "l0_attn_out.npy"));
}

TEST(FamilyKernels, Qwen3RouterTop8Of32Renormalised) {
  checkRouter("qwen3_moe_tiny", "l0", 32, 32, 8, RouterScoring::SoftmaxTopkRenorm, nullptr, 1.0f);
}

// DeepSeek: the dense layer's FFN and the shared experts (one SwiGLU of 2 x 16), and the router
// without renormalisation, scaled by routed_scaling_factor 1.5.
TEST(FamilyKernels, DeepSeekDenseAndSharedFfn) {
  const std::string s = "deepseek_moe_tiny";
  const int64_t H = 32;
  for (auto [layer, role, inner] :
       {std::tuple<const char *, const char *, int64_t>{"l0", "dense", 64}, {"l1", "shared", 32}}) {
    const std::string l = layer, r = role;
    FfnWeights w;
    const auto w1 = load(s, "w_" + l + "_" + r + "_w1.npy"),
               w3 = load(s, "w_" + l + "_" + r + "_w3.npy"),
               w2 = load(s, "w_" + l + "_" + r + "_w2.npy");
    w.w1 = w1.data(), w.w3 = w3.data(), w.w2 = w2.data();
    std::vector<float> out(T * H);
    ffnForward(load(s, l + "_ffn_in.npy").data(), T, H, inner, w, /*oai=*/false, 0, 0, out.data());
    expectClose(("deepseek " + r + " FFN").c_str(), out, load(s, l + "_" + r + "_out.npy"));
  }
}

TEST(FamilyKernels, DeepSeekRouterNoRenormScaled) {
  checkRouter("deepseek_moe_tiny", "l1", 32, 16, 6, RouterScoring::SoftmaxTopk, nullptr,
              static_cast<float>(config("deepseek_moe_tiny", "routed_scaling_factor")));
}

// GPT-OSS: q/k/v/o biases, one sink logit per head, sliding window 4 (layer 0), RoPE theta 150000.
TEST(FamilyKernels, GptOssAttentionWithSinksWindowAndBiases) {
  const std::string s = "gpt_oss_tiny";
  const int64_t H = 32, heads = 4, kvHeads = 2, hd = 16, Q = heads * hd, KV = kvHeads * hd;
  const std::vector<float> in = load(s, "l0_attn_in.npy");
  std::vector<float> q(T * Q), k(T * KV), v(T * KV), o(T * Q), out(T * H);
  linear(in.data(), T, H, load(s, "w_l0_q.npy").data(), Q, q.data());
  linear(in.data(), T, H, load(s, "w_l0_k.npy").data(), KV, k.data());
  linear(in.data(), T, H, load(s, "w_l0_v.npy").data(), KV, v.data());
  addBias(q.data(), T, Q, load(s, "w_l0_bq.npy").data());
  addBias(k.data(), T, KV, load(s, "w_l0_bk.npy").data());
  addBias(v.data(), T, KV, load(s, "w_l0_bv.npy").data());
  std::vector<int64_t> pos(T);
  for (int64_t t = 0; t < T; ++t)
    pos[t] = t % S;
  rope(q.data(), T, heads, hd, pos.data(), config(s, "rope_theta"));
  rope(k.data(), T, kvHeads, hd, pos.data(), config(s, "rope_theta"));
  const std::vector<float> sinks = load(s, "w_l0_sinks.npy");
  for (int64_t b = 0; b < T / S; ++b)
    causalAttentionVariant(q.data() + b * S * Q, k.data() + b * S * KV, v.data() + b * S * KV, S,
                           heads, kvHeads, hd, sinks.data(), /*window=*/4, o.data() + b * S * Q);
  linear(o.data(), T, Q, load(s, "w_l0_o.npy").data(), H, out.data());
  addBias(out.data(), T, H, load(s, "w_l0_bo.npy").data());
  expectClose("gpt-oss attention (sinks, window 4)", out, load(s, "l0_attn_out.npy"));
}

TEST(FamilyKernels, GptOssRouterBiasTopkThenSoftmax) {
  checkRouter("gpt_oss_tiny", "l0", 32, 8, 4, RouterScoring::TopkSoftmax, "w_l0_router_bias.npy",
              1.0f);
}

// GPT-OSS's expert: fused interleaved gate_up [32, 2*16] with bias, clamped SwiGLU (7, 1.702),
// down [16, 32] with bias.
TEST(FamilyKernels, GptOssClampedSwigluExpert) {
  const std::string s = "gpt_oss_tiny";
  const int64_t H = 32, F = 16;
  const auto w13 = load(s, "w_l0_expert0_gate_up.npy"),
             b13 = load(s, "w_l0_expert0_gate_up_bias.npy"), w2 = load(s, "w_l0_expert0_down.npy"),
             b2 = load(s, "w_l0_expert0_down_bias.npy");
  FfnWeights w;
  w.w1 = w13.data(), w.b1 = b13.data(), w.w2 = w2.data(), w.b2 = b2.data(), w.fusedGateUp = true;
  const std::vector<float> x = load(s, "l0_ffn_in.npy");
  std::vector<float> out(T * H);
  ffnForward(x.data(), T, H, F, w, /*oai=*/true, static_cast<float>(config(s, "swiglu_limit")),
             static_cast<float>(config(s, "swiglu_alpha")), out.data());
  expectClose("gpt-oss expert 0 (clamped SwiGLU)", out, load(s, "l0_expert0_out.npy"));
  // The clamp is active on these inputs: without it the result differs.
  std::vector<float> unclamped(T * H);
  ffnForward(x.data(), T, H, F, w, /*oai=*/true, 1e30f, 1.702f, unclamped.data());
  double diff = 0;
  for (size_t i = 0; i < out.size(); ++i)
    diff = std::max(diff, std::fabs(double(out[i]) - unclamped[i]));
  EXPECT_GT(diff, 1e-3) << "the goldens do not exercise the clamp";
}

// DeepSeek-V2 MLA (layer 0 of deepseek_v2_lite_tiny): latent KV through RMSNorm and kv_b, the
// decoupled RoPE part after the de-interleave, q/k heads of 8 + 4 and v heads of 8, scale 12**-0.5.
TEST(FamilyKernels, DeepSeekV2MultiHeadLatentAttention) {
  const std::string s = "deepseek_v2_lite_tiny";
  const int64_t H = 32, heads = 4, nope = 8, rope = 4, vd = 8, rank = 16, qd = nope + rope;
  const std::vector<float> in = load(s, "l0_attn_in.npy");
  std::vector<float> q(T * heads * qd), ckv(T * (rank + rope)), c(T * rank),
      kv(T * heads * (nope + vd));
  linear(in.data(), T, H, load(s, "w_l0_q.npy").data(), heads * qd, q.data());
  linear(in.data(), T, H, load(s, "w_l0_kv_a.npy").data(), rank + rope, ckv.data());
  for (int64_t t = 0; t < T; ++t)
    std::copy_n(ckv.data() + t * (rank + rope), rank, c.data() + t * rank);
  rmsNorm(c.data(), T, rank, load(s, "w_l0_kv_norm.npy").data(),
          static_cast<float>(config(s, "rms_norm_eps")), c.data());
  linear(c.data(), T, rank, load(s, "w_l0_kv_b.npy").data(), heads * (nope + vd), kv.data());
  std::vector<float> qPe(T * heads * rope), kPe(T * rope);
  auto deinterleave = [&](const float *src, float *dst) {
    for (int64_t i = 0; i < rope / 2; ++i)
      dst[i] = src[2 * i], dst[rope / 2 + i] = src[2 * i + 1];
  };
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < heads; ++h)
      deinterleave(&q[(t * heads + h) * qd + nope], &qPe[(t * heads + h) * rope]);
    deinterleave(&ckv[t * (rank + rope) + rank], &kPe[t * rope]);
  }
  std::vector<int64_t> pos(T);
  for (int64_t t = 0; t < T; ++t)
    pos[t] = t % S;
  cpu::rope(qPe.data(), T, heads, rope, pos.data(), 1e4);
  cpu::rope(kPe.data(), T, 1, rope, pos.data(), 1e4);
  std::vector<float> Q(T * heads * qd), K(T * heads * qd), V(T * heads * vd), o(T * heads * vd),
      out(T * H);
  for (int64_t th = 0; th < T * heads; ++th) {
    std::copy_n(&q[th * qd], nope, &Q[th * qd]);
    std::copy_n(&qPe[th * rope], rope, &Q[th * qd + nope]);
    std::copy_n(&kv[th * (nope + vd)], nope, &K[th * qd]);
    std::copy_n(&kPe[(th / heads) * rope], rope, &K[th * qd + nope]);
    std::copy_n(&kv[th * (nope + vd) + nope], vd, &V[th * vd]);
  }
  for (int64_t b = 0; b < T / S; ++b)
    causalAttentionGeneral(&Q[b * S * heads * qd], &K[b * S * heads * qd], &V[b * S * heads * vd],
                           S, heads, heads, qd, vd, 1.0 / std::sqrt(12.0), nullptr, 0,
                           &o[b * S * heads * vd]);
  linear(o.data(), T, heads * vd, load(s, "w_l0_o.npy").data(), H, out.data());
  expectClose("deepseek-v2 MLA", out, load(s, "l0_attn_out.npy"));
}

// onnxruntime's non-gated com.microsoft.MoE activations. Oracle: the closed forms evaluated in
// Python's math (double): gelu_tanh(a) = 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))) — which
// differs from the erf GELU (0.8413447 at 1, -0.0455003 at -2) by more than the tolerance —,
// silu(a) = a / (1 + exp(-a)).
TEST(FamilyKernels, OnnxruntimeNonGatedActivations) {
  EXPECT_NEAR(plainActivation(1.0f, PlainActivation::GeluTanh), 0.8411919906082768, 1e-6);
  EXPECT_NEAR(plainActivation(-2.0f, PlainActivation::GeluTanh), -0.04540230591222494, 1e-6);
  EXPECT_NEAR(plainActivation(0.5f, PlainActivation::GeluTanh), 0.34571400982514394, 1e-6);
  EXPECT_NEAR(plainActivation(-2.0f, PlainActivation::Silu), -0.2384058440442351, 1e-6);
  EXPECT_EQ(plainActivation(-2.0f, PlainActivation::Relu), 0.0f);
  EXPECT_EQ(plainActivation(3.5f, PlainActivation::Relu), 3.5f);
  EXPECT_EQ(plainActivation(-2.0f, PlainActivation::Identity), -2.0f);
}

// One token through a non-gated relu expert with biases, by hand: x = [1, -1], W1 = [[1, 2], [3,
// -1]]
// ([in, out]), b1 = [0.5, 0] -> a = [-1.5, 3] -> relu [0, 3]; W2 = [[1, 0], [2, 1]], b2 = [0.25,
// -0.25]
// -> y = [6.25, 2.75]. Identity keeps the -1.5: y = [-1.5 + 6 + 0.25, 3 - 0.25] = [4.75, 2.75].
TEST(FamilyKernels, NonGatedExpertByHand) {
  const std::vector<float> x = {1, -1}, w1 = {1, 2, 3, -1}, b1 = {0.5f, 0}, w2 = {1, 0, 2, 1},
                           b2 = {0.25f, -0.25f};
  std::vector<float> y(2);
  plainFfnForward(x.data(), 1, 2, 2, w1.data(), b1.data(), w2.data(), b2.data(),
                  PlainActivation::Relu, y.data());
  EXPECT_FLOAT_EQ(y[0], 6.25f);
  EXPECT_FLOAT_EQ(y[1], 2.75f);
  plainFfnForward(x.data(), 1, 2, 2, w1.data(), b1.data(), w2.data(), b2.data(),
                  PlainActivation::Identity, y.data());
  EXPECT_FLOAT_EQ(y[0], 4.75f);
  EXPECT_FLOAT_EQ(y[1], 2.75f);
}
