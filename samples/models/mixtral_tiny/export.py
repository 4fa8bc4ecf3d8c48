#!/usr/bin/python3
"""Export a tiny Mixtral-style MoE decoder to ONNX, with golden values.

Run with Debian's Python (it has torch 1.13 and onnx 1.12):

    /usr/bin/python3 samples/models/mixtral_tiny/export.py [--out DIR]
    /usr/bin/python3 samples/models/mixtral_tiny/export.py --check [DIR]

The first form writes DIR/model.onnx and DIR/golden/ (DIR defaults to this
script's folder).  The second regenerates everything into a temporary folder
and checks that model.onnx is byte-identical to DIR/model.onnx and that every
golden file matches within the fp32 error model's bound
(tests/numerics/error_model.py); it exits non-zero otherwise.

The modules follow the Hugging Face Mixtral code (RMSNorm, rotate-half RoPE,
grouped-query attention with repeat_kv, softmax-top-k-renormalise router and
the loop over experts with index_add_), written here in plain PyTorch.
RMSNorm is exactly Hugging Face's `w * (x * rsqrt(mean(x^2) + eps))`; the
exporter writes rsqrt as Sqrt then Div(1, .), so the export has the form that
real exports show: Pow -> ReduceMean -> Add -> Sqrt -> Div -> Mul -> Mul.
"""

import argparse
import hashlib
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "numerics"))
import error_model  # noqa: E402  (the regeneration bound)

CONFIG = {
    "vocab_size": 256,
    "hidden_size": 64,
    "num_layers": 4,
    "num_heads": 4,
    "num_kv_heads": 2,
    "head_dim": 16,
    "expert_hidden": 128,
    "num_experts": 8,
    "top_k": 2,
    "rope_theta": 10000.0,
    "rms_norm_eps": 1e-5,
    "router_scoring": "softmax_topk_renorm",
    "trace_batch": 2,
    "trace_seq": 8,
}

# Golden shapes (batch, seq); the first one is the trace shape.
GOLDEN_SHAPES = [(2, 8), (1, 5), (3, 12)]
# Minimum gap between the k-th and (k+1)-th router probability: the goldens need
# 1e-3 (docs/architecture.md, "Training semantics and numerics"); twice that
# leaves headroom.
ROUTER_MARGIN = 2e-3
# Seed of the first draw of token ids for each golden shape; redraws use
# the following seeds in order until every router of every layer has a margin.
ID_SEED_BASE = {(2, 8): 1000, (1, 5): 2000, (3, 12): 3000}
MAX_REDRAWS = 10000
# A regenerated golden (PyTorch fp32 on this machine's BLAS kernel) agrees with the committed one
# within the fp32 error model's bound for the longest chain of the forward (tests/numerics/error_model.py).
GOLDEN_CHAIN = error_model.chain_length(CONFIG, max(s for _, s in GOLDEN_SHAPES))


# --------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return self.weight * x


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n_rep):
    # [b, kv_heads, s, d] -> [b, kv_heads * n_rep, s, d], as in Hugging Face.
    b, kvh, s, d = x.shape
    if n_rep == 1:
        return x
    x = x[:, :, None, :, :].expand(b, kvh, n_rep, s, d)
    return x.reshape(b, kvh * n_rep, s, d)


class RotaryEmbedding(nn.Module):
    """cos/sin for positions 0..seq-1, as Hugging Face (>= 4.38) computes them once per forward."""

    def __init__(self, dim, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, position_ids):
        # position_ids: [1, s] -> cos, sin: [1, s, dim]
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


