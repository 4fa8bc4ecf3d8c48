#!/usr/bin/python3
"""Planning wall time of `disagmoe plan` (Z3 and the simulated search) against issue 15's targets.

Runs each case `--runs` times with this build's binary and, when `--peer BIN` is given (e.g. main's
build/bin/disagmoe), with that binary too, alternating the two so that both see the same load.
Prints per case and binary the median and best wall seconds and the median CPU seconds (user +
system of the child), the target (128 GPUs <= 5 s, 1024 GPUs <= 60 s including the search; the
16-GPU case has none), the ratio peer / this build, whether the search stopped on its budget, and
whether the two binaries' plan JSON are equal except the wall-clock fields (z3.seconds,
search.seconds, search.budget_hit). JSON equality is only claimed where neither run hit the
search budget (a budget-bound search depends on the machine's speed).

usage: /usr/bin/python3 bench/sim/plan_time.py [--bin build/bin/disagmoe] [--peer MAIN_BIN]
       [--runs 3] [--case NAME ...] [--search-budget S] [--keep DIR]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name, GPUs, target seconds (None: no target), config, cluster, seq-len, global tokens (None: the
# planner's default 2^24)
CASES = [
    ("mixtral-8x7b-16", 16, None, "mixtral-8x7b.json", "h800-2x8.yaml", 4096, 16777216),
    ("deepseek-moe-16b-128", 128, 5.0, "deepseek-moe-16b.json", "h800-16x8.yaml", 4096, None),
    ("qwen3-235b-128", 128, 5.0, "qwen3-235b.json", "h800-16x8.yaml", 4096, None),
    ("deepseek-moe-16b-1024", 1024, 60.0, "deepseek-moe-16b.json", "h800-128x8.yaml", 4096, None),
    # Short cases (fewer sequences per step) for the JSON comparison: the search converges well
    # inside its budget, so the result does not depend on the machine's speed.
    ("mixtral-8x7b-16-short", 16, None, "mixtral-8x7b.json", "h800-2x8.yaml", 4096, 1048576),
    ("deepseek-moe-16b-32-short", 32, None, "deepseek-moe-16b.json", "h800-4x8.yaml", 4096,
     1048576),
    ("gpt-oss-120b-128-short", 128, None, "gpt-oss-120b.json", "h800-16x8.yaml", 4096, 2097152),
    ("deepseek-moe-16b-128-16k-short", 128, None, "deepseek-moe-16b.json", "h800-16x8.yaml",
     16384, 4194304),
]

WALL_CLOCK = [("z3", "seconds"), ("search", "seconds"), ("search", "budget_hit")]


def run_once(binary, case, budget, out_json):
    _, _, _, config, cluster, seq, tokens = case
    cmd = [binary, "plan", "--config", os.path.join(ROOT, "samples/configs", config), "--cluster",
           os.path.join(ROOT, "samples/clusters", cluster), "--seq-len", str(seq), "--json",
           out_json]
    if tokens:
        cmd += ["--global-tokens", str(tokens)]
    if budget is not None:
        cmd += ["--search-budget", str(budget)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (proc.returncode, " ".join(cmd), proc.stderr))
    with open(out_json) as f:
        doc = json.load(f)
    budget_hit = bool(doc.get("search", {}).get("budget_hit", False))
    for section, key in WALL_CLOCK:
        doc.get(section, {}).pop(key, None)
    return wall, cpu, budget_hit, doc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/bin/disagmoe"))
    ap.add_argument("--peer", help="a second disagmoe binary (e.g. main's) timed in the same run")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--case", action="append", help="case names (default: all)")
    ap.add_argument("--search-budget", type=float, default=None,
                    help="passed to disagmoe plan (default: the planner's own, 60 s)")
    ap.add_argument("--keep", help="directory for the JSON documents (default: a temporary one)")
    args = ap.parse_args()
    cases = [c for c in CASES if not args.case or c[0] in args.case]
    if not cases:
        sys.exit("no case named %s; cases: %s" % (args.case, ", ".join(c[0] for c in CASES)))
    bins = [("this", args.bin)] + ([("peer", args.peer)] if args.peer else [])
    out_dir = args.keep or tempfile.mkdtemp(prefix="plan_time_")
    os.makedirs(out_dir, exist_ok=True)
    print("load average at start: %.2f %.2f %.2f (%d CPUs)" % (os.getloadavg() + (os.cpu_count(),)))
    print("| case | GPUs | target (s) | binary | wall median (s) | wall best (s) | CPU median (s) "
          "| budget hit | peer / this (median wall) | JSON equal to peer |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for case in cases:
        stats = {name: {"wall": [], "cpu": [], "hit": False, "doc": None} for name, _ in bins}
        for r in range(args.runs):
            for name, binary in bins:
                out = os.path.join(out_dir, "%s.%s.%d.json" % (case[0], name, r))
                wall, cpu, hit, doc = run_once(binary, case, args.search_budget, out)
                st = stats[name]
                st["wall"].append(wall)
                st["cpu"].append(cpu)
                st["hit"] |= hit
                if st["doc"] is None:
                    st["doc"] = doc
                elif not hit and not st["hit"] and doc != st["doc"]:
                    sys.exit("%s: %s's plan differs between runs" % (case[0], name))
        this = stats["this"]
        for name, _ in bins:
            st = stats[name]
            ratio = equal = "-"
            if name == "this" and args.peer:
                peer = stats["peer"]
                ratio = "%.2f" % (statistics.median(peer["wall"]) / statistics.median(st["wall"]))
                equal = ("not compared (budget hit)" if st["hit"] or peer["hit"] else
                         ("yes" if st["doc"] == peer["doc"] else "NO"))
            target = "-" if case[2] is None else "%g" % case[2]
            print("| %s | %d | %s | %s | %.2f | %.2f | %.2f | %s | %s | %s |" %
                  (case[0], case[1], target, name, statistics.median(st["wall"]), min(st["wall"]),
                   statistics.median(st["cpu"]), "yes" if st["hit"] else "no", ratio, equal))
        sys.stdout.flush()
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
