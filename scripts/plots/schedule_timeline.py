#!/usr/bin/python3
"""AF-Pipe schedule timeline from a Chrome trace, one row per stream of each group (simulator) or
rank (runtime), with the bubbles: the time in the step when neither compute stream of that group or
rank runs, drawn as a red band under its rows.

Either trace format:
  disagmoe-run PLAN --backend sim [--op-times OPS.json] --trace TRACE.json   one simulated step; rows per
      schedule group (its ranks run alike): forward, backward and the comm lanes the simulator packed
      its in-flight exchanges into (runtime/sim/Simulator.cpp, writeChromeTrace; the same layout)
  disagmoe-run PLAN --train --trace TRACE.json   the last step as executed on the cpu backend; rows per
      rank: forward, backward and comm stream (runtime/executor/OpProfile.cpp; pid = rank, tid = stream);
      on the compute streams the send/recv instructions (packing, waiting for a message) are drawn thin
      and grey, and only `compute` spans count as busy; the comm stream's sends dark, receives light
      (its spans name no micro-batch)

    /usr/bin/python3 scripts/plots/schedule_timeline.py TRACE.json [--no-comm] [--title TEXT] -o OUT.png

Colour: micro-batch; solid forward, hatched backward, grey the optimizer update. Prints one summary
line: trace format, rows drawn, groups or ranks, spans, step span (ms) and the bubble fraction (idle
share of the step, averaged over ranks: a simulator group counts once per rank, as the simulator's
own "bubble fraction" line does), then one line per group or rank with its busy and idle ms.
"""
import argparse
import os
import sys

from matplotlib.patches import Patch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plotlib  # noqa: E402
from plotlib import plt  # noqa: E402

MB_COLORS = plt.get_cmap("tab10").colors


def idle_intervals(busy, t0, t1):
    out, cur = [], t0
    for a, b in sorted(busy):
        if a > cur:
            out.append((cur, a))
        cur = max(cur, b)
    if cur < t1:
        out.append((cur, t1))
    return out


