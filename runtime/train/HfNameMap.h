// The Hugging Face tensor names and layouts of a plan's weights, by structure: each component's
// kind, layer and role (and each expert's index) give the name the family's transformers model
// uses, never the ONNX initializer's name. Sources (transformers, src/transformers/models/<family>/
// modeling_<family>.py; the Hub checkpoints' names):
//
//   every family   model.embed_tokens.weight [vocab, hidden]; model.norm.weight [hidden];
//                  lm_head.weight [vocab, hidden]; model.layers.{i}.input_layernorm.weight and
//                  .post_attention_layernorm.weight [hidden] (the attention / FFN RMSNorms)
//   attention      model.layers.{i}.self_attn.{q,k,v,o}_proj.weight [out, in] (and .bias [out]
//                  where the family has attention_bias: Qwen3-MoE, DeepSeek, GPT-OSS); Qwen3-MoE's
//                  self_attn.{q,k}_norm.weight [head_dim]; GPT-OSS's self_attn.sinks [heads]
//   MLA            (DeepSeek-V2, q_lora_rank null) self_attn.q_proj.weight [heads*(nope+rope),
//                  hidden], .kv_a_proj_with_mqa.weight [kv_lora_rank+rope, hidden],
//                  .kv_a_layernorm.weight [kv_lora_rank], .kv_b_proj.weight [heads*(nope+v),
//                  kv_lora_rank], .o_proj.weight [hidden, heads*v]
//   Mixtral        block_sparse_moe.gate.weight [experts, hidden];
//                  block_sparse_moe.experts.{e}.w1 / w3 / w2.weight (gate, up [inter, hidden]; down
//                  [hidden, inter])
//   Qwen3-MoE,     mlp.gate.weight [experts, hidden]; mlp.experts.{e}.gate_proj / up_proj /
//   DeepSeek       down_proj.weight; DeepSeek's shared experts mlp.shared_experts.{gate,up,down}_
//                  proj.weight (one MLP of n_shared x moe_intermediate) and its dense layers'
//                  mlp.{gate,up,down}_proj.weight
//   GPT-OSS        mlp.router.weight [experts, hidden], mlp.router.bias [experts]; the experts
//                  stacked: mlp.experts.gate_up_proj [experts, hidden, 2*inter] (gate and up
//                  interleaved along the last axis, as the plan's fused w1), .gate_up_proj_bias
//                  [experts, 2*inter], .down_proj [experts, inter, hidden], .down_proj_bias
//                  [experts, hidden]: [in, out] per expert, as the runtime holds them
//
// The runtime holds linear weights [in, out] (runtime/plan/Plan.h); Hugging Face's nn.Linear
// weights are [out, in], so those entries are `transposed`. Errors: HfMapError, one line naming
// the component ("model.components[7] (layer 1 router): mixtral has no Hugging Face name for a
// router bias").
#pragma once

#include "runtime/plan/Plan.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace disagmoe::train {

class HfMapError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The families whose Hugging Face naming is known. DeepseekMoe is DeepSeek-MoE's remote-code
/// model (model_type "deepseek", loaded with trust_remote_code); the others are in transformers.
enum class HfFamily { Mixtral, Qwen3Moe, DeepseekMoe, DeepseekV2, GptOss };

/// The family recorded in the plan (model.family: "mixtral", "qwen3_moe", "deepseek_moe",
/// "deepseek_v2", "gpt_oss"; disagmoe compile derives it from the structure it recognised).
/// Throws HfMapError for any other.
HfFamily hfFamilyOf(const ModelSpec &model);
/// The plan's spelling of `family` ("qwen3_moe").
const char *toString(HfFamily family);

/// One Hugging Face tensor and the plan weights it holds.
struct HfTensor {
  std::string name;           ///< "model.layers.0.self_attn.q_proj.weight"
  std::vector<int64_t> shape; ///< Hugging Face's shape
  /// Indices into ModelSpec::weights: one, or (GPT-OSS's stacked experts) one per expert, part e
  /// being slice e along the first axis.
  std::vector<int> weights;
  /// Each part is the 2-D transpose of the plan's [in, out] weight (nn.Linear's [out, in]).
  bool transposed = false;
};

/// Every Hugging Face tensor of `model` in `family`'s naming, in the order transformers defines
/// the parameters (embedding, then each layer's attention, MLP and norms, final norm, head); every
/// plan weight appears in exactly one. Throws HfMapError naming the component for a part the
/// family's naming cannot hold (a router bias in Mixtral, non-gated experts, a dense FFN outside
/// DeepSeek, ...) or a weight shared by two components.
std::vector<HfTensor> hfTensors(const ModelSpec &model, HfFamily family);

} // namespace disagmoe::train
