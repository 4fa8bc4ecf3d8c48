#!/usr/bin/python3
"""Plots of `disagmoe route-stats` results (docs/observatory.md). Debian's python3 + python3-matplotlib.

    /usr/bin/python3 scripts/plot_route_stats.py OUT/route-stats.json [-o DIR] [--ep N] [--gbs G]
    /usr/bin/python3 scripts/plot_route_stats.py --training samples/models/mixtral_tiny_trained/training.json -o DIR
    /usr/bin/python3 scripts/plot_route_stats.py --training LOSS.jsonl -o DIR     (a disagmoe-run --loss-log)

Writes into DIR (default: the JSON's folder):
  send_matrix.png   S[src][dst] at EP N (default: the classification EP), one panel per condition
                    (columns) and MoE layer (rows), each divided by its mean cell (1 = uniform)
  gini_by_layer.png Gini of per-rank received load by layer at EP N and GBS G, one line per condition
                    (error bars: standard deviation over batches)
  gini_vs_gbs.png   Gini (mean over layers) against GBS, one line per condition, one panel per EP
  training_loss.png with --training: the loss curve of the trained sample (training.json, written by
                    samples/models/mixtral_tiny_trained/train.py), or of a `disagmoe-run --train
                    --loss-log` file (JSON lines; scripts/plots/training_curves.py draws its lr, gradient
                    norm and tokens/s too, scripts/plots/expert_load.py its expert loads)
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

STYLE = {"mock": ("tab:red", "o"), "shuffled": ("tab:orange", "s"), "remapped": ("tab:purple", "^"),
         "text": ("tab:blue", "D")}


def style(cond, i):
    color, marker = STYLE[cond["kind"]]
    if cond["kind"] == "text":
        color = ["tab:blue", "tab:green", "tab:cyan", "tab:olive", "tab:brown"][i % 5]
    return dict(color=color, marker=marker)


def title(doc):
    return f"{os.path.basename(os.path.dirname(doc['model']))}: {doc['experts']} experts, top-{doc['top_k']}"


def send_matrix(doc, ep, out):
    conds, layers = doc["conditions"], doc["layers"]
    fig, axes = plt.subplots(layers, len(conds), figsize=(2.2 * len(conds) + 1, 2.2 * layers + 0.6), squeeze=False)
    vmax = 0
    mats = {}
    for c, cond in enumerate(conds):
        for l, lay in enumerate(cond["layers"]):
            S = np.array(lay["send_matrix"][str(ep)], dtype=float)
            S = S / S.mean() if S.mean() > 0 else S
            mats[(l, c)] = S
            vmax = max(vmax, S.max())
    for (l, c), S in mats.items():
        ax = axes[l][c]
        im = ax.imshow(S, cmap="viridis", vmin=0, vmax=vmax)
        ax.set_xticks([])
        ax.set_yticks([])
        if l == 0:
            ax.set_title(conds[c]["name"], fontsize=8)
        if c == 0:
            ax.set_ylabel(f"layer {l}\nsrc rank", fontsize=8)
        if l == layers - 1:
            ax.set_xlabel("dst rank", fontsize=8)
    fig.colorbar(im, ax=axes, shrink=0.6, label="S / mean(S)")
    fig.suptitle(f"{title(doc)}; send-count matrix at EP {ep}")
    fig.savefig(os.path.join(out, "send_matrix.png"), dpi=110)
    plt.close(fig)


def gbs_entry(lay, gbs):
    return next(g for g in lay["by_gbs"] if g["gbs"] == gbs)


def gini_by_layer(doc, ep, gbs, out):
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for i, cond in enumerate(doc["conditions"]):
        ys, es = [], []
        for lay in cond["layers"]:
            g = gbs_entry(lay, gbs)
            st = g["gini"][str(ep)] if g["batches"] else {"mean": np.nan, "sd": np.nan}
            ys.append(st["mean"])
            es.append(st["sd"])
        ax.errorbar(range(len(ys)), ys, yerr=es, label=cond["name"], capsize=3, **style(cond, i))
    ax.set_xlabel("MoE layer")
    ax.set_ylabel(f"Gini of per-rank load (EP {ep}, GBS {gbs})")
    ax.set_xticks(range(doc["layers"]))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title(doc))
    fig.tight_layout()
    fig.savefig(os.path.join(out, "gini_by_layer.png"), dpi=110)
    plt.close(fig)


def gini_vs_gbs(doc, out):
    eps = doc["ep"]
    fig, axes = plt.subplots(1, len(eps), figsize=(3.6 * len(eps), 3.6), squeeze=False, sharey=True)
    for a, ep in enumerate(eps):
        ax = axes[0][a]
        for i, cond in enumerate(doc["conditions"]):
            xs, ys = [], []
            for gbs in doc["gbs"]:
                vals = [gbs_entry(lay, gbs)["gini"][str(ep)]["mean"] for lay in cond["layers"]
                        if gbs_entry(lay, gbs)["batches"]]
                if vals:
                    xs.append(gbs)
                    ys.append(float(np.mean(vals)))
            ax.plot(xs, ys, label=cond["name"], **style(cond, i))
        ax.set_xscale("log", base=2)
        ax.set_xlabel("GBS (sequences)")
        ax.set_title(f"EP {ep}")
        ax.grid(alpha=0.3)
        if a == 0:
            ax.set_ylabel("Gini (mean over layers)")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(title(doc))
    fig.tight_layout()
    fig.savefig(os.path.join(out, "gini_vs_gbs.png"), dpi=110)
    plt.close(fig)


def loss_log_as_training(path):
    """A `disagmoe-run --loss-log` file (one JSON object per step, runtime/train/TrainingLoop.cpp) in the
    shape of training.json. json.load() of such a file fails with "Extra data" at line 2 (issue 17):
    it holds one document per line, not one document."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "plots"))
    import plotlib
    try:
        steps = plotlib.load_loss_log(path)
    except plotlib.InputError as e:
        sys.exit(f"plot_route_stats.py: {e}")
    return {"data": path, "aux_coef": "as logged" if any(r["aux_loss"] for r in steps) else 0, "log": True,
            "curve": [{"step": r["step"], "loss": r["loss"]} for r in steps]}