def run():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--no-comm", action="store_true", help="leave out the comm rows")
    ap.add_argument("--title")
    ap.add_argument("-o", dest="out", required=True)
    a = ap.parse_args()
    plotlib.check_output(a.out)
    fmt, rows, spans = plotlib.load_trace(a.trace)
    t_start = 0.0 if fmt == "sim" else min(s.t0 for s in spans)
    t_end = max(s.t1 for s in spans)
    step = t_end - t_start
    if step <= 0:
        raise plotlib.InputError(a.trace, "traceEvents", "every span has zero length")
    order = {"forward": 0, "backward": 1, "comm": 2}
    owners = sorted({r.owner for r in rows.values()})
    compute = plotlib.compute_spans(spans)
    # Ranks per owner: a simulator group stands for its ranks (process_name '..., N ranks').
    weight = {r.owner: r.ranks for r in rows.values()}
    stats = {}
    for o in owners:
        busy = [(s.t0, s.t1) for s in compute if s.row.owner == o]
        b = plotlib.union_length(busy)
        stats[o] = (b, step - b, idle_intervals(busy, t_start, t_end))
    bubble = sum(weight[o] * stats[o][1] / step for o in owners) / sum(weight[o] for o in owners)

    drawn = []  # (label, kind, row or None, owner)
    for o in owners:
        mine = sorted((r for r in rows.values() if r.owner == o), key=lambda r: (order[r.kind], r.key[1]))
        for r in mine:
            if a.no_comm and r.kind == "comm":
                continue
            drawn.append((r.label if fmt == "sim" else r.kind, r.kind, r, o))
        drawn.append(("bubble", "bubble", None, o))
    # Row heights: compute rows 1, comm lanes 0.45 (the simulator packs a group's exchanges in flight
    # into as many lanes as overlap), the bubble band 0.7; a gap between groups or ranks.
    height = {"forward": 1.0, "backward": 1.0, "comm": 0.45, "bubble": 0.7}
    ys, y = [], 0.0
    for i, d in enumerate(drawn):
        if i and drawn[i - 1][3] != d[3]:
            y += 0.4
        ys.append(y + height[d[1]] / 2)
        y += height[d[1]]
    total_h = y
    fig_h = 1.6 + 0.2 * total_h
    fig, ax = plt.subplots(figsize=(11, fig_h))
    # Trace times are microseconds; the axis is in ms unless the whole step is shorter than 0.1 ms.
    scale, unit = (1e-3, "ms") if step >= 100 else (1.0, "us")
    yticks, ylabels = [], []
    mbs = set()
    for (label, kind, r, o), y in zip(drawn, ys):
        hh = height[kind]
        if kind == "bubble":
            for i0, i1 in stats[o][2]:
                ax.broken_barh([((i0 - t_start) * scale, (i1 - i0) * scale)], (y - 0.4 * hh, 0.8 * hh),
                               facecolors="tab:red", alpha=0.55, lw=0)
            yticks.append(y)
            ylabels.append(f"bubble {100 * stats[o][1] / step:.0f}%")
            continue
        if kind != "comm" or r.label in ("comm", "comm 0"):
            lanes = [yy for d, yy in zip(drawn, ys) if d[3] == o and d[1] == "comm"]
            if kind == "comm":
                yticks.append((lanes[0] + lanes[-1]) / 2)
                ylabels.append("comm" if len(lanes) == 1 else f"comm ({len(lanes)} lanes)")
            else:
                yticks.append(y)
                ylabels.append(label)
        for s in r.spans:
            x, w = (s.t0 - t_start) * scale, (s.t1 - s.t0) * scale
            thin = fmt == "runtime" and kind != "comm" and s.cat != "compute"
            if s.phase == "update":
                fc, hatch = "0.55", None
            else:
                mbs.add(s.mb)
                fc = MB_COLORS[s.mb % len(MB_COLORS)] if s.mb >= 0 else "0.3"
                hatch = "////" if s.phase == "backward" else None
            if fmt == "runtime" and kind == "comm":  # the comm worker's spans carry no micro-batch
                ax.broken_barh([(x, w)], (y - 0.4 * hh, 0.8 * hh), lw=0,
                               facecolors="0.2" if s.name.startswith("send") else "0.7")
            elif thin:
                ax.broken_barh([(x, w)], (y - 0.08, 0.16), facecolors="0.6", lw=0)
            else:
                ax.broken_barh([(x, w)], (y - 0.4 * hh, 0.8 * hh), facecolors=fc, alpha=0.65 if kind == "comm" else 1,
                               edgecolor="0.15", lw=0.3, hatch=hatch)
    ax.set_yticks(yticks)
    ax.set_yticklabels(ylabels, fontsize=7)
    ax.set_ylim(total_h, 0)
    ax.set_xlim(0, step * scale)
    for o in owners:
        mine = [yy for d, yy in zip(drawn, ys) if d[3] == o]
        lbl = next(r.owner_label for r in rows.values() if r.owner == o)
        ax.text(-0.085, (mine[0] + mine[-1]) / 2, lbl.replace(" (", "\n("), transform=ax.get_yaxis_transform(),
                ha="right", va="center", fontsize=8, fontweight="bold")
        ax.axhline(mine[-1] + height["bubble"] / 2 + 0.2, color="black", lw=0.8)
    ax.set_xlabel(f"time in the step ({unit})" + (" (simulated)" if fmt == "sim" else " (measured, cpu backend)"))
    ax.grid(axis="x", alpha=0.3)
    handles = [Patch(facecolor=MB_COLORS[m % len(MB_COLORS)], label=f"mb {m}") for m in sorted(mbs) if m >= 0]
    handles += [Patch(facecolor="white", edgecolor="black", hatch="////", label="backward"),
                Patch(facecolor="0.55", label="optimizer update"), Patch(facecolor="tab:red", alpha=0.55, label="bubble (idle)")]
    if fmt == "runtime":
        handles += [Patch(facecolor="0.6", label="send/recv instr. on a compute stream"),
                    Patch(facecolor="0.2", label="comm stream: send"), Patch(facecolor="0.7", label="comm stream: recv")]
    fig.legend(handles=handles, fontsize=6.5, ncol=min(len(handles), 12), loc="lower center", frameon=False)
    what = "simulated step (runtime/sim)" if fmt == "sim" else "measured step (disagmoe-run --train --trace)"
    ax.set_title(a.title or f"{os.path.basename(a.trace)}: {what}, {step * scale:.4g} {unit}, bubble fraction {bubble:.4f}",
                 fontsize=10)
    fig.subplots_adjust(left=0.2, right=0.98, top=1 - 0.35 / fig_h, bottom=0.85 / fig_h)
    w, h = plotlib.save_png(fig, a.out)
    kind = "groups" if fmt == "sim" else "ranks"
    print(f"schedule_timeline: {a.out} {w}x{h}: format {fmt}, rows {sum(1 for d in drawn if d[1] != 'bubble')}, "
          f"{kind} {len(owners)}, spans {len(spans)}, step {step * 1e-3:.6f} ms, bubble fraction {bubble:.4f}")
    for o in owners:
        lbl = next(r.owner_label for r in rows.values() if r.owner == o)
        print(f"  {lbl}: busy {stats[o][0] * 1e-3:.6f} ms, idle {stats[o][1] * 1e-3:.6f} ms")


if __name__ == "__main__":
    plotlib.main("schedule_timeline", run)
