// config.json of a Hugging Face export (HfExport.h): the family's transformers configuration
// fields, from the plan's model dimensions. Sources: transformers' configuration_<family>.py
// (MixtralConfig, Qwen3MoeConfig, DeepseekV2Config, GptOssConfig) and DeepSeek-MoE's remote-code
// DeepseekConfig.
//
//   every family  architectures, model_type, vocab_size, hidden_size, num_hidden_layers,
//                 num_attention_heads, num_key_value_heads, head_dim, rms_norm_eps, rope_theta and
//                 rope_parameters {"rope_type": "default", "rope_theta"} (transformers 5 reads the
//                 latter; rope_scaling null for 4.x), num_experts_per_tok, hidden_act "silu",
//                 tie_word_embeddings false, attention_bias, max_position_embeddings (the plan's
//                 compiled seq_len: the plan does not record the model's context length),
//                 torch_dtype
//   mixtral       intermediate_size (expert width), num_local_experts
//   qwen3_moe     moe_intermediate_size, intermediate_size (= the expert width: no dense layer),
//                 num_experts, norm_topk_prob, decoder_sparse_step 1, mlp_only_layers []
//   deepseek_*    moe_intermediate_size, intermediate_size (the dense layers' width),
//                 n_routed_experts, n_shared_experts, first_k_dense_replace, moe_layer_freq 1,
//                 routed_scaling_factor, norm_topk_prob, scoring_func "softmax", topk_method
//                 "greedy"; deepseek_v2 also kv_lora_rank, q_lora_rank null, qk_nope_head_dim,
//                 qk_rope_head_dim, v_head_dim
//   gpt_oss       intermediate_size, num_local_experts, sliding_window, layer_types, swiglu_limit
//
// Errors: HfMapError naming the field the plan cannot give (e.g. dense layers that are not the
// first k, which first_k_dense_replace cannot say).
#pragma once

#include "runtime/io/Safetensors.h"
#include "runtime/plan/Plan.h"
#include "runtime/train/HfNameMap.h"

#include <string>

namespace disagmoe::train {

/// The config.json text (two-space indent, keys sorted, final newline) of `model` in `family`,
/// with torch_dtype "float32" or "bfloat16" after `dtype`.
std::string hfConfigJson(const ModelSpec &model, HfFamily family, SafetensorsDtype dtype);

} // namespace disagmoe::train
