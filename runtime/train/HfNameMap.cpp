// Plan components -> Hugging Face tensor names and layouts, per family (HfNameMap.h).
#include "runtime/train/HfNameMap.h"

#include <map>

namespace disagmoe::train {
namespace {

// A layer's tensors in transformers' parameter order: self_attn, then the MLP block, then the two
// norms (MixtralDecoderLayer / Qwen3MoeDecoderLayer / DeepseekV2DecoderLayer / GptOssDecoderLayer).
struct LayerTensors {
  std::vector<HfTensor> attention, mlp, norms;
};

class Mapper {
public:
  Mapper(const ModelSpec &model, HfFamily family) : m_(model), family_(family) {}

  std::vector<HfTensor> run() {
    for (size_t i = 0; i < m_.components.size(); ++i)
      add(static_cast<int>(i), m_.components[i]);
    std::vector<HfTensor> out = std::move(embed_);
    for (auto &[layer, t] : layers_)
      for (auto *part : {&t.attention, &t.mlp, &t.norms})
        for (HfTensor &x : *part)
          out.push_back(std::move(x));
    for (HfTensor &x : tail_)
      out.push_back(std::move(x));
    // Every plan weight exactly once (a weight two components share has two names).
    std::vector<int> uses(m_.weights.size(), 0);
    for (const HfTensor &t : out)
      for (int w : t.weights)
        if (++uses[static_cast<size_t>(w)] > 1)
          throw HfMapError("model.weights[" + std::to_string(w) + "] (\"" + m_.weights[w].name +
                           "\") is used by two components: Hugging Face's naming has one "
                           "tensor per parameter");
    for (size_t w = 0; w < uses.size(); ++w)
      if (!uses[w])
        throw HfMapError("model.weights[" + std::to_string(w) + "] (\"" + m_.weights[w].name +
                         "\") belongs to no component the " + toString(family_) + " naming covers");
    return out;
  }

private:
  [[noreturn]] void refuse(int index, const Component &c, const std::string &what) const {
    throw HfMapError("model.components[" + std::to_string(index) + "] (" +
                     (c.layer >= 0 ? "layer " + std::to_string(c.layer) + " " : std::string()) +
                     disagmoe::toString(c.kind) + "): " + toString(family_) +
                     " has no Hugging Face name for " + what);
  }

  // A plain tensor: the plan's shape, or its transpose for an nn.Linear weight.
  HfTensor plain(const std::string &name, int weight, bool linear) const {
    HfTensor t;
    t.name = name;
    t.weights = {weight};
    t.transposed = linear;
    const std::vector<int64_t> &s = m_.weights[static_cast<size_t>(weight)].shape;
    t.shape = linear ? std::vector<int64_t>{s[1], s[0]} : s;
    return t;
  }

  // GPT-OSS's stacked expert tensor: the experts' weights (no transpose) along a new first axis.
  HfTensor stacked(int index, const Component &c, const std::string &name,
                   int ExpertWeights::*member) const {
    HfTensor t;
    t.name = name;
    for (const ExpertWeights &e : c.experts) {
      if (e.*member < 0)
        refuse(index, c, "experts without the biases GPT-OSS's experts always have");
      t.weights.push_back(e.*member);
    }
    const std::vector<int64_t> &part = m_.weights[static_cast<size_t>(t.weights[0])].shape;
    for (int w : t.weights)
      if (m_.weights[static_cast<size_t>(w)].shape != part)
        refuse(index, c, "experts of different shapes in one stacked tensor " + name);
    t.shape = {static_cast<int64_t>(t.weights.size())};
    t.shape.insert(t.shape.end(), part.begin(), part.end());
    return t;
  }

  std::string layerPrefix(int64_t layer) const {
    return "model.layers." + std::to_string(layer) + ".";
  }

  bool has(HfFamily f) const { return family_ == f; }
  bool deepseek() const { return has(HfFamily::DeepseekMoe) || has(HfFamily::DeepseekV2); }