def apply_rotary_pos_emb(q, k, cos, sin):
    cos = cos.unsqueeze(1)  # [1, 1, s, d], broadcast over batch and heads
    sin = sin.unsqueeze(1)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h = cfg["hidden_size"]
        self.num_heads = cfg["num_heads"]
        self.num_kv_heads = cfg["num_kv_heads"]
        self.head_dim = cfg["head_dim"]
        self.q_proj = nn.Linear(h, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(h, self.num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(h, self.num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, h, bias=False)

    def forward(self, x, cos, sin, mask):
        bsz, q_len, _ = x.size()
        q = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, self.num_kv_heads, self.head_dim).transpose(1, 2)

        q, k = apply_rotary_pos_emb(q, k, cos, sin)

        n_rep = self.num_heads // self.num_kv_heads
        k = repeat_kv(k, n_rep)
        v = repeat_kv(v, n_rep)

        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + mask
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(probs, v)
        out = out.transpose(1, 2).contiguous().reshape(bsz, q_len, self.num_heads * self.head_dim)
        return self.o_proj(out)


class Expert(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, f = cfg["hidden_size"], cfg["expert_hidden"]
        self.w1 = nn.Linear(h, f, bias=False)
        self.w2 = nn.Linear(f, h, bias=False)
        self.w3 = nn.Linear(h, f, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoeBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.hidden = cfg["hidden_size"]
        self.num_experts = cfg["num_experts"]
        self.top_k = cfg["top_k"]
        self.gate = nn.Linear(self.hidden, self.num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(cfg) for _ in range(self.num_experts)])

    def route(self, x):
        """x: [T, hidden] -> (logits, probs, top-k weights, top-k ids)."""
        logits = self.gate(x)
        probs = F.softmax(logits, dim=-1, dtype=torch.float)
        w, ids = torch.topk(probs, self.top_k, dim=-1)
        w = w / w.sum(dim=-1, keepdim=True)
        w = w.to(x.dtype)
        return logits, probs, w, ids

    def forward(self, x):
        bsz, seq, hidden = x.shape
        x = x.view(-1, hidden)
        _, _, w, ids = self.route(x)
        final = torch.zeros((bsz * seq, hidden), dtype=x.dtype, device=x.device)
        expert_mask = F.one_hot(ids, num_classes=self.num_experts).permute(2, 1, 0)
        for e in range(self.num_experts):
            idx, top_x = torch.where(expert_mask[e])
            cur = x[None, top_x].reshape(-1, hidden)
            out = self.experts[e](cur) * w[top_x, idx, None]
            final.index_add_(0, top_x, out.to(x.dtype))
        return final.reshape(bsz, seq, hidden)


class DecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        eps = cfg["rms_norm_eps"]
        self.input_layernorm = RMSNorm(cfg["hidden_size"], eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg["hidden_size"], eps)
        self.block_sparse_moe = SparseMoeBlock(cfg)

    def forward(self, x, cos, sin, mask):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return h + self.block_sparse_moe(self.post_attention_layernorm(h))


class MixtralTiny(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList([DecoderLayer(cfg) for _ in range(cfg["num_layers"])])
        self.norm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        self.rotary_emb = RotaryEmbedding(cfg["head_dim"], cfg["rope_theta"])

    def rope_and_mask(self, input_ids):
        """cos, sin [1, s, head_dim] and the causal mask [s, s], computed once per forward."""
        seq = input_ids.shape[1]
        position_ids = torch.arange(seq).unsqueeze(0)
        cos, sin = self.rotary_emb(position_ids)
        mask = torch.triu(torch.full((seq, seq), float("-inf")), 1)
        return cos, sin, mask

    def forward(self, input_ids):
        cos, sin, mask = self.rope_and_mask(input_ids)
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


def build_model():
    """Deterministic fp32 weights.

    Embeddings ~ N(0, 1), so the residual stream has unit scale; every Linear
    ~ N(0, 1/in), except the router ~ N(0, 0.2^2) (logits spread by about
    0.2 * sqrt(64) = 1.6, so that top-k choices have margins); RMSNorm weights
    1 + N(0, 0.1^2), so that a kernel that forgets the norm weight is caught
    by the goldens.
    """
    torch.manual_seed(0)
    model = MixtralTiny(CONFIG)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("embed_tokens.weight"):
                p.normal_(0.0, 1.0)
            elif "layernorm" in name or name == "norm.weight":
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name.endswith("gate.weight"):
                p.normal_(0.0, 0.2)
            else:  # Linear weight [out, in]
                p.normal_(0.0, 1.0 / math.sqrt(p.shape[1]))
    model.eval()
    return model.float()


# --------------------------------------------------------------------------
# Router margins and goldens
# --------------------------------------------------------------------------

def router_probs_per_layer(model, ids):
    """Router probabilities [T, E] of every layer, for ids [B, S]."""
    out = []
    with torch.no_grad():
        cos, sin, mask = model.rope_and_mask(ids)
        x = model.embed_tokens(ids)
        for layer in model.layers:
            h = x + layer.self_attn(layer.input_layernorm(x), cos, sin, mask)
            n = layer.post_attention_layernorm(h)
            _, probs, _, _ = layer.block_sparse_moe.route(n.reshape(-1, n.shape[-1]))
            out.append(probs)
            x = h + layer.block_sparse_moe(n)
    return out


def min_router_margin(model, ids):
    """Smallest gap, over every token of every layer, between the j-th and
    (j+1)-th largest router probabilities for j = 1..k.  j = k is the margin
    that the goldens need (docs/architecture.md, "Training semantics and
    numerics": the chosen set cannot flip); j < k also keeps
    the order of the top-k ids (TopK's output order) stable."""
    k = CONFIG["top_k"]
    worst = float("inf")
    for probs in router_probs_per_layer(model, ids):
        s, _ = torch.sort(probs, dim=-1, descending=True)
        worst = min(worst, float((s[:, : k] - s[:, 1 : k + 1]).min()))
    return worst


def draw_ids(model, batch, seq):
    """Seeded token ids with a router margin in every layer; redraw with the next seed."""
    base = ID_SEED_BASE[(batch, seq)]
    for seed in range(base, base + MAX_REDRAWS):
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(0, CONFIG["vocab_size"], (batch, seq), generator=g, dtype=torch.int64)
        margin = min_router_margin(model, ids)
        if margin >= ROUTER_MARGIN:
            return ids, seed, margin
    raise SystemExit(f"no router margin for shape {(batch, seq)} in {MAX_REDRAWS} draws")


def f32(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))


def i64(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.int64))


def lin(m):
    """Linear weight as [in, out], so that y = x @ W."""
    return f32(m.weight.t())


def write_goldens(model, gdir):
    os.makedirs(gdir, exist_ok=True)
    files = {}
    seeds = {}
    with torch.no_grad():
        trace_ids = None
        for (b, s) in GOLDEN_SHAPES:
            ids, seed, margin = draw_ids(model, b, s)
            assert margin >= ROUTER_MARGIN
            seeds[(b, s)] = (seed, margin)
            files[f"ids_b{b}_s{s}.npy"] = i64(ids)
            files[f"logits_b{b}_s{s}.npy"] = f32(model(ids))
            if (b, s) == (CONFIG["trace_batch"], CONFIG["trace_seq"]):
                trace_ids = ids

        # Layer 0 intermediates at the trace shape, tokens flattened row-major.
        H = CONFIG["hidden_size"]
        l0 = model.layers[0]
        moe = l0.block_sparse_moe
        cos, sin, mask = model.rope_and_mask(trace_ids)
        x = model.embed_tokens(trace_ids)
        an = l0.input_layernorm(x)
        ao = l0.self_attn(an, cos, sin, mask)
        h = x + ao
        fn = l0.post_attention_layernorm(h)
        fn_flat = fn.reshape(-1, H)
        logits, probs, tw, tid = moe.route(fn_flat)
        mo = moe(fn)
        out = h + mo
        assert torch.equal(out, l0(x, cos, sin, mask)), "layer 0 decomposition differs from the module"
        files["l0_x.npy"] = f32(x.reshape(-1, H))
        files["l0_attn_norm.npy"] = f32(an.reshape(-1, H))
        files["l0_attn_out.npy"] = f32(ao.reshape(-1, H))
        files["l0_h.npy"] = f32(h.reshape(-1, H))
        files["l0_ffn_norm.npy"] = f32(fn_flat)
        files["l0_router_logits.npy"] = f32(logits)
        files["l0_router_probs.npy"] = f32(probs)
        files["l0_topk_ids.npy"] = i64(tid)
        files["l0_topk_weights.npy"] = f32(tw)
        for e in range(CONFIG["num_experts"]):
            files[f"l0_expert{e}_out.npy"] = f32(moe.experts[e](fn_flat))
        files["l0_moe_out.npy"] = f32(mo.reshape(-1, H))
        files["l0_out.npy"] = f32(out.reshape(-1, H))
        # Cross-check the HF loop against a direct weighted combine.
        direct = torch.zeros_like(fn_flat)
        for t in range(fn_flat.shape[0]):
            for j in sorted(range(CONFIG["top_k"]), key=lambda j: int(tid[t, j])):
                e = int(tid[t, j])
                direct[t] += tw[t, j] * moe.experts[e](fn_flat[t : t + 1])[0]
        assert torch.allclose(direct, mo.reshape(-1, H), atol=1e-6), "combine mismatch"

        xf = model.embed_tokens(trace_ids)
        for layer in model.layers:
            xf = layer(xf, cos, sin, mask)
        fin = model.norm(xf)
        assert torch.equal(model.lm_head(fin), model(trace_ids))
        files["final_norm.npy"] = f32(fin.reshape(-1, H))

        # Layer-0 weights, linear weights as [in, out].
        files["w_embed.npy"] = f32(model.embed_tokens.weight)
        files["w_l0_attn_norm.npy"] = f32(l0.input_layernorm.weight)
        files["w_l0_q.npy"] = lin(l0.self_attn.q_proj)
        files["w_l0_k.npy"] = lin(l0.self_attn.k_proj)
        files["w_l0_v.npy"] = lin(l0.self_attn.v_proj)
        files["w_l0_o.npy"] = lin(l0.self_attn.o_proj)
        files["w_l0_ffn_norm.npy"] = f32(l0.post_attention_layernorm.weight)
        files["w_l0_router.npy"] = lin(moe.gate)
        for e in range(CONFIG["num_experts"]):
            files[f"w_l0_expert{e}_w1.npy"] = lin(moe.experts[e].w1)
            files[f"w_l0_expert{e}_w3.npy"] = lin(moe.experts[e].w3)
            files[f"w_l0_expert{e}_w2.npy"] = lin(moe.experts[e].w2)
        files["w_final_norm.npy"] = f32(model.norm.weight)
        files["w_head.npy"] = lin(model.lm_head)

    for name in sorted(files):
        np.save(os.path.join(gdir, name), files[name], allow_pickle=False)
    with open(os.path.join(gdir, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2, sort_keys=True)
        f.write("\n")
    return files, seeds


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------

def export_onnx(model, ids, path):
    """Trace at the golden trace-shape ids and write path deterministically."""
    import onnx
    import warnings

    tmp = path + ".tmp"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            ids,
            tmp,
            opset_version=17,
            input_names=["input_ids"],
            output_names=["logits"],
            dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}},
            do_constant_folding=True,
        )
    m = onnx.load(tmp)
    os.remove(tmp)
    # Deterministic post-processing: drop free-text fields that could carry
    # source locations or run-specific text.
    m.doc_string = ""
    m.graph.doc_string = ""
    for n in m.graph.node:
        n.doc_string = ""
    onnx.checker.check_model(m)
    data = m.SerializeToString(deterministic=True)
    with open(path, "wb") as f:
        f.write(data)
    return m


