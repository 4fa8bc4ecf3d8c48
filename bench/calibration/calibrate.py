"""Calibration benchmark (issue 7): measured CPU training step vs the sim backend's replay of the
same plan with the measured per-op times.

  /usr/bin/python3 bench/calibration/calibrate.py [--bin build/bin] [--runs 5] [--steps 3]
                                                  [--batch 2] [--seq-len 8] [--micro-batches 4]

1. Compiles samples/models/mixtral_tiny (2 A-ranks + 2 F-ranks per group, p = 2 groups, schedule
   with --micro-batches M of the compiled [batch, seq-len] each).
2. Runs `disagmoe-run --train` on M x batch sequences split into M micro-batches (the schedule's
   micro-batch shape), --runs times, each --steps steps; the measured step time is the median over
   all steps after the first of each run (the first warms caches and allocators), and each run
   writes --op-times-out.
3. Replays the plan with `--backend sim --op-times` for each run's file; the predicted step time is
   the median of those replays.
4. Prints measured, predicted (AF-Pipe replay), their ratio, and a second, closed-form prediction of
   the executor as it runs today: ranks interpret their programs one micro-batch at a time with no
   overlap of micro-batches across groups, so its step is close to the serial sum over micro-batches
   of every layer's forward and backward on the busiest rank of each group, plus the optimizer.
"""
import argparse
from collections import defaultdict
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit(f"FAILED ({r.returncode}): {' '.join(cmd)}\n{r.stdout}")
    return r.stdout