  void add(int index, const Component &c) {
    const std::string L = layerPrefix(c.layer);
    switch (c.kind) {
    case ComponentKind::Embedding:
      embed_.push_back(plain("model.embed_tokens.weight", c.weight, false));
      return;
    case ComponentKind::Head:
      tail_.push_back(plain("lm_head.weight", c.weight, true));
      return;
    case ComponentKind::RmsNorm:
      if (c.role == NormRole::FinalNorm)
        tail_.insert(tail_.begin(), plain("model.norm.weight", c.weight, false));
      else
        layers_[c.layer].norms.push_back(plain(
            L + (c.role == NormRole::AttnNorm ? "input_layernorm" : "post_attention_layernorm") +
                ".weight",
            c.weight, false));
      return;
    case ComponentKind::Attention:
      // The families' attention rotates the halves; their checkpoints are not in GPT-J's layout.
      if (c.ropeInterleaved)
        refuse(index, c,
               "RoPE on interleaved pairs (rope_interleaved: its families rotate the "
               "halves)");
      return addAttention(index, c, L);
    case ComponentKind::MlaAttention: {
      if (!has(HfFamily::DeepseekV2))
        refuse(index, c, "multi-head latent attention (DeepSeek-V2's)");
      auto &a = layers_[c.layer].attention;
      const std::string A = L + "self_attn.";
      a.push_back(plain(A + "q_proj.weight", c.wq, true));
      a.push_back(plain(A + "kv_a_proj_with_mqa.weight", c.wkvA, true));
      a.push_back(plain(A + "kv_a_layernorm.weight", c.kvNorm, false));
      a.push_back(plain(A + "kv_b_proj.weight", c.wkvB, true));
      a.push_back(plain(A + "o_proj.weight", c.wo, true));
      return;
    }
    case ComponentKind::Router: {
      auto &mlp = layers_[c.layer].mlp;
      if (has(HfFamily::GptOss)) {
        if (c.correctionBias >= 0)
          refuse(index, c, "a router e_score_correction_bias (DeepSeek-V3's)");
        if (c.bias < 0)
          refuse(index, c, "a router without the bias GPT-OSS's router always has");
        mlp.push_back(plain(L + "mlp.router.weight", c.weight, true));
        mlp.push_back(plain(L + "mlp.router.bias", c.bias, false));
        return;
      }
      if (c.bias >= 0)
        refuse(index, c, "a router bias");
      if (c.correctionBias >= 0)
        refuse(index, c, "a router e_score_correction_bias (DeepSeek-V3's)");
      mlp.push_back(
          plain(L + (has(HfFamily::Mixtral) ? "block_sparse_moe" : "mlp") + ".gate.weight",
                c.weight, true));
      return;
    }
    case ComponentKind::Experts:
      return addExperts(index, c, L);
    case ComponentKind::DenseFfn: {
      if (!deepseek())
        refuse(index, c,
               c.denseRole == DenseFfnRole::Shared ? "shared experts" : "a dense layer's FFN");
      const std::string M =
          L + (c.denseRole == DenseFfnRole::Shared ? "mlp.shared_experts." : "mlp.");
      auto &mlp = layers_[c.layer].mlp;
      mlp.push_back(plain(M + "gate_proj.weight", c.w1, true));
      mlp.push_back(plain(M + "up_proj.weight", c.w3, true));
      mlp.push_back(plain(M + "down_proj.weight", c.w2, true));
      return;
    }
    }
  }

