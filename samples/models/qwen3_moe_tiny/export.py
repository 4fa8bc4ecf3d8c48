#!/usr/bin/python3
"""Export a tiny Qwen3-MoE decoder to ONNX, with golden values.

    /usr/bin/python3 samples/models/qwen3_moe_tiny/export.py [--out DIR]
    /usr/bin/python3 samples/models/qwen3_moe_tiny/export.py --check [DIR]

Plain PyTorch modules in the style of Hugging Face's Qwen3-MoE (transformers/models/qwen3_moe/
modeling_qwen3_moe.py): grouped-query attention whose q and k are RMS-normalised per head over
head_dim (q_norm/k_norm, applied to the [b, s, heads, head_dim] view, before RoPE), q width
heads*head_dim different from hidden (as in the real models), scaling head_dim**-0.5; every layer
a sparse MoE block: softmax over 32 experts in fp32, top-8, renormalised when norm_topk_prob,
and the loop over experts with index_add_ (Qwen3MoeSparseMoeBlock); experts are Qwen3MoeMLP
(down(silu(gate(x)) * up(x))).

Two variants, sharing the module code and differing only in norm_topk_prob:
  ./                  norm_topk_prob = true  (the real Qwen3-30B-A3B / 235B-A22B setting)
  ./norm_topk_false/  norm_topk_prob = false
  ./dense_masked/     norm_topk_prob = true, the experts as dense-masked batched MatMuls over the
                      stacked expert weights, weighted by the dense [tokens, experts] gate matrix
  ./hf_forms/         the same model in Hugging Face's spellings: RMSNorms (q/k norms too) with
                      transformers' float32 Casts, masking_utils' boolean causal mask
Each has model.onnx (opset 17, constant folding, dynamic batch/seq) and golden/ (see
../family_common/family_export.py).
"""

import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "family_common"))
import family_export as fx  # noqa: E402

CONFIG = {
    "family": "qwen3_moe",
    "vocab_size": 256,
    "hidden_size": 32,
    "num_layers": 2,
    "num_heads": 4,
    "num_kv_heads": 2,
    "head_dim": 16,
    "qk_norm": True,
    "num_experts": 32,
    "top_k": 8,
    "expert_hidden": 16,
    "num_shared_experts": 0,
    "dense_layers": [],
    "norm_topk_prob": True,
    "router_scoring": "softmax_topk_renorm",
    "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-6,
    "trace_batch": 2,
    "trace_seq": 8,
}


class Qwen3MoeAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, d = cfg["hidden_size"], cfg["head_dim"]
        self.head_dim = d
        self.n_rep = cfg["num_heads"] // cfg["num_kv_heads"]
        self.scaling = d ** -0.5
        self.q_proj = nn.Linear(h, cfg["num_heads"] * d, bias=False)
        self.k_proj = nn.Linear(h, cfg["num_kv_heads"] * d, bias=False)
        self.v_proj = nn.Linear(h, cfg["num_kv_heads"] * d, bias=False)
        self.o_proj = nn.Linear(cfg["num_heads"] * d, h, bias=False)
        norm = fx.HfRMSNorm if cfg.get("hf_forms") else fx.RMSNorm
        self.q_norm = norm(d, cfg["rms_norm_eps"])  # over head_dim, per head
        self.k_norm = norm(d, cfg["rms_norm_eps"])

    def forward(self, x, cos, sin, mask):
        bsz, q_len, _ = x.shape
        hidden_shape = (bsz, q_len, -1, self.head_dim)
        q = self.q_norm(self.q_proj(x).view(hidden_shape)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(hidden_shape)).transpose(1, 2)
        v = self.v_proj(x).view(hidden_shape).transpose(1, 2)
        q, k = fx.apply_rotary_pos_emb(q, k, cos, sin)
        k = fx.repeat_kv(k, self.n_rep)
        v = fx.repeat_kv(v, self.n_rep)
        w = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        w = w + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(w, v).transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(out)


class Qwen3MoeSparseMoeBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.num_experts = cfg["num_experts"]
        self.top_k = cfg["top_k"]
        self.norm_topk_prob = cfg["norm_topk_prob"]
        self.dense_masked = cfg.get("expert_form") == "dense_masked"
        self.gate = nn.Linear(cfg["hidden_size"], self.num_experts, bias=False)
        self.experts = nn.ModuleList(
            [fx.SwiGLUMLP(cfg["hidden_size"], cfg["expert_hidden"]) for _ in range(self.num_experts)])

    def forward_dense_masked(self, x, routing_weights, selected_experts):
        """Every expert on every token through batched MatMuls with the stacked expert weights,
        weighted by the dense [tokens, experts] gate matrix (zero off the top-k), summed."""
        E, hidden = self.num_experts, x.shape[-1]
        dense_w = torch.zeros((x.shape[0], E), dtype=x.dtype).scatter(1, selected_experts, routing_weights)
        w1 = torch.stack([e.gate_proj.weight.t() for e in self.experts])  # [E, H, I]
        w3 = torch.stack([e.up_proj.weight.t() for e in self.experts])
        w2 = torch.stack([e.down_proj.weight.t() for e in self.experts])  # [E, I, H]
        xs = x.repeat(E, 1).view(E, -1, hidden)
        y = torch.bmm(F.silu(torch.bmm(xs, w1)) * torch.bmm(xs, w3), w2)
        return (y * dense_w.transpose(0, 1)[..., None]).sum(dim=0)

    def route(self, x):
        router_logits = self.gate(x)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        fx.record_router_scores(routing_weights)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        if self.norm_topk_prob:
            routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        return routing_weights.to(x.dtype), selected_experts

    def forward(self, hidden_states):
        bsz, seq, hidden = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden)
        routing_weights, selected_experts = self.route(hidden_states)
        if self.dense_masked:
            return self.forward_dense_masked(hidden_states, routing_weights, selected_experts).reshape(bsz, seq, hidden)
        final = torch.zeros((bsz * seq, hidden), dtype=hidden_states.dtype)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for e in range(self.num_experts):
            idx, top_x = torch.where(expert_mask[e])
            cur = hidden_states[None, top_x].reshape(-1, hidden)
            out = self.experts[e](cur) * routing_weights[top_x, idx, None]
            final.index_add_(0, top_x, out.to(hidden_states.dtype))
        return final.reshape(bsz, seq, hidden)


