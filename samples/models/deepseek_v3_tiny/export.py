#!/usr/bin/python3
"""Export a tiny DeepSeek-V3 decoder in Hugging Face's spellings to ONNX, with golden values.

    /usr/bin/python3 samples/models/deepseek_v3_tiny/export.py [--out DIR]
    /usr/bin/python3 samples/models/deepseek_v3_tiny/export.py --check [DIR]

Our own modules, written to compute what transformers'
src/transformers/models/deepseek_v3/modeling_deepseek_v3.py computes (followed at commit
00b676f8f0489b88652a31d70751cc540dd06305), eager attention, past length 0:
  * DeepseekV3RMSNorm with its float32 Casts (weight * x.to(input_dtype)), on the residual stream
    and on MLA's q_a_layernorm and kv_a_layernorm;
  * DeepseekV3Attention (MLA) with q_lora_rank set: q_b_proj(q_a_layernorm(q_a_proj(x))) split into
    [q_pass (qk_nope) | q_rot (qk_rope)]; kv_a_proj_with_mqa(x) split into [k_pass (kv_lora_rank) |
    k_rot (one rope head shared by all heads)]; kv_b_proj(kv_a_layernorm(k_pass)) split into
    [k_pass (qk_nope) | value (v_head_dim)]; RoPE on the rope parts only, through
    apply_rotary_pos_emb_interleave (rope_interleave = true: view(d/2, 2).transpose before the
    rotate-half form); scaling qk_head_dim**-0.5 (no YaRN); masking_utils' boolean causal mask into
    where(mask, 0, finfo.min);
  * first_k_dense_replace = 1: layer 0's MLP is DeepseekV3MLP (SwiGLU), layer 1 DeepseekV3MoE;
  * DeepseekV3TopkRouter: logits in float32, sigmoid scores; for the selection only, scores +
    e_score_correction_bias, group scores = sum of each group's top-2, the topk_group best groups
    kept (masked_fill of the others to 0), top-k experts; the weights are the unbiased sigmoid
    scores gathered at those experts, renormalised (norm_topk_prob, + 1e-20) and scaled by
    routed_scaling_factor;
  * DeepseekV3MoE.moe(): the loop over experts (one-hot mask, torch.where, index_add_), plus the
    shared experts (one DeepseekV3MLP of moe_intermediate_size * n_shared_experts) on the input.
The correction bias (a buffer, zero at init in transformers, learnt by DeepSeek's balancing) is
drawn N(0, 0.1^2) so that it changes the selection. Token ids are redrawn until the expert
top-k and the group top-k (topk_group = top_k = 2 here, so one margin check covers both) have a
margin (../family_common/family_export.py).
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
    "family": "deepseek_v3",
    "attention_type": "mla",
    "vocab_size": 256,
    "hidden_size": 32,
    "num_layers": 2,
    "num_heads": 4,
    "num_kv_heads": 4,
    "q_lora_rank": 16,
    "kv_lora_rank": 16,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4,
    "v_head_dim": 8,
    "head_dim": 12,
    "rope_interleave": True,
    "first_k_dense_replace": 1,
    "dense_layers": [0],
    "dense_hidden": 48,
    "num_experts": 8,
    "n_group": 4,
    "topk_group": 2,
    "top_k": 2,
    "expert_hidden": 16,
    "num_shared_experts": 1,
    "shared_expert_hidden": 16,
    "norm_topk_prob": True,
    "routed_scaling_factor": 2.5,
    "router_scoring": "sigmoid_group_topk_renorm",
    "rope_theta": 10000.0,
    "rms_norm_eps": 1e-6,
    "trace_batch": 2,
    "trace_seq": 8,
}


def apply_rotary_pos_emb_interleave(q, k, cos, sin):
    """transformers' apply_rotary_pos_emb_interleave: the rope dims de-interleaved
    (view(d/2, 2).transpose(4, 3)), then the rotate-half RoPE."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    b, h, s, d = q.shape
    q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    b, h, s, d = k.shape
    k = k.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    return (q * cos) + (fx.rotate_half(q) * sin), (k * cos) + (fx.rotate_half(k) * sin)


