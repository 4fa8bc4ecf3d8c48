"""Export settings and router forms of the Mixtral-style sample, as real torch.onnx.export files.

Each variant is a small model (2 layers, hidden 32, 4 heads / 2 KV heads, 4 experts, top-2) built
from the module code of ../mixtral_tiny/export.py, exported with one combination of:
  - opset 13 .. 17 (opset 13 has no Trilu, so that variant builds its causal mask from a position
    comparison, as Hugging Face models did before torch.triu exported);
  - constant folding on (weights become onnx::MatMul_<n>, stored [in, out]) or off (weights keep
    their module names, stored [out, in] behind a Transpose);
  - weights inline or in an ONNX external data file;
  - router forms: softmax -> top-k -> renormalise (Mixtral), top-k on logits -> softmax (the
    mistral-src form), softmax -> top-k without renormalisation;
  - RMSNorm form: the sample's `w * (x * rsqrt(mean(x^2) + eps))`, or Hugging Face's verbatim
    (`x.to(torch.float32)` ... `w * x.to(input_dtype)`), whose dtype round trip the exporter keeps
    as Casts to float of f32 values even in an fp32 model (the compiler's normalize stage drops
    them). Attention's softmax is HF's in every variant: `softmax(..., dtype=torch.float32)
    .to(q.dtype)`, two more such Casts;
  - causal mask: torch.triu of -inf (the sample's), a position comparison (opset 13), or Hugging
    Face's two generations written from transformers' code: AttentionMaskConverter's
    torch.full(finfo.min) + masked_fill (modeling_attn_mask_utils.py) and masking_utils' boolean
    kv_idx <= q_idx turned into where(mask, 0, finfo.min), each also with a sliding window of
    WINDOW keys (the compiler folds them to constants and recognises them by value);
  - graph inputs: input_ids only, or (the *_inputs variants) input_ids, attention_mask and
    position_ids, as transformers' forward takes them and optimum exports them, each generation's
    padding mask combined with its causal mask; or (the *_past variant) those inputs plus optimum's
    text-generation-with-past KV cache, past_key_values.{i}.key|value [batch, kv_heads, past, head_dim]
    in and present.{i}.key|value out (transformers' DynamicCache: the rotated keys and the values
    appended along the sequence axis before repeat_kv, the mask over past + seq keys from
    cache_position past..past+seq-1). Their goldens add attention_mask_b{B}_s{S}.npy and
    position_ids_b{B}_s{S}.npy (ones and 0..S-1: what the compiled plan binds, which
    golden/logits_* are computed with) and padded_{ids,attention_mask,position_ids,logits}_b{B}_s{S}.npy
    (the last sequence left-padded by PAD tokens, as generate pads; PyTorch's logits), which
    onnxruntime must reproduce from the file: the export honours padding. The *_past variant's
    goldens also hold past_key_values.*_b{B}_s{S}.npy (empty caches, past length 0: what the plan
    binds) and cached_{ids,attention_mask,position_ids,past_key_values.*,logits}_b{B}_s{S}.npy: the
    same ids after a prefix of PAST tokens whose caches PyTorch computed, and PyTorch's logits for
    them, which must equal the last S logits of the prefix and ids run as one sequence (checked
    here) and which onnxruntime must reproduce from the file: the export honours a real cache.
The dtype forms (DTYPE_VARIANTS, written to ../mixtral_dtypes/<form>/, --dtype-out): the Hugging
Face form hf_mask_converter_opset17 with model.to(torch.bfloat16) / model.to(torch.float16), weights
and activations in that dtype (cos/sin cast to it and the mask built with its finfo.min, as
transformers does), so HF's RMSNorm and softmax casts really change dtypes. torch 1.13 traces by
running the model and its CPU has no float16 matmul, so hf_bf16_opset17 is torch.onnx.export's own
and hf_fp16_opset17 is that bf16 export converted with the onnx API (bf16_to_fp16_model: element
types, Cast targets and finfo.min swapped, weights rounded from fp32 directly), as torch 2.x's
exporter writes model.half(). Their golden/logits_* are PyTorch fp32 on the dtype-rounded weights;
hf_bf16's golden/logits_bfloat16_* are PyTorch eager in bf16; fp16's in-dtype oracle is onnxruntime
running the file (tests/e2e/check_dtype_exports.py; onnxruntime's CPU provider has no bf16 kernels).
For every variant it writes DIR/<variant>/model.onnx (+ model.onnx.data), golden/ids_b{B}_s{S}.npy,
golden/logits_b{B}_s{S}.npy (PyTorch eager, fp32) and golden/config.json (the exporter's
hyper-parameters, for tests; the compiler never reads it). The Hugging Face-form variants' golden/train/
(loss, gradients, SGD, AdamW) is written by ../family_common/export_train_goldens.py
samples/models/mixtral_variants --variant NAME (with --check, its regeneration check), not here.

  /usr/bin/python3 export_variants.py [--out DIR] [--check]
--check regenerates into a temporary directory and compares: model files byte-identical, goldens
within the fp32 error model's bound (tests/numerics/error_model.py).
"""
import argparse
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mixtral_tiny"))
import export as base  # noqa: E402  (the sample's module code and helpers)
from export import error_model  # noqa: E402  (tests/numerics/error_model.py: the regeneration bound)

CONFIG = dict(base.CONFIG, hidden_size=32, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=8,
              expert_hidden=64, num_experts=4, top_k=2)