def training(path, out):
    try:
        t = json.load(open(path))
    except json.JSONDecodeError as e:
        if e.msg != "Extra data":
            sys.exit(f"plot_route_stats.py: {path}: not JSON: {e}")
        t = loss_log_as_training(path)
    steps = [c["step"] for c in t["curve"]]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(steps, [c["loss"] for c in t["curve"]], label="train (batch)")
    vs = [(c["step"], c["valid_loss"]) for c in t["curve"] if "valid_loss" in c]
    if vs:
        ax.plot([s for s, _ in vs], [v for _, v in vs], "o-", label="validation (held out)")
    if not t.get("log"):  # the trained sample is byte-level; a loss log may be of any token format
        ax.axhline(np.log(256), color="gray", ls="--", lw=1, label="uniform over 256 bytes")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats/token)" if t.get("log") else "cross-entropy (nats/byte)")
    ax.set_title(f"{os.path.basename(t['data'])}: aux coef {t['aux_coef']}" if t["data"] == path else
                 f"mixtral_tiny on {os.path.basename(t['data'])}, aux coef {t['aux_coef']}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "training_loss.png"), dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="?")
    ap.add_argument("-o", dest="out")
    ap.add_argument("--ep", type=int)
    ap.add_argument("--gbs", type=int)
    ap.add_argument("--training")
    args = ap.parse_args()
    if args.training:
        out = args.out or os.path.dirname(os.path.abspath(args.training))
        os.makedirs(out, exist_ok=True)
        training(args.training, out)
    if args.json:
        doc = json.load(open(args.json))
        out = args.out or os.path.dirname(os.path.abspath(args.json))
        os.makedirs(out, exist_ok=True)
        ep = args.ep or doc["classification"]["ep"]
        gbs = args.gbs or doc["classification"]["gbs"]
        send_matrix(doc, ep if str(ep) in doc["conditions"][0]["layers"][0]["send_matrix"] else doc["ep"][-1], out)
        gini_by_layer(doc, ep, gbs, out)
        gini_vs_gbs(doc, out)
    print(f"plots written to {out}")


if __name__ == "__main__":
    main()
