// Runtime unit-test helpers: goldens, temp dirs, tiny Mixtral plan.json builder (TestSupport.h).
#include "TestSupport.h"

#include "runtime/io/Npy.h"
#include "runtime/plan/Plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <unistd.h>

namespace disagmoe::test {

std::string goldenPath(const std::string &name) {
  return std::string(DISAGMOE_GOLDEN_DIR) + "/" + name;
}

Tensor loadGolden(const std::string &name) { return readNpyFloat32(goldenPath(name)); }

std::vector<int64_t> loadGoldenIds(const std::string &name, std::vector<int64_t> &shape) {
  return readNpyInt64(goldenPath(name), shape);
}

double maxAbsDiff(const std::vector<float> &a, const std::vector<float> &b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

Fp32Bound::Fp32Bound(int64_t d) : chain(d) {
  const double u = std::ldexp(1.0, -24), sigma = std::sqrt(2.0 * static_cast<double>(d) / 3.0) * u;
  normwise = 2.0 * sigma;
  element = 6.0 * sigma;
}

::testing::AssertionResult Fp32Bound::check(const std::vector<float> &a,
                                            const std::vector<float> &b) const {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << "sizes " << a.size() << " vs " << b.size();
  double diff2 = 0, ref2 = 0, maxDiff = 0, maxRef = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]))
      return ::testing::AssertionFailure() << "element " << i << " is not finite";
    const double d = static_cast<double>(a[i]) - b[i];
    diff2 += d * d;
    ref2 += static_cast<double>(b[i]) * b[i];
    maxDiff = std::max(maxDiff, std::fabs(d));
    maxRef = std::max(maxRef, std::fabs(static_cast<double>(b[i])));
  }
  const double u = std::ldexp(1.0, -24);
  const double nw = ref2 > 0 ? std::sqrt(diff2 / ref2) : (diff2 > 0 ? INFINITY : 0.0);
  const double el = maxRef > 0 ? maxDiff / maxRef : (maxDiff > 0 ? INFINITY : 0.0);
  const bool ok = nw <= normwise && el <= element;
  ::testing::AssertionResult r = ok ? ::testing::AssertionSuccess() : ::testing::AssertionFailure();
  return r << "normwise " << nw / u << " u (bound " << normwise / u << " u), max " << el / u
           << " u of max|ref| (bound " << element / u << " u; D = " << chain << ")";
}