SHAPES = [(2, 8), (1, 5)]

VARIANTS = {
    # name: (opset, constant folding, external data, router scoring, mask form, RMSNorm form)
    "opset13_fold": (13, True, False, "softmax_topk_renorm", "compare", "sample"),
    "opset14_nofold_softmax_topk": (14, False, False, "softmax_topk", "triu", "sample"),
    "opset15_nofold": (15, False, False, "softmax_topk_renorm", "triu", "sample"),
    "opset16_topk_softmax": (16, True, False, "topk_softmax", "triu", "sample"),
    "opset17_external": (17, True, True, "softmax_topk_renorm", "triu", "sample"),
    "hf_casts_opset17": (17, True, False, "softmax_topk_renorm", "triu", "hf_casts"),
    # Hugging Face's two generations of causal masks, written line by line from transformers'
    # code (with its RMSNorm casts), folded by the compiler's fold stage and matched by value:
    "hf_mask_converter_opset17": (17, True, False, "softmax_topk_renorm", "hf_converter", "hf_casts"),
    "hf_mask_converter_window_opset14": (14, False, False, "softmax_topk_renorm",
                                         "hf_converter_window", "hf_casts"),
    "hf_masking_utils_opset17": (17, True, False, "softmax_topk_renorm", "hf_masking_utils",
                                 "hf_casts"),
    "hf_masking_utils_window_opset16": (16, False, False, "softmax_topk_renorm",
                                        "hf_masking_utils_window", "hf_casts"),
    # attention_mask and position_ids as graph inputs (transformers' forward signature, as optimum
    # exports it): the padding mask combined with the causal mask by masking_utils (and_masks of
    # kv_idx <= q_idx and padding_mask[b, kv_idx], then where(mask, 0, finfo.min)) or by
    # AttentionMaskConverter.to_4d (_expand_mask's 1 - mask filled with finfo.min, masked into the
    # causal mask), RoPE angles inv_freq @ position_ids (MixtralRotaryEmbedding.forward).
    "hf_masking_utils_inputs_opset17": (17, True, False, "softmax_topk_renorm",
                                        "hf_masking_utils_inputs", "hf_casts"),
    "hf_mask_converter_inputs_opset15": (15, False, False, "softmax_topk_renorm",
                                         "hf_converter_inputs", "hf_casts"),
    # optimum's text-generation-with-past signature: the *_inputs inputs plus a KV cache per layer
    # (past_key_values.{i}.key|value in, present.{i}.key|value out).
    "hf_masking_utils_past_opset17": (17, True, False, "softmax_topk_renorm", "hf_masking_utils_past",
                                      "hf_casts"),
    # Attention as torch.onnx's scaled_dot_product_attention symbolic writes it (is_causal=True):
    # q and k^T each scaled by sqrt(1/sqrt(E)), its own boolean Trilu mask into Where(0, -inf).
    "sdpa_symbolic_opset17": (17, True, False, "softmax_topk_renorm", "sdpa_causal", "hf_casts"),
}
# The sliding window of the *_window variants (Mistral-style: every layer).
WINDOW = 3
# Padding tokens at the start of the last sequence of the *_inputs variants' padded goldens.
PAD = 3
# Tokens already in the cache in the *_past variant's cached goldens (and in its trace).
PAST = 3


def takes_inputs(mask_form):
    """The variants whose graph inputs are transformers' forward signature, not input_ids alone."""
    return mask_form.endswith("_inputs") or mask_form.endswith("_past")


class HfRMSNorm(base.RMSNorm):
    """Hugging Face's MixtralRMSNorm.forward verbatim: the computation in float32, the result cast
    back to the input's dtype (both no-ops in an fp32 model, but traced as Casts)."""

    def forward(self, x):
        input_dtype = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return self.weight * x.to(input_dtype)


class Router(base.SparseMoeBlock):
    """The sample's MoE block with a configurable router form."""

    scoring = "softmax_topk_renorm"

    def route(self, x):
        logits = self.gate(x)
        probs = F.softmax(logits, dim=-1, dtype=torch.float)
        if self.scoring == "topk_softmax":
            top, ids = torch.topk(logits, self.top_k, dim=-1)
            w = F.softmax(top, dim=-1, dtype=torch.float)
        else:
            w, ids = torch.topk(probs, self.top_k, dim=-1)
            if self.scoring == "softmax_topk_renorm":
                w = w / w.sum(dim=-1, keepdim=True)
        return logits, probs, w.to(x.dtype), ids


def converter_causal_mask(bsz, tgt_len, dtype, sliding_window=None):
    """transformers' AttentionMaskConverter._make_causal_mask (modeling_attn_mask_utils.py), past
    length 0: finfo.min everywhere, masked_fill(0) on and below the diagonal, the sliding window's
    lower triangle filled back with finfo.min, then [bsz, 1, tgt, tgt] by expand."""
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min)
    mask_cond = torch.arange(mask.size(-1))
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    mask = mask.to(dtype)
    if sliding_window is not None:
        diagonal = 0 - sliding_window - 1
        context_mask = torch.tril(torch.ones_like(mask, dtype=torch.bool), diagonal=diagonal)
        mask.masked_fill_(context_mask, torch.finfo(dtype).min)
    return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len)


