#!/usr/bin/env python3
"""Writes the committed config.json files of samples/configs/ from docs/reference/models.json.

Each file uses the Hugging Face config.json keys of its model family (model_type, architectures,
hidden_size, num_experts_per_tok, ...), with the values of models.json (whose entries cite the
published configs). Run from the repository root:
    python3 samples/configs/make_configs.py docs/reference/models.json samples/configs
"""
import json
import os
import sys

NAMES = {
    "DeepSeek-MoE-16B": "deepseek-moe-16b", "DeepSeek-V2-Lite": "deepseek-v2-lite",
    "DeepSeek-V3": "deepseek-v3", "Qwen3-30B-A3B": "qwen3-30b-a3b",
    "Qwen3-235B-A22B": "qwen3-235b", "GPT-OSS-120B": "gpt-oss-120b",
    "GPT-OSS-20B": "gpt-oss-20b", "Mixtral-8x7B": "mixtral-8x7b", "Mixtral-8x22B": "mixtral-8x22b",
}


def common(m):
    return {
        "architectures": [m["architecture_class"]],
        "hidden_size": m["hidden_size"], "num_hidden_layers": m["num_layers"],
        "num_attention_heads": m["num_attention_heads"], "num_key_value_heads": m["num_kv_heads"],
        "vocab_size": m["vocab_size"], "rms_norm_eps": m["rms_norm_eps"],
        "rope_theta": m["rope_theta"], "max_position_embeddings": m["max_position_embeddings"],
        "tie_word_embeddings": m["tie_word_embeddings"],
    }


def convert(m):
    arch = m["architecture_class"]
    c = common(m)
    if arch.startswith("Deepseek"):
        c["model_type"] = {"DeepseekForCausalLM": "deepseek", "DeepseekV2ForCausalLM": "deepseek_v2",
                           "DeepseekV3ForCausalLM": "deepseek_v3"}[arch]
        c.update({"intermediate_size": m["dense_intermediate_size"],
                  "moe_intermediate_size": m["moe_intermediate_size"],
                  "n_routed_experts": m["num_routed_experts"], "n_shared_experts": m["num_shared_experts"],
                  "num_experts_per_tok": m["top_k"], "first_k_dense_replace": m["first_k_dense_replace"],
                  "moe_layer_freq": m.get("moe_layer_freq", 1), "norm_topk_prob": m["norm_topk_prob"],
                  "scoring_func": m["router_scoring"]})
        if m.get("head_dim"):
            c["head_dim"] = m["head_dim"]
        for k in ["q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"]:
            if k in m:
                c[k] = m[k]
    elif arch == "Qwen3MoeForCausalLM":
        c.update({"model_type": "qwen3_moe", "head_dim": m["head_dim"],
                  "moe_intermediate_size": m["moe_intermediate_size"], "num_experts": m["num_routed_experts"],
                  "num_experts_per_tok": m["top_k"], "decoder_sparse_step": 1, "mlp_only_layers": [],
                  "norm_topk_prob": m["norm_topk_prob"]})
    elif arch == "GptOssForCausalLM":
        c.update({"model_type": "gpt_oss", "head_dim": m["head_dim"],
                  "intermediate_size": m["moe_intermediate_size"],
                  "num_local_experts": m["num_routed_experts"], "num_experts_per_tok": m["top_k"],
                  "sliding_window": m["sliding_window"],
                  "layer_types": ["sliding_attention", "full_attention"] * (m["num_layers"] // 2)})
    elif arch == "MixtralForCausalLM":
        c.update({"model_type": "mixtral", "head_dim": m["head_dim"],
                  "intermediate_size": m["moe_intermediate_size"],
                  "num_local_experts": m["num_routed_experts"], "num_experts_per_tok": m["top_k"],
                  "sliding_window": None})
    else:
        raise SystemExit("unknown architecture " + arch)
    c["_source"] = ("docs/reference/models.json entry '%s' (%s); reported total %s, "
                    "computed total %sB" % (m["name"], "; ".join(m["source"][:1]),
                                            m["total_params_reported"], m["computed_params"]["total_B"]))
    return c


def main():
    models = json.load(open(sys.argv[1]))
    for m in models:
        path = os.path.join(sys.argv[2], NAMES[m["name"]] + ".json")
        with open(path, "w") as f:
            json.dump(convert(m), f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
