"""Shared machinery of the MoE family sample exporters (qwen3_moe_tiny, deepseek_moe_tiny,
gpt_oss_tiny): Hugging Face style building blocks, router margins, goldens, a deterministic
opset-17 export, the NumPy check of the exported graph, and `--check` regeneration.

Each family's export.py defines its model (plain PyTorch modules written in the style of that
family's Hugging Face code) and a list of variants; this module does the rest. Run the exporters
with Debian's /usr/bin/python3 (torch 1.13, onnx 1.12).

Conventions shared with samples/models/mixtral_tiny/export.py:
  * model.onnx is byte-identical between runs (`--check` fails otherwise);
  * golden/ids_b{B}_s{S}.npy and golden/logits_b{B}_s{S}.npy at 2-3 shapes, the first being the
    trace shape; token ids are redrawn until every router of every layer has a margin of at least
    ROUTER_MARGIN between the k-th and (k+1)-th score it selects on (docs/architecture.md, "Training
    semantics and numerics");
  * golden/config.json holds the exporter's hyper-parameters (tests compare the compiler's with them;
    the compiler never reads it);
  * a few layer-level intermediates and their weights (golden/l{L}_*.npy, linear weights as
    [in, out]) for kernel tests.
"""

import argparse
import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROUTER_MARGIN = 1e-3
MAX_REDRAWS = 20000
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "numerics"))
import error_model  # noqa: E402  (tests/numerics/error_model.py: the regeneration bound)
ONNX_TOLERANCE = 1e-4


# --------------------------------------------------------------------------
# Building blocks (Hugging Face style)
# --------------------------------------------------------------------------

class RMSNorm(nn.Module):
    """`w * (x * rsqrt(mean(x^2) + eps))` over the last axis (LlamaRMSNorm / Qwen3MoeRMSNorm)."""

    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return self.weight * x


class HfRMSNorm(RMSNorm):
    """Hugging Face's RMSNorm forward as transformers writes it (LlamaRMSNorm, Qwen3MoeRMSNorm,
    ...): the statistics in float32 and the result cast back to the input dtype, Casts that the
    TorchScript exporter keeps even in an fp32 model. Same parameter as RMSNorm, same values."""

    def forward(self, x):
        input_dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return self.weight * x.to(input_dtype)


def masking_utils_causal_mask(bsz, seq, dtype):
    """transformers' masking_utils for eager attention, past length 0, no padding: sdpa_mask's
    export form kv_idx <= q_idx (boolean), expanded to [bsz, 1, seq, seq], then eager_mask's
    where(mask, 0, finfo.min). min_dtype is a tensor of the mask's dtype: torch 1.13's exporter
    types a Python float next to an f32 tensor as double, a Where onnxruntime refuses."""
    cache_position = torch.arange(seq)
    kv_arange = torch.arange(seq)
    kv_arange += 0
    causal = kv_arange <= cache_position.view(-1, 1)
    causal = causal[None, None, :, :].expand(bsz, -1, -1, -1)
    min_dtype = torch.tensor(torch.finfo(dtype).min, dtype=dtype)
    return torch.where(causal, torch.tensor(0.0, dtype=dtype), min_dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n_rep):
    b, kvh, s, d = x.shape
    if n_rep == 1:
        return x
    x = x[:, :, None, :, :].expand(b, kvh, n_rep, s, d)
    return x.reshape(b, kvh * n_rep, s, d)


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, position_ids):
        inv = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        pos = position_ids[:, None, :].float()
        freqs = (inv @ pos).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


def apply_rotary_pos_emb(q, k, cos, sin):
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def causal_mask(seq):
    return torch.triu(torch.full((seq, seq), float("-inf")), 1)


def sliding_window_mask(seq, window):
    """Causal and key position > query position - window (HF sliding_window_overlay)."""
    full = torch.full((seq, seq), float("-inf"))
    return torch.triu(full, 1) + torch.tril(full, -window)


