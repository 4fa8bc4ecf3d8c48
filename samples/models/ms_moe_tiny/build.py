#!/usr/bin/python3
"""Samples of onnxruntime's fused `com.microsoft.MoE` contrib op, with PyTorch goldens.

No PyTorch exporter writes this op, so each sample is built in two steps: torch.onnx.export writes
a small Mixtral-style decoder (samples/models/mixtral_tiny/export.py's modules, 2 layers, 4 experts)
whose MoE block is a placeholder `x2 * ReduceSum(router_logits)`, and the `onnx` helper replaces
each placeholder by one `com.microsoft.MoE` node reading x2 and the router logits, with stacked
expert weights as initializers. The goldens come from an independent PyTorch implementation of the
op's semantics (`ort_moe` below).

    /usr/bin/python3 samples/models/ms_moe_tiny/build.py            # writes FORM/model.onnx, FORM/golden/
    /usr/bin/python3 samples/models/ms_moe_tiny/build.py --check    # regenerates in a temp dir, compares

Semantics of com.microsoft.MoE (onnxruntime >= 1.22; sources: onnxruntime
onnxruntime/contrib_ops/cpu/moe/moe_base_cpu.h (attribute defaults), moe_cpu.cc (routing, GEMMs),
moe_utils.cc (ApplySwiGLUActivation), moe_helper.h (CheckInputs: weight shapes),
docs/ContribOperators.md and contrib_ops/cuda/moe/README.md (swiglu_fusion 2 = block [gate; value])):
  attributes and defaults: k = 1, activation_type = "relu", normalize_routing_weights = 0,
    swiglu_fusion = 0 (0 separate, 1 interleaved gate/value rows, 2 concatenated [gate; value]),
    swiglu_limit = +inf (no clamp), activation_alpha = 1.0, activation_beta = 0.0, use_sparse_mixer = 0;
  inputs: input [T, H] (or [B, S, H]), router_probs [T, E] (logits: softmax is applied inside),
    fc1_experts_weights [E, f*I, H] (f = 2 for fused SwiGLU), fc1_experts_bias [E, f*I],
    fc2_experts_weights [E, H, I], fc2_experts_bias [E, H], fc3_experts_weights [E, I, H],
    fc3_experts_bias [E, I]; every linear is y = x W^T + b (weights stored [out, in]);
  routing: p = softmax(router_probs) over all E experts, the k largest, divided by their sum when
    normalize_routing_weights = 1;
  expert: a = x fc1^T + b1; swiglu: g, v = a's gate and value parts, g = min(g, limit),
    v = clamp(v, -limit, limit), act = g * sigmoid(alpha * g) * (v + beta); other activations:
    act = f(a) (times x fc3^T + b3 when fc3 is given); y = act fc2^T + b2; f is relu = max(0, a),
    silu = a sigmoid(a), identity = a, or gelu, which onnxruntime computes with the tanh
    approximation 0.5 a (1 + tanh(0.7978845608 (a + 0.044715 a^3))) (moe_utils.cc ApplyActivation),
    not erf (the golden uses torch's F.gelu(approximate="tanh"));
  output: sum over the k experts of weight * y.
onnxruntime's CPU provider (1.23) runs interleaved SwiGLU and single-projection (non-gated) activations but
not fc3 ("FC3 is not implemented for CPU MoE") nor concatenated SwiGLU; for those forms the
PyTorch golden is the only oracle (golden/oracle.json says so).
"""

import argparse
import importlib.util
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "mixtral_tiny_export", os.path.join(HERE, "..", "mixtral_tiny", "export.py"))
mx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mx)
error_model = mx.error_model  # tests/numerics/error_model.py: the regeneration bound

CONFIG = dict(mx.CONFIG, num_layers=2, num_experts=4, expert_hidden=32, top_k=2)
GOLDEN_SHAPES = [(2, 8), (1, 5)]
ID_SEED_BASE = {(2, 8): 5000, (1, 5): 6000}
ROUTER_MARGIN = 2e-3

