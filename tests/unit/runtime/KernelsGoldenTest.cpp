// CPU kernels against the PyTorch goldens of samples/models/mixtral_tiny (layer 0 of the trace
// shape [2, 8], T = 16 tokens). Each step starts from the golden input of that step, so the errors
// measured are the kernel's own. Tolerances: 1e-5 (observed errors are printed).
#include "TestSupport.h"

#include "runtime/backends/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace disagmoe;
using namespace disagmoe::cpu;
using namespace disagmoe::test;

namespace {

constexpr int64_t T = 16, S = 8, H = 64, V = 256, Q = 64, KV = 32, E = 8, K = 2, F = 128;
constexpr double kTol = 1e-5;

void expectClose(const char *what, const std::vector<float> &got, const std::vector<float> &golden,
                 double tol = kTol) {
  const double err = maxAbsDiff(got, golden);
  std::printf("[ golden   ] %-26s max abs err %.3g\n", what, err);
  EXPECT_LE(err, tol) << what;
}

std::vector<int64_t> ids() {
  std::vector<int64_t> shape;
  return loadGoldenIds("ids_b2_s8.npy", shape);
}

} // namespace

TEST(KernelsGolden, Embedding) {
  Tensor table = loadGolden("w_embed.npy");
  std::vector<float> x(T * H);
  embedding(table.data.data(), V, H, ids().data(), T, x.data());
  expectClose("embedding", x, loadGolden("l0_x.npy").data, 0.0);
}

TEST(KernelsGolden, RmsNorms) {
  std::vector<float> y(T * H);
  rmsNorm(loadGolden("l0_x.npy").data.data(), T, H, loadGolden("w_l0_attn_norm.npy").data.data(),
          1e-5f, y.data());
  expectClose("attn_norm", y, loadGolden("l0_attn_norm.npy").data);
  rmsNorm(loadGolden("l0_h.npy").data.data(), T, H, loadGolden("w_l0_ffn_norm.npy").data.data(),
          1e-5f, y.data());
  expectClose("ffn_norm", y, loadGolden("l0_ffn_norm.npy").data);
}

TEST(KernelsGolden, AttentionWithRopeAndGqa) {
  const Tensor in = loadGolden("l0_attn_norm.npy");
  std::vector<float> q(T * Q), k(T * KV), v(T * KV), heads(T * Q), out(T * H);
  linear(in.data.data(), T, H, loadGolden("w_l0_q.npy").data.data(), Q, q.data());
  linear(in.data.data(), T, H, loadGolden("w_l0_k.npy").data.data(), KV, k.data());
  linear(in.data.data(), T, H, loadGolden("w_l0_v.npy").data.data(), KV, v.data());
  std::vector<int64_t> positions(T);
  for (int64_t t = 0; t < T; ++t)
    positions[t] = t % S;
  rope(q.data(), T, 4, 16, positions.data(), 10000.0);
  rope(k.data(), T, 2, 16, positions.data(), 10000.0);
  for (int64_t s = 0; s < T / S; ++s)
    causalAttention(q.data() + s * S * Q, k.data() + s * S * KV, v.data() + s * S * KV, S, 4, 2, 16,
                    heads.data() + s * S * Q);
  linear(heads.data(), T, Q, loadGolden("w_l0_o.npy").data.data(), H, out.data());
  expectClose("attention (after o_proj)", out, loadGolden("l0_attn_out.npy").data);
}

TEST(KernelsGolden, Router) {
  std::vector<float> logits(T * E), probs(T * E);
  linear(loadGolden("l0_ffn_norm.npy").data.data(), T, H, loadGolden("w_l0_router.npy").data.data(),
         E, logits.data());
  expectClose("router logits", logits, loadGolden("l0_router_logits.npy").data);
  const Tensor goldenLogits = loadGolden("l0_router_logits.npy");
  softmax(goldenLogits.data.data(), T, E, probs.data());
  expectClose("router probs", probs, loadGolden("l0_router_probs.npy").data);
  std::vector<int64_t> ids(T * K);
  std::vector<float> gates(T * K);
  routerGates(goldenLogits.data.data(), T, E, K, RouterScoring::SoftmaxTopkRenorm, ids.data(),
              gates.data());
  std::vector<int64_t> shape;
  EXPECT_EQ(ids, loadGoldenIds("l0_topk_ids.npy", shape));
  expectClose("top-k gates", gates, loadGolden("l0_topk_weights.npy").data);
}

TEST(KernelsGolden, ExpertsAndCombine) {
  const Tensor x = loadGolden("l0_ffn_norm.npy");
  std::vector<int64_t> shape;
  const std::vector<int64_t> topIds = loadGoldenIds("l0_topk_ids.npy", shape);
  const Tensor topGates = loadGolden("l0_topk_weights.npy");
  std::vector<float> moe(T * H, 0.0f);
  for (int64_t e = 0; e < E; ++e) {
    const std::string p = "w_l0_expert" + std::to_string(e) + "_";
    std::vector<float> y(T * H);
    swigluExpert(x.data.data(), T, H, F, loadGolden(p + "w1.npy").data.data(),
                 loadGolden(p + "w3.npy").data.data(), loadGolden(p + "w2.npy").data.data(),
                 y.data());
    const std::string name = "l0_expert" + std::to_string(e) + "_out.npy";
    expectClose(name.c_str(), y, loadGolden(name).data);
    // Combine in ascending expert id, as the F-ranks do.
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < K; ++j)
        if (topIds[t * K + j] == e)
          for (int64_t d = 0; d < H; ++d)
            moe[t * H + d] += topGates.data[t * K + j] * y[t * H + d];
  }
  expectClose("moe combine", moe, loadGolden("l0_moe_out.npy").data);
  const Tensor h = loadGolden("l0_h.npy");
  std::vector<float> out(T * H);
  for (int64_t i = 0; i < T * H; ++i)
    out[i] = h.data[i] + moe[i];
  expectClose("layer output", out, loadGolden("l0_out.npy").data);
}

TEST(KernelsGolden, Head) {
  std::vector<float> logits(T * V);
  linear(loadGolden("final_norm.npy").data.data(), T, H, loadGolden("w_head.npy").data.data(), V,
         logits.data());
  expectClose("head logits", logits, loadGolden("logits_b2_s8.npy").data);
}
