#!/usr/bin/python3
"""Export a tiny GPT-OSS decoder to ONNX, with golden values.

    /usr/bin/python3 samples/models/gpt_oss_tiny/export.py [--out DIR]
    /usr/bin/python3 samples/models/gpt_oss_tiny/export.py --check [DIR]

Plain PyTorch modules in the style of Hugging Face's GPT-OSS (transformers/models/gpt_oss/
modeling_gpt_oss.py, itself following openai/gpt-oss gpt_oss/torch/model.py):
  * attention: q/k/v/o projections with biases, q width heads*head_dim (64) != hidden (32), GQA,
    RoPE applied to the two halves of each head (`_apply_rotary_emb`, the rotate-half math),
    scaling head_dim**-0.5, one learned sink logit per head appended to the scores before the
    softmax (max-subtracted, then dropped: `probs[..., :-1]`), and a sliding window of 4 keys on
    even layers (`layer_types` = [sliding_attention, full_attention]);
  * router (GptOssTopKRouter): logits = x W^T + b, top-4 of 8 experts on the logits, softmax over
    the 4 values, scattered into a dense [tokens, experts] score matrix;
  * experts (GptOssExperts, the loop over experts with index_add_): a fused gate_up_proj
    [experts, hidden, 2*inner] with bias whose gate and up columns interleave (gate = [..., ::2],
    up = [..., 1::2]), the clamped SwiGLU of the reference implementation
    (gate.clamp(max=limit), up.clamp(-limit, limit), glu = gate * sigmoid(alpha * gate),
    (up + 1) * glu, limit 7.0, alpha 1.702), and down_proj [experts, inner, hidden] with bias.
The weights are drawn so that the clamp is active on a fair share of the activations.

Two expert forms, same weights: ./ uses the training-time loop over experts (index_add_), and
./dense_masked/ Hugging Face's inference path: every expert on every token through a batched
MatMul with the stacked [experts, hidden, 2*inner] weights, weighted by the dense [tokens, experts]
score matrix (zero off the top-k) and summed over experts; ./einsum/ the reference
implementation's MLPBlock (openai/gpt-oss gpt_oss/torch/model.py): top-k on the biased logits,
softmax over the k, the chosen experts' weights gathered per token from the stacked [experts, out,
in] tensors and applied with Einsum.

Two more forms of the same weights are Hugging Face's own code, followed from transformers'
src/transformers/models/gpt_oss/modeling_gpt_oss.py at commit
00d4b3d2142cb4ced2f51b90614b5d26bc045015 (cfg hf_forms): GptOssRMSNorm with its float32 Casts
((weight * x).to(input_dtype)), the masks of masking_utils (create_causal_mask for full layers,
create_sliding_window_causal_mask's And of the causal and window masks for sliding layers) into
eager_mask's where(mask, 0, finfo.min), and GptOssMLP / GptOssExperts.forward on [batch, seq,
hidden]: ./hf_dense/ its eval branch (repeat, bmm over every expert, weighted by the scattered
routing weights, summed), ./hf_loop/ its training branch (the loop over `expert_hit` from
nonzero, which the exporter unrolls once per expert the trace batch hits; the expert slices read
with that index).
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
    "family": "gpt_oss",
    "vocab_size": 256,
    "hidden_size": 32,
    "num_layers": 2,
    "num_heads": 4,
    "num_kv_heads": 2,
    "head_dim": 16,
    "attention_bias": True,
    "attention_sinks": True,
    "sliding_window": 4,
    "layer_types": ["sliding_attention", "full_attention"],
    "num_experts": 8,
    "top_k": 4,
    "expert_hidden": 16,
    "expert_bias": True,
    "router_bias": True,
    "norm_topk_prob": None,
    "num_shared_experts": 0,
    "dense_layers": [],
    "router_scoring": "topk_softmax",
    "expert_form": "loop",
    "swiglu_limit": 7.0,
    "swiglu_alpha": 1.702,
    "rope_theta": 150000.0,
    "rms_norm_eps": 1e-5,
    "trace_batch": 2,
    "trace_seq": 8,
}


# rope_scaling of openai/gpt-oss-20b's config.json (rope_type yarn), at the tiny model's scale.
YARN = {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
        "original_max_position_embeddings": 4096}


def _apply_rotary_emb(x, cos, sin):
    first_half, second_half = torch.chunk(x, 2, dim=-1)
    first_ = first_half * cos - second_half * sin
    second_ = second_half * cos + first_half * sin
    return torch.cat((first_, second_), dim=-1)


class GptOssRMSNorm(fx.RMSNorm):
    """transformers' GptOssRMSNorm (hf_forms): the statistics in float32 and, unlike Llama's, the
    weight applied before the cast back to the input dtype: (weight * x).to(input_dtype). The
    TorchScript exporter keeps both Casts in an fp32 model. Same parameter as fx.RMSNorm."""

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.eps)
        return (self.weight * hidden_states).to(input_dtype)


def masking_utils_masks(bsz, seq, dtype, window):
    """transformers' masking_utils as GptOssModel.forward builds them for eager attention (past 0,
    no padding): create_causal_mask (kv_idx <= q_idx) for full_attention layers and
    create_sliding_window_causal_mask (and_masks of the causal mask and sliding_window_overlay,
    kv_idx > q_idx - window) for sliding_attention layers, each in sdpa_mask's index-based form
    (the boolean product of the two is torch 1.13's `And`), expanded to [bsz, 1, q, kv], then
    eager_mask's where(mask, 0, finfo.min). min_dtype is a tensor of the mask's dtype (a Python
    float next to an f32 tensor is typed double by torch 1.13's exporter; onnxruntime refuses that
    Where): the same value."""
    cache_position = torch.arange(seq)
    kv_arange = torch.arange(seq)
    kv_arange += 0
    q_idx = cache_position.view(-1, 1)
    zero = torch.tensor(0.0, dtype=dtype)
    min_dtype = torch.tensor(torch.finfo(dtype).min, dtype=dtype)
    causal = kv_arange <= q_idx
    sliding = causal * (kv_arange > q_idx - window)
    full = causal[None, None, :, :].expand(bsz, -1, -1, -1)
    sliding = sliding[None, None, :, :].expand(bsz, -1, -1, -1)
    return torch.where(full, zero, min_dtype), torch.where(sliding, zero, min_dtype)


def yarn_parameters(dim, base, scaling):
    """transformers' _compute_yarn_parameters (modeling_rope_utils.py) for GPT-OSS's rope_scaling
    (rope_type "yarn": factor, beta_fast, beta_slow, truncate, original_max_position_embeddings):
    the frequencies blend interpolation (base^(2i/d) * factor)^-1 and extrapolation base^(-2i/d)
    by a linear ramp between the correction dims of beta_fast and beta_slow rotations, and
    attention_factor = 0.1 ln(factor) + 1 (YaRN, Peng et al. 2023, eq. 22) scales cos and sin."""
    factor = scaling["factor"]
    attention_factor = scaling.get("attention_factor")
    if attention_factor is None:
        attention_factor = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0
    beta_fast, beta_slow = scaling.get("beta_fast", 32.0), scaling.get("beta_slow", 1.0)
    original = scaling["original_max_position_embeddings"]

    def correction_dim(rotations):
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    pos_freqs = base ** (torch.arange(0, dim, 2).float() / dim)
    extrapolation, interpolation = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
    extrapolation_factor = 1 - ramp.float()
    inv_freq = interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor
    return inv_freq, attention_factor


class GptOssRotaryEmbedding(nn.Module):
    """transformers' GptOssRotaryEmbedding: plain RoPE frequencies, or YaRN's (rope_scaling, as
    GPT-OSS's config has it) with cos and sin multiplied by its attention factor."""

    def __init__(self, dim, base, scaling=None):
        super().__init__()
        if scaling:
            inv_freq, self.attention_scaling = yarn_parameters(dim, base, scaling)
        else:
            inv_freq, self.attention_scaling = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)), 1.0
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, position_ids):
        inv = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        freqs = (inv @ position_ids[:, None, :].float()).transpose(1, 2)  # [1, s, d/2]
        if self.attention_scaling == 1.0:
            return freqs.cos(), freqs.sin()
        return freqs.cos() * self.attention_scaling, freqs.sin() * self.attention_scaling