ONNX_TOLERANCE = 1e-4


def verify_onnx(m, files, quiet):
    """Run the exported graph (NumPy interpreter) on every golden input; compare logits."""
    sys.dont_write_bytecode = True  # keep the sample folder clean
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import onnx_ref

    for (b, s) in GOLDEN_SHAPES:
        got = onnx_ref.run_model(m, {"input_ids": files[f"ids_b{b}_s{s}.npy"]})["logits"]
        want = files[f"logits_b{b}_s{s}.npy"]
        err = float(np.max(np.abs(got.astype(np.float64) - want)))
        if got.shape != want.shape or not err <= ONNX_TOLERANCE:
            raise SystemExit(f"model.onnx disagrees with the eager model at {(b, s)}: "
                             f"shape {got.shape}, max |diff| {err}")
        if not quiet:
            print(f"model.onnx vs eager logits at (batch {b}, seq {s}): max |diff| {err:.2e}")


def summary(m, path, gdir):
    import collections
    hist = collections.Counter(n.op_type for n in m.graph.node)
    print(f"model.onnx: {os.path.getsize(path)} bytes, {len(m.graph.node)} nodes, "
          f"{len(m.graph.initializer)} initializers, sha256 {sha256(path)}")
    print("op types: " + ", ".join(f"{k} {v}" for k, v in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))))
    total = sum(os.path.getsize(os.path.join(gdir, f)) for f in os.listdir(gdir))
    print(f"golden/: {len(os.listdir(gdir))} files, {total} bytes")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def generate(out_dir, quiet=False):
    os.makedirs(out_dir, exist_ok=True)
    model = build_model()
    gdir = os.path.join(out_dir, "golden")
    if os.path.isdir(gdir):
        for f in os.listdir(gdir):
            if f.endswith(".npy") or f == "config.json":
                os.remove(os.path.join(gdir, f))
    files, seeds = write_goldens(model, gdir)
    path = os.path.join(out_dir, "model.onnx")
    tb, ts = CONFIG["trace_batch"], CONFIG["trace_seq"]
    m = export_onnx(model, torch.from_numpy(files[f"ids_b{tb}_s{ts}.npy"]), path)
    verify_onnx(m, files, quiet)
    if not quiet:
        loads = np.bincount(files["l0_topk_ids.npy"].reshape(-1), minlength=CONFIG["num_experts"])
        print("layer-0 tokens per expert at the trace shape: " + " ".join(str(int(c)) for c in loads))
        for (b, s), (seed, margin) in seeds.items():
            print(f"ids_b{b}_s{s}: seed {seed}, min router margin {margin:.6f}")
        summary(m, path, gdir)
    return seeds