class DeepseekV3Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, eps = cfg["hidden_size"], cfg["rms_norm_eps"]
        self.num_heads = cfg["num_heads"]
        self.nope, self.rope, self.v = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
        self.qk_head_dim = self.nope + self.rope
        self.kv_lora_rank = cfg["kv_lora_rank"]
        self.q_a_proj = nn.Linear(h, cfg["q_lora_rank"], bias=False)
        self.q_a_layernorm = fx.HfRMSNorm(cfg["q_lora_rank"], eps)
        self.q_b_proj = nn.Linear(cfg["q_lora_rank"], self.num_heads * self.qk_head_dim, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(h, self.kv_lora_rank + self.rope, bias=False)
        self.kv_a_layernorm = fx.HfRMSNorm(self.kv_lora_rank, eps)
        self.kv_b_proj = nn.Linear(self.kv_lora_rank, self.num_heads * (self.nope + self.v), bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.v, h, bias=False)
        self.scaling = self.qk_head_dim ** (-0.5)

    def forward(self, x, cos, sin, mask):
        bsz, seq = x.shape[:-1]
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
        q = q.view(bsz, seq, -1, self.qk_head_dim).transpose(1, 2)
        q_pass, q_rot = torch.split(q, [self.nope, self.rope], dim=-1)
        compressed_kv = self.kv_a_proj_with_mqa(x)
        k_pass, k_rot = torch.split(compressed_kv, [self.kv_lora_rank, self.rope], dim=-1)
        k_pass = self.kv_b_proj(self.kv_a_layernorm(k_pass)).view(bsz, seq, -1, self.nope + self.v)
        k_pass = k_pass.transpose(1, 2)
        k_pass, value = torch.split(k_pass, [self.nope, self.v], dim=-1)
        k_rot = k_rot.view(bsz, 1, seq, self.rope)
        q_rot, k_rot = apply_rotary_pos_emb_interleave(q_rot, k_rot, cos, sin)
        k_rot = k_rot.expand(*k_pass.shape[:-1], -1)
        query = torch.cat((q_pass, q_rot), dim=-1)
        key = torch.cat((k_pass, k_rot), dim=-1)
        w = torch.matmul(query, key.transpose(2, 3)) * self.scaling
        w = w + mask[:, :, :, : key.shape[-2]]
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(query.dtype)
        out = torch.matmul(w, value).transpose(1, 2).contiguous()
        return self.o_proj(out.reshape(bsz, seq, -1).contiguous())


class DeepseekV3TopkRouter(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.top_k, self.n_experts = cfg["top_k"], cfg["num_experts"]
        self.n_group, self.topk_group = cfg["n_group"], cfg["topk_group"]
        self.norm_topk_prob = cfg["norm_topk_prob"]
        self.routed_scaling_factor = cfg["routed_scaling_factor"]
        self.hidden = cfg["hidden_size"]
        self.weight = nn.Parameter(torch.empty(self.n_experts, self.hidden))
        self.register_buffer("e_score_correction_bias", torch.zeros(self.n_experts))

    def topk_indices(self, scores):
        choice = scores.view(-1, self.n_experts) + self.e_score_correction_bias.unsqueeze(0)
        per_group = self.n_experts // self.n_group
        group_scores = choice.view(-1, self.n_group, per_group).topk(2, dim=-1)[0].sum(dim=-1)
        fx.record_router_scores(group_scores)  # topk_group == top_k: one margin for both
        group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
        group_mask = torch.zeros_like(group_scores)
        group_mask.scatter_(1, group_idx, 1)
        score_mask = group_mask.unsqueeze(-1).expand(-1, self.n_group, per_group).reshape(-1, self.n_experts)
        choice = choice.masked_fill(~score_mask.bool(), 0.0)
        fx.record_router_scores(choice)
        return torch.topk(choice, k=self.top_k, dim=-1, sorted=False)[1]

    def forward(self, hidden_states):
        hidden_states = hidden_states.view(-1, self.hidden)
        logits = F.linear(hidden_states.type(torch.float32), self.weight.type(torch.float32))
        scores = logits.sigmoid()
        with torch.no_grad():
            idx = self.topk_indices(scores)
        weights = scores.gather(1, idx)
        if self.norm_topk_prob:
            weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
        return idx, weights * self.routed_scaling_factor


class DeepseekV3MoE(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h = cfg["hidden_size"]
        self.experts = nn.ModuleList([fx.SwiGLUMLP(h, cfg["expert_hidden"]) for _ in range(cfg["num_experts"])])
        self.gate = DeepseekV3TopkRouter(cfg)
        self.shared_experts = fx.SwiGLUMLP(h, cfg["expert_hidden"] * cfg["num_shared_experts"])

    def moe(self, hidden_states, topk_indices, topk_weights):
        final = torch.zeros_like(hidden_states, dtype=topk_weights.dtype)
        expert_mask = F.one_hot(topk_indices, num_classes=len(self.experts)).permute(2, 0, 1)
        for e in range(len(self.experts)):
            token_indices, weight_indices = torch.where(expert_mask[e])
            if token_indices.numel() > 0:  # traced: the experts the trace batch hits
                w = topk_weights[token_indices, weight_indices]
                out = self.experts[e](hidden_states[token_indices]) * w.unsqueeze(-1)
                final.index_add_(0, token_indices, out)
        return final.type(hidden_states.dtype)

    def forward(self, hidden_states):
        residuals, shape = hidden_states, hidden_states.shape
        idx, weights = self.gate(hidden_states)
        hidden_states = hidden_states.view(-1, hidden_states.shape[-1])
        hidden_states = self.moe(hidden_states, idx, weights).view(*shape)
        return hidden_states + self.shared_experts(residuals)


class DeepseekV3DecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        self.self_attn = DeepseekV3Attention(cfg)
        dense = layer_idx < cfg["first_k_dense_replace"]
        self.mlp = fx.SwiGLUMLP(cfg["hidden_size"], cfg["dense_hidden"]) if dense else DeepseekV3MoE(cfg)
        self.input_layernorm = fx.HfRMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.post_attention_layernorm = fx.HfRMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])

    def forward(self, x, cos, sin, mask):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return h + self.mlp(self.post_attention_layernorm(h))


class DeepseekV3Tiny(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList([DeepseekV3DecoderLayer(cfg, i) for i in range(cfg["num_layers"])])
        self.norm = fx.HfRMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        self.rotary_emb = fx.RotaryEmbedding(cfg["qk_rope_head_dim"], cfg["rope_theta"])

    def forward(self, ids):
        seq = ids.shape[1]
        cos, sin = self.rotary_emb(torch.arange(seq).unsqueeze(0))
        mask = fx.masking_utils_causal_mask(ids.shape[0], seq, cos.dtype)
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))

    def intermediates(self, ids):
        return {}


def build(cfg):
    """Embeddings N(0,1); Linear N(0, 1/in); router N(0, 0.5^2); correction bias N(0, 0.1^2);
    RMSNorm weights (q_a/kv_a norms too) 1 + N(0, 0.1^2)."""
    model = DeepseekV3Tiny(cfg)
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
        for layer in model.layers:
            if isinstance(layer.mlp, DeepseekV3MoE):
                layer.mlp.gate.e_score_correction_bias.normal_(0.0, 0.1)
    return model.eval().float()


# transformers' moe() skips an expert with no token (`if token_indices.numel() > 0`), which the
# tracer bakes in: an export traced on a batch that leaves an expert idle has no such expert at
# all, and differs from the module on any batch that routes a token to it. seed_base 1200 draws a
# trace batch [2, 8] that routes tokens to all 8 experts (1000 leaves expert 7 idle); the graph
# has one NonZero per expert.
VARIANTS = [
    {"name": "deepseek_v3_tiny", "subdir": ".", "shapes": [(2, 8), (1, 5)], "seed_base": 1200,
     "weight_seed": 0, "build": lambda: build(CONFIG)},
]

if __name__ == "__main__":
    fx.main(HERE, VARIANTS, __doc__)