class GptOssAttention(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        h, d = cfg["hidden_size"], cfg["head_dim"]
        self.head_dim = d
        self.n_rep = cfg["num_heads"] // cfg["num_kv_heads"]
        self.scaling = d ** -0.5
        self.q_proj = nn.Linear(h, cfg["num_heads"] * d, bias=True)
        self.k_proj = nn.Linear(h, cfg["num_kv_heads"] * d, bias=True)
        self.v_proj = nn.Linear(h, cfg["num_kv_heads"] * d, bias=True)
        self.o_proj = nn.Linear(cfg["num_heads"] * d, h, bias=True)
        self.sinks = nn.Parameter(torch.empty(cfg["num_heads"]))
        self.sliding = cfg["layer_types"][layer_idx] == "sliding_attention"

    def forward(self, x, cos, sin, masks):
        bsz, q_len, _ = x.shape
        hidden_shape = (bsz, q_len, -1, self.head_dim)
        q = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        k = self.k_proj(x).view(hidden_shape).transpose(1, 2)
        v = self.v_proj(x).view(hidden_shape).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q, k = _apply_rotary_emb(q, cos, sin), _apply_rotary_emb(k, cos, sin)
        k, v = fx.repeat_kv(k, self.n_rep), fx.repeat_kv(v, self.n_rep)
        w = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        w = w + masks[1 if self.sliding else 0]
        sinks = self.sinks.reshape(1, -1, 1, 1).expand(q.shape[0], -1, q.shape[-2], -1)
        combined = torch.cat([w, sinks], dim=-1)
        combined = combined - combined.max(dim=-1, keepdim=True).values
        probs = F.softmax(combined, dim=-1, dtype=combined.dtype)
        scores = probs[..., :-1]
        out = torch.matmul(scores, v).transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(out)


class GptOssTopKRouter(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.top_k = cfg["top_k"]
        self.weight = nn.Parameter(torch.empty(cfg["num_experts"], cfg["hidden_size"]))
        self.bias = nn.Parameter(torch.empty(cfg["num_experts"]))

    def forward(self, hidden_states):
        router_logits = F.linear(hidden_states, self.weight, self.bias)
        fx.record_router_scores(router_logits)
        top_value, router_indices = torch.topk(router_logits, self.top_k, dim=-1)
        top_value = F.softmax(top_value, dim=1, dtype=top_value.dtype)
        router_scores = torch.zeros_like(router_logits).scatter_(1, router_indices, top_value)
        return router_scores, router_indices


class GptOssExperts(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        E, h, f = cfg["num_experts"], cfg["hidden_size"], cfg["expert_hidden"]
        self.num_experts = E
        self.hidden_size = h
        self.gate_up_proj = nn.Parameter(torch.empty(E, h, 2 * f))
        self.gate_up_proj_bias = nn.Parameter(torch.empty(E, 2 * f))
        self.down_proj = nn.Parameter(torch.empty(E, f, h))
        self.down_proj_bias = nn.Parameter(torch.empty(E, h))
        self.alpha = cfg["swiglu_alpha"]
        self.limit = cfg["swiglu_limit"]
        self.dense_masked = cfg["expert_form"] == "dense_masked"
        self.form = cfg["expert_form"]

    def forward_einsum(self, t, expert_indices, expert_weights):
        """openai/gpt-oss gpt_oss/torch/model.py MLPBlock: the chosen experts' weights gathered
        per token from the stacked [experts, out, in] tensors and applied with Einsum."""
        mlp1_weight = self.gate_up_proj.transpose(1, 2)[expert_indices, ...]
        mlp1_bias = self.gate_up_proj_bias[expert_indices, ...]
        t = torch.einsum("beck,bk->bec", mlp1_weight, t) + mlp1_bias
        x_glu, x_linear = t[..., ::2], t[..., 1::2]
        x_glu = x_glu.clamp(min=None, max=self.limit)
        x_linear = x_linear.clamp(min=-self.limit, max=self.limit)
        out_glu = x_glu * torch.sigmoid(self.alpha * x_glu)
        t = out_glu * (x_linear + 1)
        mlp2_weight = self.down_proj.transpose(1, 2)[expert_indices, ...]
        mlp2_bias = self.down_proj_bias[expert_indices, ...]
        t = torch.einsum("beck,bek->bec", mlp2_weight, t)
        t += mlp2_bias
        return torch.einsum("bec,be->bc", t, expert_weights)

    def forward_dense_masked(self, hidden_states, routing_weights):
        """Hugging Face's inference path: every expert on every token (bmm over the stacked
        weights), weighted by the dense [tokens, experts] score matrix (zero off the top-k)."""
        num_experts, hidden = self.num_experts, hidden_states.shape[-1]
        hidden_states = hidden_states.repeat(num_experts, 1).view(num_experts, -1, hidden)
        gate_up = torch.bmm(hidden_states, self.gate_up_proj) + self.gate_up_proj_bias[..., None, :]
        gate, up = gate_up[..., ::2], gate_up[..., 1::2]
        gate = gate.clamp(min=None, max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        glu = gate * torch.sigmoid(gate * self.alpha)
        next_states = torch.bmm(((up + 1) * glu), self.down_proj)
        next_states = next_states + self.down_proj_bias[..., None, :]
        next_states = next_states * routing_weights.transpose(0, 1)[..., None]
        return next_states.sum(dim=0)

    def forward_hf(self, hidden_states, router_indices, routing_weights):
        """transformers' GptOssExperts.forward (hf_forms), hidden_states [batch, seq, hidden]:
        expert_form "hf_loop" is its self.training branch, the loop over the experts hit by this
        batch (expert_hit from nonzero; the traced graph unrolls one iteration per expert hit by
        the trace batch, with each expert index read from that nonzero), "hf_dense" its eval
        branch (every expert on every token through bmm, weighted by the scattered routing
        weights, the dense-masked form)."""
        batch_size = hidden_states.shape[0]
        hidden_states = hidden_states.reshape(-1, self.hidden_size)
        num_experts = routing_weights.shape[1]
        if self.form == "hf_loop":
            next_states = torch.zeros_like(hidden_states, dtype=hidden_states.dtype)
            with torch.no_grad():
                expert_mask = F.one_hot(router_indices, num_classes=num_experts)
                expert_mask = expert_mask.permute(2, 1, 0)
                expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
            for expert_idx in expert_hit[:]:
                with torch.no_grad():
                    _, token_idx = torch.where(expert_mask[expert_idx[0]])
                current_state = hidden_states[token_idx]
                gate_up = current_state @ self.gate_up_proj[expert_idx] + self.gate_up_proj_bias[expert_idx]
                gate, up = gate_up[..., ::2], gate_up[..., 1::2]
                gate = gate.clamp(min=None, max=self.limit)
                up = up.clamp(min=-self.limit, max=self.limit)
                glu = gate * torch.sigmoid(gate * self.alpha)
                gated_output = (up + 1) * glu
                out = gated_output @ self.down_proj[expert_idx] + self.down_proj_bias[expert_idx]
                weighted_output = out[0] * routing_weights[token_idx, expert_idx, None]
                next_states.index_add_(0, token_idx, weighted_output.to(hidden_states.dtype))
            return next_states.view(batch_size, -1, self.hidden_size)
        hidden_states = hidden_states.repeat(num_experts, 1)
        hidden_states = hidden_states.view(num_experts, -1, self.hidden_size)
        gate_up = torch.bmm(hidden_states, self.gate_up_proj) + self.gate_up_proj_bias[..., None, :]
        gate, up = gate_up[..., ::2], gate_up[..., 1::2]
        gate = gate.clamp(min=None, max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        glu = gate * torch.sigmoid(gate * self.alpha)
        next_states = torch.bmm(((up + 1) * glu), self.down_proj)
        next_states = next_states + self.down_proj_bias[..., None, :]
        next_states = next_states.view(num_experts, batch_size, -1, self.hidden_size)
        next_states = next_states * routing_weights.transpose(0, 1).view(num_experts, batch_size, -1)[..., None]
        return next_states.sum(dim=0)

    def expert(self, e, x):
        gate_up = x @ self.gate_up_proj[e] + self.gate_up_proj_bias[e]
        gate, up = gate_up[..., ::2], gate_up[..., 1::2]
        gate = gate.clamp(min=None, max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        glu = gate * torch.sigmoid(gate * self.alpha)
        return ((up + 1) * glu) @ self.down_proj[e] + self.down_proj_bias[e]

    def forward(self, hidden_states, router_indices, routing_weights):
        if self.dense_masked:
            return self.forward_dense_masked(hidden_states, routing_weights)
        next_states = torch.zeros_like(hidden_states)
        expert_mask = F.one_hot(router_indices, num_classes=self.num_experts).permute(2, 1, 0)
        for e in range(self.num_experts):
            _, token_idx = torch.where(expert_mask[e])
            out = self.expert(e, hidden_states[token_idx])
            weighted = out * routing_weights[token_idx, e, None]
            next_states.index_add_(0, token_idx, weighted.to(hidden_states.dtype))
        return next_states


class GptOssMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.router = GptOssTopKRouter(cfg)
        self.experts = GptOssExperts(cfg)

    def forward(self, hidden_states):
        if self.experts.form.startswith("hf_"):  # transformers' GptOssMLP.forward
            router_scores, router_indices = self.router(hidden_states.reshape(-1, hidden_states.shape[-1]))
            return self.experts.forward_hf(hidden_states, router_indices, router_scores)
        bsz, seq, hidden = hidden_states.shape
        hidden_states = hidden_states.reshape(-1, hidden)
        if self.experts.form == "einsum":  # the reference implementation's MLPBlock
            g = F.linear(hidden_states, self.router.weight, self.router.bias)
            fx.record_router_scores(g)
            experts = torch.topk(g, k=self.router.top_k, dim=-1, sorted=True)
            expert_weights = F.softmax(experts.values, dim=1)
            out = self.experts.forward_einsum(hidden_states, experts.indices, expert_weights)
            return out.reshape(bsz, seq, hidden)
        router_scores, router_indices = self.router(hidden_states)
        out = self.experts(hidden_states, router_indices, router_scores)
        return out.reshape(bsz, seq, hidden)


def _norm(cfg):
    return (GptOssRMSNorm if cfg.get("hf_forms") else fx.RMSNorm)(cfg["hidden_size"], cfg["rms_norm_eps"])


class GptOssDecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        self.input_layernorm = _norm(cfg)
        self.self_attn = GptOssAttention(cfg, layer_idx)
        self.post_attention_layernorm = _norm(cfg)
        self.mlp = GptOssMLP(cfg)

    def forward(self, x, cos, sin, masks):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin, masks)
        return h + self.mlp(self.post_attention_layernorm(h))


class GptOssTiny(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList([GptOssDecoderLayer(cfg, i) for i in range(cfg["num_layers"])])
        self.norm = _norm(cfg)
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        self.rotary_emb = GptOssRotaryEmbedding(cfg["head_dim"], cfg["rope_theta"], cfg.get("rope_scaling"))

    def rope_and_masks(self, ids):
        seq = ids.shape[1]
        cos, sin = self.rotary_emb(torch.arange(seq).unsqueeze(0))
        if self.cfg.get("hf_forms"):
            return cos, sin, masking_utils_masks(ids.shape[0], seq, cos.dtype, self.cfg["sliding_window"])
        return cos, sin, (fx.causal_mask(seq), fx.sliding_window_mask(seq, self.cfg["sliding_window"]))

    def forward(self, ids):
        cos, sin, masks = self.rope_and_masks(ids)
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin, masks)
        return self.lm_head(self.norm(x))

    def intermediates(self, ids):
        """Layer 0 (sliding window, sinks, biases) attention, router and experts, tokens flattened."""
        if self.cfg["expert_form"] != "loop":
            return {}
        H = self.cfg["hidden_size"]
        l0 = self.layers[0]
        cos, sin, masks = self.rope_and_masks(ids)
        x = self.embed_tokens(ids)
        an = l0.input_layernorm(x)
        ao = l0.self_attn(an, cos, sin, masks)
        fn = l0.post_attention_layernorm(x + ao).reshape(-1, H)
        scores, top = l0.mlp.router(fn)
        a, ex = l0.self_attn, l0.mlp.experts
        out = {
            "l0_attn_in.npy": fx.f32(an.reshape(-1, H)), "l0_attn_out.npy": fx.f32(ao.reshape(-1, H)),
            "w_l0_q.npy": fx.lin(a.q_proj), "w_l0_k.npy": fx.lin(a.k_proj),
            "w_l0_v.npy": fx.lin(a.v_proj), "w_l0_o.npy": fx.lin(a.o_proj),
            "w_l0_bq.npy": fx.f32(a.q_proj.bias), "w_l0_bk.npy": fx.f32(a.k_proj.bias),
            "w_l0_bv.npy": fx.f32(a.v_proj.bias), "w_l0_bo.npy": fx.f32(a.o_proj.bias),
            "w_l0_sinks.npy": fx.f32(a.sinks),
            "l0_ffn_in.npy": fx.f32(fn), "w_l0_router.npy": fx.f32(l0.mlp.router.weight.t()),
            "w_l0_router_bias.npy": fx.f32(l0.mlp.router.bias),
            "l0_topk_ids.npy": fx.i64(top), "l0_topk_weights.npy": fx.f32(torch.gather(scores, 1, top)),
            "w_l0_expert0_gate_up.npy": fx.f32(ex.gate_up_proj[0]),
            "w_l0_expert0_gate_up_bias.npy": fx.f32(ex.gate_up_proj_bias[0]),
            "w_l0_expert0_down.npy": fx.f32(ex.down_proj[0]),
            "w_l0_expert0_down_bias.npy": fx.f32(ex.down_proj_bias[0]),
            "l0_expert0_out.npy": fx.f32(ex.expert(0, fn)),
        }
        return out


def build(cfg):
    """Embeddings N(0,1); attention Linear N(0, 1/in), biases N(0, 0.1^2); sinks N(0, 1); router
    N(0, 0.5^2), bias N(0, 0.5^2); gate_up N(0, 4^2/hidden) (so |gate_up| exceeds the limit 7 on
    about 8% of the values), its bias N(0, 0.5^2); down N(0, 0.2^2/inner), its bias N(0, 0.1^2);
    RMSNorm weights 1 + N(0, 0.1^2)."""
    model = GptOssTiny(cfg)
    h, f = cfg["hidden_size"], cfg["expert_hidden"]
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("embed_tokens.weight"):
                p.normal_(0.0, 1.0)
            elif "layernorm" in name or name == "norm.weight":
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name.endswith("sinks"):
                p.normal_(0.0, 1.0)
            elif "router" in name:
                p.normal_(0.0, 0.5)
            elif name.endswith("gate_up_proj"):
                p.normal_(0.0, 4.0 / math.sqrt(h))
            elif name.endswith("gate_up_proj_bias"):
                p.normal_(0.0, 0.5)
            elif name.endswith("down_proj"):
                p.normal_(0.0, 0.2 / math.sqrt(f))
            elif name.endswith("down_proj_bias") or name.endswith(".bias"):
                p.normal_(0.0, 0.1)
            else:
                p.normal_(0.0, 1.0 / math.sqrt(p.shape[1]))
    return model.eval().float()


VARIANTS = [
    {"name": "gpt_oss_tiny", "subdir": ".", "shapes": [(2, 8), (1, 5), (2, 12)], "seed_base": 1000,
     "weight_seed": 0, "build": lambda: build(CONFIG)},
    # The same weights through Hugging Face's inference path (dense-masked experts).
    {"name": "gpt_oss_tiny/dense_masked", "subdir": "dense_masked", "shapes": [(2, 8), (1, 5)],
     "seed_base": 1000, "weight_seed": 0, "build": lambda: build(dict(CONFIG, expert_form="dense_masked"))},
    # Hugging Face's own spellings of the same model (same weights as ./; transformers
    # modeling_gpt_oss.py at commit 00d4b3d2142cb4ced2f51b90614b5d26bc045015): GptOssRMSNorm's
    # float32 Casts, masking_utils' boolean masks (the sliding layers' And of the window and causal
    # masks) into where(mask, 0, finfo.min), and GptOssExperts' eval branch (./hf_dense) or its
    # training branch, the loop over the experts hit (./hf_loop).
    {"name": "gpt_oss_tiny/hf_dense", "subdir": "hf_dense", "shapes": [(2, 8), (1, 5)],
     "seed_base": 1000, "weight_seed": 0,
     "build": lambda: build(dict(CONFIG, hf_forms=True, expert_form="hf_dense"))},
    {"name": "gpt_oss_tiny/hf_loop", "subdir": "hf_loop", "shapes": [(2, 8), (1, 5)],
     "seed_base": 1000, "weight_seed": 0,
     "build": lambda: build(dict(CONFIG, hf_forms=True, expert_form="hf_loop"))},
    # GPT-OSS's YaRN RoPE (its config's rope_scaling, the values of openai/gpt-oss-20b's config with
    # original_max_position_embeddings 4096 and head_dim 16: 3 extrapolated, 2 ramped, 3 interpolated
    # frequencies, cos/sin scaled by 0.1 ln 32 + 1) on Hugging Face's forms of the same weights: a
    # different model, with its own goldens and golden/train.
    {"name": "gpt_oss_tiny/hf_yarn", "subdir": "hf_yarn", "shapes": [(2, 8), (1, 5)],
     "seed_base": 1000, "weight_seed": 0,
     "build": lambda: build(dict(CONFIG, hf_forms=True, expert_form="hf_dense", rope_scaling=YARN))},
    # The same weights through the reference implementation's MLPBlock (gathered stacked weights,
    # Einsum).
    {"name": "gpt_oss_tiny/einsum", "subdir": "einsum", "shapes": [(2, 8), (1, 5)],
     "seed_base": 1000, "weight_seed": 0, "build": lambda: build(dict(CONFIG, expert_form="einsum"))},
]

if __name__ == "__main__":
    fx.main(HERE, VARIANTS, __doc__)