def check(ref_dir):
    ok = True
    tmp = tempfile.mkdtemp(prefix="mixtral_tiny_check_")
    try:
        generate(tmp, quiet=True)
        a, b = os.path.join(ref_dir, "model.onnx"), os.path.join(tmp, "model.onnx")
        if not os.path.exists(a) or sha256(a) != sha256(b):
            print(f"model.onnx differs: {sha256(a) if os.path.exists(a) else 'missing'} vs {sha256(b)}")
            ok = False
        rg, tg = os.path.join(ref_dir, "golden"), os.path.join(tmp, "golden")
        # Only files: golden/train/ belongs to export_grads.py, which checks it itself.
        ref_files = {f for f in os.listdir(rg) if os.path.isfile(os.path.join(rg, f))} if os.path.isdir(rg) else set()
        new_files = set(os.listdir(tg))
        for f in sorted(ref_files ^ new_files):
            print(f"golden/{f}: present in only one of the two folders")
            ok = False
        for f in sorted(ref_files & new_files):
            if f.endswith(".npy"):
                good, text = error_model.compare_regenerated(f"golden/{f}", np.load(os.path.join(rg, f)),
                                                             np.load(os.path.join(tg, f)), GOLDEN_CHAIN)
                if not good:
                    print(text)
                    ok = False
            elif f == "config.json":
                with open(os.path.join(rg, f)) as fa, open(os.path.join(tg, f)) as fb:
                    if json.load(fa) != json.load(fb):
                        print("golden/config.json differs")
                        ok = False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(error_model.worst_regenerated())
    print("check: OK" if ok else "check: FAILED")
    return ok


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=here, help="output folder (default: this script's folder)")
    ap.add_argument("--check", nargs="?", const=here, metavar="DIR",
                    help="regenerate into a temporary folder and compare with DIR")
    args = ap.parse_args()
    torch.set_num_threads(1)  # fixed reduction order for bitwise-reproducible goldens
    if args.check is not None:
        sys.exit(0 if check(args.check) else 1)
    generate(args.out)


if __name__ == "__main__":
    main()