class SwiGLUMLP(nn.Module):
    """down_proj(silu(gate_proj(x)) * up_proj(x)): Qwen3MoeMLP / DeepseekMLP."""

    def __init__(self, hidden, inner):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inner, bias=False)
        self.up_proj = nn.Linear(hidden, inner, bias=False)
        self.down_proj = nn.Linear(inner, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def router_margin(scores, k):
    """Smallest gap between the k-th and (k+1)-th largest score of any row."""
    s, _ = torch.sort(scores, dim=-1, descending=True)
    if s.shape[-1] <= k:
        return float("inf")
    return float((s[:, k - 1] - s[:, k]).min())


# --------------------------------------------------------------------------
# Weights, margins, goldens
# --------------------------------------------------------------------------

def f32(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))


def i64(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.int64))


def lin(m):
    """Linear weight as [in, out], so that y = x @ W."""
    return f32(m.weight.t())


_recorded = None


def record_router_scores(scores):
    """Called by every router with the [tokens, experts] scores its top-k selects on."""
    if _recorded is not None:
        _recorded.append(scores.detach().clone())


def min_router_margin(model, ids):
    """Runs the model recording, per MoE layer, the scores its top-k selects on."""
    global _recorded
    _recorded = []
    try:
        with torch.no_grad():
            model(ids)
        scores = _recorded
    finally:
        _recorded = None
    return min(router_margin(s, model.cfg["top_k"]) for s in scores)


def _router_scores(model, ids):
    global _recorded
    _recorded = []
    try:
        with torch.no_grad():
            model(ids)
        return _recorded
    finally:
        _recorded = None


def draw_ids(model, batch, seq, seed):
    """Token ids whose every router row has a margin: sequences are independent and the model is
    causal, so each position's token is drawn (seeded) until the routers of all layers have the
    margin at that position, given the tokens before it."""
    g = torch.Generator().manual_seed(seed)
    k = model.cfg["top_k"]
    ids = torch.zeros((batch, seq), dtype=torch.int64)
    for b in range(batch):
        for t in range(seq):
            for _ in range(MAX_REDRAWS):
                ids[b, t] = int(torch.randint(0, model.cfg["vocab_size"], (1,), generator=g))
                scores = _router_scores(model, ids[b:b + 1, :t + 1])
                if all(router_margin(s[t:t + 1], k) >= 1.1 * ROUTER_MARGIN for s in scores):
                    break
            else:
                raise SystemExit(f"no router margin at sequence {b}, position {t}")
    margin = min_router_margin(model, ids)
    if margin < ROUTER_MARGIN:
        raise SystemExit(f"router margin {margin} of the whole batch {(batch, seq)} is too small")
    return ids, seed, margin


def write_goldens(variant, model, gdir):
    """ids/logits at every shape, config.json and the variant's layer-level intermediates."""
    os.makedirs(gdir, exist_ok=True)
    files, seeds = {}, {}
    trace_ids = None
    with torch.no_grad():
        for i, (b, s) in enumerate(variant["shapes"]):
            ids, seed, margin = draw_ids(model, b, s, variant["seed_base"] + 1000 * i)
            seeds[(b, s)] = (seed, margin)
            files[f"ids_b{b}_s{s}.npy"] = i64(ids)
            files[f"logits_b{b}_s{s}.npy"] = f32(model(ids))
            if i == 0:
                trace_ids = ids
        files.update(model.intermediates(trace_ids))
    for name in sorted(files):
        np.save(os.path.join(gdir, name), files[name], allow_pickle=False)
    with open(os.path.join(gdir, "config.json"), "w") as f:
        json.dump(model.cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    return files, seeds, trace_ids


def export_onnx(model, ids, path):
    import onnx

    tmp = path + ".tmp"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, ids, tmp, opset_version=17, input_names=["input_ids"], output_names=["logits"],
            dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}},
            do_constant_folding=True)
    m = onnx.load(tmp)
    os.remove(tmp)
    m.doc_string = ""
    m.graph.doc_string = ""
    for n in m.graph.node:
        n.doc_string = ""
    onnx.checker.check_model(m)
    with open(path, "wb") as f:
        f.write(m.SerializeToString(deterministic=True))
    return m


