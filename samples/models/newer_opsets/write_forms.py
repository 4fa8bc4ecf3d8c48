"""Newer exporters' forms of committed samples, rewritten with the ONNX protobuf API (issue 16).

Each form is a committed torch.onnx.export file (torch 1.13, opset <= 17) rewritten node by node into
what a newer exporter writes for the same module, with the same weights (the initializers are copied
unchanged), so the base's PyTorch golden logits remain the reference:
  mixtral_opset18            opset 18: Reduce* take `axes` as an input (a Constant node), Split takes
                             `num_outputs` instead of an equal `split` input (torch.onnx dynamo, opset 18)
  qwen3_opset18              the same on qwen3_moe_tiny, `axes` as int64 initializers (onnxscript's
                             constant-to-initializer lifting)
  mixtral_opset23_rmsnorm    opset 23, every RMSNorm chain -> one RMSNormalization(X, scale) (torch.onnx
                             dynamo for nn.RMSNorm / F.rms_norm)
  qwen3_opset23_rmsnorm      the same on qwen3_moe_tiny, per-head q/k norms over the last axis of [B,S,H,D]
  mixtral_ort_fused_norms    opset 17, onnxruntime transformer optimizer / onnxruntime-genai style:
                             SimplifiedLayerNormalization, and residual Add + norm ->
                             com.microsoft.SkipSimplifiedLayerNormalization
  mixtral_opset23_attention  mixtral_opset23_rmsnorm plus the attention core (Q K^T scale + causal mask,
                             softmax, . V) -> one opset-23 Attention(Q, K, V) with is_causal=1
  mixtral_local_function     opset 23, every RMSNorm chain kept as nodes of a model-local FunctionProto
                             pkg.onnxscript.torch_lib.RMSNorm, called once per norm
  mixtral_opset19/20, qwen3_opset21/22
                             the opset-18 rewrite at opsets 19..22 (no signature these files use changes)
  mixtral_ort_gqa(_packed)   onnxruntime-genai's GroupQueryAttention per layer (separate or packed QKV)
  gpt_oss_ort_gqa            the same on gpt_oss_tiny: biased projections, local_window_size on the
                             sliding layer, the learned sinks as head_sink
  mixtral_ort_genai          mixtral_ort_gqa with the onnxruntime-genai builder's whole I/O: attention_mask
                             and past_key_values.* in, present.* out, seqlens_k from the mask
  qwen3_ort_rotary_interleaved
                             qwen3_moe_tiny with com.microsoft.RotaryEmbedding interleaved = 1 (GPT-J's
                             pairs) on q and k, and the q/k projections' columns and q/k norm weights
                             permuted within each head so that the model is the base's: the form's own
                             golden/train is the base's with those tensors permuted alike
Bases: ../mixtral_variants/hf_casts_opset17 (Mixtral, transformers' RMSNorm with its f32 Casts, has
golden/train), ../qwen3_moe_tiny, ../mixtral_tiny (head_dim 16, for GroupQueryAttention) and
../gpt_oss_tiny. Every form dir gets model.onnx and golden/ (the base's config.json
with "opset", "form" and "base" updated, the base's ids_b*_s*.npy and logits_b*_s*.npy copied; the
training goldens stay in the base's golden/train, named by "base", except where the form permutes
weights: then golden/train holds the base's goldens permuted alike).
onnx 1.12 has no schemas above opset 17, so onnx.checker is not run; onnxruntime is the check
(tests/e2e/check_newer_forms.py, README.md here).

  /usr/bin/python3 write_forms.py [--out DIR] [--check]
--check writes into a temporary directory and compares every file byte for byte with ./.
"""
import argparse
import filecmp
import glob
import io
import json
import os
import shutil
import sys
import tempfile
import zipfile

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.dirname(HERE)
BASES = {"mixtral": "mixtral_variants/hf_casts_opset17", "qwen3": "qwen3_moe_tiny",
         # head_dim 16: onnxruntime's GroupQueryAttention kernel needs a multiple of 16
         "mixtral16": "mixtral_tiny",
         # GPT-OSS: biased q/k/v projections, a learned sink per head, a sliding window of 4 keys on
         # layer 0; head_dim 16
         "gpt_oss": "gpt_oss_tiny"}
