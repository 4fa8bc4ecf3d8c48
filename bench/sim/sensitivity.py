#!/usr/bin/env python3
"""The paper's sensitivity study on the simulator: DisagMoE's step for each attention:FFN GPU split
on 32 GPUs (4 x 8 H800), at 4K and 16K, beside the paper's best splits (16:16 at 4K, 16:10 at 16K,
with the NICs fixed 16:16; ../shared/reference/papers.md).

For each split, `disagmoe simulate --attn-gpus A --ffn-gpus F --layout separate` (attention on the
first nodes, so each side keeps its nodes' NICs, the nearest the simulator comes to fixing them)
runs the planner's simulated search for the rest (p, replicas, ranks, micro-batches, recomputation,
window); the baselines run once per sequence length on all 32 GPUs, as the reference of the
speed-up. Prints a markdown table per sequence length and writes every figure to --json.

Usage: bench/sim/sensitivity.py [--disagmoe build/bin/disagmoe] [--splits 8,10,12,14,16]
                                [--seq-lens 4096,16384] [--sequences 1680] [--json OUT.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

MODEL = "deepseek-moe-16b.json"
CLUSTER = "h800-4x8.yaml"
PAPER_BEST = {4096: (16, 16), 16384: (16, 10)}


def simulate(exe, seq, tokens, extra):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "sim.json")
        cmd = [exe, "simulate", "--config", MODEL, "--cluster", CLUSTER, "--seq-len", str(seq),
               "--global-tokens", str(tokens), "--json", out] + extra
        run = subprocess.run(cmd, capture_output=True, text=True)
        if not os.path.exists(out):
            last = (run.stderr.strip() or run.stdout.strip()).splitlines()
            return None, last[-1] if last else "exit %d" % run.returncode
        return json.load(open(out)), ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--disagmoe", default="build/bin/disagmoe")
    ap.add_argument("--splits", default="8,10,12,14,16")
    ap.add_argument("--seq-lens", default="4096,16384")
    ap.add_argument("--sequences", type=int, default=1680,
                    help="sequences per step (default 1680 = lcm(8, 10, 12, 14, 16) x 2: every "
                    "split's A- and F-ranks divide it, so no split fails on integrality)")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    sizes = [int(x) for x in a.splits.split(",")]
    report = {"model": MODEL, "cluster": CLUSTER, "sequences": a.sequences, "runs": []}
    for seq in [int(x) for x in a.seq_lens.split(",")]:
        tokens = a.sequences * seq
        ref, err = simulate(a.disagmoe, seq, tokens,
                            ["--baselines", "megatron,megatron-overlap,dualpipe"])
        base, tuned = {}, {}
        if ref:
            for s in ref["systems"]:
                if s["system"] == "disagmoe":
                    continue
                if s.get("ok"):
                    base[s["system"]] = s["step_s"]
                t = s.get("tuned")
                if t and t.get("ok"):
                    tuned[s["system"]] = (t["step_s"], t.get("config", ""))
        megatron = base.get("megatron")
        fastest = min(base.values()) if base else None
        fastest_tuned = min(v[0] for v in tuned.values()) if tuned else None
        rows = []
        for A in sizes:
            for F in sizes:
                doc, err = simulate(a.disagmoe, seq, tokens,
                                    ["--attn-gpus", str(A), "--ffn-gpus", str(F), "--layout",
                                     "separate", "--baselines", "none"])
                row = {"seq_len": seq, "attn_gpus": A, "ffn_gpus": F}
                af = doc["systems"][0] if doc else None
                if af and af.get("ok"):
                    row.update(step_s=af["step_s"], config=af["config"], mfu=af["mfu"])
                else:
                    row["error"] = (af or {}).get("error", err)
                rows.append(row)
                report["runs"].append(row)
        ok = [r for r in rows if "step_s" in r]
        best = min(ok, key=lambda r: r["step_s"]) if ok else None
        pa, pf = PAPER_BEST[seq] if seq in PAPER_BEST else (None, None)
        print("\n### %dK: step (s) of DisagMoE per attention:FFN GPU split, 32 x H800" % (seq // 1024))
        if megatron:
            print("baselines on all 32 GPUs, EP 16: " +
                  ", ".join("%s %.3f s" % (k, v) for k, v in sorted(base.items())))
        if tuned:
            print("baselines tuned over EP, PP, VPP, micro-batches, recomputation: " +
                  ", ".join("%s %.3f s (%s)" % (k, v[0], v[1]) for k, v in sorted(tuned.items())))
        print("\n| attention \\ FFN | " + " | ".join(str(F) for F in sizes) + " |")
        print("|---|" + "---|" * len(sizes))
        for A in sizes:
            cells = []
            for F in sizes:
                r = next(r for r in rows if r["attn_gpus"] == A and r["ffn_gpus"] == F)
                if "step_s" not in r:
                    cells.append("-")
                    continue
                c = "%.3f" % r["step_s"]
                if megatron:
                    c += " (%.2fx)" % (megatron / r["step_s"])
                if r is best:
                    c = "**" + c + "**"
                if (A, F) == (pa, pf):
                    c += " paper"
                cells.append(c)
            print("| %d | %s |" % (A, " | ".join(cells)))
        if best:
            print("\nbest split %d:%d, step %.3f s (%s)%s; paper's best %s:%s" %
                  (best["attn_gpus"], best["ffn_gpus"], best["step_s"], best["config"],
                   "; %.2fx Megatron, %.2fx the fastest baseline at EP 16" %
                   (megatron / best["step_s"], fastest / best["step_s"]) if megatron else "", pa, pf))
            if fastest_tuned:
                print("against the fastest tuned baseline: %.2fx" % (fastest_tuned / best["step_s"]))
        report.setdefault("baselines", {})[str(seq)] = base
        report.setdefault("tuned_baselines", {})[str(seq)] = {k: v[0] for k, v in tuned.items()}
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(report, f, indent=2)
        os.replace(tmp, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