# Each form: the MoE node's attributes, which optional inputs it has, and whether onnxruntime's CPU
# provider runs it.
FORMS = {
    # Mixtral's experts as onnxruntime's converter writes them: silu(fc1) * fc3, then fc2.
    "silu_fc3": dict(attrs=dict(k=2, activation_type="silu", normalize_routing_weights=1),
                     fc3=True, bias=False, fusion=0, ort=False),
    # The same experts with gate/value rows interleaved in fc1 (swiglu; activation_alpha,
    # activation_beta and swiglu_limit left to their defaults 1, 0, +inf), the node reading the
    # 3-D [batch, seq, hidden] input beside the 2-D router logits.
    "swiglu_interleaved": dict(attrs=dict(k=2, activation_type="swiglu", swiglu_fusion=1,
                                          normalize_routing_weights=1),
                               fc3=False, bias=False, fusion=1, ort=True, input3d=True),
    # Concatenated [gate; value] rows, no renormalisation of the top-k weights.
    "swiglu_concat": dict(attrs=dict(k=2, activation_type="swiglu", swiglu_fusion=2,
                                     normalize_routing_weights=0),
                          fc3=False, bias=False, fusion=2, ort=False),
    # GPT-OSS's clamped SwiGLU: alpha 1.702, beta 1, limit 7, with fc1/fc2 biases and a router bias
    # (router_probs = MatMul(x, Wg) + b).
    "swiglu_oai_bias": dict(attrs=dict(k=2, activation_type="swiglu", swiglu_fusion=1,
                                       activation_alpha=1.702, activation_beta=1.0, swiglu_limit=7.0,
                                       normalize_routing_weights=0),
                            fc3=False, bias=True, fusion=1, ort=True, router_bias=True),
    # Separate fc3 with biases on all three projections.
    "silu_fc3_bias": dict(attrs=dict(k=2, activation_type="silu", normalize_routing_weights=0),
                          fc3=True, bias=True, fusion=0, ort=False),
    # The clamped SwiGLU on concatenated [gate; value] rows with fc1/fc2 biases (the bias split
    # into the same halves), renormalised top-k weights.
    "swiglu_concat_oai_bias": dict(attrs=dict(k=2, activation_type="swiglu", swiglu_fusion=2,
                                              activation_alpha=1.702, activation_beta=1.0,
                                              swiglu_limit=7.0, normalize_routing_weights=1),
                                   fc3=False, bias=True, fusion=2, ort=False),
    # Non-gated experts (fc1 -> act -> fc2, no fc3), which onnxruntime's CPU provider runs
    # (moe_utils.cc ApplyActivation). onnxruntime's default activation: no activation_type
    # attribute at all reads as relu.
    "relu_default": dict(attrs=dict(k=2, normalize_routing_weights=1),
                         fc3=False, bias=False, fusion=0, ort=True, plain=True),
    # gelu is onnxruntime's tanh approximation; with fc1/fc2 biases.
    "gelu_bias": dict(attrs=dict(k=2, activation_type="gelu", normalize_routing_weights=0),
                      fc3=False, bias=True, fusion=0, ort=True, plain=True),
    # silu without fc3: silu(fc1) then fc2.
    "silu_plain": dict(attrs=dict(k=2, activation_type="silu", normalize_routing_weights=1),
                       fc3=False, bias=False, fusion=0, ort=True, plain=True),
    # identity: two linears, with fc1/fc2 biases.
    "identity_bias": dict(attrs=dict(k=2, activation_type="identity", normalize_routing_weights=0),
                          fc3=False, bias=True, fusion=0, ort=True, plain=True),
}

SWIGLU_DEFAULTS = dict(activation_alpha=1.0, activation_beta=0.0, swiglu_limit=math.inf)