# name: (base, opset, axes as "constant" or "initializer", norms None|"rmsnorm"|"ort"|"function",
#        attention, rotary None|"ort"|"onnx"|"ort_interleaved")
FORMS = {
    "mixtral_opset18": ("mixtral", 18, "constant", None, False, None),
    "qwen3_opset18": ("qwen3", 18, "initializer", None, False, None),
    "mixtral_opset23_rmsnorm": ("mixtral", 23, "constant", "rmsnorm", False, None),
    "qwen3_opset23_rmsnorm": ("qwen3", 23, "initializer", "rmsnorm", False, None),
    "mixtral_ort_fused_norms": ("mixtral", 17, None, "ort", False, None),
    "mixtral_opset23_attention": ("mixtral", 23, "constant", "rmsnorm", True, None),
    "mixtral_local_function": ("mixtral", 23, "constant", "function", False, None),
    "mixtral_ort_rotary": ("mixtral", 17, None, "ort", False, "ort"),
    "mixtral_opset23_rotary": ("mixtral", 23, "constant", "rmsnorm", True, "onnx"),
    "mixtral_ort_gqa": ("mixtral16", 17, None, "ort", False, None),
    "mixtral_ort_gqa_packed": ("mixtral16", 17, None, "ort", False, None),
    "qwen3_opset21": ("qwen3", 21, "initializer", None, False, None),
    "mixtral_opset19": ("mixtral", 19, "constant", None, False, None),
    "mixtral_opset20": ("mixtral", 20, "constant", None, False, None),
    "qwen3_opset22": ("qwen3", 22, "initializer", None, False, None),
    "gpt_oss_ort_gqa": ("gpt_oss", 17, None, "ort", False, None),
    "mixtral_ort_genai": ("mixtral16", 17, None, "ort", False, None),
    "qwen3_ort_rotary_interleaved": ("qwen3", 17, None, None, False, "ort_interleaved"),
}
# Forms whose attention is one com.microsoft.GroupQueryAttention per layer (onnxruntime-genai), and
# those of them whose query is packed QKV (one qkv_proj MatMul, key and value inputs empty).
GQA_FORMS = {"mixtral_ort_gqa", "mixtral_ort_gqa_packed", "gpt_oss_ort_gqa", "mixtral_ort_genai"}
# Forms with the onnxruntime-genai builder's whole I/O: attention_mask and a KV cache per layer in,
# the cache out, seqlens_k and total_sequence_length computed from attention_mask.
GENAI_IO_FORMS = {"mixtral_ort_genai"}
PACKED_QKV_FORMS = {"mixtral_ort_gqa_packed"}
# Rows of the RoPE cos/sin caches (onnxruntime-genai writes max_position_embeddings rows).
ROTARY_ROWS = 32
# IR version the onnx release that introduced each opset writes (onnx.helper.VERSION_TABLE).
IR_VERSION = {17: 8, 18: 8, 19: 9, 20: 9, 21: 10, 22: 10, 23: 11}
# Ops whose `axes` attribute became an input at opset 18 (ReduceSum moved at 13).
REDUCE18 = {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1",
            "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"}
# Ops whose signature changed between opset 18 and 23 (beyond new element types). Present in neither
# base, checked so that a new base with one of them fails loudly instead of being written wrong.
UNHANDLED = {"Pad", "Resize", "ScatterND", "GroupNormalization", "LpPool", "Col2Im", "CenterCropPad",
             "DFT", "STFT", "MelWeightMatrix"}
FN_DOMAIN, FN_NAME = "pkg.onnxscript.torch_lib", "RMSNorm"


class Graph:
    """Producer/reader maps over a GraphProto's nodes and the constant values they compute."""

    def __init__(self, g):
        self.g = g
        self.producer = {o: n for n in g.node for o in n.output if o}
        self.readers = {}
        for n in g.node:
            for i in n.input:
                self.readers.setdefault(i, []).append(n)
        for o in g.output:
            self.readers.setdefault(o.name, []).append(None)
        self.inits = {t.name: t for t in g.initializer}

    def const(self, name):
        """numpy value of a Constant node's output or an initializer, else None."""
        if name in self.inits:
            return numpy_helper.to_array(self.inits[name])
        n = self.producer.get(name)
        if n is not None and n.op_type == "Constant" and n.attribute[0].name == "value":
            return numpy_helper.to_array(n.attribute[0].t)
        return None

    def only_reader(self, name):
        r = self.readers.get(name, [])
        return r[0] if len(r) == 1 else None


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def is_f32_cast(node):
    return node is not None and node.op_type == "Cast" and attr(node, "to") == TensorProto.FLOAT


def scalar_is(g, name, value):
    v = g.const(name)
    return v is not None and v.size == 1 and float(v.reshape(())) == value


def match_rmsnorm(g, pow_node):
    """Pow(x,2) -> ReduceMean(-1) -> Add(eps) -> Sqrt -> Div(1,.)|Reciprocal -> Mul(x,.) -> [Cast f32]
    -> Mul(w,.): returns dict(x, w, eps, nodes, out) or None."""
    if pow_node.op_type != "Pow" or not scalar_is(g, pow_node.input[1], 2.0):
        return None
    x = pow_node.input[0]
    chain = [pow_node]
    rm = g.only_reader(pow_node.output[0])
    if rm is None or rm.op_type != "ReduceMean" or attr(rm, "keepdims", 1) != 1:
        return None
    axes = attr(rm, "axes") if len(rm.input) < 2 else g.const(rm.input[1]).tolist()
    if list(axes) != [-1]:
        return None
    chain.append(rm)
    add = g.only_reader(rm.output[0])
    if add is None or add.op_type != "Add":
        return None
    other = add.input[1] if add.input[0] == rm.output[0] else add.input[0]
    eps = g.const(other)
    if eps is None or eps.size != 1:
        return None
    chain.append(add)
    sq = g.only_reader(add.output[0])
    if sq is None or sq.op_type != "Sqrt":
        return None
    chain.append(sq)
    inv = g.only_reader(sq.output[0])
    if inv is None or not (inv.op_type == "Reciprocal" or
                           (inv.op_type == "Div" and inv.input[1] == sq.output[0] and scalar_is(g, inv.input[0], 1.0))):
        return None
    chain.append(inv)
    mul = g.only_reader(inv.output[0])
    if mul is None or mul.op_type != "Mul" or x not in mul.input:
        return None
    chain.append(mul)
    nxt = g.only_reader(mul.output[0])
    if is_f32_cast(nxt):
        chain.append(nxt)
        nxt = g.only_reader(nxt.output[0])
    if nxt is None or nxt.op_type != "Mul":
        return None
    w = nxt.input[0] if nxt.input[1] == chain[-1].output[0] else nxt.input[1]
    if w not in g.inits:
        return None
    chain.append(nxt)
    prefix = pow_node.name.rsplit("/", 1)[0]
    return dict(x=x, w=w, eps=float(eps.reshape(())), nodes=chain, out=nxt.output[0], prefix=prefix,
                cast=any(is_f32_cast(n) for n in chain))