def masking_utils_causal_mask(bsz, cache_position, kv_length, dtype, sliding_window=None):
    """transformers' masking_utils without vmap (sdpa_mask's export form), kv_offset 0, no padding:
    the boolean kv_idx <= q_idx, times kv_idx > q_idx - window for a sliding window, expanded to
    [bsz, 1, q, kv]; then eager_mask's torch.where(mask, 0, finfo.min)."""
    kv_arange = torch.arange(kv_length)
    kv_arange += 0
    reshaped_cache_position = cache_position.view(-1, 1)
    causal_mask = kv_arange <= reshaped_cache_position
    if sliding_window is not None:
        sliding_mask_overlay = kv_arange > reshaped_cache_position - sliding_window
        causal_mask *= sliding_mask_overlay
    causal_mask = causal_mask[None, None, :, :].expand(bsz, -1, -1, -1)
    # transformers passes min_dtype as a Python float; torch 1.13's exporter types that scalar as
    # double next to the f32 zero, a Where that onnxruntime refuses, so it is a tensor of the
    # mask's dtype here (the same value).
    min_dtype = torch.tensor(torch.finfo(dtype).min, dtype=dtype)
    return torch.where(causal_mask, torch.tensor(0.0, dtype=dtype), min_dtype)


def masking_utils_padded_mask(attention_mask, cache_position, kv_length, dtype):
    """transformers' create_causal_mask for eager attention with a 2-D attention_mask, past length
    0: _preprocess_mask_arguments casts the mask to bool; sdpa_mask's index-based (non-vmap) path
    with mask_function = and_masks(causal_mask_function, padding_mask_function(padding_mask))
    (prepare_padding_mask pads nothing when kv_length is the mask's length), evaluated on
    _non_vmap_expansion_sdpa's broadcast aranges and expanded to [bsz, 1, q, kv]; then
    eager_mask's torch.where(mask, 0, finfo.min)."""
    attention_mask = attention_mask.to(dtype=torch.bool)
    batch_size = attention_mask.shape[0]
    q_length = cache_position.shape[0]
    padding_mask = attention_mask

    def causal_mask_function(batch_idx, head_idx, q_idx, kv_idx):
        return kv_idx <= q_idx

    def padding_mask_function(batch_idx, head_idx, q_idx, kv_idx):
        return padding_mask[batch_idx, kv_idx]

    def and_mask(batch_idx, head_idx, q_idx, kv_idx):
        result = q_idx.new_ones((), dtype=torch.bool)
        for mask in (causal_mask_function, padding_mask_function):
            result = result & mask(batch_idx, head_idx, q_idx, kv_idx)
        return result

    batch_arange = torch.arange(batch_size)
    head_arange = torch.arange(1)
    kv_arange = torch.arange(kv_length) + 0
    causal_mask = and_mask(batch_arange[:, None, None, None], head_arange[None, :, None, None],
                           cache_position[None, None, :, None], kv_arange[None, None, None, :])
    causal_mask = causal_mask.expand(batch_size, -1, q_length, kv_length)
    # A tensor, not transformers' Python float, for torch 1.13's exporter (as above).
    min_dtype = torch.tensor(torch.finfo(dtype).min, dtype=dtype)
    return torch.where(causal_mask, torch.tensor(0.0, dtype=dtype), min_dtype)


def converter_expand_mask(mask, dtype, tgt_len):
    """AttentionMaskConverter._expand_mask: [bsz, src] -> [bsz, 1, tgt, src], 0 where the key is
    kept and finfo.min where it is padding."""
    bsz, src_len = mask.size()
    expanded_mask = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
    inverted_mask = 1.0 - expanded_mask
    return inverted_mask.masked_fill(inverted_mask.to(torch.bool), torch.finfo(dtype).min)


def converter_padded_mask(attention_mask, query_length, key_value_length, dtype):
    """_prepare_4d_causal_attention_mask -> AttentionMaskConverter(is_causal=True).to_4d, past
    length key_value_length - query_length = 0: the causal mask, masked with the expanded padding
    mask."""
    input_shape = (attention_mask.shape[0], query_length)
    causal_4d_mask = converter_causal_mask(input_shape[0], input_shape[-1], dtype)
    expanded_attn_mask = converter_expand_mask(attention_mask, dtype, tgt_len=input_shape[-1])
    return causal_4d_mask.masked_fill(expanded_attn_mask.bool(), torch.finfo(dtype).min)


class HfRotaryEmbedding(base.RotaryEmbedding):
    """MixtralRotaryEmbedding.forward (transformers >= 4.45) verbatim: angles inv_freq @
    position_ids in float32, cos and sin scaled by attention_scaling (1.0 for the default rope
    type) and cast to x's dtype."""

    attention_scaling = 1.0

    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


class SdpaAttention(base.Attention):
    """base.Attention with its scores computed as torch.onnx's scaled_dot_product_attention
    symbolic (torch/onnx/symbolic_opset14.py, torch 2.x) does for is_causal=True, written out
    because torch 1.13 has no F.scaled_dot_product_attention: scale = 1/sqrt(E) from q's last dim,
    q and k^T each multiplied by sqrt(scale), a [L, S] boolean mask tril(ones) turned into
    where(mask, 0, -inf) and added, softmax, then V. The model's own mask is not used."""

    def forward(self, x, cos, sin, mask):
        bsz, q_len, _ = x.size()
        q = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        q, k = base.apply_rotary_pos_emb(q, k, cos, sin)
        n_rep = self.num_heads // self.num_kv_heads
        k = base.repeat_kv(k, n_rep)
        v = base.repeat_kv(v, n_rep)
        embedding = torch.tensor(q.shape[-1], dtype=torch.float32)
        sqrt_scale = torch.sqrt(1.0 / torch.sqrt(embedding))
        scores = torch.matmul(q * sqrt_scale, k.transpose(-2, -1) * sqrt_scale)
        causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril(diagonal=0)
        attn_mask = torch.where(causal, torch.tensor(0.0), torch.tensor(float("-inf")))
        probs = F.softmax(scores + attn_mask, dim=-1)
        out = torch.matmul(probs, v)
        out = out.transpose(1, 2).contiguous().reshape(bsz, q_len, self.num_heads * self.head_dim)
        return self.o_proj(out)


