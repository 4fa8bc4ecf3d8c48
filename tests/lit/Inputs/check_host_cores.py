"""Checks what disagmoe-run --backend sim --host-cores C changes, against the same plan without it
(runtime/sim/Simulator.h SimOptions::hostCores: every running compute instruction of every rank is a
thread, and all progress at min(1, C / threads) of their rate). Prints one line.
  check_host_cores.py NONE.out C1.out C2.out BIG.out     (outputs of no flag, C = 1, 2, and C >= ranks)
From the model, with W = sum over groups of (ranks x busy without the flag), the compute work:
  * C >= every rank's thread (BIG): nothing is shared, step time and busy equal the run without it;
  * the host does at most C seconds of compute per second: step(C) >= W / C;
  * an instruction runs no faster than alone and no slower than C / ranks of its rate:
    busy(none) <= busy(C) <= busy(none) x ranks / C, per group;
  * fewer cores, longer steps: step(1) > step(2) >= step(none).
"""
import re
import sys

EPS = 2e-6  # ms: the outputs print 6 decimals


def parse(path):
    text = open(path).read()
    step = float(re.search(r"^step time: ([0-9.]+) ms$", text, re.M).group(1))
    host = re.search(r"^host: the ranks' threads share (\d+) CPU cores", text, re.M)
    groups = {}
    for m in re.finditer(r"^(\w+ \d+)\s+([0-9,]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)$", text, re.M):
        groups[m.group(1)] = (len(m.group(2).split(",")), float(m.group(3)))
    assert groups, f"{path}: no per-rank table"
    return {"step": step, "cores": int(host.group(1)) if host else None, "groups": groups,
            "ranks": sum(n for n, _ in groups.values())}


def main(none_path, c1_path, c2_path, big_path):
    none, c1, c2, big = (parse(p) for p in (none_path, c1_path, c2_path, big_path))
    assert none["cores"] is None, "the run without --host-cores prints a host: line"
    assert (c1["cores"], c2["cores"]) == (1, 2), (c1["cores"], c2["cores"])
    ranks = none["ranks"]
    assert big["cores"] >= ranks, f"BIG.out has {big['cores']} cores, fewer than the {ranks} ranks"
    assert big["step"] == none["step"] and big["groups"] == none["groups"], \
        f"{big['cores']} cores for {ranks} ranks: step/busy {big['step']} {big['groups']} differ from " \
        f"{none['step']} {none['groups']} without --host-cores"
    work = sum(n * busy for n, busy in none["groups"].values())
    for run in (c1, c2):
        cores = run["cores"]
        assert run["step"] >= work / cores - EPS, \
            f"{cores} cores: step {run['step']} ms below the work bound W / C = {work / cores:.6f} ms"
        for name, (n, busy) in run["groups"].items():
            alone = none["groups"][name][1]
            assert alone - EPS <= busy <= alone * ranks / cores + EPS, \
                f"{cores} cores: {name} busy {busy} ms outside [{alone}, {alone * ranks / cores:.6f}]"
    assert c1["step"] > c2["step"] >= none["step"], (c1["step"], c2["step"], none["step"])
    print(f"host cores: OK (step {none['step']} ms alone, {c2['step']} on 2 cores, {c1['step']} on 1; "
          f"W = {work:.6f} ms)")


if __name__ == "__main__":
    main(*sys.argv[1:5])
