#!/usr/bin/python3
"""Per-GPU memory from `disagmoe plan --config MODEL.json --cluster CLUSTER.yaml --seq-len S --json FILE`
(compiler/tools/PlanJson.h; runtime/cost/Memory.h's model): one stacked bar per GPU of the cluster
(weights, gradients, optimizer state, activations; the headroom up to the usable memory hatched),
attention GPUs first, then FFN GPUs, then any the configuration leaves unused. Every GPU of a side
holds the same bytes in this model (`memory_bytes.attention` / `.ffn` are per GPU). The right panel
shows, for each feasible attention GPU count (`alternatives`), an attention GPU's and an FFN GPU's
total against the usable memory (`usable_memory_bytes`: HBM minus --reserve-gb).

    /usr/bin/python3 scripts/plots/memory_bars.py PLAN.json [--config chosen|z3] -o OUT.png

--config: `chosen` (default where the file has the simulated search: `search.chosen.config`) or `z3`
(the roofline optimum; the default with --no-search). Prints one summary line: the configuration,
GPUs drawn, attention / FFN / unused GPUs, the largest per-GPU total (GB), the usable memory and the
smallest headroom, alternatives drawn.
"""
import argparse
import os
import sys

import numpy as np
from matplotlib.patches import Patch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plotlib  # noqa: E402
from plotlib import InputError, field, plt  # noqa: E402

PARTS = [("weights", "#4c78a8"), ("gradients", "#72b7b2"), ("optimizer", "#f58518"), ("activations", "#e45756")]


def side_memory(cfg, path, where, side):
    mem = field(field(cfg, "memory_bytes", path, where, "dict"), side, path, f"{where}.memory_bytes", "dict")
    parts = {k: field(mem, k, path, f"{where}.memory_bytes.{side}") for k, _ in PARTS}
    total = field(mem, "total", path, f"{where}.memory_bytes.{side}")
    return parts, total


