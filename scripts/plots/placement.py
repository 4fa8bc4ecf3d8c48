#!/usr/bin/python3
"""Placement diagram of a compiled plan (`disagmoe compile MODEL.onnx -o PLAN ...`, PLAN/plan.json,
docs/plan-format.md "placement"): the nodes (rank / gpus_per_node of the schedule's hardware, as
runtime/sim/Simulator.cpp numbers them), each rank as a box coloured by its group (attention blue
shades, FFN orange shades), with its group, layers, the embedding / head, its weight bytes
(`memory.ranks`) and, on an F-rank, the experts it holds per layer (`placement.expert_to_rank`).

    /usr/bin/python3 scripts/plots/placement.py PLAN/plan.json [--title TEXT] -o OUT.png

Prints one summary line: ranks drawn, nodes, attention and FFN groups, experts per F-rank per layer
(min-max), expert slots (layers x experts), then one line per group with its ranks.
"""
import argparse
import os
import sys

from matplotlib.patches import FancyBboxPatch, Rectangle

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plotlib  # noqa: E402
from plotlib import InputError, field, plt  # noqa: E402

BLUES = ["#6baed6", "#9ecae1", "#4292c6", "#c6dbef"]
ORANGES = ["#fd8d3c", "#fdae6b", "#f16913", "#fdd0a2"]


def ranges(xs):
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8'."""
    out, xs = [], sorted(xs)
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(out)


def load(path):
    if os.path.isdir(path):
        path = os.path.join(path, "plan.json")
    plan = plotlib.load_json(path)
    if not isinstance(plan, dict) or plan.get("format") != "disagmoe-plan":
        raise InputError(path, "format", "expected \"disagmoe-plan\" (a compiled plan's plan.json)")
    pl = field(plan, "placement", path, "", "dict")
    world = field(pl, "world_size", path, "placement", "int")
    groups = field(pl, "groups", path, "placement", "list")
    e2r = field(pl, "expert_to_rank", path, "placement", "list")
    rank_group = {}
    for i, g in enumerate(groups):
        w = f"placement.groups[{i}]"
        role = field(g, "role", path, w, "str")
        idx = field(g, "index", path, w, "int")
        for r in field(g, "ranks", path, w, "list"):
            if not isinstance(r, int) or not 0 <= r < world:
                raise InputError(path, f"{w}.ranks", f"rank {r!r} outside 0..{world - 1}")
            if r in rank_group:
                raise InputError(path, f"{w}.ranks", f"rank {r} is in two groups")
            rank_group[r] = (role, idx, field(g, "layers", path, w, "list"))
    for l, row in enumerate(e2r):
        plotlib.number_list(row, path, f"placement.expert_to_rank[{l}]", integer=True)
        for e, r in enumerate(row):
            if r not in rank_group or rank_group[r][0] != "ffn":
                raise InputError(path, f"placement.expert_to_rank[{l}][{e}]", f"rank {r} is not an F-rank")
    gpn = 8
    sched = plan.get("schedule")
    if isinstance(sched, dict) and isinstance(sched.get("hardware"), dict):
        gpn = field(sched["hardware"], "gpus_per_node", path, "schedule.hardware", "int")
        hw_name = sched["hardware"].get("name", "?")
    else:
        hw_name = "no schedule: 8 GPUs per node assumed"
    weights = {}
    mem = plan.get("memory")
    if isinstance(mem, dict) and isinstance(mem.get("ranks"), list):
        for i, m in enumerate(mem["ranks"]):
            weights[field(m, "rank", path, f"memory.ranks[{i}]", "int")] = field(
                m, "weight_bytes", path, f"memory.ranks[{i}]")
    return path, plan, pl, world, groups, e2r, rank_group, gpn, hw_name, weights


