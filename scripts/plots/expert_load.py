#!/usr/bin/python3
"""Expert-load heatmap from a loss log (`disagmoe-run PLAN --train ... --loss-log LOG.jsonl`, field
`expert_load`: per step and MoE layer the token-expert assignments of the global batch, the top-k
choices before any capacity drop). One panel per layer, experts x steps, each cell the expert's share
of the layer's assignments divided by the uniform share 1/E (1 = balanced; the colour scale is shared
by every panel). With --plan PLAN/plan.json the experts are labelled with the F-rank that holds them
(`placement.expert_to_rank`).

    /usr/bin/python3 scripts/plots/expert_load.py LOG.jsonl [--plan plan.json] -o OUT.png

Prints one summary line: steps, layers, experts, assignments per step and layer, the largest
load/uniform cell, and with --plan the most loaded rank's share.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plotlib  # noqa: E402
from plotlib import InputError, plt  # noqa: E402


def run():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log")
    ap.add_argument("--plan")
    ap.add_argument("-o", dest="out", required=True)
    a = ap.parse_args()
    plotlib.check_output(a.out)
    steps = plotlib.load_loss_log(a.log, need_loads=True)
    L = len(steps[0]["expert_load"])
    if L == 0:
        raise InputError(a.log, f"line {steps[0]['line']}.expert_load", "empty (no MoE layer)")
    E = max(len(l) for l in steps[0]["expert_load"])
    loads = np.array([r["expert_load"] for r in steps], dtype=float)  # [steps, layers, experts]
    totals = loads.sum(axis=2, keepdims=True)
    rel = np.where(totals > 0, loads / np.maximum(totals, 1) * E, 0.0)
    owner = None
    if a.plan:
        plan = plotlib.load_json(a.plan)
        placement = plotlib.field(plan, "placement", a.plan, "", "dict")
        owner = plotlib.field(placement, "expert_to_rank", a.plan, "placement", "list")
        if len(owner) != L or any(len(o) != E for o in owner):
            raise InputError(a.plan, "placement.expert_to_rank",
                             f"shape {[len(o) for o in owner]} does not match the log's {L} layers x {E} experts")
    x = [r["step"] for r in steps]
    cols = 2 if L > 1 else 1
    nrows = (L + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(8, 1.2 + 0.22 * E * nrows + 0.4 * nrows), squeeze=False,
                             layout="constrained")
    vmax = max(2.0, float(rel.max()))
    im = None
    for l in range(nrows * cols):
        ax = axes[l // cols][l % cols]
        if l >= L:
            ax.axis("off")
            continue
        im = ax.imshow(rel[:, l, :].T, aspect="auto", cmap="magma", vmin=0, vmax=vmax, interpolation="nearest",
                       extent=(x[0] - 0.5, x[-1] + 0.5, E - 0.5, -0.5))
        ax.set_title(f"layer {l} (hottest cell {rel[:, l, :].max():.2f}x uniform)", fontsize=9)
        ax.set_yticks(range(E))
        if owner is not None:
            ax.set_yticklabels([f"{e} (r{owner[l][e]})" for e in range(E)], fontsize=7)
            for e in range(1, E):  # rank boundaries
                if owner[l][e] != owner[l][e - 1]:
                    ax.axhline(e - 0.5, color="cyan", lw=1)
        else:
            ax.tick_params(axis="y", labelsize=7)
        if l % cols == 0:
            ax.set_ylabel("expert (rank)" if owner is not None else "expert", fontsize=8)
        if l // cols == nrows - 1:
            ax.set_xlabel("step")
    fig.colorbar(im, ax=axes, shrink=0.9, label="load / uniform (1 = balanced)")
    fig.suptitle(f"expert load over {len(steps)} steps ({os.path.basename(a.log)})", fontsize=11)
    w, h = plotlib.save_png(fig, a.out)
    per = sorted({int(t) for t in totals.flatten()})
    extra = ""
    if owner is not None:
        share = max(loads[:, l, [e for e in range(E) if owner[l][e] == r]].sum() / loads[:, l, :].sum()
                    for l in range(L) for r in set(owner[l]))
        extra = f", most loaded rank's share of its layer {share:.4f}"
    print(f"expert_load: {a.out} {w}x{h}: steps {len(steps)}, layers {L}, experts {E}, assignments per step "
          f"and layer {'/'.join(map(str, per))}, max load/uniform {rel.max():.4f}{extra}")


if __name__ == "__main__":
    plotlib.main("expert_load", run)