def verify_onnx(m, variant, files, quiet):
    """Runs the exported graph with the NumPy interpreter at every golden shape."""
    import onnx_ref_ext

    for (b, s) in variant["shapes"]:
        got = onnx_ref_ext.run_model(m, {"input_ids": files[f"ids_b{b}_s{s}.npy"]})["logits"]
        want = files[f"logits_b{b}_s{s}.npy"]
        err = float(np.max(np.abs(got.astype(np.float64) - want)))
        if got.shape != want.shape or not err <= ONNX_TOLERANCE:
            raise SystemExit(f"{variant['name']}: model.onnx disagrees with the eager model at "
                             f"{(b, s)}: shape {got.shape}, max |diff| {err}")
        if not quiet:
            print(f"{variant['name']}: model.onnx vs eager logits at (batch {b}, seq {s}): "
                  f"max |diff| {err:.2e}")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def generate_variant(variant, out_dir, quiet=False):
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(variant["weight_seed"])
    model = variant["build"]()
    gdir = os.path.join(out_dir, "golden")
    if os.path.isdir(gdir):
        for f in os.listdir(gdir):
            if f.endswith(".npy") or f == "config.json":
                os.remove(os.path.join(gdir, f))
    files, seeds, trace_ids = write_goldens(variant, model, gdir)
    path = os.path.join(out_dir, "model.onnx")
    m = export_onnx(model, trace_ids, path)
    verify_onnx(m, variant, files, quiet)
    if not quiet:
        import collections
        hist = collections.Counter(n.op_type for n in m.graph.node)
        for (b, s), (seed, margin) in seeds.items():
            print(f"{variant['name']}: ids_b{b}_s{s}: seed {seed}, min router margin {margin:.6f}")
        print(f"{variant['name']}: model.onnx {os.path.getsize(path)} bytes, {len(m.graph.node)} nodes, "
              f"{len(m.graph.initializer)} initializers, sha256 {sha256(path)}")
        print("op types: " + ", ".join(f"{k} {v}" for k, v in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))))


def compare_dirs(ref_dir, new_dir, label):
    ok = True
    a, b = os.path.join(ref_dir, "model.onnx"), os.path.join(new_dir, "model.onnx")
    if not os.path.exists(a) or sha256(a) != sha256(b):
        print(f"{label}/model.onnx differs: {sha256(a) if os.path.exists(a) else 'missing'} vs {sha256(b)}")
        ok = False
    rg, tg = os.path.join(ref_dir, "golden"), os.path.join(new_dir, "golden")
    ref_files = {f for f in os.listdir(rg) if os.path.isfile(os.path.join(rg, f))} if os.path.isdir(rg) else set()
    new_files = set(os.listdir(tg))
    for f in sorted(ref_files ^ new_files):
        print(f"{label}/golden/{f}: present in only one of the two folders")
        ok = False
    for f in sorted(ref_files & new_files):
        if f.endswith(".npy"):
            same, text = error_model.compare_regenerated(f"{label}/golden/{f}", np.load(os.path.join(rg, f)),
                                                         np.load(os.path.join(tg, f)), error_model.forward_chain_of(rg))
            if not same:
                print(text)
                ok = False
        elif f == "config.json":
            with open(os.path.join(rg, f)) as fa, open(os.path.join(tg, f)) as fb:
                if json.load(fa) != json.load(fb):
                    print(f"{label}/golden/config.json differs")
                    ok = False
    return ok


def main(here, variants, doc):
    """Command line of a family exporter: write every variant under --out, or --check them."""
    sys.dont_write_bytecode = True
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=here, help="output folder (default: the script's folder)")
    ap.add_argument("--check", nargs="?", const=here, metavar="DIR",
                    help="regenerate into a temporary folder and compare with DIR")
    args = ap.parse_args()
    torch.set_num_threads(1)  # fixed reduction order for bitwise-reproducible goldens
    if args.check is None:
        for v in variants:
            generate_variant(v, os.path.join(args.out, v["subdir"]))
        return
    ok = True
    tmp = tempfile.mkdtemp(prefix="family_check_")
    try:
        for v in variants:
            new = os.path.join(tmp, v["subdir"])
            generate_variant(v, new, quiet=True)
            ok &= compare_dirs(os.path.join(args.check, v["subdir"]), new, v["name"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(error_model.worst_regenerated())
    print("check: OK" if ok else "check: FAILED")
    sys.exit(0 if ok else 1)
