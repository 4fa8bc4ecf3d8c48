#!/usr/bin/python3
"""Export a tiny DeepSeek-V2-Lite decoder (multi-head latent attention) to ONNX, with goldens.

    /usr/bin/python3 samples/models/deepseek_v2_lite_tiny/export.py [--out DIR]
    /usr/bin/python3 samples/models/deepseek_v2_lite_tiny/export.py --check [DIR]

Attention is DeepSeek-V2's MLA as in V2-Lite (q_lora_rank = null, so q comes from a full q_proj),
written in the style of Hugging Face's DeepseekV2Attention / DeepseekV3Attention:
  q = q_proj(x) -> [b, h, s, nope + rope], split into q_nope and q_pe;
  kv_a_proj_with_mqa(x) -> [compressed_kv (kv_lora_rank) | k_pe (rope, one head shared by all)];
  kv = kv_b_proj(kv_a_layernorm(compressed_kv)) -> [b, h, s, nope + v], split into k_nope, value;
  RoPE (rotate-half, after DeepSeek-V2's de-interleave of the rope dims: view(d/2, 2).transpose)
  on q_pe and k_pe only (the decoupled RoPE part);
  q = cat(q_nope, q_pe), k = cat(k_nope, k_pe expanded to every head), softmax scale
  (nope + rope)**-0.5, causal; o_proj over heads * v_head_dim.
FFNs are DeepSeek-MoE's (../deepseek_moe_tiny/export.py): layer 0 dense, layer 1 MoE with 16
routed experts top-6 without renormalisation (routed_scaling_factor 1.0, as V2-Lite) and 2 shared
experts. RoPE scaling (YaRN in the real config) is left out.
"""

import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "family_common"))
sys.path.insert(0, os.path.join(HERE, "..", "deepseek_moe_tiny"))
import family_export as fx  # noqa: E402
import importlib.util  # noqa: E402

_spec = importlib.util.spec_from_file_location("deepseek_moe_export", os.path.join(HERE, "..", "deepseek_moe_tiny", "export.py"))
ds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ds)

CONFIG = {
    "family": "deepseek_v2",
    "attention_type": "mla",
    "vocab_size": 256,
    "hidden_size": 32,
    "num_layers": 2,
    "num_heads": 4,
    "num_kv_heads": 4,
    "q_lora_rank": None,
    "kv_lora_rank": 16,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4,
    "v_head_dim": 8,
    "head_dim": 12,
    "first_k_dense_replace": 1,
    "dense_layers": [0],
    "dense_hidden": 64,
    "num_experts": 16,
    "top_k": 6,
    "expert_hidden": 16,
    "num_shared_experts": 2,
    "shared_expert_hidden": 32,
    "norm_topk_prob": False,
    "routed_scaling_factor": 1.0,
    "router_scoring": "softmax_topk",
    "rope_theta": 10000.0,
    "rms_norm_eps": 1e-6,
    "trace_batch": 2,
    "trace_seq": 8,
}


def deinterleave(x):
    """DeepSeek-V2's rope layout: [x0, x1, x2, x3, ...] -> [x0, x2, ..., x1, x3, ...]."""
    b, h, s, d = x.shape
    return x.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)