class Qwen3MoeDecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        norm = fx.HfRMSNorm if cfg.get("hf_forms") else fx.RMSNorm
        self.input_layernorm = norm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.self_attn = Qwen3MoeAttention(cfg)
        self.post_attention_layernorm = norm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.mlp = Qwen3MoeSparseMoeBlock(cfg)

    def forward(self, x, cos, sin, mask):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return h + self.mlp(self.post_attention_layernorm(h))


class Qwen3MoeTiny(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList([Qwen3MoeDecoderLayer(cfg) for _ in range(cfg["num_layers"])])
        self.norm = (fx.HfRMSNorm if cfg.get("hf_forms") else fx.RMSNorm)(cfg["hidden_size"],
                                                                          cfg["rms_norm_eps"])
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        self.rotary_emb = fx.RotaryEmbedding(cfg["head_dim"], cfg["rope_theta"])

    def rope_and_mask(self, ids):
        seq = ids.shape[1]
        cos, sin = self.rotary_emb(torch.arange(seq).unsqueeze(0))
        if self.cfg.get("hf_forms"):
            return cos, sin, fx.masking_utils_causal_mask(ids.shape[0], seq, cos.dtype)
        return cos, sin, fx.causal_mask(seq)

    def forward(self, ids):
        cos, sin, mask = self.rope_and_mask(ids)
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))

    def intermediates(self, ids):
        """Layer-0 attention (with q/k norm) and router, tokens flattened row-major."""
        if (not self.cfg["norm_topk_prob"] or self.cfg.get("expert_form") == "dense_masked"
                or self.cfg.get("hf_forms")):
            return {}
        H = self.cfg["hidden_size"]
        l0 = self.layers[0]
        cos, sin, mask = self.rope_and_mask(ids)
        x = self.embed_tokens(ids)
        an = l0.input_layernorm(x)
        ao = l0.self_attn(an, cos, sin, mask)
        h = x + ao
        fn = l0.post_attention_layernorm(h).reshape(-1, H)
        w, top = l0.mlp.route(fn)
        a = l0.self_attn
        return {
            "l0_attn_in.npy": fx.f32(an.reshape(-1, H)), "l0_attn_out.npy": fx.f32(ao.reshape(-1, H)),
            "w_l0_q.npy": fx.lin(a.q_proj), "w_l0_k.npy": fx.lin(a.k_proj),
            "w_l0_v.npy": fx.lin(a.v_proj), "w_l0_o.npy": fx.lin(a.o_proj),
            "w_l0_q_norm.npy": fx.f32(a.q_norm.weight), "w_l0_k_norm.npy": fx.f32(a.k_norm.weight),
            "l0_ffn_in.npy": fx.f32(fn), "w_l0_router.npy": fx.lin(l0.mlp.gate),
            "l0_topk_ids.npy": fx.i64(top), "l0_topk_weights.npy": fx.f32(w),
        }


def build(cfg):
    """Embeddings N(0,1); Linear N(0, 1/in); router N(0, 0.5^2) (peaked enough for top-8 margins);
    RMSNorm weights (also q/k norms) 1 + N(0, 0.1^2)."""
    model = Qwen3MoeTiny(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("embed_tokens.weight"):
                p.normal_(0.0, 1.0)
            elif p.dim() == 1:  # RMSNorm weights
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name.endswith("mlp.gate.weight"):
                p.normal_(0.0, 0.5)
            else:
                p.normal_(0.0, 1.0 / math.sqrt(p.shape[1]))
    return model.eval().float()


SHAPES = [(2, 8), (1, 5), (2, 12)]
VARIANTS = [
    {"name": "qwen3_moe_tiny", "subdir": ".", "shapes": SHAPES, "seed_base": 1000, "weight_seed": 0,
     "build": lambda: build(CONFIG)},
    {"name": "qwen3_moe_tiny/norm_topk_false", "subdir": "norm_topk_false", "shapes": SHAPES[:2],
     "seed_base": 5000, "weight_seed": 0,
     "build": lambda: build(dict(CONFIG, norm_topk_prob=False, router_scoring="softmax_topk"))},
    # Expert form: the same weights as ./, every expert on every token over stacked weights,
    # weighted by the dense [tokens, experts] gate matrix.
    {"name": "qwen3_moe_tiny/dense_masked", "subdir": "dense_masked", "shapes": SHAPES[:2],
     "seed_base": 1000, "weight_seed": 0,
     "build": lambda: build(dict(CONFIG, expert_form="dense_masked"))},
    # Hugging Face's own spellings of the same model (same weights as ./): every RMSNorm, q/k
    # norms included, with transformers' float32 round-trip Casts, and masking_utils' boolean
    # causal mask turned into where(mask, 0, finfo.min) (the compiler's normalize and fold stages).
    {"name": "qwen3_moe_tiny/hf_forms", "subdir": "hf_forms", "shapes": SHAPES[:2],
     "seed_base": 1000, "weight_seed": 0,
     "build": lambda: build(dict(CONFIG, hf_forms=True))},
]

if __name__ == "__main__":
    fx.main(HERE, VARIANTS, __doc__)