class CachedAttention(base.Attention):
    """base.Attention with transformers' DynamicCache (cache_utils.py, DynamicLayer.update, as
    MixtralAttention.forward calls it after apply_rotary_pos_emb): the new tokens' rotated keys and
    values are appended to the layer's cache along the sequence axis (torch.cat(dim=-2)), the
    concatenation is both what attention reads (through repeat_kv) and the layer's present output.
    Called without a cache (the sample's helpers: router margins), an empty one and no present."""

    def forward(self, x, cos, sin, mask, past_key=None, past_value=None):
        bsz, q_len, _ = x.size()
        with_cache = past_key is not None
        if not with_cache:
            past_key = past_value = torch.zeros(bsz, self.num_kv_heads, 0, self.head_dim)
        q = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        q, k = base.apply_rotary_pos_emb(q, k, cos, sin)
        k = torch.cat([past_key, k], dim=-2)
        v = torch.cat([past_value, v], dim=-2)
        present = (k, v)
        n_rep = self.num_heads // self.num_kv_heads
        k = base.repeat_kv(k, n_rep)
        v = base.repeat_kv(v, n_rep)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + mask
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(probs, v)
        out = out.transpose(1, 2).contiguous().reshape(bsz, q_len, self.num_heads * self.head_dim)
        return (self.o_proj(out), present) if with_cache else self.o_proj(out)


class Model(base.MixtralTiny):
    mask_form = "triu"
    # None for the fp32 variants; torch.float16 / torch.bfloat16 for the dtype forms, whose cos
    # and sin are cast to the activations' dtype as MixtralRotaryEmbedding.forward does
    # (cos.to(dtype=x.dtype)) and whose mask is built in that dtype (finfo(dtype).min).
    compute_dtype = None

    def rope_and_mask(self, input_ids, attention_mask=None, position_ids=None, x=None):
        if takes_inputs(self.mask_form):
            return self.rope_and_mask_from_inputs(input_ids, attention_mask, position_ids, x)
        cos, sin, mask = super().rope_and_mask(input_ids)
        if self.compute_dtype is not None:
            cos, sin = cos.to(dtype=self.compute_dtype), sin.to(dtype=self.compute_dtype)
        bsz, seq = input_ids.shape
        window = WINDOW if self.mask_form.endswith("_window") else None
        if self.mask_form == "compare":
            pos = torch.arange(seq)
            mask = torch.where(pos[None, :] > pos[:, None], torch.tensor(float("-inf")),
                               torch.tensor(0.0))
        elif self.mask_form.startswith("hf_converter"):
            mask = converter_causal_mask(bsz, seq, cos.dtype, window)
        elif self.mask_form.startswith("hf_masking_utils"):
            cache_position = torch.arange(seq)
            mask = masking_utils_causal_mask(bsz, cache_position, seq, cos.dtype, window)
        return cos, sin, mask

    def forward(self, input_ids, attention_mask=None, position_ids=None, *past):
        if self.mask_form.endswith("_past"):
            return self.forward_with_past(input_ids, attention_mask, position_ids, *past)
        if not takes_inputs(self.mask_form):
            return super().forward(input_ids)
        x = self.embed_tokens(input_ids)
        cos, sin, mask = self.rope_and_mask(input_ids, attention_mask, position_ids, x)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))

    def empty_cache(self, bsz):
        """DynamicCache() before the first token: past length 0 in every layer."""
        shape = (bsz, CONFIG["num_kv_heads"], 0, CONFIG["head_dim"])
        return [torch.zeros(shape) for _ in range(2 * CONFIG["num_layers"])]

    def forward_with_past(self, input_ids, attention_mask, position_ids, *past):
        """MixtralModel.forward with a DynamicCache given: past_seen_tokens from the cache
        (get_seq_length: the keys' sequence axis), cache_position past..past+seq-1, positions from it
        where none are given, masking_utils' mask over past + seq keys (its padding mask read from
        the [batch, past + seq] attention_mask); every layer returns its present key and value.
        Returns (logits, present.0.key, present.0.value, ...); called without a cache (the goldens,
        the training goldens), the logits alone, computed through an empty cache."""
        x = self.embed_tokens(input_ids)
        bsz, seq = input_ids.shape
        logits_only = not past
        if logits_only:
            past = self.empty_cache(bsz)
        past_seen = past[0].shape[-2]
        cache_position = torch.arange(past_seen, past_seen + seq)
        if attention_mask is None:
            attention_mask = torch.ones((bsz, past_seen + seq), dtype=torch.long)
        if position_ids is None:
            position_ids = cache_position.unsqueeze(0)
        mask = masking_utils_padded_mask(attention_mask, cache_position, past_seen + seq, x.dtype)
        cos, sin = self.rotary_emb(x, position_ids)
        presents = []
        for i, layer in enumerate(self.layers):
            attn, present = layer.self_attn(layer.input_layernorm(x), cos, sin, mask,
                                            past[2 * i], past[2 * i + 1])
            x = x + attn
            x = x + layer.block_sparse_moe(layer.post_attention_layernorm(x))
            presents += list(present)
        logits = self.lm_head(self.norm(x))
        return logits if logits_only else (logits, *presents)

    def rope_and_mask_from_inputs(self, input_ids, attention_mask, position_ids, x):
        """MixtralModel.forward with past_key_values None: the defaults transformers fills in when
        the caller passes no mask or positions (every token attends; positions 0..seq-1), the 4-D
        mask of either generation, and the rotary embedding of the positions."""
        if x is None:
            x = self.embed_tokens(input_ids)
        bsz, seq = input_ids.shape
        if attention_mask is None:
            attention_mask = torch.ones((bsz, seq), dtype=torch.long)
        cache_position = torch.arange(0, seq)
        if position_ids is None:
            position_ids = cache_position.unsqueeze(0)
        if self.mask_form.startswith("hf_masking_utils"):
            mask = masking_utils_padded_mask(attention_mask, cache_position, seq, x.dtype)
        else:
            mask = converter_padded_mask(attention_mask, seq, seq, x.dtype)
        cos, sin = self.rotary_emb(x, position_ids)
        return cos, sin, mask


