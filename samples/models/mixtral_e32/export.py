#!/usr/bin/python3
"""Export Mixtral-style MoE decoders with more experts (32 and 64) to ONNX, with golden values.

The model code, the weight initialisation, the router-margin draw of golden ids and the ONNX export
are those of samples/models/mixtral_tiny/export.py (imported, not copied); only the hyper-parameters
differ, and the goldens are smaller (no per-expert files), so each export stays under 6 MB.

    /usr/bin/python3 samples/models/mixtral_e32/export.py --variant e32   # -> samples/models/mixtral_e32/
    /usr/bin/python3 samples/models/mixtral_e32/export.py --variant e64   # -> samples/models/mixtral_e64/
    /usr/bin/python3 samples/models/mixtral_e32/export.py --variant e64 --check   # regenerate and compare

samples/models/mixtral_tiny_trained/train.py reuses write_goldens() and export() below.
"""

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the sample folders clean

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.dirname(HERE)


def load_tiny():
    """The mixtral_tiny exporter as a module (its model classes and helpers)."""
    path = os.path.join(MODELS, "mixtral_tiny", "export.py")
    spec = importlib.util.spec_from_file_location("mixtral_tiny_export", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


tiny = load_tiny()
error_model = tiny.error_model  # tests/numerics/error_model.py: the regeneration bound

VARIANTS = {
    # 32 experts, top-2 (Mixtral-like routing), 4 layers; expert hidden 32 keeps the file small.
    "e32": dict(tiny.CONFIG, num_layers=4, num_experts=32, top_k=2, expert_hidden=32),
    # 64 experts, top-4 (DeepSeek-MoE's expert count and top-k), 3 layers, expert hidden 16.
    "e64": dict(tiny.CONFIG, num_layers=3, num_experts=64, top_k=4, expert_hidden=16),
}
OUT_DIRS = {"e32": os.path.join(MODELS, "mixtral_e32"), "e64": os.path.join(MODELS, "mixtral_e64")}
GOLDEN_SHAPES = tiny.GOLDEN_SHAPES  # (2, 8) (the trace shape), (1, 5), (3, 12)


def use_config(config):
    """Point the tiny exporter's module-level CONFIG at `config` (its helpers read it at call time)."""
    tiny.CONFIG = config


def position_margins(model, ids):
    """[N] smallest gap, over the layers and j = 1..k, between the j-th and (j+1)-th largest router
    probabilities of the LAST position of each of the N sequences in ids [N, s]."""
    k = tiny.CONFIG["top_k"]
    n, s = ids.shape
    worst = torch.full((n,), float("inf"))
    for probs in tiny.router_probs_per_layer(model, ids):
        last = probs.reshape(n, s, -1)[:, -1, :]
        srt, _ = torch.sort(last, dim=-1, descending=True)
        worst = torch.minimum(worst, (srt[:, :k] - srt[:, 1:k + 1]).min(dim=-1).values)
    return worst


def draw_ids(model, batch, seq):
    """Golden ids with a router margin of tiny.ROUTER_MARGIN at every token of every layer.

    With 64 experts and top-4, whole random draws almost never have a margin everywhere, so the ids
    are built one position at a time: attention is causal and sequences are independent, so the
    margins of earlier positions never change; at each position the candidates are the vocabulary in
    a seeded random order, and the first one whose margin holds in every layer is kept."""
    seed = tiny.ID_SEED_BASE[(batch, seq)]
    g = torch.Generator().manual_seed(seed)
    vocab = tiny.CONFIG["vocab_size"]
    rows = []
    with torch.no_grad():
        for _ in range(batch):
            row = torch.zeros(0, dtype=torch.int64)
            for _ in range(seq):
                order = torch.randperm(vocab, generator=g)
                cand = torch.cat([row.expand(vocab, row.numel()), order[:, None]], dim=1)
                ok = (position_margins(model, cand) >= tiny.ROUTER_MARGIN).nonzero()
                if ok.numel() == 0:
                    raise SystemExit(f"no token keeps a router margin at shape {(batch, seq)}")
                row = cand[int(ok[0, 0])]
            rows.append(row)
    ids = torch.stack(rows)
    margin = tiny.min_router_margin(model, ids)
    assert margin >= tiny.ROUTER_MARGIN
    return ids, seed, margin


def write_goldens(model, config, gdir):
    """ids and logits at every golden shape (ids with a router margin, see draw_ids), plus the
    layer-0 router probabilities and top-k ids at the trace shape, and config.json."""
    use_config(config)
    os.makedirs(gdir, exist_ok=True)
    for f in os.listdir(gdir):
        if f.endswith(".npy") or f == "config.json":
            os.remove(os.path.join(gdir, f))
    files, seeds = {}, {}
    with torch.no_grad():
        for (b, s) in GOLDEN_SHAPES:
            ids, seed, margin = draw_ids(model, b, s)
            seeds[(b, s)] = (seed, margin)
            files[f"ids_b{b}_s{s}.npy"] = tiny.i64(ids)
            files[f"logits_b{b}_s{s}.npy"] = tiny.f32(model(ids))
        tb, ts = config["trace_batch"], config["trace_seq"]
        probs = tiny.router_probs_per_layer(model, torch.from_numpy(files[f"ids_b{tb}_s{ts}.npy"]))[0]
        _, tid = torch.topk(probs, config["top_k"], dim=-1)
        files["l0_router_probs.npy"] = tiny.f32(probs)
        files["l0_topk_ids.npy"] = tiny.i64(tid)
    for name in sorted(files):
        np.save(os.path.join(gdir, name), files[name], allow_pickle=False)
    with open(os.path.join(gdir, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    return files, seeds


def export(model, config, out_dir, quiet=False):
    """model.onnx and golden/ into out_dir; the export is checked with the NumPy ONNX interpreter."""
    use_config(config)
    os.makedirs(out_dir, exist_ok=True)
    gdir = os.path.join(out_dir, "golden")
    files, seeds = write_goldens(model, config, gdir)
    path = os.path.join(out_dir, "model.onnx")
    tb, ts = config["trace_batch"], config["trace_seq"]
    m = tiny.export_onnx(model, torch.from_numpy(files[f"ids_b{tb}_s{ts}.npy"]), path)
    tiny.verify_onnx(m, files, quiet)
    if not quiet:
        for (b, s), (seed, margin) in seeds.items():
            print(f"ids_b{b}_s{s}: seed {seed}, min router margin {margin:.6f}")
        tiny.summary(m, path, gdir)
    return files


def generate(variant, out_dir, quiet=False):
    config = VARIANTS[variant]
    use_config(config)
    model = tiny.build_model()  # torch.manual_seed(0), the tiny sample's initialisation
    return export(model, config, out_dir, quiet)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def compare(ref_dir, new_dir):
    """model.onnx byte-identical, every golden within the fp32 error model's bound; prints what differs."""
    ok = True
    a, b = os.path.join(ref_dir, "model.onnx"), os.path.join(new_dir, "model.onnx")
    if not os.path.exists(a) or sha256(a) != sha256(b):
        print("model.onnx differs")
        ok = False
    rg, ng = os.path.join(ref_dir, "golden"), os.path.join(new_dir, "golden")
    names = set(os.listdir(rg)) if os.path.isdir(rg) else set()
    for f in sorted(names ^ set(os.listdir(ng))):
        print(f"golden/{f}: present in only one folder")
        ok = False
    for f in sorted(n for n in names if n.endswith(".npy") and os.path.exists(os.path.join(ng, n))):
        same, text = error_model.compare_regenerated(f"golden/{f}", np.load(os.path.join(rg, f)),
                                                     np.load(os.path.join(ng, f)), error_model.forward_chain_of(rg))
        if not same:
            print(text)
            ok = False
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", choices=sorted(VARIANTS), default="e32")
    ap.add_argument("--out", help="output folder (default: samples/models/mixtral_<variant>)")
    ap.add_argument("--check", action="store_true", help="regenerate into a temporary folder and compare")
    args = ap.parse_args()
    torch.set_num_threads(1)  # fixed reduction order for reproducible goldens
    out = args.out or OUT_DIRS[args.variant]
    if args.check:
        tmp = tempfile.mkdtemp(prefix=f"mixtral_{args.variant}_check_")
        try:
            generate(args.variant, tmp, quiet=True)
            ok = compare(out, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print("check: OK" if ok else "check: FAILED")
        sys.exit(0 if ok else 1)
    generate(args.variant, out)


if __name__ == "__main__":
    main()
