"""Checks `disagmoe-run --backend sim` against closed forms computed here from the plan's schedule
and the measured op times (every compute op of one kind takes the same time, exchanges are tiny):
  - busy seconds of each group = the sum of its compute instructions' times (processor sharing of
    the two compute streams is work-conserving, so concurrency does not change the sum);
  - warm-up: ring stage k (A0, F0, A1, F1, ...: stage 2g = attention group g running layer g,
    2g+1 = FFN group g) starts micro-batch 0 at k x T_fwd plus k exchange hops, each at most the
    hop's bytes over the slowest link (the paper's warm-up term (PP-1) x [max(T_a, T_f) + T_M2N]
    per virtual stage, docs/reference/papers.md), plus, with the distributed optimizer, at most the
    weight all-gathers issued at the start of the step (each moves at most its bytes per rank over
    the slowest link: (n-1)/n of them, runtime/sim/Simulator.h);
  - step time = the trace's last event end; MFU = model FLOPs / (step x ranks x peak).
Usage: check_sim_replay.py PLAN.json OP_TIMES.json STDOUT.txt TRACE.json"""
import json
import re
import sys

plan = json.load(open(sys.argv[1]))
times = {(e["op"], e.get("phase", "forward")): e["seconds"] for e in json.load(open(sys.argv[2]))["entries"]}
out = open(sys.argv[3]).read()
trace = json.load(open(sys.argv[4]))["traceEvents"]
s = plan["schedule"]
groups = s["groups"]
world = sum(len(r) for g in groups for r in g["ranks"])

# Busy per group from the instructions.
busy = [0.0] * len(groups)
for prog in s["programs"].values():
    for ins in prog:
        if ins["kind"] == "compute":
            busy[ins["group"]] += times[(ins["op"], ins["phase"])]
rows = re.findall(r"^(attention|ffn) (\d+) +\S+ +([0-9.]+) +([0-9.]+) +([0-9.]+)$", out, re.M)
assert len(rows) == len(groups), (rows, out)
for role, index, busy_ms, idle_ms, _ in rows:
    g = next(k for k, x in enumerate(groups) if x["role"] == role and x["index"] == int(index))
    assert abs(float(busy_ms) - busy[g] * 1e3) < 1e-5, (role, index, busy_ms, busy[g])

step = float(re.search(r"^step time: ([0-9.]+) ms$", out, re.M).group(1)) / 1e3
last_end = max(e["ts"] + e["dur"] for e in trace if e.get("ph") == "X") / 1e6
assert abs(step - last_end) < 1e-8 + 1e-6 * step, (step, last_end)
mfu = float(re.search(r"^MFU: ([0-9.eE+-]+) ", out, re.M).group(1))
expected_mfu = s["model_flops"] / (step * world * s["hardware"]["peak_flops"])
assert abs(mfu - expected_mfu) <= 1e-5 * expected_mfu, (mfu, expected_mfu)

# Warm-up of the ring.
p = sum(1 for g in groups if g["role"] == "attention")
slowest = min(s["hardware"]["nvlink_bandwidth"], s["hardware"]["nic_bandwidth"])
hop = max(i.get("bytes", 0) for prog in s["programs"].values() for i in prog
          if i["kind"] == "send" and i["phase"] == "forward") * world / slowest
gathers = sum(i["bytes"] for prog in s["programs"].values() for i in prog
              if i["kind"] == "all_gather") / slowest
t_fwd = times[("attention", "forward")]
assert times[("experts", "forward")] == t_fwd, "the closed form needs uniform stages"
# A process per group, pid = its first rank (runtime/sim/Simulator.h, writeChromeTrace).
pid = {(g["role"], g["index"]): g["ranks"][0][0] if isinstance(g["ranks"][0], list) else g["ranks"][0]
       for g in groups}
for k in range(2 * p):
    role, op = ("attention", "attention") if k % 2 == 0 else ("ffn", "experts")
    layer = k // 2
    starts = [e["ts"] / 1e6 for e in trace if e.get("ph") == "X" and e["pid"] == pid[(role, layer)]
              and e["name"] == op + " forward" and e["args"]["mb"] == 0 and e["args"]["layer"] == layer]
    assert len(starts) == 1, (k, starts)
    assert k * t_fwd - 1e-9 <= starts[0] <= k * (t_fwd + hop) + gathers + 1e-9, (k, starts[0], k * t_fwd, hop,
                                                                                  gathers)
print("ok: %d groups, step %.6f s, warm-up of %d ring stages within %.3g s of k x T" % (len(groups), step, 2 * p, hop))
