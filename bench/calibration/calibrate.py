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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq-len", type=int, default=8)
    ap.add_argument("--micro-batches", type=int, default=4)
    a = ap.parse_args()
    sample = os.path.join(ROOT, "samples", "models", "mixtral_tiny")
    with tempfile.TemporaryDirectory(prefix="disagmoe-calibration-") as work:
        plan = os.path.join(work, "plan")
        run([f"{a.bin}/disagmoe", "compile", f"{sample}/model.onnx", "-o", plan, "--attn-ranks", "2",
             "--ffn-ranks", "2", "--groups", "2", "--batch", str(a.batch), "--seq-len", str(a.seq_len),
             "--micro-batches", str(a.micro_batches)])
        sched = json.load(open(os.path.join(plan, "plan.json")))["schedule"]
        M = sched["micro_batches"]
        measured, predicted, serial = [], [], []
        for k in range(a.runs):
            ot = os.path.join(work, f"ops{k}.json")
            out = run([f"{a.bin}/disagmoe-run", plan, "--train", "--batch", str(M * a.batch), "--seq-len",
                       str(a.seq_len), "--micro-batches", str(M), "--steps", str(a.steps), "--seed", str(k),
                       "--op-times-out", ot])
            steps = [float(s) for s in re.findall(r"target tokens \(([0-9.]+) s\)", out)]
            measured += steps[1:] if len(steps) > 1 else steps
            sim = run([f"{a.bin}/disagmoe-run", plan, "--backend", "sim", "--op-times", ot])
            predicted.append(float(re.search(r"step time: ([0-9.]+) ms", sim).group(1)) * 1e-3)
            # Serial closed form: every compute instruction of the schedule, one after another, each
            # taking its measured median; the optimizer of every group runs concurrently (max).
            t = {(e["role"], e["op"], e["phase"]): e["seconds"] for e in json.load(open(ot))["entries"]}
            chain = sum(t[(role, i["op"], i["phase"])] for role, prog in sched["programs"].items() for i in prog
                        if i["kind"] == "compute" and i["phase"] != "update")
            opt = max(t.get((role, "optimizer", "update"), 0.0) for role in sched["programs"])
            serial.append(chain + opt)
    m, p, s = statistics.median(measured), statistics.median(predicted), statistics.median(serial)
    print(f"plan: mixtral_tiny, 2+2 ranks x 2 groups, {M} micro-batches of [{a.batch},{a.seq_len}], "
          f"{a.runs} runs x {a.steps} steps, {os.cpu_count()} CPUs")
    print(f"measured CPU step (median of {len(measured)}):            {m * 1e3:9.3f} ms")
    print(f"sim backend, AF-Pipe replay with measured op times (median): {p * 1e3:9.3f} ms   "
          f"predicted/measured {p / m:.3f}")
    print(f"closed form, serial executor (median):                  {s * 1e3:9.3f} ms   "
          f"predicted/measured {s / m:.3f}")


if __name__ == "__main__":
    main()