namespace {
/// Removes the test's temporary directories when the test binary exits.
struct TempDirRegistry {
  std::mutex mutex;
  std::vector<std::filesystem::path> dirs;
  ~TempDirRegistry() {
    for (const auto &dir : dirs) {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  }
};
TempDirRegistry &tempDirRegistry() {
  static TempDirRegistry registry;
  return registry;
}
} // namespace

std::string makeTempDir(const std::string &stem) {
  static std::atomic<int> counter{0};
  std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      ("disagmoe_" + stem + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    std::lock_guard<std::mutex> lock(tempDirRegistry().mutex);
    tempDirRegistry().dirs.push_back(dir);
  }
  return dir.string();
}

void writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

namespace {

using json = nlohmann::json;

constexpr int64_t kHidden = 64, kVocab = 256, kHeads = 4, kKvHeads = 2, kHeadDim = 16, kExperts = 8,
                  kTopK = 2, kExpertHidden = 128;

json weight(const std::string &name, const std::string &file, const std::vector<int> &ranks) {
  const std::string path = goldenPath(file);
  NpyHeader header = readNpyHeader(path);
  return {{"name", name},
          {"dtype", "float32"},
          {"shape", header.shape},
          {"transposed", false},
          {"file", path},
          {"offset", header.dataOffset},
          {"length", header.dataBytes},
          {"ranks", ranks}};
}

json op(const std::string &name, int64_t layer, const std::string &stream) {
  json j = {{"op", name}, {"stream", stream}};
  if (layer >= 0)
    j["layer"] = layer;
  return j;
}

json norm(int64_t layer, const std::string &role) {
  return {{"op", "rms_norm"}, {"layer", layer}, {"role", role}, {"stream", "forward"}};
}

} // namespace

json tinyPlan(const TinyPlacement &p) {
  const int64_t pa = static_cast<int64_t>(p.attentionGroups.size());
  const int64_t pf = static_cast<int64_t>(p.ffnGroups.size());
  const int64_t headGroup = p.numLayers % pa;
  int world = 0;
  for (const auto &g : p.attentionGroups)
    world += static_cast<int>(g.size());
  for (const auto &g : p.ffnGroups)
    world += static_cast<int>(g.size());
  const auto &attentionRanks = [&](int64_t layer) { return p.attentionGroups[layer % pa]; };

  json weights = json::array(), components = json::array();
  weights.push_back(weight("embed", "w_embed.npy", p.attentionGroups[0]));
  components.push_back({{"kind", "embedding"}, {"weight", "embed"}});
  for (int64_t l = 0; l < p.numLayers; ++l) {
    const std::string L = "l" + std::to_string(l) + ".";
    const auto &ranks = attentionRanks(l);
    for (const char *part : {"attn_norm", "q", "k", "v", "o", "ffn_norm", "router"})
      weights.push_back(weight(L + part, std::string("w_l0_") + part + ".npy", ranks));
    components.push_back({{"kind", "rms_norm"},
                          {"layer", l},
                          {"role", "attn_norm"},
                          {"weight", L + "attn_norm"},
                          {"eps", 1e-5}});
    components.push_back({{"kind", "attention"},
                          {"layer", l},
                          {"wq", L + "q"},
                          {"wk", L + "k"},
                          {"wv", L + "v"},
                          {"wo", L + "o"}});
    components.push_back({{"kind", "rms_norm"},
                          {"layer", l},
                          {"role", "ffn_norm"},
                          {"weight", L + "ffn_norm"},
                          {"eps", 1e-5}});
    components.push_back({{"kind", "router"}, {"layer", l}, {"weight", L + "router"}});
    json experts = json::array();
    for (int64_t e = 0; e < kExperts; ++e) {
      const std::string E = L + "expert" + std::to_string(e) + ".";
      const std::string file = "w_l0_expert" + std::to_string(e) + "_";
      const std::vector<int> owner = {p.expertToRank[l][e]};
      for (const char *w : {"w1", "w3", "w2"})
        weights.push_back(weight(E + w, file + w + ".npy", owner));
      experts.push_back({{"expert", e}, {"w1", E + "w1"}, {"w3", E + "w3"}, {"w2", E + "w2"}});
    }
    components.push_back({{"kind", "experts"}, {"layer", l}, {"experts", experts}});
  }
  weights.push_back(weight("final_norm", "w_final_norm.npy", p.attentionGroups[headGroup]));
  weights.push_back(weight("head", "w_head.npy", p.attentionGroups[headGroup]));
  components.push_back({{"kind", "rms_norm"},
                        {"layer", -1},
                        {"role", "final_norm"},
                        {"weight", "final_norm"},
                        {"eps", 1e-5}});
  components.push_back({{"kind", "head"}, {"weight", "head"}});

  json groups = json::array();
  for (int64_t g = 0; g < pa; ++g) {
    std::vector<int64_t> layers;
    for (int64_t l = g; l < p.numLayers; l += pa)
      layers.push_back(l);
    groups.push_back(
        {{"role", "attention"}, {"index", g}, {"ranks", p.attentionGroups[g]}, {"layers", layers}});
  }
  for (int64_t g = 0; g < pf; ++g) {
    std::vector<int64_t> layers;
    for (int64_t l = g; l < p.numLayers; l += pf)
      layers.push_back(l);
    groups.push_back(
        {{"role", "ffn"}, {"index", g}, {"ranks", p.ffnGroups[g]}, {"layers", layers}});
  }

  json attention = json::array({op("embed", -1, "forward")}), ffn = json::array(),
       exchanges = json::array();
  for (int64_t l = 0; l < p.numLayers; ++l) {
    attention.push_back(norm(l, "attn_norm"));
    attention.push_back(op("attention", l, "forward"));
    attention.push_back(op("residual_add", l, "forward"));
    attention.push_back(norm(l, "ffn_norm"));
    attention.push_back(op("router", l, "forward"));
    attention.push_back(op("m2n_send", l, "comm"));
    attention.push_back(op("residual_send", l, "comm"));
    attention.push_back(op("residual_recv", l, "comm"));
    attention.push_back(op("n2m_recv", l, "comm"));
    ffn.push_back(op("m2n_recv", l, "comm"));
    ffn.push_back(op("experts", l, "forward"));
    ffn.push_back(op("n2m_send", l, "comm"));
    const int64_t a = l % pa, f = l % pf, next = (l + 1) % pa;
    const std::string id = "." + std::to_string(l);
    exchanges.push_back({{"id", "m2n" + id},
                         {"kind", "m2n"},
                         {"layer", l},
                         {"src_group", a},
                         {"dst_group", f},
                         {"capacity_tokens", 64},
                         {"bytes_per_token", bytesPerTokenOf(ExchangeKind::M2n, kHidden, kTopK)}});
    exchanges.push_back({{"id", "n2m" + id},
                         {"kind", "n2m"},
                         {"layer", l},
                         {"src_group", f},
                         {"dst_group", next},
                         {"capacity_tokens", 64},
                         {"bytes_per_token", bytesPerTokenOf(ExchangeKind::N2m, kHidden, kTopK)}});
    exchanges.push_back(
        {{"id", "residual" + id},
         {"kind", "residual"},
         {"layer", l},
         {"src_group", a},
         {"dst_group", next},
         {"capacity_tokens", 64},
         {"bytes_per_token", bytesPerTokenOf(ExchangeKind::Residual, kHidden, kTopK)}});
  }
  attention.push_back(norm(-1, "final_norm"));
  attention.push_back(op("head", -1, "forward"));

  std::vector<uint64_t> weightBytes(world, 0);
  for (const json &w : weights)
    for (int r : w["ranks"])
      weightBytes[r] += w["length"].get<uint64_t>();
  json memory = json::array();
  for (int r = 0; r < world; ++r)
    memory.push_back({{"rank", r}, {"weight_bytes", weightBytes[r]}});
  memory[0]["activation_bytes"] = 16 * kHidden * 4; // one [16, hidden] fp32 buffer, as an example

  return {{"format", "disagmoe-plan"},
          {"version", 1},
          {"source", "samples/models/mixtral_tiny/model.onnx"},
          {"model",
           {{"family", "mixtral"},
            {"vocab_size", kVocab},
            {"hidden_size", kHidden},
            {"num_layers", p.numLayers},
            {"num_heads", kHeads},
            {"num_kv_heads", kKvHeads},
            {"head_dim", kHeadDim},
            {"rope_theta", 10000.0},
            {"rms_norm_eps", 1e-5},
            {"num_experts", kExperts},
            {"top_k", kTopK},
            {"expert_hidden", kExpertHidden},
            {"router_scoring", "softmax_topk_renorm"},
            {"batch", 2},
            {"seq_len", 8},
            {"components", components},
            {"weights", weights}}},
          {"placement",
           {{"world_size", world},
            {"groups", groups},
            {"expert_to_rank", p.expertToRank},
            {"embedding_group", 0},
            {"head_group", headGroup}}},
          {"programs", {{"attention", attention}, {"ffn", ffn}}},
          {"exchanges", exchanges},
          {"memory", {{"ranks", memory}}}};
}

json withSigmoidRouter(json plan, int64_t nGroup, int64_t topkGroup) {
  json &m = plan["model"];
  m["router_scoring"] = "sigmoid_group_topk_renorm";
  m["n_group"] = nGroup;
  m["topk_group"] = topkGroup;
  json layers = json::array();
  for (json &c : m["components"])
    if (c["kind"] == "router") {
      const std::string name = "l" + std::to_string(c["layer"].get<int64_t>()) + ".correction_bias";
      c["correction_bias"] = name;
      layers.push_back(c["layer"]);
    }
  for (const json &layer : layers) {
    const std::string L = "l" + std::to_string(layer.get<int64_t>()) + ".";
    json bias;
    for (const json &w : m["weights"])
      if (w["name"] == L + "attn_norm")
        bias = w;
    bias["name"] = L + "correction_bias";
    bias["shape"] = {kExperts};
    bias["length"] = kExperts * 4;
    m["weights"].push_back(bias);
    for (int r : bias["ranks"])
      for (json &entry : plan["memory"]["ranks"])
        if (entry["rank"] == r)
          entry["weight_bytes"] = entry["weight_bytes"].get<int64_t>() + kExperts * 4;
  }
  return plan;
}

std::string writePlan(const nlohmann::json &plan, const std::string &stem) {
  const std::string path = makeTempDir(stem) + "/plan.json";
  writeText(path, plan.dump(1));
  return path;
}

} // namespace disagmoe::test