def run():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("plan")
    ap.add_argument("--config", choices=["chosen", "z3"])
    ap.add_argument("-o", dest="out", required=True)
    a = ap.parse_args()
    plotlib.check_output(a.out)
    p = a.plan
    doc = plotlib.load_json(p)
    if not isinstance(doc, dict):
        raise InputError(p, "", "expected a JSON object (disagmoe plan --json)")
    usable = field(doc, "usable_memory_bytes", p)
    gpus = field(doc, "gpus", p, "", "int")
    which = a.config or ("chosen" if isinstance(doc.get("search"), dict) and doc["search"].get("chosen") else "z3")
    if which == "chosen":
        search = field(doc, "search", p, "", "dict")
        chosen = field(search, "chosen", p, "search", "dict")
        cfg, where = field(chosen, "config", p, "search.chosen", "dict"), "search.chosen.config"
        desc = chosen.get("description", "")
    else:
        cfg, where = field(doc, "z3", p, "", "dict"), "z3"
        desc = "Z3 roofline optimum"
    na = field(cfg, "attn_gpus", p, where, "int")
    nf = field(cfg, "ffn_gpus", p, where, "int")
    if na + nf > gpus:
        raise InputError(p, f"{where}.attn_gpus", f"{na} + ffn_gpus {nf} exceed gpus {gpus}")
    attn, attn_total = side_memory(cfg, p, where, "attention")
    ffn, ffn_total = side_memory(cfg, p, where, "ffn")
    alts = field(doc, "alternatives", p, "", "list")
    alt_rows = []
    for i, alt in enumerate(alts):
        w = f"alternatives[{i}]"
        alt_rows.append((field(alt, "attn_gpus", p, w, "int"), field(alt, "ffn_gpus", p, w, "int"),
                         side_memory(alt, p, w, "attention")[1], side_memory(alt, p, w, "ffn")[1],
                         bool(alt.get("fits_memory", True))))

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 5.2), gridspec_kw={"width_ratios": [3, 1.3]})
    x = np.arange(gpus)
    kinds = ["attention"] * na + ["ffn"] * nf + ["unused"] * (gpus - na - nf)
    bottom = np.zeros(gpus)
    for k, color in PARTS:
        vals = np.array([attn[k] if s == "attention" else ffn[k] if s == "ffn" else 0 for s in kinds]) / 1e9
        ax.bar(x, vals, bottom=bottom, color=color, width=0.8, label=k)
        bottom += vals
    head = np.array([max(0.0, usable / 1e9 - b) if s != "unused" else 0 for s, b in zip(kinds, bottom)])
    ax.bar(x, head, bottom=bottom, color="white", edgecolor="0.6", hatch="//", width=0.8, label="headroom")
    ax.axhline(usable / 1e9, color="black", ls="--", lw=1, label=f"usable {usable / 1e9:.1f} GB")
    peak = None
    if which == "chosen" and isinstance(doc["search"]["chosen"].get("peak_memory_bytes"), (int, float)):
        peak = doc["search"]["chosen"]["peak_memory_bytes"]
        ax.axhline(peak / 1e9, color="tab:purple", ls=":", lw=1.5, label=f"simulated peak {peak / 1e9:.1f} GB (busiest rank)")
    for i, s in enumerate(kinds):
        if s == "unused":
            ax.text(i, 1, "unused", rotation=90, ha="center", va="bottom", fontsize=7, color="0.4")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{'A' if s == 'attention' else 'F' if s == 'ffn' else 'u'}{i}" for i, s in enumerate(kinds)],
                       fontsize=7)
    ax.set_xlabel("GPU (A: attention, F: FFN, u: unused; attention GPUs first)")
    ax.set_ylabel("GB per GPU")
    ax.set_ylim(0, max(usable, peak or 0, attn_total, ffn_total) / 1e9 * 1.12)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=4, frameon=False)
    ax.set_title(f"{which} configuration, {na}:{nf} GPUs of {gpus}" + (f"\n{desc}" if desc else ""), fontsize=8.5)
    ax.grid(axis="y", alpha=0.3)
    # Alternatives: one pair of bars per feasible attention GPU count.
    if alt_rows:
        xs = np.arange(len(alt_rows))
        ax2.bar(xs - 0.2, [r[2] / 1e9 for r in alt_rows], 0.4, color="#4c78a8", label="attention GPU")
        ax2.bar(xs + 0.2, [r[3] / 1e9 for r in alt_rows], 0.4, color="#f58518", label="FFN GPU")
        ax2.axhline(usable / 1e9, color="black", ls="--", lw=1)
        ax2.set_xticks(xs)
        ax2.set_xticklabels([f"{r[0]}:{r[1]}" + ("" if r[4] else "\n(no fit)") for r in alt_rows], fontsize=7,
                            rotation=45 if len(alt_rows) > 5 else 0)
        for i, r in enumerate(alt_rows):
            if r[0] == na and r[1] == nf:
                ax2.get_xticklabels()[i].set_fontweight("bold")
        ax2.set_xlabel("attention : FFN GPUs (alternatives)")
        ax2.set_ylabel("GB per GPU (total)")
        ax2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
        ax2.set_xlim(-0.8, len(alt_rows) - 0.2)
        ax2.set_ylim(0, ax.get_ylim()[1])
        ax2.set_title("feasible attention GPU counts", fontsize=8.5)
        ax2.grid(axis="y", alpha=0.3)
    else:
        ax2.axis("off")
    fig.suptitle(f"{doc.get('model', '?')} on {doc.get('cluster', '?')}, seq-len {doc.get('seq_len', '?')}: "
                 f"memory per GPU (runtime/cost/Memory.h)", fontsize=10)
    fig.tight_layout()
    w, h = plotlib.save_png(fig, a.out)
    used = [t for t, n in ((attn_total, na), (ffn_total, nf)) if n > 0]
    print(f"memory_bars: {a.out} {w}x{h}: config {which}, GPUs {gpus}, attention {na}, ffn {nf}, unused {gpus - na - nf}, "
          f"max per-GPU {max(used) / 1e9:.3f} GB, usable {usable / 1e9:.3f} GB, min headroom "
          f"{(usable - max(used)) / 1e9:.3f} GB, alternatives {len(alt_rows)}")


if __name__ == "__main__":
    plotlib.main("memory_bars", run)