def exchange_times(trace_path, plan_json):
    """Measured in-process exchange times from an execution trace (Chrome trace of disagmoe-run
    --trace): for each exchange message (sender and receiver instruction of the same exchange,
    layer, micro-batch and phase on two different ranks) whose receiver was already waiting when
    the sender started packing, the time from that start to the end of the receive (pack, enqueue,
    thread wake-up, unpack). Returns op-times entries {"role": sender's role, "op": "exchange:<op>",
    "phase", "layer": -1, "seconds": median}, which the sim backend uses instead of its network
    model for those sends (runtime/sim/Simulator.h, OpTimes)."""
    trace = json.load(open(trace_path))
    role_of = {}
    for g in plan_json["placement"]["groups"]:
        for r in g["ranks"]:
            role_of[r] = g["role"]
    rank_of = {e["tid"]: int(re.match(r"rank (\d+)", e["args"]["name"]).group(1))
               for e in trace["traceEvents"] if e.get("ph") == "M" and e.get("name") == "thread_name"}
    ends = defaultdict(lambda: {"send": [], "recv": []})
    for e in trace["traceEvents"]:
        if e.get("ph") != "X" or e.get("cat") not in ("send", "recv") or "layer" not in e.get("args", {}):
            continue
        base = e["name"].replace(" (bwd)", "").rsplit("_", 1)[0]
        op = {"embed": "embedding"}.get(base, base)
        a = e["args"]
        ends[(op, a["layer"], a["micro_batch"], a["phase"])][e["cat"]].append(
            (rank_of[e["tid"]], e["ts"] * 1e-6, (e["ts"] + e["dur"]) * 1e-6))
    samples = defaultdict(list)
    for (op, layer, mb, phase), ev in ends.items():
        for rr, rstart, rend in ev["recv"]:
            senders = [(r, s) for r, s, _ in ev["send"] if r != rr and role_of[r] != role_of[rr] or
                       (r != rr and op == "residual")]
            if not senders:
                continue
            start = max(s for _, s in senders)
            # The receiver waited (the whole handoff is on the critical path), and its receive ended
            # after the send began: with receives posted ahead by the comm stream, a receive that
            # ended first took an earlier message of the same key, not this one.
            if rstart <= start <= rend:
                samples[(role_of[senders[0][0]], op, phase)].append(rend - start)
    return [{"role": role, "op": "exchange:" + op, "phase": phase, "layer": -1, "samples": len(v),
             "seconds": statistics.median(v)} for (role, op, phase), v in sorted(samples.items())]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq-len", type=int, default=8)
    ap.add_argument("--micro-batches", type=int, default=4)
    ap.add_argument("--attn-ranks", type=int, default=2)
    ap.add_argument("--ffn-ranks", type=int, default=2)
    ap.add_argument("--groups", type=int, default=2)
    a = ap.parse_args()
    sample = os.path.join(ROOT, "samples", "models", "mixtral_tiny")
    with tempfile.TemporaryDirectory(prefix="disagmoe-calibration-") as work:
        plan = os.path.join(work, "plan")
        run([f"{a.bin}/disagmoe", "compile", f"{sample}/model.onnx", "-o", plan, "--attn-ranks", str(a.attn_ranks),
             "--ffn-ranks", str(a.ffn_ranks), "--groups", str(a.groups), "--batch", str(a.batch), "--seq-len", str(a.seq_len),
             "--micro-batches", str(a.micro_batches)])
        plan_json = json.load(open(os.path.join(plan, "plan.json")))
        sched = plan_json["schedule"]
        M = sched["micro_batches"]
        measured, predicted, serial, predicted_x, predicted_h, exchanges = [], [], [], [], [], []
        for k in range(a.runs):
            ot = os.path.join(work, f"ops{k}.json")
            tr = os.path.join(work, f"trace{k}.json")
            out = run([f"{a.bin}/disagmoe-run", plan, "--train", "--batch", str(M * a.batch), "--seq-len",
                       str(a.seq_len), "--micro-batches", str(M), "--steps", str(a.steps), "--seed", str(k),
                       "--op-times-out", ot, "--trace", tr])
            steps = [float(s) for s in re.findall(r"target tokens \(([0-9.]+) s\)", out)]
            measured += steps[1:] if len(steps) > 1 else steps
            sim = run([f"{a.bin}/disagmoe-run", plan, "--backend", "sim", "--op-times", ot])
            predicted.append(float(re.search(r"step time: ([0-9.]+) ms", sim).group(1)) * 1e-3)
            # The same replay with the exchanges' measured in-process times instead of the network model.
            times = json.load(open(ot))
            measured_x = exchange_times(tr, plan_json)
            exchanges.append({(e["role"], e["op"], e["phase"]): e["seconds"] for e in measured_x})
            times["entries"] += measured_x
            otx = os.path.join(work, f"ops{k}_exchanges.json")
            json.dump(times, open(otx, "w"))
            sim = run([f"{a.bin}/disagmoe-run", plan, "--backend", "sim", "--op-times", otx])
            predicted_x.append(float(re.search(r"step time: ([0-9.]+) ms", sim).group(1)) * 1e-3)
            # ... and with the ranks' threads sharing this host's cores, as the cpu backend ran them.
            sim = run([f"{a.bin}/disagmoe-run", plan, "--backend", "sim", "--op-times", otx, "--host-cores",
                       str(os.cpu_count())])
            predicted_h.append(float(re.search(r"step time: ([0-9.]+) ms", sim).group(1)) * 1e-3)
            # Serial closed form: every compute instruction of the schedule, one after another, each
            # taking its measured median; the optimizer of every group runs concurrently (max).
            t = {(e["role"], e["op"], e["phase"]): e["seconds"] for e in json.load(open(ot))["entries"]}
            chain = sum(t[(role, i["op"], i["phase"])] for role, prog in sched["programs"].items() for i in prog
                        if i["kind"] == "compute" and i["phase"] != "update")
            opt = max(t.get((role, "optimizer", "update"), 0.0) for role in sched["programs"])
            serial.append(chain + opt)
    m, p, s = statistics.median(measured), statistics.median(predicted), statistics.median(serial)
    px = statistics.median(predicted_x)
    ph = statistics.median(predicted_h)
    print(f"plan: mixtral_tiny, {a.attn_ranks}+{a.ffn_ranks} ranks x {a.groups} groups, {M} micro-batches of [{a.batch},{a.seq_len}], "
          f"{a.runs} runs x {a.steps} steps, {os.cpu_count()} CPUs")
    print(f"measured CPU step (median of {len(measured)}):            {m * 1e3:9.3f} ms")
    print(f"sim backend, AF-Pipe replay with measured op times (median): {p * 1e3:9.3f} ms   "
          f"predicted/measured {p / m:.3f}")
    print(f"sim backend, the same with measured exchange times (median): {px * 1e3:9.3f} ms   "
          f"predicted/measured {px / m:.3f}")
    print(f"sim backend, ... and ranks sharing {os.cpu_count()} host cores:     {ph * 1e3:9.3f} ms   "
          f"predicted/measured {ph / m:.3f}   (best measured step {min(measured) * 1e3:.3f} ms: "
          f"{ph / min(measured):.3f})")
    keys = sorted({k for x in exchanges for k in x})
    print("measured exchange times (median of the runs' medians): " +
          ", ".join(f"{op[9:]} {phase} from {role} {statistics.median(x[(role, op, phase)] for x in exchanges if (role, op, phase) in x) * 1e6:.0f} us"
                    for role, op, phase in keys))
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"closed form, serial executor (median):                  {s * 1e3:9.3f} ms   "
          f"predicted/measured {s / m:.3f}")


if __name__ == "__main__":
    main()