def run():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("plan")
    ap.add_argument("--title")
    ap.add_argument("-o", dest="out", required=True)
    a = ap.parse_args()
    plotlib.check_output(a.out)
    path, plan, pl, world, groups, e2r, rank_group, gpn, hw_name, weights = load(a.plan)
    L = len(e2r)
    nodes = (world + gpn - 1) // gpn
    cols = min(gpn, 8)
    rows_per_node = (gpn + cols - 1) // cols
    ffn_lines = max([len([l for l in range(L) if any(r == rk for r in e2r[l])]) for rk in rank_group] + [0])
    cell_h = 0.4 + 0.14 * max(5, 4 + ffn_lines)
    cw, gap = 1.45, 0.12
    total_rows = nodes * rows_per_node
    fig_w = 0.6 + cols * (cw + gap)
    fig_h = 1.2 + total_rows * (cell_h + gap) + nodes * 0.35
    fig = plt.figure(figsize=(fig_w, fig_h))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, fig_w)
    ax.set_ylim(fig_h, 0)
    ax.axis("off")
    emb, head = pl.get("embedding_group"), pl.get("head_group")
    emb_side, head_side = pl.get("embedding_side", "attention"), pl.get("head_side", "attention")
    y = 0.75
    experts_per_rank = []
    for n in range(nodes):
        node_h = rows_per_node * (cell_h + gap) + 0.3
        ax.add_patch(FancyBboxPatch((0.15, y), fig_w - 0.3, node_h, boxstyle="round,pad=0.02", fc="0.95", ec="0.4"))
        ax.text(0.25, y + 0.17, f"node {n}", fontsize=9, fontweight="bold", va="center")
        for k in range(gpn):
            rank = n * gpn + k
            cx = 0.3 + (k % cols) * (cw + gap)
            cy = y + 0.3 + (k // cols) * (cell_h + gap)
            if rank >= world:
                ax.add_patch(Rectangle((cx, cy), cw, cell_h, fc="white", ec="0.6", ls="--"))
                ax.text(cx + cw / 2, cy + cell_h / 2, f"GPU {k}\nunused", ha="center", va="center", fontsize=7,
                        color="0.5")
                continue
            role, idx, layers = rank_group.get(rank, ("none", 0, []))
            fc = (BLUES if role == "attention" else ORANGES)[idx % 4] if role != "none" else "white"
            ax.add_patch(Rectangle((cx, cy), cw, cell_h, fc=fc, ec="black", lw=0.8))
            lines = [f"rank {rank}", f"{role} {idx}", f"layers {ranges(layers)}"]
            if role == "attention" and emb == idx and emb_side == "attention":
                lines.append("+ embedding")
            if role == "attention" and head == idx and head_side == "attention":
                lines.append("+ final norm, head")
            if role == "ffn":
                if emb == idx and emb_side == "ffn":
                    lines.append("+ embedding")
                if head == idx and head_side == "ffn":
                    lines.append("+ final norm, head")
                for l in range(L):
                    mine = [e for e, r in enumerate(e2r[l]) if r == rank]
                    if mine:
                        experts_per_rank.append(len(mine))
                        lines.append(f"L{l}: e{ranges(mine)}")
            if rank in weights:
                lines.append(f"{weights[rank] / 2**20:.2f} MiB weights")
            ax.text(cx + 0.06, cy + 0.08, lines[0], fontsize=8.5, fontweight="bold", va="top")
            ax.text(cx + 0.06, cy + 0.3, "\n".join(lines[1:]), fontsize=7.5, va="top", linespacing=1.2)
        y += node_h + 0.15
    n_attn = sum(1 for g in groups if g["role"] == "attention")
    n_ffn = sum(1 for g in groups if g["role"] == "ffn")
    E = len(e2r[0]) if L else 0
    src = str(plan.get("source", path))
    name = os.path.basename(os.path.dirname(src)) if os.path.basename(src) == "model.onnx" else os.path.basename(src)
    ax.text(0.15, 0.3, a.title or f"{name}: {world} ranks on {nodes} "
            f"node{'s' if nodes > 1 else ''} ({hw_name}, {gpn} GPUs per node), {n_attn} attention + {n_ffn} FFN "
            f"groups, {E} experts x {L} MoE layers", fontsize=9.5, va="center")
    ax.text(0.15, fig_h - 0.2, "layer l runs on attention group l mod p and FFN group l mod p: M2N sends each token's "
            "hidden state A -> F to its experts' ranks, N2M returns the results F -> A", fontsize=7, color="0.3")
    w, h = plotlib.save_png(fig, a.out)
    print(f"placement: {a.out} {w}x{h}: ranks {world}, nodes {nodes}, attention groups {n_attn}, ffn groups {n_ffn}, "
          f"experts per F-rank per layer {min(experts_per_rank, default=0)}-{max(experts_per_rank, default=0)}, "
          f"expert slots {sum(experts_per_rank)}")
    for g in groups:
        print(f"  {g['role']} {g['index']}: ranks {ranges(g['ranks'])}, layers {ranges(g['layers'])}")


if __name__ == "__main__":
    plotlib.main("placement", run)
