#!/usr/bin/python3
"""Export a tiny DeepSeek-MoE decoder to ONNX, with golden values.

    /usr/bin/python3 samples/models/deepseek_moe_tiny/export.py [--out DIR]
    /usr/bin/python3 samples/models/deepseek_moe_tiny/export.py --check [DIR]

Plain PyTorch modules in the style of DeepSeek-MoE's Hugging Face code (modeling_deepseek.py of
deepseek-ai/deepseek-moe-16b-base): multi-head attention (kv heads = heads) with rotate-half RoPE;
the first `first_k_dense_replace` = 1 layer has a dense DeepseekMLP (intermediate 64), the others a
DeepseekMoE block: MoEGate (logits = x W^T, softmax over the 16 fine-grained routed experts in
fp32, top-6 with sorted=False, NO renormalisation (norm_topk_prob = false), gate weights multiplied
by routed_scaling_factor as DeepSeek-V2's gate does when it does not renormalise), routed experts
DeepseekMLP(intermediate 16), and 2 shared experts as one DeepseekMLP of intermediate 2 x 16 = 32
added to the routed output (y = moe(x) + shared_experts(x)).

The real DeepseekMoE.moe_infer (argsort, bincount) does not trace (docs/architecture.md, "What real
exports look like"), and its training branch freezes per-expert counts; the routed experts therefore
use the loop over experts with index_add_ of the Mixtral/Qwen code, which computes the same sum.

routed_scaling_factor: DeepSeek-MoE 16B has none (1.0); V2-Lite writes 1.0 and V3 2.5. The sample
uses 1.5 so that a compiler that drops the factor is caught by the goldens.
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
import family_export as fx  # noqa: E402

CONFIG = {
    "family": "deepseek_moe",
    "vocab_size": 256,
    "hidden_size": 32,
    "num_layers": 4,
    "num_heads": 4,
    "num_kv_heads": 4,
    "head_dim": 8,
    "first_k_dense_replace": 1,
    "dense_layers": [0],
    "dense_hidden": 64,
    "num_experts": 16,
    "top_k": 6,
    "expert_hidden": 16,
    "num_shared_experts": 2,
    "shared_expert_hidden": 32,
    "norm_topk_prob": False,
    "routed_scaling_factor": 1.5,
    "router_scoring": "softmax_topk",
    "rope_theta": 10000.0,
    "rms_norm_eps": 1e-6,
    "trace_batch": 2,
    "trace_seq": 8,
}


class DeepseekAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h = cfg["hidden_size"]
        self.num_heads, self.num_kv_heads, self.head_dim = cfg["num_heads"], cfg["num_kv_heads"], cfg["head_dim"]
        self.q_proj = nn.Linear(h, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(h, self.num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(h, self.num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, h, bias=False)

    def forward(self, x, cos, sin, mask):
        bsz, q_len, _ = x.shape
        q = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        q, k = fx.apply_rotary_pos_emb(q, k, cos, sin)
        n_rep = self.num_heads // self.num_kv_heads
        k, v = fx.repeat_kv(k, n_rep), fx.repeat_kv(v, n_rep)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        w = F.softmax(w + mask, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(w, v).transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(out)


class MoEGate(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.top_k = cfg["top_k"]
        self.norm_topk_prob = cfg["norm_topk_prob"]
        self.routed_scaling_factor = cfg["routed_scaling_factor"]
        self.weight = nn.Parameter(torch.empty(cfg["num_experts"], cfg["hidden_size"]))

    def forward(self, hidden_states):
        h = hidden_states.shape[-1]
        hidden_states = hidden_states.view(-1, h)
        logits = F.linear(hidden_states, self.weight, None)
        scores = logits.softmax(dim=-1)
        fx.record_router_scores(scores)
        topk_weight, topk_idx = torch.topk(scores, k=self.top_k, dim=-1, sorted=False)
        if self.top_k > 1 and self.norm_topk_prob:
            topk_weight = topk_weight / (topk_weight.sum(dim=-1, keepdim=True) + 1e-20)
        else:
            topk_weight = topk_weight * self.routed_scaling_factor
        return topk_idx, topk_weight


class DeepseekMoE(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.num_experts = cfg["num_experts"]
        self.experts = nn.ModuleList(
            [fx.SwiGLUMLP(cfg["hidden_size"], cfg["expert_hidden"]) for _ in range(self.num_experts)])
        self.gate = MoEGate(cfg)
        self.shared_experts = fx.SwiGLUMLP(cfg["hidden_size"], cfg["shared_expert_hidden"])

    def forward(self, hidden_states):
        identity = hidden_states
        bsz, seq, hidden = hidden_states.shape
        topk_idx, topk_weight = self.gate(hidden_states)
        x = hidden_states.view(-1, hidden)
        y = torch.zeros((bsz * seq, hidden), dtype=x.dtype)
        expert_mask = F.one_hot(topk_idx, num_classes=self.num_experts).permute(2, 1, 0)
        for e in range(self.num_experts):
            idx, top_x = torch.where(expert_mask[e])
            out = self.experts[e](x[None, top_x].reshape(-1, hidden)) * topk_weight[top_x, idx, None]
            y.index_add_(0, top_x, out.to(x.dtype))
        y = y.view(bsz, seq, hidden)
        return y + self.shared_experts(identity)


class DeepseekDecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        self.self_attn = DeepseekAttention(cfg)
        dense = layer_idx < cfg["first_k_dense_replace"]
        self.mlp = fx.SwiGLUMLP(cfg["hidden_size"], cfg["dense_hidden"]) if dense else DeepseekMoE(cfg)
        self.input_layernorm = fx.RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.post_attention_layernorm = fx.RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])

    def forward(self, x, cos, sin, mask):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return h + self.mlp(self.post_attention_layernorm(h))


class DeepseekMoeTiny(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList([DeepseekDecoderLayer(cfg, i) for i in range(cfg["num_layers"])])
        self.norm = fx.RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        self.rotary_emb = fx.RotaryEmbedding(cfg["head_dim"], cfg["rope_theta"])

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
        """Layer 0's dense FFN and layer 1's router and shared experts, tokens flattened."""
        H = self.cfg["hidden_size"]
        cos, sin, mask = self.rope_and_mask(ids)
        x = self.embed_tokens(ids)
        out = {}
        for i, layer in enumerate(self.layers[:2]):
            h = x + layer.self_attn(layer.input_layernorm(x), cos, sin, mask)
            fn = layer.post_attention_layernorm(h)
            if i == 0:
                d = layer.mlp
                out.update({"l0_ffn_in.npy": fx.f32(fn.reshape(-1, H)),
                            "l0_dense_out.npy": fx.f32(d(fn).reshape(-1, H)),
                            "w_l0_dense_w1.npy": fx.lin(d.gate_proj), "w_l0_dense_w3.npy": fx.lin(d.up_proj),
                            "w_l0_dense_w2.npy": fx.lin(d.down_proj)})
            else:
                moe = layer.mlp
                ids_, w = moe.gate(fn)
                s = moe.shared_experts
                out.update({"l1_ffn_in.npy": fx.f32(fn.reshape(-1, H)),
                            "w_l1_router.npy": fx.f32(moe.gate.weight.t()),
                            "l1_topk_ids.npy": fx.i64(ids_), "l1_topk_weights.npy": fx.f32(w),
                            "l1_shared_out.npy": fx.f32(s(fn).reshape(-1, H)),
                            "w_l1_shared_w1.npy": fx.lin(s.gate_proj), "w_l1_shared_w3.npy": fx.lin(s.up_proj),
                            "w_l1_shared_w2.npy": fx.lin(s.down_proj)})
            x = layer(x, cos, sin, mask)
        return out


def build(cfg):
    """Embeddings N(0,1); Linear N(0, 1/in); router N(0, 0.5^2); RMSNorm weights 1 + N(0, 0.1^2)."""
    model = DeepseekMoeTiny(cfg)
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
    {"name": "deepseek_moe_tiny", "subdir": ".", "shapes": [(2, 8), (1, 5), (2, 12)], "seed_base": 1000,
     "weight_seed": 0, "build": lambda: build(CONFIG)},
]

if __name__ == "__main__":
    fx.main(HERE, VARIANTS, __doc__)