def replace_nodes(graph, remove, insert_at, new_nodes):
    """Removes the nodes `remove` and puts `new_nodes` where `insert_at` was (nodes are named by their
    outputs, unique in a graph)."""
    key = lambda n: tuple(n.output)  # noqa: E731
    gone, anchor = {key(n) for n in remove}, key(insert_at)
    kept = []
    for n in graph.node:
        if key(n) == anchor:
            kept.extend(new_nodes)
        if key(n) not in gone:
            c = onnx.NodeProto()
            c.CopyFrom(n)
            kept.append(c)
    del graph.node[:]
    graph.node.extend(kept)


def fuse_norms(model, style):
    """Every RMSNorm chain -> RMSNormalization / ORT's (Skip)SimplifiedLayerNormalization / a call."""
    count = {"norms": 0, "skip": 0, "casts_kept_in_function": 0}
    while True:
        g = Graph(model.graph)
        m = next((m for m in (match_rmsnorm(g, n) for n in model.graph.node if n.op_type == "Pow") if m), None)
        if m is None:
            return count
        count["norms"] += 1
        p, remove, anchor = m["prefix"], list(m["nodes"]), m["nodes"][-1]
        if style == "rmsnorm":
            new = [helper.make_node("RMSNormalization", [m["x"], m["w"]], [m["out"]], name=p + "/RMSNormalization",
                                    axis=-1, epsilon=m["eps"], stash_type=1)]
        elif style == "function":
            new = [helper.make_node(FN_NAME, [m["x"], m["w"]], [m["out"]], name=p + "/" + FN_NAME,
                                    domain=FN_DOMAIN, epsilon=m["eps"])]
            count["casts_kept_in_function"] += m["cast"]
        else:  # ort
            src = g.producer.get(m["x"])
            add = g.producer.get(src.input[0]) if is_f32_cast(src) else src
            residual = (add is not None and add.op_type == "Add" and
                        all(g.const(i) is None for i in add.input))
            if residual:
                # input_skip_bias_sum keeps the Add's name, so every other reader (the next residual
                # add, an f32 Cast of it) reads the sum unchanged.
                new = [helper.make_node("SkipSimplifiedLayerNormalization", [add.input[0], add.input[1], m["w"]],
                                        [m["out"], "", "", add.output[0]], name=p + "/SkipSimplifiedLayerNormalization",
                                        domain="com.microsoft", epsilon=m["eps"])]
                remove.append(add)
                anchor = add
                count["skip"] += 1
            else:
                new = [helper.make_node("SimplifiedLayerNormalization", [m["x"], m["w"]], [m["out"]],
                                        name=p + "/SimplifiedLayerNormalization", axis=-1, epsilon=m["eps"],
                                        stash_type=1)]
        replace_nodes(model.graph, remove, anchor, new)


def rmsnorm_function(opset):
    """pkg.onnxscript.torch_lib.RMSNorm(X, weight; epsilon): transformers' Mistral/Qwen RMSNorm as
    onnxscript writes it: rsqrt as Reciprocal(Sqrt), the f32 Cast of the normalised x kept."""
    nodes = [
        helper.make_node("Constant", [], ["two"], value=numpy_helper.from_array(np.array(2.0, np.float32))),
        helper.make_node("Pow", ["X", "two"], ["x2"]),
        helper.make_node("Constant", [], ["axes"], value=numpy_helper.from_array(np.array([-1], np.int64))),
        helper.make_node("ReduceMean", ["x2", "axes"], ["ms"], keepdims=1),
    ]
    eps = helper.make_node("Constant", [], ["eps"])
    a = onnx.AttributeProto()
    a.name, a.ref_attr_name, a.type = "value_float", "epsilon", onnx.AttributeProto.FLOAT
    eps.attribute.append(a)
    nodes += [eps,
              helper.make_node("Add", ["ms", "eps"], ["ms_eps"]),
              helper.make_node("Sqrt", ["ms_eps"], ["rms"]),
              helper.make_node("Reciprocal", ["rms"], ["inv_rms"]),
              helper.make_node("Mul", ["X", "inv_rms"], ["xn"]),
              helper.make_node("Cast", ["xn"], ["xn_f32"], to=TensorProto.FLOAT),
              helper.make_node("Mul", ["weight", "xn_f32"], ["Y"])]
    return helper.make_function(FN_DOMAIN, FN_NAME, ["X", "weight"], ["Y"], nodes,
                                [helper.make_opsetid("", opset)], ["epsilon"])


