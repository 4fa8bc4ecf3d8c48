#!/usr/bin/python3
"""Training curves from a loss log (`disagmoe-run PLAN --train ... --loss-log LOG.jsonl`): loss (and the
aux loss when the run had --aux-loss-coef), learning rate, global gradient norm (steps where
--clip-grad scaled the gradients marked) and tokens/s, one panel each, against the step.

    /usr/bin/python3 scripts/plots/training_curves.py LOG.jsonl [--title TEXT] -o OUT.png

Prints one summary line: steps plotted, first/last step, first/last/min loss, max lr, max grad norm,
clipped steps, median tokens/s.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plotlib  # noqa: E402
from plotlib import plt  # noqa: E402


def run():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log")
    ap.add_argument("-o", dest="out", required=True)
    ap.add_argument("--title")
    a = ap.parse_args()
    plotlib.check_output(a.out)
    steps = plotlib.load_loss_log(a.log)
    x = [r["step"] for r in steps]
    clipped = [r for r in steps if r["clip_coef"] < 1]

    fig, axes = plt.subplots(2, 2, figsize=(8, 6), sharex=True)
    ax = axes[0][0]
    ax.plot(x, [r["loss"] for r in steps], "-o", ms=3, color="tab:blue", label="loss (cross-entropy)")
    if any(r["aux_loss"] != 0 for r in steps):
        ax.plot(x, [r["aux_loss"] for r in steps], "-", color="tab:orange", label="aux loss")
    ax.set_ylabel("nats per target token")
    ax.set_title("loss")
    ax.legend(fontsize=8)
    ax = axes[0][1]
    ax.plot(x, [r["lr"] for r in steps], "-o", ms=3, color="tab:green")
    ax.set_title("learning rate")
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 2))
    ax = axes[1][0]
    ax.plot(x, [r["grad_norm"] for r in steps], "-o", ms=3, color="tab:red", label="global grad norm (before clipping)")
    if clipped:
        ax.plot([r["step"] for r in clipped], [r["grad_norm"] for r in clipped], "x", color="black", ms=6,
                label=f"clipped ({len(clipped)} steps)")
        norms = {round(r["grad_norm"] * r["clip_coef"], 3) for r in clipped}
        if len(norms) == 1:  # clip_coef = NORM / (total + 1e-6): the clip threshold
            ax.axhline(norms.pop(), color="gray", ls="--", lw=1, label="clip threshold")
    ax.set_title("gradient norm")
    ax.set_xlabel("step")
    ax.legend(fontsize=8)
    ax = axes[1][1]
    ax.plot(x, [r["tokens_per_s"] for r in steps], "-o", ms=3, color="tab:purple")
    ax.set_title("throughput")
    ax.set_ylabel("tokens/s (batch x seq / step wall time)")
    ax.set_xlabel("step")
    ax.set_ylim(bottom=0)
    for row in axes:
        for ax in row:
            ax.grid(alpha=0.3)
    fig.suptitle(a.title or f"{os.path.basename(a.log)}: {len(steps)} steps, "
                 f"{int(steps[0]['target_tokens'])} target tokens per step")
    fig.tight_layout()
    w, h = plotlib.save_png(fig, a.out)
    losses = [r["loss"] for r in steps]
    print(f"training_curves: {a.out} {w}x{h}: steps {len(steps)} (from {x[0]} to {x[-1]}), "
          f"loss first {losses[0]:.6g} last {losses[-1]:.6g} min {min(losses):.6g}, "
          f"max lr {max(r['lr'] for r in steps):.6g}, max grad norm {max(r['grad_norm'] for r in steps):.6g}, "
          f"clipped {len(clipped)}, median tokens/s {statistics.median(r['tokens_per_s'] for r in steps):.1f}")


if __name__ == "__main__":
    plotlib.main("training_curves", run)