def padded_inputs(ids, pad):
    """A left-padded batch as transformers' generate builds it: the last row's first `pad` tokens
    are padding (attention_mask 0), position_ids = cumsum(mask) - 1 with padding set to 1."""
    mask = torch.ones_like(ids)
    mask[-1, :pad] = 0
    position_ids = mask.long().cumsum(-1) - 1
    position_ids.masked_fill_(mask == 0, 1)
    return mask, position_ids


def build(scoring, mask_form, norm_form="sample"):
    base.CONFIG.update(CONFIG)  # the margin helpers read the module's CONFIG
    model = Model(CONFIG)
    model.mask_form = mask_form
    for layer in model.layers:
        block = Router(CONFIG)
        block.scoring = scoring
        layer.block_sparse_moe = block
        if mask_form == "sdpa_causal":  # same parameters, same registration order
            layer.self_attn = SdpaAttention(CONFIG)
        elif mask_form.endswith("_past"):
            layer.self_attn = CachedAttention(CONFIG)
    if takes_inputs(mask_form):  # a buffer, not a parameter: the seeded weights are the same
        model.rotary_emb = HfRotaryEmbedding(CONFIG["head_dim"], CONFIG["rope_theta"])
    if norm_form == "hf_casts":
        # Same parameters in the same order, so the seeded weights equal the other variants'.
        eps = CONFIG["rms_norm_eps"]
        for layer in model.layers:
            layer.input_layernorm = HfRMSNorm(CONFIG["hidden_size"], eps)
            layer.post_attention_layernorm = HfRMSNorm(CONFIG["hidden_size"], eps)
        model.norm = HfRMSNorm(CONFIG["hidden_size"], eps)
    with torch.no_grad():
        torch.manual_seed(0)
        for name, p in model.named_parameters():
            if name.endswith("embed_tokens.weight"):
                p.normal_(0.0, 1.0)
            elif "layernorm" in name or name == "norm.weight":
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name.endswith("gate.weight"):
                p.normal_(0.0, 0.3)
            else:
                p.normal_(0.0, 1.0 / np.sqrt(p.shape[1]))
    model.eval()
    return model


