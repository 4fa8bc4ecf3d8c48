#!/usr/bin/python3
"""Markdown tables of `disagmoe route-stats` results, as docs/observatory.md quotes them.

    /usr/bin/python3 bench/observatory/summarize.py RESULTS_DIR/MODEL [...]

Per model and condition (means over MoE layers; per-batch metrics averaged over batches):
Gini of per-rank load at the classification EP for the smallest and the largest GBS with a full
batch, Gini at every EP degree (smallest GBS), per-expert max/mean and Dirichlet alpha (smallest GBS),
then the classification line.
"""
import json
import os
import sys

import numpy as np


def entry(lay, gbs):
    return next(g for g in lay["by_gbs"] if g["gbs"] == gbs)


def mean_over_layers(cond, gbs, fn):
    vals = [fn(entry(l, gbs)) for l in cond["layers"] if entry(l, gbs)["batches"]]
    return float(np.mean(vals)) if vals else float("nan")


def main(dirs):
    for d in dirs:
        doc = json.load(open(os.path.join(d, "route-stats.json")))
        cl = doc["classification"]
        ep, g0 = cl["ep"], cl["gbs"]
        name = os.path.basename(os.path.normpath(d))
        print(f"\n### {name} ({doc['experts']} experts, top-{doc['top_k']}, {doc['layers']} MoE layers)\n")
        eps = doc["ep"]
        head = (f"| condition | tokens | Gini EP{ep} GBS {g0} | Gini EP{ep} largest GBS | "
                + " | ".join(f"Gini EP{e}" for e in eps) + " | max/mean | alpha |")
        print(head)
        print("|" + "---|" * (head.count("|") - 1))
        for c in doc["conditions"]:
            full = [g for g in doc["gbs"] if entry(c["layers"][0], g)["batches"]]
            gl = max(full)
            gini = lambda g, e=ep: mean_over_layers(c, g, lambda x: x["gini"][str(e)]["mean"])
            mm = mean_over_layers(c, g0, lambda x: x["max_over_mean"]["mean"])
            al = mean_over_layers(c, g0, lambda x: x["alpha"])
            print(f"| {c['name']} | {c['tokens']} | {gini(g0):.3f} | {gini(gl):.3f} (GBS {gl}) | "
                  + " | ".join(f"{gini(g0, e):.3f}" for e in eps) + f" | {mm:.3f} | {al:.3g} |")
        ratio = cl["mock_over_real"]
        print(f"\nclassification: **{cl['class']}** (real-text Gini {cl['real_text_gini']:.3f}, mock "
              f"{cl['mock_gini']:.3f}, mock/real {ratio:.2f}); forward "
              f"{doc['timing']['forward_tokens']} tokens in {doc['timing']['forward_seconds']:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