def expert_tensors(model, form, layer_index):
    """Stacked expert weights of one layer in onnxruntime's layout (fp32 numpy)."""
    moe = model.layers[layer_index].block_sparse_moe
    w1 = torch.stack([e.w1.weight for e in moe.experts])  # [E, I, H] gate
    w3 = torch.stack([e.w3.weight for e in moe.experts])  # [E, I, H] value (up)
    w2 = torch.stack([e.w2.weight for e in moe.experts])  # [E, H, I]
    E, I, H = w1.shape
    t = {}
    if form["fusion"] == 1:
        fc1 = torch.empty(E, 2 * I, H)
        fc1[:, 0::2], fc1[:, 1::2] = w1, w3
        t["fc1"] = fc1
    elif form["fusion"] == 2:
        t["fc1"] = torch.cat([w1, w3], dim=1)
    elif form.get("plain"):  # one projection: the gate weight alone (w3 unused)
        t["fc1"] = w1
    else:
        t["fc1"], t["fc3"] = w1, w3
    t["fc2"] = w2
    if form["bias"]:
        g = torch.Generator().manual_seed(100 + layer_index)
        t["fc1_bias"] = 0.1 * torch.randn(E, t["fc1"].shape[1], generator=g)
        t["fc2_bias"] = 0.1 * torch.randn(E, H, generator=g)
        if "fc3" in t:
            t["fc3_bias"] = 0.1 * torch.randn(E, I, generator=g)
    if form.get("router_bias"):
        g = torch.Generator().manual_seed(200 + layer_index)
        t["router_bias"] = 0.3 * torch.randn(E, generator=g)
    return {k: v.detach().float().contiguous() for k, v in t.items()}


def ort_moe(x, logits, t, attrs):
    """com.microsoft.MoE, written from the semantics in the module docstring, token by token."""
    k = attrs.get("k", 1)
    act = attrs.get("activation_type", "relu")
    p = torch.softmax(logits.double(), dim=-1)
    vals, ids = torch.topk(p, k, dim=-1)
    if attrs.get("normalize_routing_weights", 0) == 1:
        vals = vals / vals.sum(-1, keepdim=True)
    fusion = attrs.get("swiglu_fusion", 0)
    alpha = attrs.get("activation_alpha", SWIGLU_DEFAULTS["activation_alpha"])
    beta = attrs.get("activation_beta", SWIGLU_DEFAULTS["activation_beta"])
    limit = attrs.get("swiglu_limit", SWIGLU_DEFAULTS["swiglu_limit"])
    out = torch.zeros(x.shape, dtype=torch.float64)
    xd = x.double()
    for tok in range(x.shape[0]):
        for j in range(k):
            e = int(ids[tok, j])
            a = t["fc1"][e].double() @ xd[tok]
            if "fc1_bias" in t:
                a = a + t["fc1_bias"][e].double()
            if act == "swiglu":
                I = a.shape[0] // 2
                g, v = (a[0::2], a[1::2]) if fusion == 1 else (a[:I], a[I:])
                g = torch.clamp(g, max=limit)
                v = torch.clamp(v, min=-limit, max=limit)
                h = g * torch.sigmoid(alpha * g) * (v + beta)
            elif act == "silu":
                h = a * torch.sigmoid(a)
                if "fc3" in t:
                    u = t["fc3"][e].double() @ xd[tok]
                    if "fc3_bias" in t:
                        u = u + t["fc3_bias"][e].double()
                    h = h * u
            elif act == "relu":
                h = torch.relu(a)
            elif act == "gelu":  # onnxruntime's CPU provider: the tanh approximation
                h = F.gelu(a, approximate="tanh")
            elif act == "identity":
                h = a
            else:
                raise ValueError(act)
            y = t["fc2"][e].double() @ h
            if "fc2_bias" in t:
                y = y + t["fc2_bias"][e].double()
            out[tok] += vals[tok, j] * y
    return out.float()


class PlaceholderMoe(nn.Module):
    """Export stand-in: router logits of the flattened tokens, then a marker x2 * sum(logits)."""

    def __init__(self, gate):
        super().__init__()
        self.gate = gate

    def forward(self, x):
        b, s, h = x.shape
        x2 = x.reshape(-1, h)
        logits = self.gate(x2)
        return (x2 * logits.sum(-1, keepdim=True)).reshape(b, s, h)


class OrtMoe(nn.Module):
    """The golden forward of one layer's com.microsoft.MoE."""

    def __init__(self, gate, tensors, attrs):
        super().__init__()
        self.gate, self.t, self.attrs = gate, tensors, attrs

    def forward(self, x):
        b, s, h = x.shape
        x2 = x.reshape(-1, h)
        return ort_moe(x2, router_logits(self, x2), self.t, self.attrs).reshape(b, s, h)