def export_variant(name, out_dir):
    opset, fold, external, scoring, mask_form, norm_form = VARIANTS[name]
    model = build(scoring, mask_form, norm_form)
    vdir = os.path.join(out_dir, name)
    gdir = os.path.join(vdir, "golden")
    os.makedirs(gdir, exist_ok=True)
    path = os.path.join(vdir, "model.onnx")
    ids = torch.zeros((2, 8), dtype=torch.int64)
    args, names = ids, ["input_ids"]
    axes = {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    with_inputs, with_past = takes_inputs(mask_form), mask_form.endswith("_past")
    outputs = ["logits"]
    if with_inputs:  # optimum's inputs: attention_mask and position_ids [batch, seq]
        args = (ids, torch.ones_like(ids), torch.arange(8).unsqueeze(0).expand(2, 8))
        names += ["attention_mask", "position_ids"]
        axes.update({n: {0: "batch", 1: "seq"} for n in names[1:]})
    if with_past:
        # optimum's text-generation-with-past: traced with PAST cached tokens, its dims dynamic
        # (optimum's axis names), so the export keeps the shape arithmetic of the past length.
        cache = [torch.randn(2, CONFIG["num_kv_heads"], PAST, CONFIG["head_dim"])
                 for _ in range(2 * CONFIG["num_layers"])]
        args = (ids, torch.ones((2, PAST + 8), dtype=torch.long),
                torch.arange(PAST, PAST + 8).unsqueeze(0).expand(2, 8), *cache)
        total = "past_sequence_length + sequence_length"
        axes["attention_mask"] = {0: "batch", 1: total}
        for i in range(CONFIG["num_layers"]):
            for kind in ("key", "value"):
                names.append(f"past_key_values.{i}.{kind}")
                outputs.append(f"present.{i}.{kind}")
                axes[names[-1]] = {0: "batch", 2: "past_sequence_length"}
                axes[outputs[-1]] = {0: "batch", 2: total}
    torch.onnx.export(model, args, path, opset_version=opset, input_names=names,
                      output_names=outputs, do_constant_folding=fold, dynamic_axes=axes)
    m = onnx.load(path)
    for n in m.graph.node:
        n.doc_string = ""
    m.graph.doc_string = ""
    if external:
        onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx.data", size_threshold=1024)
    else:
        onnx.save_model(m, path)
    onnx.checker.check_model(path)
    for batch, seq in SHAPES:
        base.ID_SEED_BASE.setdefault((batch, seq), 1000 * (batch + seq))
        ids, _, _ = base.draw_ids(model, batch, seq)
        with torch.no_grad():
            logits = model(ids)
        np.save(os.path.join(gdir, f"ids_b{batch}_s{seq}.npy"), base.i64(ids))
        np.save(os.path.join(gdir, f"logits_b{batch}_s{seq}.npy"), base.f32(logits))
        if with_inputs:
            # The values the compiled plan binds (no padding), for onnxruntime to be fed with.
            np.save(os.path.join(gdir, f"attention_mask_b{batch}_s{seq}.npy"), base.i64(torch.ones_like(ids)))
            np.save(os.path.join(gdir, f"position_ids_b{batch}_s{seq}.npy"),
                    base.i64(torch.arange(seq).unsqueeze(0).expand(batch, seq)))
            # A left-padded batch, which the exported file must honour (onnxruntime vs PyTorch)
            # and the compiler cannot run (its plan has no mask input).
            mask, position_ids = padded_inputs(ids, PAD)
            with torch.no_grad():
                padded = model(ids, mask, position_ids)
            padded_inputs_ = [("ids", base.i64(ids)), ("attention_mask", base.i64(mask)),
                              ("position_ids", base.i64(position_ids)), ("logits", base.f32(padded))]
            if with_past:
                empty = [(n, base.f32(t)) for n, t in zip(names[3:], model.empty_cache(batch))]
                padded_inputs_ += empty
                for n, t in empty:  # the empty caches the compiled plan binds
                    np.save(os.path.join(gdir, f"{n}_b{batch}_s{seq}.npy"), t)
                write_cached_goldens(model, ids, names[3:], gdir, f"b{batch}_s{seq}")
            for key, t in padded_inputs_:
                np.save(os.path.join(gdir, f"padded_{key}_b{batch}_s{seq}.npy"), t)
    cfg = dict(CONFIG, router_scoring=scoring, opset=opset, constant_folding=fold,
               external_data=external, trace_batch=2, trace_seq=8)
    if norm_form != "sample":
        cfg["rms_norm_form"] = norm_form
    if mask_form != "triu":
        cfg["mask_form"] = mask_form
    if with_inputs:
        cfg["graph_inputs"] = names
        cfg["padded_tokens"] = PAD
    if with_past:
        cfg["graph_outputs"] = outputs
        cfg["past_tokens"] = PAST
    if mask_form.endswith("_window"):
        # The keys each query sees. AttentionMaskConverter fills tril(diagonal = -window - 1), so
        # its queries see window + 1 keys; masking_utils' kv_idx > q_idx - window, window keys.
        cfg["sliding_window"] = WINDOW + 1 if mask_form.startswith("hf_converter") else WINDOW
        cfg["layer_types"] = ["sliding_attention"] * CONFIG["num_layers"]
    with open(os.path.join(gdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1, sort_keys=True)
        f.write("\n")


def write_cached_goldens(model, ids, cache_names, gdir, shape):
    """golden/cached_*: ids after a prefix of PAST tokens, fed with the prefix's caches (PyTorch's
    presents for it), a [batch, PAST + seq] mask of ones and positions PAST..PAST+seq-1, and
    PyTorch's logits for them. They must equal the last seq logits of prefix + ids run from an
    empty cache (an independent path through the same modules: no cache is read there)."""
    bsz, seq = ids.shape
    gen = torch.Generator().manual_seed(7 + bsz * 100 + seq)
    prefix = torch.randint(0, CONFIG["vocab_size"], (bsz, PAST), generator=gen)
    positions = torch.arange(PAST).unsqueeze(0).expand(bsz, PAST)
    with torch.no_grad():
        prefix_out = model(prefix, torch.ones_like(prefix), positions, *model.empty_cache(bsz))
        feeds = {"ids": ids, "attention_mask": torch.ones((bsz, PAST + seq), dtype=torch.long),
                 "position_ids": torch.arange(PAST, PAST + seq).unsqueeze(0).expand(bsz, seq)}
        cached = model(feeds["ids"], feeds["attention_mask"], feeds["position_ids"], *prefix_out[1:])[0]
        whole = model(torch.cat([prefix, ids], dim=1))
    ok, text = error_model.logits_bound(CONFIG, PAST + seq).check(base.f32(cached), base.f32(whole[:, PAST:]))
    if not ok:
        raise SystemExit(f"export_variants.py: cached logits differ from the whole sequence's: {text}")
    for key, t in feeds.items():
        np.save(os.path.join(gdir, f"cached_{key}_{shape}.npy"), base.i64(t))
    for key, t in zip(cache_names, prefix_out[1:]):
        np.save(os.path.join(gdir, f"cached_{key}_{shape}.npy"), base.f32(t))
    np.save(os.path.join(gdir, f"cached_logits_{shape}.npy"), base.f32(cached))


# The dtype forms: DTYPE_BASE (Hugging Face's RMSNorm casts, softmax(dtype=float32).to(q.dtype),
# AttentionMaskConverter's finfo(dtype).min mask, cos/sin cast to the activations' dtype) with the
# model's weights and activations in float16 or bfloat16 (model.to(dtype), as
# from_pretrained(torch_dtype=...) loads it). They are written to DTYPE_OUT (one directory per form,
# as the variants'), not beside the fp32 variants.
DTYPE_BASE = "hf_mask_converter_opset17"
DTYPE_VARIANTS = {"hf_bf16_opset17": torch.bfloat16, "hf_fp16_opset17": torch.float16}
DTYPE_OUT = os.path.normpath(os.path.join(HERE, "..", "mixtral_dtypes"))
DTYPE_NAMES = {torch.bfloat16: "bfloat16", torch.float16: "float16"}
ONNX_TYPES = {torch.bfloat16: onnx.TensorProto.BFLOAT16, torch.float16: onnx.TensorProto.FLOAT16}


def bf16_bits_to_f32(bits):
    """bfloat16 bit patterns (uint16) -> float32: the top half of a float32."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def tensor_values(t):
    """A FLOAT / BFLOAT16 / FLOAT16 TensorProto's values as float32 (onnx 1.12's numpy_helper
    reads bfloat16 from int32_data only)."""
    if t.data_type == onnx.TensorProto.BFLOAT16:
        bits = (np.frombuffer(t.raw_data, dtype=np.uint16) if t.raw_data
                else np.array(t.int32_data, dtype=np.uint16))
        return bf16_bits_to_f32(bits).reshape(tuple(t.dims))
    return onnx.numpy_helper.to_array(t).astype(np.float32)


def bf16_to_fp16_model(m, model32):
    """The fp16 form from torch 1.13's bf16 export of the same module code (see export_dtype_variant
    for why): every BFLOAT16 element type becomes FLOAT16 (initializers, Constant tensors, Cast's
    `to`, ConstantOfShape values, value_info, graph inputs/outputs), which is what torch 2.x's
    TorchScript exporter writes for model.half() (the same trace; fp16 runs on CPU there).
    Values: an initializer that equals a parameter of model32 rounded to bf16 (as stored, or
    transposed: constant folding stores Linear weights [in, out]) is replaced by that parameter
    rounded to fp16 directly (not through bf16); finfo(bfloat16).min, in either dtype, becomes
    finfo(float16).min (the converter's mask is built from finfo of the model dtype); any other
    bf16 value is converted exactly when fp16 represents it, else the conversion fails."""
    params = [p.detach().float().numpy() for p in model32.parameters()]
    bf16_min = float(torch.finfo(torch.bfloat16).min)
    fp16_min = float(torch.finfo(torch.float16).min)

    def fp16_tensor(t, name):
        v = tensor_values(t)
        hits = []
        for p in params:
            for cand in ([p] + ([p.T] if p.ndim == 2 else [])):
                r = torch.from_numpy(np.ascontiguousarray(cand)).to(torch.bfloat16).float().numpy()
                if r.shape == v.shape and np.array_equal(r, v):
                    hits.append(np.ascontiguousarray(cand))
        if len(hits) > 1 and not all(np.array_equal(h, hits[0]) for h in hits):
            raise SystemExit(f"{name}: matches {len(hits)} different parameters")
        if hits:
            out = torch.from_numpy(hits[0]).half().numpy()
        else:
            out = np.where(v == bf16_min, fp16_min, v).astype(np.float16)
            if not np.array_equal(out.astype(np.float32), np.where(v == bf16_min, fp16_min, v)):
                raise SystemExit(f"{name}: bf16 value not representable in fp16")
        new = onnx.numpy_helper.from_array(out, t.name)
        return new, bool(hits)

    def f32_min_fix(t):
        # A float32 finfo(bfloat16).min (torch.full's fill before .to(dtype)) -> finfo(float16).min.
        v = onnx.numpy_helper.to_array(t)
        if np.any(v == np.float32(bf16_min)):
            t.CopyFrom(onnx.numpy_helper.from_array(
                np.where(v == np.float32(bf16_min), np.float32(fp16_min), v).astype(np.float32), t.name))

    matched = 0
    for i, t in enumerate(m.graph.initializer):
        if t.data_type == onnx.TensorProto.BFLOAT16:
            new, hit = fp16_tensor(t, t.name)
            matched += hit
            m.graph.initializer[i].CopyFrom(new)
        elif t.data_type == onnx.TensorProto.FLOAT:
            f32_min_fix(t)
    for n in m.graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                if a.t.data_type == onnx.TensorProto.BFLOAT16:
                    a.t.CopyFrom(fp16_tensor(a.t, f"{n.name}.{a.name}")[0])
                elif a.t.data_type == onnx.TensorProto.FLOAT:
                    f32_min_fix(a.t)
            if n.op_type == "Cast" and a.name == "to" and a.i == onnx.TensorProto.BFLOAT16:
                a.i = onnx.TensorProto.FLOAT16
    for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        if vi.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16:
            vi.type.tensor_type.elem_type = onnx.TensorProto.FLOAT16
    if matched != len(params):
        raise SystemExit(f"fp16 form: {matched} initializers matched {len(params)} parameters")
    return m


def rounded_fp32(model, dtype):
    """model (fp32) with every parameter rounded to `dtype` and back: the fp32 reference on the
    weights the dtype form stores."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(dtype).float())
    return model


def export_dtype_variant(name, out_dir):
    """DTYPE_BASE's module code with model.to(dtype). torch 1.13 traces by running the model, and
    its CPU kernels have no float16 matmul ("addmm_impl_cpu_" not implemented for 'Half'), so only
    the bfloat16 form is torch.onnx.export's own; the float16 form is that bf16 export converted
    with the onnx API (bf16_to_fp16_model), as torch 2.x's exporter would write model.half().
    Goldens (golden/): ids_b{B}_s{S}.npy; logits_b{B}_s{S}.npy, PyTorch fp32 on the weights rounded
    to the dtype (the fp32 error model's reference: the compiler converts the weights to fp32 at
    load and computes in fp32); for bf16, logits_bfloat16_b{B}_s{S}.npy, PyTorch eager in bf16
    (torch 1.13's CPU bf16 kernels). fp16 has no PyTorch-in-fp16 golden on this CPU: its in-dtype
    oracle is onnxruntime's CPU provider running the file (tests/oracle/run_onnxruntime.js)."""
    dtype = DTYPE_VARIANTS[name]
    opset, fold, external, scoring, mask_form, norm_form = VARIANTS[DTYPE_BASE]
    ref = rounded_fp32(build(scoring, mask_form, norm_form), dtype)
    traced = build(scoring, mask_form, norm_form).to(torch.bfloat16)
    traced.compute_dtype = torch.bfloat16
    vdir = os.path.join(out_dir, name)
    gdir = os.path.join(vdir, "golden")
    os.makedirs(gdir, exist_ok=True)
    path = os.path.join(vdir, "model.onnx")
    ids = torch.zeros((2, 8), dtype=torch.int64)
    axes = {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    torch.onnx.export(traced, ids, path, opset_version=opset, input_names=["input_ids"],
                      output_names=["logits"], do_constant_folding=fold, dynamic_axes=axes)
    m = onnx.load(path)
    for n in m.graph.node:
        n.doc_string = ""
    m.graph.doc_string = ""
    if dtype == torch.float16:
        m = bf16_to_fp16_model(m, build(scoring, mask_form, norm_form))
    onnx.save_model(m, path)
    onnx.checker.check_model(path)
    for batch, seq in SHAPES:
        base.ID_SEED_BASE.setdefault((batch, seq), 1000 * (batch + seq))
        ids, _, _ = base.draw_ids(ref, batch, seq)
        with torch.no_grad():
            np.save(os.path.join(gdir, f"ids_b{batch}_s{seq}.npy"), base.i64(ids))
            np.save(os.path.join(gdir, f"logits_b{batch}_s{seq}.npy"), base.f32(ref(ids)))
            if dtype == torch.bfloat16:
                np.save(os.path.join(gdir, f"logits_bfloat16_b{batch}_s{seq}.npy"),
                        base.f32(traced(ids).float()))
    cfg = dict(CONFIG, router_scoring=scoring, opset=opset, constant_folding=fold,
               external_data=external, trace_batch=2, trace_seq=8, rms_norm_form=norm_form,
               mask_form=mask_form, dtype=DTYPE_NAMES[dtype], dtype_base=DTYPE_BASE)
    with open(os.path.join(gdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1, sort_keys=True)
        f.write("\n")


def compare(a_dir, b_dir):
    ok = True
    for root, _, files in os.walk(a_dir):
        for name in sorted(files):
            a = os.path.join(root, name)
            b = os.path.join(b_dir, os.path.relpath(a, a_dir))
            if name.startswith("logits_bfloat16_"):
                # PyTorch's bf16 kernels on another CPU: two bf16 evaluations, the dtype bound.
                cfg = json.load(open(os.path.join(root, "config.json")))
                seq = int(name[:-len(".npy")].split("_s")[-1])
                same, text = error_model.dtype_logits_bound(cfg, seq, "bfloat16", 2).check(np.load(b), np.load(a))
                if not same:
                    print(f"{os.path.relpath(a, a_dir)}: {text}")
            elif name.endswith(".npy"):
                same, text = error_model.compare_regenerated(os.path.relpath(a, a_dir), np.load(a), np.load(b),
                                                             error_model.forward_chain_of(root))
                if not same:
                    print(text)
            elif name.endswith(".py"):
                continue
            else:
                same = open(a, "rb").read() == open(b, "rb").read()
            if not same:
                print(f"differs: {os.path.relpath(a, a_dir)}")
                ok = False
    return ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=HERE)
    parser.add_argument("--dtype-out", default=DTYPE_OUT)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check:
        tmp = tempfile.mkdtemp()
        try:
            for name in VARIANTS:
                export_variant(name, tmp)
            for name in DTYPE_VARIANTS:
                export_dtype_variant(name, tmp)
            ok = all([compare(os.path.join(tmp, n), os.path.join(HERE, n)) for n in VARIANTS] +
                     [compare(os.path.join(tmp, n), os.path.join(DTYPE_OUT, n)) for n in DTYPE_VARIANTS])
        finally:
            shutil.rmtree(tmp)
        print("check: OK" if ok else "check: FAILED")
        return 0 if ok else 1
    for name in VARIANTS:
        export_variant(name, args.out)
        print(f"wrote {name}")
    for name in DTYPE_VARIANTS:
        export_dtype_variant(name, args.dtype_out)
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