def fuse_attention(model):
    """Q K^T / c (or * c) + Trilu causal mask -> Softmax -> [f32 Casts] -> . V  ->  Attention(Q, K, V)."""
    done, scales = 0, []
    while True:
        g = Graph(model.graph)
        found = None
        for sm in model.graph.node:
            if sm.op_type != "Softmax" or attr(sm, "axis", -1) != -1:
                continue
            add = g.producer.get(sm.input[0])
            if add is None or add.op_type != "Add":
                continue
            mask = next((i for i in add.input if g.producer.get(i) is not None and g.producer[i].op_type == "Trilu"), None)
            if mask is None or attr(g.producer[mask], "upper", 1) != 1:
                continue
            scaled = g.producer.get(add.input[0] if add.input[1] == mask else add.input[1])
            if scaled is None or scaled.op_type not in ("Div", "Mul") or g.const(scaled.input[1]) is None:
                continue
            c = np.float32(g.const(scaled.input[1]).reshape(()))
            scale = float(np.float32(1.0) / c) if scaled.op_type == "Div" else float(c)
            qk = g.producer.get(scaled.input[0])
            if qk is None or qk.op_type != "MatMul":
                continue
            kt = g.producer.get(qk.input[1])
            if kt is None or kt.op_type != "Transpose" or list(attr(kt, "perm")) != [0, 1, 3, 2]:
                continue
            chain = [kt, qk, scaled, add, sm]
            nxt = g.only_reader(sm.output[0])
            while is_f32_cast(nxt):
                chain.append(nxt)
                nxt = g.only_reader(nxt.output[0])
            if nxt is None or nxt.op_type != "MatMul" or nxt.input[0] != chain[-1].output[0]:
                continue
            chain.append(nxt)
            if any(len(g.readers.get(n.output[0], [])) != 1 for n in chain[:-1]):
                continue
            found = (chain, qk.input[0], kt.input[0], nxt.input[1], nxt.output[0], scale, sm.name.rsplit("/", 1)[0])
            break
        if found is None:
            return done, scales
        chain, q, k, v, out, scale, p = found
        node = helper.make_node("Attention", [q, k, v], [out], name=p + "/Attention", is_causal=1, scale=scale)
        replace_nodes(model.graph, chain, chain[-1], [node])
        done += 1
        scales.append(scale)


def rope_caches(theta, head_dim, rows):
    """transformers' RoPE tables in fp32: inv_freq = 1 / theta^(arange(0, d, 2) / d), angles
    t * inv_freq for t = 0..rows-1, then cos and sin ([rows, d/2], onnxruntime's cache layout).
    cos and sin are evaluated in float64 and rounded once to float32: numpy's float32 cos/sin
    kernels differ in the last bit between CPUs (their SIMD dispatch), which made --check fail on
    a machine other than the writer's; the float64 results round to the same float32 anywhere."""
    inv = (np.float32(1.0) / (np.float32(theta) ** (np.arange(0, head_dim, 2, dtype=np.float32) /
                                                      np.float32(head_dim)))).astype(np.float32)
    angles = np.outer(np.arange(rows, dtype=np.float32), inv).astype(np.float32).astype(np.float64)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def fuse_rotary(model, style, theta, head_dim):
    """transformers' apply_rotary_pos_emb, x * cos + rotate_half(x) * sin on [B, H, S, D], ->
    one RotaryEmbedding per q and k: com.microsoft (input, position_ids, cos_cache, sin_cache) or
    opset 23 (X, cos_cache, sin_cache, position_ids); position ids 0..S-1 computed in the graph
    from input_ids' shape (as the exporters compute them without an explicit input)."""
    g = Graph(model.graph)
    ids = model.graph.input[0].name
    cos, sin = rope_caches(theta, head_dim, ROTARY_ROWS)
    model.graph.initializer.extend([numpy_helper.from_array(cos, "rotary.cos_cache"),
                                    numpy_helper.from_array(sin, "rotary.sin_cache")])
    pos_nodes = [
        helper.make_node("Shape", [ids], ["rotary/ids_shape"], name="/rotary/Shape"),
        helper.make_node("Constant", [], ["rotary/one"], name="/rotary/one",
                         value=helper.make_tensor("v", TensorProto.INT64, [], [1])),
        helper.make_node("Constant", [], ["rotary/zero"], name="/rotary/zero",
                         value=helper.make_tensor("v", TensorProto.INT64, [], [0])),
        helper.make_node("Gather", ["rotary/ids_shape", "rotary/one"], ["rotary/seq"], name="/rotary/Gather", axis=0),
        helper.make_node("Range", ["rotary/zero", "rotary/seq", "rotary/one"], ["rotary/range"], name="/rotary/Range"),
        helper.make_node("Constant", [], ["rotary/axes0"], name="/rotary/axes0",
                         value=helper.make_tensor("v", TensorProto.INT64, [1], [0])),
        helper.make_node("Unsqueeze", ["rotary/range", "rotary/axes0"], ["rotary/pos_row"], name="/rotary/Unsqueeze"),
        helper.make_node("Expand", ["rotary/pos_row", "rotary/ids_shape"], ["rotary/position_ids"], name="/rotary/Expand"),
    ]
    fused = []
    for add in list(model.graph.node):
        if add.op_type != "Add":
            continue
        muls = [g.producer.get(i) for i in add.input]
        if any(m is None or m.op_type != "Mul" for m in muls):
            continue
        concat = g.producer.get(muls[1].input[0])
        if concat is None or concat.op_type != "Concat":
            continue
        neg = g.producer.get(concat.input[0])
        if neg is None or neg.op_type != "Neg":
            continue
        x = muls[0].input[0]
        slices = [g.producer.get(neg.input[0]), g.producer.get(concat.input[1])]
        if any(s is None or s.op_type != "Slice" or s.input[0] != x for s in slices):
            continue
        chain = [slices[0], neg, slices[1], concat, muls[1], muls[0], add]
        if any(len(g.readers.get(n.output[0], [])) != 1 for n in chain[:-1]):
            continue
        name = add.name.rsplit("/", 1)[0] + "/RotaryEmbedding" + ("" if not fused else f"_{len(fused)}")
        if style in ("ort", "ort_interleaved"):
            node = helper.make_node("RotaryEmbedding", [x, "rotary/position_ids", "rotary.cos_cache", "rotary.sin_cache"],
                                    [add.output[0]], name=name, domain="com.microsoft",
                                    interleaved=int(style == "ort_interleaved"))
        else:
            node = helper.make_node("RotaryEmbedding", [x, "rotary.cos_cache", "rotary.sin_cache", "rotary/position_ids"],
                                    [add.output[0]], name=name, interleaved=0)
        fused.append((chain, node))
    for chain, node in fused:
        replace_nodes(model.graph, chain, chain[-1], [node])
    # The position ids go first (every RotaryEmbedding reads them).
    for n in reversed(pos_nodes):
        model.graph.node.insert(0, n)
    return [node for _, node in fused]