def router_logits(block, x2):
    """router_probs as the graph computes them: x2 Wg (+ b)."""
    logits = block.gate(x2)
    if "router_bias" in block.t:
        logits = logits + block.t["router_bias"]
    return logits


def min_margin(model, ids):
    """Smallest gap between the j-th and (j+1)-th router probability (j <= k) over all layers."""
    k, worst = CONFIG["top_k"], float("inf")
    with torch.no_grad():
        cos, sin, mask = model.rope_and_mask(ids)
        x = model.embed_tokens(ids)
        for layer in model.layers:
            h = x + layer.self_attn(layer.input_layernorm(x), cos, sin, mask)
            n = layer.post_attention_layernorm(h)
            p = torch.softmax(router_logits(layer.block_sparse_moe, n.reshape(-1, n.shape[-1])), dim=-1)
            s, _ = torch.sort(p, dim=-1, descending=True)
            worst = min(worst, float((s[:, :k] - s[:, 1:k + 1]).min()))
            x = h + layer.block_sparse_moe(n)
    return worst


def build_onnx(model, tensors, form, ids, path):
    """Export with the placeholder, then swap each placeholder for a com.microsoft.MoE node."""
    import onnx
    from onnx import helper, numpy_helper

    golden_blocks = [l.block_sparse_moe for l in model.layers]
    for l in model.layers:
        l.block_sparse_moe = PlaceholderMoe(l.block_sparse_moe.gate)
    try:
        tmp = path + ".tmp"
        mx.export_onnx(model, ids, tmp)
        m = onnx.load(tmp)
        os.remove(tmp)
    finally:
        for l, blk in zip(model.layers, golden_blocks):
            l.block_sparse_moe = blk
    g = m.graph
    producers = {o: n for n in g.node for o in n.output}
    reduces = [n for n in g.node if n.op_type == "ReduceSum" and producers.get(n.input[0]) is not None
               and producers[n.input[0]].op_type == "MatMul"]
    assert len(reduces) == CONFIG["num_layers"], f"expected one placeholder per layer, got {len(reduces)}"
    nodes = []
    layer = 0
    drop = {id(n) for n in reduces}
    for n in g.node:
        if id(n) in drop:
            continue
        if n.op_type == "Mul" and any(r.output[0] in n.input for r in reduces):
            r = next(r for r in reduces if r.output[0] in n.input)
            x2 = n.input[0] if n.input[1] == r.output[0] else n.input[1]
            logits = r.input[0]
            t = tensors[layer]
            if form.get("input3d"):  # the [b, s, h] tensor that x2 flattens
                x2 = producers[x2].input[0]
            if "router_bias" in t:
                bias = f"moe.{layer}.router_bias"
                g.initializer.append(numpy_helper.from_array(t["router_bias"].numpy(), bias))
                nodes.append(helper.make_node("Add", [logits, bias], [logits + "_biased"],
                                              name=f"/layers.{layer}/moe/router_bias/Add"))
                logits += "_biased"
            names = []
            for key in ["fc1", "fc1_bias", "fc2", "fc2_bias", "fc3", "fc3_bias"]:
                if key in t:
                    name = f"moe.{layer}.{key}"
                    g.initializer.append(numpy_helper.from_array(t[key].numpy(), name))
                    names.append(name)
                else:
                    names.append("")
            while names and names[-1] == "":
                names.pop()
            nodes.append(helper.make_node("MoE", [x2, logits] + names, list(n.output),
                                          name=f"/layers.{layer}/moe/MoE", domain="com.microsoft",
                                          **form["attrs"]))
            layer += 1
        else:
            nodes.append(n)
    del g.node[:]
    g.node.extend(nodes)
    # Drop initializers and Constant nodes that the placeholder alone used (ReduceSum axes).
    used = {i for n in g.node for i in n.input} | {o.name for o in g.output}
    keep = [n for n in g.node if not (n.op_type == "Constant" and n.output[0] not in used)]
    del g.node[:]
    g.node.extend(keep)
    used = {i for n in g.node for i in n.input}
    inits = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(inits)
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.checker.check_model(m)
    data = m.SerializeToString(deterministic=True)
    with open(path + ".part", "wb") as f:
        f.write(data)
    os.replace(path + ".part", path)