class DeepseekV2MLA(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h = cfg["hidden_size"]
        self.num_heads = cfg["num_heads"]
        self.nope, self.rope, self.v = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
        self.kv_lora_rank = cfg["kv_lora_rank"]
        self.q_head_dim = self.nope + self.rope
        self.softmax_scale = self.q_head_dim ** -0.5
        self.q_proj = nn.Linear(h, self.num_heads * self.q_head_dim, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(h, self.kv_lora_rank + self.rope, bias=False)
        self.kv_a_layernorm = fx.RMSNorm(self.kv_lora_rank, cfg["rms_norm_eps"])
        self.kv_b_proj = nn.Linear(self.kv_lora_rank, self.num_heads * (self.nope + self.v), bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.v, h, bias=False)

    def forward(self, x, cos, sin, mask):
        bsz, q_len, _ = x.shape
        q = self.q_proj(x).view(bsz, q_len, self.num_heads, self.q_head_dim).transpose(1, 2)
        q_nope, q_pe = torch.split(q, [self.nope, self.rope], dim=-1)
        compressed_kv = self.kv_a_proj_with_mqa(x)
        compressed_kv, k_pe = torch.split(compressed_kv, [self.kv_lora_rank, self.rope], dim=-1)
        k_pe = k_pe.view(bsz, q_len, 1, self.rope).transpose(1, 2)
        kv = self.kv_b_proj(self.kv_a_layernorm(compressed_kv))
        kv = kv.view(bsz, q_len, self.num_heads, self.nope + self.v).transpose(1, 2)
        k_nope, value_states = torch.split(kv, [self.nope, self.v], dim=-1)
        q_pe, k_pe = fx.apply_rotary_pos_emb(deinterleave(q_pe), deinterleave(k_pe), cos, sin)
        query_states = torch.cat((q_nope, q_pe), dim=-1)
        key_states = torch.cat((k_nope, k_pe.expand(-1, self.num_heads, -1, -1)), dim=-1)
        w = torch.matmul(query_states, key_states.transpose(2, 3)) * self.softmax_scale
        w = F.softmax(w + mask, dim=-1, dtype=torch.float32).to(query_states.dtype)
        out = torch.matmul(w, value_states).transpose(1, 2).contiguous()
        return self.o_proj(out.reshape(bsz, q_len, self.num_heads * self.v))


class DecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        self.self_attn = DeepseekV2MLA(cfg)
        dense = layer_idx < cfg["first_k_dense_replace"]
        self.mlp = fx.SwiGLUMLP(cfg["hidden_size"], cfg["dense_hidden"]) if dense else ds.DeepseekMoE(cfg)
        self.input_layernorm = fx.RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.post_attention_layernorm = fx.RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])

    def forward(self, x, cos, sin, mask):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return h + self.mlp(self.post_attention_layernorm(h))


class DeepseekV2LiteTiny(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList([DecoderLayer(cfg, i) for i in range(cfg["num_layers"])])
        self.norm = fx.RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        self.rotary_emb = fx.RotaryEmbedding(cfg["qk_rope_head_dim"], cfg["rope_theta"])

    def rope_and_mask(self, ids):
        seq = ids.shape[1]
        cos, sin = self.rotary_emb(torch.arange(seq).unsqueeze(0))
        return cos, sin, fx.causal_mask(seq)

    def forward(self, ids):
        cos, sin, mask = self.rope_and_mask(ids)
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))

    def intermediates(self, ids):
        """Layer 0's MLA, tokens flattened row-major; weights [in, out]."""
        H = self.cfg["hidden_size"]
        l0 = self.layers[0]
        cos, sin, mask = self.rope_and_mask(ids)
        an = l0.input_layernorm(self.embed_tokens(ids))
        a = l0.self_attn
        return {"l0_attn_in.npy": fx.f32(an.reshape(-1, H)),
                "l0_attn_out.npy": fx.f32(a(an, cos, sin, mask).reshape(-1, H)),
                "w_l0_q.npy": fx.lin(a.q_proj), "w_l0_kv_a.npy": fx.lin(a.kv_a_proj_with_mqa),
                "w_l0_kv_norm.npy": fx.f32(a.kv_a_layernorm.weight), "w_l0_kv_b.npy": fx.lin(a.kv_b_proj),
                "w_l0_o.npy": fx.lin(a.o_proj)}


def build(cfg):
    """As deepseek_moe_tiny: embeddings N(0,1); Linear N(0, 1/in); router N(0, 0.5^2); RMSNorm
    weights (also kv_a_layernorm) 1 + N(0, 0.1^2)."""
    model = DeepseekV2LiteTiny(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("embed_tokens.weight"):
                p.normal_(0.0, 1.0)
            elif p.dim() == 1:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name.endswith("gate.weight"):
                p.normal_(0.0, 0.5)
            else:
                p.normal_(0.0, 1.0 / math.sqrt(p.shape[1]))
    return model.eval().float()


VARIANTS = [
    {"name": "deepseek_v2_lite_tiny", "subdir": ".", "shapes": [(2, 8), (1, 5), (2, 12)], "seed_base": 1000,
     "weight_seed": 0, "build": lambda: build(CONFIG)},
]

if __name__ == "__main__":
    fx.main(HERE, VARIANTS, __doc__)
