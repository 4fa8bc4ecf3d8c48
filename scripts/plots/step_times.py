#!/usr/bin/python3
"""Measured against simulated step time of one plan, side by side.

Measured: the step wall times of a CPU training run (`disagmoe-run PLAN --train ... --loss-log LOG.jsonl`,
field `seconds`; the median over every step but the first, which warms caches and allocators, with
the range as a whisker) and, with --measured-trace, that run's last step as traced (`--trace`): each
group's busy time, the busiest rank's union of `compute` spans. Simulated: the step time and each
group's busy time (union of its compute spans) of `disagmoe-run PLAN --backend sim [--op-times
OPS.json] [--host-cores C] --trace SIM.json` replays, one per --sim LABEL=SIM.json. The step time of a
simulated trace is its last span's end (the simulator starts the step at 0).

What each replay predicts (label them so): with roofline times the plan's cluster (e.g. H800), not
the CPU the run was measured on; with --op-times the measured per-op medians (`--op-times-out` of the
same run) on the AF-Pipe schedule; with --host-cores the same with the ranks' threads sharing C
cores. bench/calibration/README.md discusses why they differ from the measured CPU step.

    /usr/bin/python3 scripts/plots/step_times.py --measured LOG.jsonl [--measured-trace TRACE.json]
        --sim LABEL=SIM.json [--sim LABEL=SIM.json ...] [--title TEXT] -o OUT.png

Prints one summary line: steps measured and their median (ms), each simulation's step (ms) and its
ratio to the measured median; then one line per group with the measured and simulated busy ms.
"""
import argparse
import os
import statistics
import sys
import textwrap

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plotlib  # noqa: E402
from plotlib import InputError, plt  # noqa: E402


def group_busy(path):
    """{(role, index): busy us} and the step span (us) of a trace."""
    fmt, rows, spans = plotlib.load_trace(path)
    comp = plotlib.compute_spans(spans)
    busy = {}
    for o in sorted({r.owner for r in rows.values()}):
        row = next(r for r in rows.values() if r.owner == o)
        role, idx = row.role, row.group
        b = plotlib.union_length([(s.t0, s.t1) for s in comp if s.row.owner == o])
        busy[(role, idx)] = max(busy.get((role, idx), 0.0), b)  # runtime: the busiest rank of the group
    t0 = 0.0 if fmt == "sim" else min(s.t0 for s in spans)
    return fmt, busy, max(s.t1 for s in spans) - t0


def run():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--measured", required=True, metavar="LOG.jsonl")
    ap.add_argument("--measured-trace", metavar="TRACE.json")
    ap.add_argument("--sim", action="append", required=True, metavar="LABEL=SIM.json")
    ap.add_argument("--title")
    ap.add_argument("-o", dest="out", required=True)
    a = ap.parse_args()
    plotlib.check_output(a.out)
    steps = plotlib.load_loss_log(a.measured)
    secs = [r["seconds"] for r in steps[1:]] if len(steps) > 1 else [steps[0]["seconds"]]
    med = statistics.median(secs) * 1e3
    sims = []
    for spec in a.sim:
        if "=" not in spec:
            raise InputError(spec, "--sim", "expected LABEL=SIM.json")
        label, path = spec.split("=", 1)
        fmt, busy, step = group_busy(path)
        if fmt != "sim":
            raise InputError(path, "traceEvents", "not a simulator trace (disagmoe-run --backend sim --trace)")
        sims.append((label, path, busy, step * 1e-3))
    mbusy = None
    if a.measured_trace:
        fmt, mbusy, _ = group_busy(a.measured_trace)
        if fmt != "runtime":
            raise InputError(a.measured_trace, "traceEvents", "not a runtime trace (disagmoe-run --train --trace)")
        mbusy = {k: v * 1e-3 for k, v in mbusy.items()}

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [1, 1.4]})
    labels = [f"measured\n(cpu, median of {len(secs)})"] + ["\n".join(textwrap.wrap(s[0], 16)) for s in sims]
    vals = [med] + [s[3] for s in sims]
    colors = ["black"] + list(plt.get_cmap("tab10").colors[:len(sims)])
    bars = ax.bar(range(len(vals)), vals, color=colors, width=0.6)
    ax.errorbar([0], [med], yerr=[[med - min(secs) * 1e3], [max(secs) * 1e3 - med]], color="tab:red", capsize=5,
                label="measured range (steps 2..N)")
    for b, v in zip(bars, vals):
        ax.text(b.get_x() + b.get_width() / 2, v, f"{v:.3g} ms" + (f"\n({v / med:.3g}x)" if v is not vals[0] else ""),
                ha="center", va="bottom", fontsize=7.5)
    ax.set_xticks(range(len(vals)))
    ax.set_xticklabels(labels, fontsize=7.5)
    ax.set_yscale("log")
    ax.set_ylim(min(vals) / 3, max(vals) * 5)
    ax.set_ylabel("step time (ms, log scale)")
    ax.set_title("one training step", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    keys = sorted(set().union(*[s[2].keys() for s in sims]) | set(mbusy or {}))
    series = ([("measured (last step, busiest rank)", mbusy, "black")] if mbusy else []) + \
             [(s[0].replace("\n", " "), {k: v * 1e-3 for k, v in s[2].items()}, c) for s, c in zip(sims, colors[1:])]
    width = 0.8 / len(series)
    for j, (lbl, d, c) in enumerate(series):
        ax2.bar(np.arange(len(keys)) + (j - (len(series) - 1) / 2) * width, [d.get(k, 0) for k in keys], width,
                color=c, label=lbl)
    ax2.set_xticks(range(len(keys)))
    ax2.set_xticklabels([f"{r} {i}" for r, i in keys], fontsize=8)
    ax2.set_yscale("log")
    ax2.set_ylabel("busy ms per step (log scale)")
    ax2.set_title("busy time per group (union of compute spans)", fontsize=9)
    ax2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, frameon=False)
    ax2.grid(axis="y", alpha=0.3)
    fig.suptitle(a.title or f"measured ({os.path.basename(a.measured)}) vs simulated step", fontsize=10)
    fig.tight_layout()
    w, h = plotlib.save_png(fig, a.out)
    print(f"step_times: {a.out} {w}x{h}: measured steps {len(secs)} median {med:.6f} ms, " +
          ", ".join(f"{s[0].replace(chr(10), ' ')} {s[3]:.6f} ms ({s[3] / med:.4f}x)" for s in sims))
    for k in keys:
        print(f"  {k[0]} {k[1]}: " + ", ".join(f"{lbl} {d[k]:.6f} ms" for lbl, d, _ in series if k in d))


if __name__ == "__main__":
    plotlib.main("step_times", run)