def generate_form(name, out_dir):
    form = FORMS[name]
    torch.manual_seed(0)
    saved = dict(mx.CONFIG)
    mx.CONFIG.clear()
    mx.CONFIG.update(CONFIG)
    try:
        model = mx.build_model()
    finally:
        mx.CONFIG.clear()
        mx.CONFIG.update(saved)
    tensors = [expert_tensors(model, form, l) for l in range(CONFIG["num_layers"])]
    for l, layer in enumerate(model.layers):
        layer.block_sparse_moe = OrtMoe(layer.block_sparse_moe.gate, tensors[l], form["attrs"])
    gdir = os.path.join(out_dir, "golden")
    os.makedirs(gdir, exist_ok=True)
    files, trace = {}, None
    with torch.no_grad():
        for (b, s) in GOLDEN_SHAPES:
            for seed in range(ID_SEED_BASE[(b, s)], ID_SEED_BASE[(b, s)] + 1000):
                gen = torch.Generator().manual_seed(seed)
                ids = torch.randint(0, CONFIG["vocab_size"], (b, s), generator=gen, dtype=torch.int64)
                if min_margin(model, ids) >= ROUTER_MARGIN:
                    break
            else:
                raise SystemExit(f"{name}: no router margin for {(b, s)}")
            files[f"ids_b{b}_s{s}.npy"] = ids.numpy().astype(np.int64)
            files[f"logits_b{b}_s{s}.npy"] = model(ids).numpy().astype(np.float32)
            if trace is None:
                trace = ids
    for f, a in files.items():
        np.save(os.path.join(gdir, f), a, allow_pickle=False)
    attrs = form["attrs"]
    cfg = dict(CONFIG, family="mixtral", num_shared_experts=0, dense_layers=[],
               router_scoring="softmax_topk_renorm" if attrs.get("normalize_routing_weights", 0) == 1
               else "softmax_topk",
               norm_topk_prob=attrs.get("normalize_routing_weights", 0) == 1,
               moe_attributes=attrs)
    with open(os.path.join(gdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    oracle = {"onnxruntime": form["ort"]}
    if not form["ort"]:
        oracle["reason"] = ("onnxruntime's CPU provider does not run this form of com.microsoft.MoE "
                            "(separate fc3 or concatenated SwiGLU); the PyTorch golden is the oracle")
    with open(os.path.join(gdir, "oracle.json"), "w") as f:
        json.dump(oracle, f, indent=2, sort_keys=True)
        f.write("\n")
    build_onnx(model, tensors, form, trace, os.path.join(out_dir, "model.onnx"))


def check():
    ok = True
    tmp = tempfile.mkdtemp(prefix="ms_moe_tiny_check_")
    try:
        for name in FORMS:
            generate_form(name, os.path.join(tmp, name))
            ref, new = os.path.join(HERE, name), os.path.join(tmp, name)
            with open(os.path.join(ref, "model.onnx"), "rb") as a, open(os.path.join(new, "model.onnx"), "rb") as b:
                if a.read() != b.read():
                    print(f"{name}/model.onnx differs")
                    ok = False
            for f in sorted(os.listdir(os.path.join(new, "golden"))):
                pa, pb = os.path.join(ref, "golden", f), os.path.join(new, "golden", f)
                if not os.path.exists(pa):
                    print(f"{name}/golden/{f} missing")
                    ok = False
                elif f.endswith(".npy"):
                    same, text = error_model.compare_regenerated(f"{name}/golden/{f}", np.load(pa), np.load(pb),
                                                                 error_model.forward_chain_of(os.path.join(ref, "golden")))
                    if not same:
                        print(text)
                        ok = False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("check: OK" if ok else "check: FAILED")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="regenerate into a temp dir and compare")
    ap.add_argument("forms", nargs="*", choices=[[]] + list(FORMS), help="forms to write (default: all)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.check:
        sys.exit(0 if check() else 1)
    for name in args.forms or FORMS:
        generate_form(name, os.path.join(HERE, name))
        print(f"{name}: written")


if __name__ == "__main__":
    main()
