// config.json fields per family from the plan's dimensions (HfConfig.h).
#include "runtime/train/HfConfig.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>

namespace disagmoe::train {
namespace {

// The shortest decimal that reads back as `value` in fp32 (1e-05, not 9.999999747378752e-06):
// the plan holds epsilons and factors as fp32, Python writes them as its shortest repr.
double shortest(float value) {
  for (int digits = 1; digits <= 9; ++digits) {
    char text[32];
    std::snprintf(text, sizeof text, "%.*g", digits, static_cast<double>(value));
    const double d = std::strtod(text, nullptr);
    if (static_cast<float>(d) == value)
      return d;
  }
  return value;
}

} // namespace

std::string hfConfigJson(const ModelSpec &m, HfFamily family, SafetensorsDtype dtype) {
  nlohmann::json j;
  const char *arch[] = {"MixtralForCausalLM", "Qwen3MoeForCausalLM", "DeepseekForCausalLM",
                        "DeepseekV2ForCausalLM", "GptOssForCausalLM"};
  const char *type[] = {"mixtral", "qwen3_moe", "deepseek", "deepseek_v2", "gpt_oss"};
  j["architectures"] = {arch[static_cast<int>(family)]};
  j["model_type"] = type[static_cast<int>(family)];
  j["vocab_size"] = m.vocabSize;
  j["hidden_size"] = m.hiddenSize;
  j["num_hidden_layers"] = m.numLayers;
  j["num_attention_heads"] = m.numHeads;
  j["num_key_value_heads"] = m.numKvHeads;
  j["head_dim"] = m.headDim;
  j["rms_norm_eps"] = shortest(m.rmsNormEps);
  // A scaled RoPE reached the plan as its frequencies; config.json states rope_scaling's
  // parameters (factor, beta_fast, ...), which the frequencies do not give back uniquely.
  if (!m.ropeInvFreq.empty() || m.ropeAttentionFactor != 1.0f)
    throw HfMapError(
        "model.rope_inv_freq: a scaled RoPE (YaRN, linear or NTK scaling) is kept as "
        "its frequencies, which config.json's rope_scaling cannot state: not exported");
  j["rope_theta"] = m.ropeTheta;
  j["rope_scaling"] = nullptr;
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", m.ropeTheta}};
  j["num_experts_per_tok"] = m.topK;
  j["hidden_act"] = "silu";
  j["tie_word_embeddings"] = false;
  j["max_position_embeddings"] = m.seqLen;
  j["torch_dtype"] = dtype == SafetensorsDtype::BF16 ? "bfloat16" : "float32";
  j["attention_dropout"] = 0.0;
  bool bias = false;
  std::vector<std::string> layerTypes(static_cast<size_t>(m.numLayers), "full_attention");
  int64_t window = 0;
  for (const Component &c : m.components)
    if (c.kind == ComponentKind::Attention) {
      bias |= c.bq >= 0;
      if (c.slidingWindow > 0) {
        layerTypes[static_cast<size_t>(c.layer)] = "sliding_attention";
        if (window && window != c.slidingWindow)
          throw HfMapError("model.components: layers with different sliding windows (" +
                           std::to_string(window) + ", " + std::to_string(c.slidingWindow) +
                           "): config.json's sliding_window is one value");
        window = c.slidingWindow;
      }
    }
  j["attention_bias"] = bias;
  if (isSigmoidScoring(m.routerScoring))
    throw HfMapError("model.router_scoring: the sigmoid group-limited router (DeepSeek-V3's) has "
                     "no config.json of family " +
                     std::string(toString(family)) + " (scoring_func is softmax there)");
  const bool renorm = m.routerScoring == RouterScoring::SoftmaxTopkRenorm;
  switch (family) {
  case HfFamily::Mixtral:
    j["intermediate_size"] = m.expertHidden;
    j["num_local_experts"] = m.numExperts;
    j["sliding_window"] = nullptr;
    j["router_aux_loss_coef"] = 0.0;
    break;
  case HfFamily::Qwen3Moe:
    j["moe_intermediate_size"] = m.expertHidden;
    j["intermediate_size"] = m.expertHidden;
    j["num_experts"] = m.numExperts;
    j["norm_topk_prob"] = renorm;
    j["decoder_sparse_step"] = 1;
    j["mlp_only_layers"] = nlohmann::json::array();
    j["use_sliding_window"] = false;
    j["sliding_window"] = nullptr;
    j["router_aux_loss_coef"] = 0.0;
    break;
  case HfFamily::DeepseekMoe:
  case HfFamily::DeepseekV2: {
    int64_t firstMoe = -1, denseHidden = 0, sharedHidden = 0;
    float scaling = 1;
    for (int64_t l = 0; l < m.numLayers; ++l)
      if (!m.layers[static_cast<size_t>(l)].dense && firstMoe < 0)
        firstMoe = l;
    for (int64_t l = 0; l < m.numLayers; ++l)
      if (m.layers[static_cast<size_t>(l)].dense != (l < firstMoe || firstMoe < 0))
        throw HfMapError("model.dense_layers: layer " + std::to_string(l) +
                         (m.layers[static_cast<size_t>(l)].dense ? " is dense after MoE layers"
                                                                 : " is MoE among dense layers") +
                         ": first_k_dense_replace says only the first k layers are dense");
    for (const Component &c : m.components) {
      if (c.kind == ComponentKind::DenseFfn)
        (c.denseRole == DenseFfnRole::Dense ? denseHidden : sharedHidden) = c.ffnHidden;
      if (c.kind == ComponentKind::Router && c.routedScalingFactor)
        scaling = *c.routedScalingFactor;
    }
    j["moe_intermediate_size"] = m.expertHidden;
    j["intermediate_size"] = denseHidden ? denseHidden : m.expertHidden;
    j["n_routed_experts"] = m.numExperts;
    const int64_t shared = m.expertHidden > 0 && sharedHidden % m.expertHidden == 0
                               ? sharedHidden / m.expertHidden
                               : 0;
    if (sharedHidden && !shared)
      throw HfMapError("shared experts of width " + std::to_string(sharedHidden) +
                       " are not a multiple of moe_intermediate_size " +
                       std::to_string(m.expertHidden) + " (n_shared_experts x it)");
    j["n_shared_experts"] = sharedHidden ? nlohmann::json(shared) : nlohmann::json(nullptr);
    j["first_k_dense_replace"] = firstMoe < 0 ? m.numLayers : firstMoe;
    j["moe_layer_freq"] = 1;
    j["routed_scaling_factor"] = shortest(scaling);
    j["norm_topk_prob"] = renorm;
    j["scoring_func"] = "softmax";
    j["topk_method"] = "greedy";
    j["n_group"] = 1;
    j["topk_group"] = 1;
    j["aux_loss_alpha"] = 0.0;
    if (family == HfFamily::DeepseekV2) {
      j["kv_lora_rank"] = m.kvLoraRank;
      j["q_lora_rank"] = nullptr;
      j["qk_nope_head_dim"] = m.qkNopeHeadDim;
      j["qk_rope_head_dim"] = m.qkRopeHeadDim;
      j["v_head_dim"] = m.vHeadDim;
      j["head_dim"] = m.qkRopeHeadDim; // DeepseekV2Config: head_dim is the rotary dimension
    }
    break;
  }
  case HfFamily::GptOss: {
    j["intermediate_size"] = m.expertHidden;
    j["num_local_experts"] = m.numExperts;
    j["sliding_window"] = window ? nlohmann::json(window) : nlohmann::json(nullptr);
    j["layer_types"] = layerTypes;
    float limit = 0;
    for (const Component &c : m.components)
      if (c.kind == ComponentKind::Experts)
        limit = c.swigluLimit;
    j["swiglu_limit"] = shortest(limit);
    j["router_aux_loss_coef"] = 0.0;
    break;
  }
  }
  return j.dump(2) + "\n";
}

} // namespace disagmoe::train