# The elementwise ops of a norm between a projection and its RoPE, whose every input is data.
ARITHMETIC = {"Mul", "Div", "Add", "Sub", "Pow", "Sqrt", "Reciprocal", "ReduceMean"}


def pairs_from_halves(head_dim):
    """Index map of GPT-J's interleaved layout from rotate-half's: column 2i of a head takes the
    halves' column i, column 2i+1 takes column d/2 + i. RoPE on pairs (2i, 2i+1) of the permuted
    head is then RoPE on halves (i, d/2 + i) of the original, and q . k is unchanged."""
    half = head_dim // 2
    idx = np.empty(head_dim, np.int64)
    idx[0::2] = np.arange(half)
    idx[1::2] = np.arange(half) + half
    return idx


def permute_heads(a, head_dim, axis):
    """`a` with every head_dim-wide block along `axis` permuted by pairs_from_halves."""
    width = a.shape[axis]
    idx = np.concatenate([h * head_dim + pairs_from_halves(head_dim) for h in range(width // head_dim)])
    return np.take(a, idx, axis=axis)


def interleave_projections(model, rotaries, head_dim):
    """Permutes, for every RotaryEmbedding, the projection weight above it (MatMul(x, W), W
    [in, out]: columns) and the per-head norm weight between them (Mul by a [head_dim]
    initializer), each initializer once. Returns the permuted initializer names."""
    g = Graph(model.graph)
    done = set()
    for rot in rotaries:
        work, seen = [rot.input[0]], set()
        while work:
            v = work.pop()
            n = g.producer.get(v)
            if n is None or id(n) in seen:
                continue
            seen.add(id(n))
            if n.op_type == "MatMul" and n.input[1] in g.inits:
                w = n.input[1]
                if w not in done:
                    t = g.inits[w]
                    t.CopyFrom(numpy_helper.from_array(permute_heads(numpy_helper.to_array(t), head_dim, 1), w))
                    done.add(w)
                continue
            if n.op_type == "Mul":
                for i in n.input:
                    if i in g.inits and list(g.inits[i].dims) == [head_dim] and i not in done:
                        t = g.inits[i]
                        t.CopyFrom(numpy_helper.from_array(permute_heads(numpy_helper.to_array(t), head_dim, 0), i))
                        done.add(i)
            # Data inputs only: a Reshape's or Slice's shape/index inputs lead into shape arithmetic
            # over the residual stream (and from there to every earlier weight).
            data = n.input if n.op_type in ARITHMETIC else n.input[:1]
            work.extend(i for i in data if i and i not in g.inits)
    return sorted(done)


def save_npz(path, arrays):
    """np.savez with fixed zip timestamps (np.savez stamps the current time), so --check can
    compare bytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for key in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arrays[key]), allow_pickle=False)
            z.writestr(zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0)), buf.getvalue())


def permuted_train_goldens(base_dir, gdir, head_dim):
    """The base's golden/train with the q/k projections ([in, out], per-head columns) and the q/k
    norm weights ([head_dim]) permuted as interleave_projections permutes the model: gradients,
    SGD and AdamW updates are elementwise in the weights, so they permute alike."""
    src, dst = os.path.join(base_dir, "golden", "train"), os.path.join(gdir, "train")
    os.makedirs(dst, exist_ok=True)
    for fn in sorted(os.listdir(src)):
        if not fn.endswith(".npz"):
            shutil.copyfile(os.path.join(src, fn), os.path.join(dst, fn))
            continue
        z = np.load(os.path.join(src, fn))
        out = {}
        for key in z.files:
            a = z[key]
            role = key.split("_", 1)[1] if key.startswith("l") and "_" in key else ""
            if role in ("q", "k"):
                a = permute_heads(a, head_dim, 1)
            elif role in ("q_norm", "k_norm"):
                a = permute_heads(a, head_dim, 0)
            out[key] = a
        save_npz(os.path.join(dst, fn), out)


def biased(g, matmul):
    """The projection's output: the MatMul's, or that of the constant-bias Add it feeds
    (nn.Linear(bias=True) exports MatMul then Add(bias, .))."""
    add = g.only_reader(matmul.output[0])
    if add is not None and add.op_type == "Add" and any(i in g.inits for i in add.input):
        return add.output[0]
    return matmul.output[0]


def layer_sinks(g, prefix, heads):
    """GPT-OSS's learned sink logits of one layer, [heads]: the [1, heads, 1, 1] initializer its
    attention expands and concatenates to the scores (sinks.reshape(1, -1, 1, 1).expand(...))."""
    for n in g.g.node:
        if n.op_type == "Expand" and n.name.startswith(prefix + "/") and n.input[0] in g.inits:
            v = g.const(n.input[0])
            if v.shape == (1, heads, 1, 1):
                return np.ascontiguousarray(v.reshape(heads))
    raise SystemExit(f"{prefix}: no [1, {heads}, 1, 1] sink initializer expanded")


def genai_io(model, cfg):
    """The onnxruntime-genai builder's graph I/O (its decoder models): inputs input_ids [batch_size,
    sequence_length], attention_mask [batch_size, total_sequence_length] int64 and
    past_key_values.{l}.key|value [batch_size, kv_heads, past_sequence_length, head_dim]; outputs
    logits and present.{l}.key|value [batch_size, kv_heads, total_sequence_length, head_dim] (what
    GroupQueryAttention's present_key/present_value return). seqlens_k = ReduceSum(attention_mask,
    axis 1) - 1 and total_sequence_length = attention_mask's second dimension, both int32, as the
    builder computes them. Returns (prelude nodes, per-layer (past_key, past_value, present_key,
    present_value) names)."""
    g = model.graph
    ids = g.input[0]
    ids.type.tensor_type.shape.dim[0].dim_param = "batch_size"
    ids.type.tensor_type.shape.dim[1].dim_param = "sequence_length"
    g.input.append(helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                                 ["batch_size", "total_sequence_length"]))
    caches = []
    for layer in range(cfg["num_layers"]):
        names = tuple(f"{io}.{layer}.{kv}" for io in ("past_key_values", "present") for kv in ("key", "value"))
        for n in names[:2]:
            g.input.append(helper.make_tensor_value_info(
                n, TensorProto.FLOAT, ["batch_size", cfg["num_kv_heads"], "past_sequence_length", cfg["head_dim"]]))
        for n in names[2:]:
            g.output.append(helper.make_tensor_value_info(
                n, TensorProto.FLOAT, ["batch_size", cfg["num_kv_heads"], "total_sequence_length", cfg["head_dim"]]))
        caches.append(names)
    pre = [
        helper.make_node("Constant", [], ["gqa/reduce_axes"], name="/gqa/reduce_axes",
                         value=helper.make_tensor("v", TensorProto.INT64, [1], [1])),
        helper.make_node("Constant", [], ["gqa/one"], name="/gqa/one",
                         value=helper.make_tensor("v", TensorProto.INT64, [], [1])),
        helper.make_node("ReduceSum", ["attention_mask", "gqa/reduce_axes"], ["gqa/mask_sum"],
                         name="/gqa/ReduceSum", keepdims=0),
        helper.make_node("Sub", ["gqa/mask_sum", "gqa/one"], ["gqa/last"], name="/gqa/Sub"),
        helper.make_node("Cast", ["gqa/last"], ["gqa/seqlens_k"], name="/gqa/Cast_seqlens", to=TensorProto.INT32),
        helper.make_node("Shape", ["attention_mask"], ["gqa/mask_shape"], name="/gqa/Shape"),
        helper.make_node("Gather", ["gqa/mask_shape", "gqa/one"], ["gqa/total"], name="/gqa/Gather_total", axis=0),
        helper.make_node("Cast", ["gqa/total"], ["gqa/total_sequence_length"], name="/gqa/Cast_total",
                         to=TensorProto.INT32),
    ]
    return pre, caches


def fuse_gqa(model, cfg, packed=False, genai=False):
    """Each layer's attention between its q/k/v projections and o_proj -> one
    com.microsoft.GroupQueryAttention(query, key, value, -, -, seqlens_k, total_sequence_length,
    cos_cache, sin_cache) with do_rotary 1 (onnxruntime-genai's builder, separate q/k/v MatMuls);
    seqlens_k = S - 1 per row and total_sequence_length = S computed from input_ids' shape, as the
    builder computes them from attention_mask. With `packed`, the query is packed QKV instead (a
    fused qkv_proj, key and value inputs empty), in both layouts: even layers MatMul(x, Transpose(W))
    with W [(N + 2 Nkv) H, hidden] the q, k and v nn.Linear weights ([out, in], the transposes of the
    base's [in, out] MatMul initializers) concatenated along the rows, as an export of a fused
    nn.Linear without constant folding writes it; odd layers MatMul(x, W) with W [hidden, (N + 2 Nkv) H]
    the base's q, k and v initializers concatenated along the columns, the onnxruntime-genai
    builder's layout."""
    g = Graph(model.graph)
    ids = model.graph.input[0].name
    cos, sin = rope_caches(cfg["rope_theta"], cfg["head_dim"], ROTARY_ROWS)
    model.graph.initializer.extend([numpy_helper.from_array(cos, "rotary.cos_cache"),
                                    numpy_helper.from_array(sin, "rotary.sin_cache")])
    c = lambda name, dt, dims, vals: helper.make_node(  # noqa: E731
        "Constant", [], [name], name="/gqa/" + name.split("/")[-1], value=helper.make_tensor("v", dt, dims, vals))
    pre = [
        helper.make_node("Shape", [ids], ["gqa/ids_shape"], name="/gqa/Shape"),
        c("gqa/zero", TensorProto.INT64, [], [0]), c("gqa/one", TensorProto.INT64, [], [1]),
        c("gqa/axis0", TensorProto.INT64, [1], [0]),
        helper.make_node("Gather", ["gqa/ids_shape", "gqa/zero"], ["gqa/batch"], name="/gqa/Gather_b", axis=0),
        helper.make_node("Gather", ["gqa/ids_shape", "gqa/one"], ["gqa/seq"], name="/gqa/Gather_s", axis=0),
        helper.make_node("Sub", ["gqa/seq", "gqa/one"], ["gqa/last"], name="/gqa/Sub"),
        helper.make_node("Cast", ["gqa/last"], ["gqa/last32"], name="/gqa/Cast_last", to=TensorProto.INT32),
        helper.make_node("Unsqueeze", ["gqa/batch", "gqa/axis0"], ["gqa/batch_vec"], name="/gqa/Unsqueeze"),
        helper.make_node("Expand", ["gqa/last32", "gqa/batch_vec"], ["gqa/seqlens_k"], name="/gqa/Expand"),
        helper.make_node("Cast", ["gqa/seq"], ["gqa/total_sequence_length"], name="/gqa/Cast_total",
                         to=TensorProto.INT32),
    ]
    caches = None
    if genai:
        pre, caches = genai_io(model, cfg)
    done = 0
    for layer in range(cfg["num_layers"]):
        p = f"/layers.{layer}/self_attn"
        proj = {k: next((n for n in model.graph.node if n.name == f"{p}/{k}_proj/MatMul"), None)
                for k in ("q", "k", "v", "o")}
        if any(n is None for n in proj.values()):
            raise SystemExit(f"{p}: no q/k/v/o_proj MatMul to fuse")
        merge = g.producer[proj["o"].input[0]]  # the head merge (Reshape) o_proj reads
        qkv = [biased(g, proj[k]) for k in ("q", "k", "v")]
        extra = []
        if packed:
            x = proj["q"].input[0]
            if any(proj[k].input[0] != x for k in ("k", "v")):
                raise SystemExit(f"{p}: q/k/v_proj read different inputs")
            ws = [g.const(proj[k].input[1]) for k in ("q", "k", "v")]  # [in, out] each
            wname = f"layers.{layer}.self_attn.qkv_proj.weight"
            if layer % 2 == 0:  # [out, in] behind a Transpose
                w = np.concatenate([wk.T for wk in ws], axis=0)
                extra = [helper.make_node("Transpose", [wname], [f"{p}/qkv_proj/Transpose_output_0"],
                                          name=f"{p}/qkv_proj/Transpose", perm=[1, 0])]
                rhs = f"{p}/qkv_proj/Transpose_output_0"
            else:  # [in, out]
                w = np.concatenate(ws, axis=1)
                extra, rhs = [], wname
            model.graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(w), wname))
            extra.append(helper.make_node("MatMul", [x, rhs], [f"{p}/qkv_proj/MatMul_output_0"],
                                          name=f"{p}/qkv_proj/MatMul"))
            qkv = [f"{p}/qkv_proj/MatMul_output_0", "", ""]
        past = list(caches[layer][:2]) if caches else ["", ""]
        present = list(caches[layer][2:]) if caches else [f"{p}/present_key", f"{p}/present_value"]
        inputs = qkv + past + ["gqa/seqlens_k", "gqa/total_sequence_length", "rotary.cos_cache",
                               "rotary.sin_cache"]
        window = {}
        if cfg.get("layer_types", [])[layer:layer + 1] == ["sliding_attention"]:
            # the base lets query i see keys i - W + 1 .. i (W = sliding_window); onnxruntime's
            # local_window_size L lets it see i - L .. i
            window = {"local_window_size": cfg["sliding_window"] - 1}
        if cfg.get("attention_sinks"):
            sinks = layer_sinks(g, p, cfg["num_heads"])
            sname = f"model.layers.{layer}.self_attn.sinks"
            model.graph.initializer.append(numpy_helper.from_array(sinks, sname))
            inputs += ["", "", sname]  # position_ids and attention_bias absent; head_sink is input 11
        node = helper.make_node(
            "GroupQueryAttention", inputs,
            [proj["o"].input[0]] + present,
            name=f"{p}/GroupQueryAttention", domain="com.microsoft", num_heads=cfg["num_heads"],
            kv_num_heads=cfg["num_kv_heads"], do_rotary=1, rotary_interleaved=0, **window)
        replace_nodes(model.graph, [merge], merge, extra + [node])
        done += 1
    for n in reversed(pre):
        model.graph.node.insert(0, n)
    return done


def axes_to_inputs(model, style):
    """Opset 18: Reduce*'s `axes` attribute -> second input (Constant node or int64 initializer)."""
    n_done = 0
    new_nodes = []
    for n in model.graph.node:
        if n.op_type in REDUCE18 and any(a.name == "axes" for a in n.attribute):
            axes = attr(n, "axes")
            keep = [a for a in n.attribute if a.name != "axes"]
            del n.attribute[:]
            n.attribute.extend(keep)
            name = n.name + "/axes" if n.name else n.output[0] + "/axes"
            value = numpy_helper.from_array(np.array(axes, np.int64), name)
            if style == "constant":
                c = helper.make_node("Constant", [], [name], name=name + "/Constant", value=value)
                new_nodes.append(c)
            else:
                model.graph.initializer.append(value)
            n.input.append(name)
            n_done += 1
        c = onnx.NodeProto()
        c.CopyFrom(n)
        new_nodes.append(c)
    del model.graph.node[:]
    model.graph.node.extend(new_nodes)
    return n_done


def split_num_outputs(model):
    """Opset 18: Split with an explicit equal `split` input -> `num_outputs`."""
    g = Graph(model.graph)
    done = 0
    for n in model.graph.node:
        if n.op_type != "Split" or len(n.input) < 2 or not n.input[1]:
            continue
        sizes = g.const(n.input[1])
        if sizes is None or len(set(sizes.tolist())) != 1 or len(sizes) != len(n.output):
            continue
        del n.input[1:]
        n.attribute.append(helper.make_attribute("num_outputs", len(n.output)))
        done += 1
    return done


def remove_dead(model):
    """Drops nodes none of whose outputs is read (and initializers nobody reads)."""
    g = model.graph
    needed = {o.name for o in g.output}
    keep = []
    for n in reversed(list(g.node)):
        if any(o and o in needed for o in n.output):
            keep.append(n)
            needed.update(i for i in n.input if i)
    keep.reverse()
    removed = len(g.node) - len(keep)
    copies = []
    for n in keep:
        c = onnx.NodeProto()
        c.CopyFrom(n)
        copies.append(c)
    del g.node[:]
    g.node.extend(copies)
    inits = [t for t in g.initializer if t.name in needed]
    del g.initializer[:]
    g.initializer.extend(inits)
    return removed


def write_form(name, out_dir):
    base_key, opset, axes_style, norms, attention, rotary = FORMS[name]
    base_rel = BASES[base_key]
    base_dir = os.path.join(MODELS, base_rel)
    model = onnx.load(os.path.join(base_dir, "model.onnx"))
    ops = {n.op_type for n in model.graph.node}
    if ops & UNHANDLED:
        raise SystemExit(f"{name}: the base has {sorted(ops & UNHANDLED)}, whose opset-18+ form is not written here")
    notes = {}
    if norms:
        notes.update(fuse_norms(model, norms))
    if attention:
        n_att, scales = fuse_attention(model)
        notes["attention"] = n_att
        notes["attention_scale"] = scales[0] if scales else None
    if name in GQA_FORMS:
        notes["group_query_attention"] = fuse_gqa(model, json.load(open(os.path.join(base_dir, "golden",
                                                                                    "config.json"))),
                                                  packed=name in PACKED_QKV_FORMS,
                                                  genai=name in GENAI_IO_FORMS)
    if rotary:
        cfg0 = json.load(open(os.path.join(base_dir, "golden", "config.json")))
        rotaries = fuse_rotary(model, rotary, cfg0["rope_theta"], cfg0["head_dim"])
        notes["rotary"] = len(rotaries)
        if rotary == "ort_interleaved":
            notes["permuted_for_pairs"] = len(interleave_projections(model, rotaries, cfg0["head_dim"]))
    if opset >= 18:
        notes["reduce_axes_inputs"] = axes_to_inputs(model, axes_style)
        notes["split_num_outputs"] = split_num_outputs(model)
    notes["dead_nodes_removed"] = remove_dead(model)
    if norms == "function":
        model.functions.append(rmsnorm_function(opset))
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", opset))
    if norms == "ort" or rotary in ("ort", "ort_interleaved") or name in GQA_FORMS:
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    if norms == "function":
        model.opset_import.append(helper.make_opsetid(FN_DOMAIN, 1))
    model.ir_version = IR_VERSION[opset]
    del model.metadata_props[:]
    helper.set_model_props(model, {"disagmoe.form": name, "disagmoe.base": base_rel,
                                   "disagmoe.written_by": "samples/models/newer_opsets/write_forms.py"})
    fdir = os.path.join(out_dir, name)
    gdir = os.path.join(fdir, "golden")
    os.makedirs(gdir, exist_ok=True)
    with open(os.path.join(fdir, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    cfg = json.load(open(os.path.join(base_dir, "golden", "config.json")))
    cfg.update(opset=opset, form=name, base=base_rel)
    if name in GENAI_IO_FORMS:
        cfg.update(graph_inputs=[i.name for i in model.graph.input],
                   graph_outputs=[o.name for o in model.graph.output])
    with open(os.path.join(gdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1, sort_keys=True)
        f.write("\n")
    for p in sorted(glob.glob(os.path.join(base_dir, "golden", "ids_b*_s*.npy")) +
                    glob.glob(os.path.join(base_dir, "golden", "logits_b*_s*.npy"))):
        shutil.copyfile(p, os.path.join(gdir, os.path.basename(p)))
    if rotary == "ort_interleaved":
        permuted_train_goldens(base_dir, gdir, cfg["head_dim"])
    if name in GENAI_IO_FORMS:
        # What the compiled plan binds (and onnxruntime is fed): an all-ones mask, empty caches.
        for p in sorted(glob.glob(os.path.join(base_dir, "golden", "ids_b*_s*.npy"))):
            shape = os.path.basename(p)[len("ids_"):-len(".npy")]
            b, s_ = np.load(p).shape
            np.save(os.path.join(gdir, f"attention_mask_{shape}.npy"), np.ones((b, s_), np.int64))
            for inp in cfg["graph_inputs"][2:]:
                np.save(os.path.join(gdir, f"{inp}_{shape}.npy"),
                        np.zeros((b, cfg["num_kv_heads"], 0, cfg["head_dim"]), np.float32))
    return notes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if args.check:
        tmp = tempfile.mkdtemp()
        try:
            bad = []
            for name in FORMS:
                write_form(name, tmp)
                for root, _, files in os.walk(os.path.join(tmp, name)):
                    for fn in files:
                        new = os.path.join(root, fn)
                        ref = os.path.join(HERE, os.path.relpath(new, tmp))
                        if not os.path.exists(ref) or not filecmp.cmp(new, ref, shallow=False):
                            bad.append(os.path.relpath(ref, HERE))
                ref_files = {os.path.relpath(os.path.join(r, f), HERE)
                             for r, _, fs in os.walk(os.path.join(HERE, name)) for f in fs}
                new_files = {os.path.relpath(os.path.join(r, f), tmp)
                             for r, _, fs in os.walk(os.path.join(tmp, name)) for f in fs}
                bad += sorted(ref_files - new_files)
            for b in bad:
                print(f"differs: {b}")
            print(f"{len(FORMS)} forms regenerated: {'identical' if not bad else f'{len(bad)} files differ'}")
            return 1 if bad else 0
        finally:
            shutil.rmtree(tmp)
    for name in FORMS:
        notes = write_form(name, args.out)
        print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in notes.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
