#!/usr/bin/python3
"""Max per-rank load with and without a routing profile (docs/observatory.md, "Placement").

    /usr/bin/python3 bench/observatory/placement_gain.py RESULTS_DIR MODEL_DIR [--ffn-ranks 4,8]

RESULTS_DIR holds `disagmoe route-stats` outputs (route-stats.json and routing-profile.json, the
profile being one condition's whole-stream loads). For each F-rank count F the model is compiled twice
with `disagmoe compile --attn-ranks 1 --ffn-ranks F`: without a profile (contiguous experts) and with
`--routing-profile RESULTS_DIR/routing-profile.json` (the placement helper's expert placement). The
plans' expert_to_rank maps are then applied to every condition's measured per-expert loads:
rank load r = sum of c_e over the experts on r, reported as max/mean (1 = balanced) per layer.
The profile's own condition is in-sample; the others show whether the placement carries over.
Writes RESULTS_DIR/placement.json and prints a table.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def expert_map(model, ffn, profile, work):
    out = os.path.join(work, f"plan_f{ffn}_{'profile' if profile else 'contiguous'}")
    cmd = [os.path.join(ROOT, "build/bin/disagmoe"), "compile", model, "-o", out, "--attn-ranks", "1",
           "--ffn-ranks", str(ffn)]
    if profile:
        cmd += ["--routing-profile", profile]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: {r.stdout.strip()}")
    plan = json.load(open(os.path.join(out, "plan.json")))
    first = min(min(g["ranks"]) for g in plan["placement"]["groups"] if g["role"] == "ffn")
    return [[r - first for r in layer] for layer in plan["placement"]["expert_to_rank"]]


def imbalance(loads, ranks_of, ffn):
    per = [0] * ffn
    for e, load in enumerate(loads):
        per[ranks_of[e]] += load
    return max(per) / (sum(per) / ffn)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("model_dir")
    ap.add_argument("--ffn-ranks", default="4,8")
    args = ap.parse_args()
    doc = json.load(open(os.path.join(args.results, "route-stats.json")))
    profile = os.path.abspath(os.path.join(args.results, "routing-profile.json"))
    prof = json.load(open(profile))
    model = os.path.join(args.model_dir, "model.onnx")
    work = tempfile.mkdtemp(prefix="placement_gain_")
    rows = []
    print(f"{os.path.basename(os.path.normpath(args.model_dir))}: profile from {prof['data']} "
          f"({prof['tokens']} tokens); max/mean F-rank load per layer, contiguous -> profile placement")
    for ffn in [int(x) for x in args.ffn_ranks.split(",")]:
        if ffn > doc["experts"]:
            continue
        contiguous = expert_map(model, ffn, None, work)
        placed = expert_map(model, ffn, profile, work)
        for cond in doc["conditions"]:
            before = [imbalance(l["expert_loads"], contiguous[l["layer"]], ffn) for l in cond["layers"]]
            after = [imbalance(l["expert_loads"], placed[l["layer"]], ffn) for l in cond["layers"]]
            rows.append({"ffn_ranks": ffn, "condition": cond["name"], "contiguous": before, "profile": after})
            print(f"  F={ffn:<2} {cond['name']:<18} worst {max(before):.3f} -> {max(after):.3f}   by layer " +
                  " ".join(f"{b:.3f}->{a:.3f}" for b, a in zip(before, after)))
    with open(os.path.join(args.results, "placement.json"), "w") as f:
        json.dump({"model": model, "profile": prof["data"], "rows": rows}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