  void addAttention(int index, const Component &c, const std::string &L) {
    auto &a = layers_[c.layer].attention;
    const std::string A = L + "self_attn.";
    const char *proj[] = {"q_proj", "k_proj", "v_proj", "o_proj"};
    const int weights[] = {c.wq, c.wk, c.wv, c.wo}, biases[] = {c.bq, c.bk, c.bv, c.bo};
    const int present = (c.bq >= 0) + (c.bk >= 0) + (c.bv >= 0) + (c.bo >= 0);
    // transformers' attention_bias puts a bias on all four projections or on none.
    if (present && (has(HfFamily::Mixtral) || present != 4))
      refuse(index, c,
             has(HfFamily::Mixtral)
                 ? "attention biases"
                 : "biases on only some of q/k/v/o (attention_bias is all four)");
    if (has(HfFamily::GptOss) && present != 4)
      refuse(index, c, "attention without the q/k/v/o biases GPT-OSS has");
    for (int i = 0; i < 4; ++i) {
      a.push_back(plain(A + proj[i] + ".weight", weights[i], true));
      if (biases[i] >= 0)
        a.push_back(plain(A + proj[i] + ".bias", biases[i], false));
    }
    if ((c.qNorm >= 0 || c.kNorm >= 0) && !has(HfFamily::Qwen3Moe))
      refuse(index, c, "per-head q/k norms (Qwen3-MoE's)");
    if (has(HfFamily::Qwen3Moe) && (c.qNorm < 0 || c.kNorm < 0))
      refuse(index, c, "attention without the q/k norms Qwen3-MoE has");
    if (c.qNorm >= 0) {
      a.push_back(plain(A + "q_norm.weight", c.qNorm, false));
      a.push_back(plain(A + "k_norm.weight", c.kNorm, false));
    }
    if (c.sinks >= 0 && !has(HfFamily::GptOss))
      refuse(index, c, "attention sinks (GPT-OSS's)");
    if (has(HfFamily::GptOss) && c.sinks < 0)
      refuse(index, c, "attention without the sinks GPT-OSS has");
    if (c.sinks >= 0)
      a.push_back(plain(A + "sinks", c.sinks, false));
  }

  void addExperts(int index, const Component &c, const std::string &L) {
    auto &mlp = layers_[c.layer].mlp;
    if (has(HfFamily::GptOss)) {
      if (!c.fusedGateUp || c.activation != ExpertActivation::SwigluOai)
        refuse(index, c, "experts other than the fused, clamped SwiGLU of GPT-OSS");
      const std::string X = L + "mlp.experts.";
      mlp.push_back(stacked(index, c, X + "gate_up_proj", &ExpertWeights::w1));
      mlp.push_back(stacked(index, c, X + "gate_up_proj_bias", &ExpertWeights::b1));
      mlp.push_back(stacked(index, c, X + "down_proj", &ExpertWeights::w2));
      mlp.push_back(stacked(index, c, X + "down_proj_bias", &ExpertWeights::b2));
      return;
    }
    if (c.activation != ExpertActivation::Swiglu || c.fusedGateUp)
      refuse(index, c, "experts other than SwiGLU with separate gate and up projections");
    const bool mixtral = has(HfFamily::Mixtral);
    for (const ExpertWeights &e : c.experts) {
      if (e.b1 >= 0 || e.b2 >= 0 || e.b3 >= 0)
        refuse(index, c, "expert biases");
      const std::string X =
          L + (mixtral ? "block_sparse_moe" : "mlp") + ".experts." + std::to_string(e.expert) + ".";
      mlp.push_back(plain(X + (mixtral ? "w1" : "gate_proj") + ".weight", e.w1, true));
      mlp.push_back(plain(X + (mixtral ? "w2" : "down_proj") + ".weight", e.w2, true));
      mlp.push_back(plain(X + (mixtral ? "w3" : "up_proj") + ".weight", e.w3, true));
    }
  }

  const ModelSpec &m_;
  HfFamily family_;
  std::vector<HfTensor> embed_, tail_;
  std::map<int64_t, LayerTensors> layers_;
};

} // namespace

HfFamily hfFamilyOf(const ModelSpec &model) {
  for (HfFamily f : {HfFamily::Mixtral, HfFamily::Qwen3Moe, HfFamily::DeepseekMoe,
                     HfFamily::DeepseekV2, HfFamily::GptOss})
    if (model.family == toString(f))
      return f;
  throw HfMapError("model.family: \"" + model.family +
                   "\" has no known Hugging Face naming (known: mixtral, qwen3_moe, deepseek_moe, "
                   "deepseek_v2, gpt_oss)");
}

const char *toString(HfFamily family) {
  switch (family) {
  case HfFamily::Mixtral:
    return "mixtral";
  case HfFamily::Qwen3Moe:
    return "qwen3_moe";
  case HfFamily::DeepseekMoe:
    return "deepseek_moe";
  case HfFamily::DeepseekV2:
    return "deepseek_v2";
  case HfFamily::GptOss:
    return "gpt_oss";
  }
  return "mixtral";
}

std::vector<HfTensor> hfTensors(const ModelSpec &model, HfFamily family) {
  return Mapper(model, family).run();
}

} // namespace disagmoe::train
