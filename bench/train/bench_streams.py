"""Training step time before and after the concurrent streams (issue 7): the same plan, ids and
thread settings run by two disagmoe-run binaries.

    /usr/bin/python3 bench/train/bench_streams.py BEFORE_BIN_DIR AFTER_BIN_DIR [--compiler DISAGMOE]
        [--runs 5] [--steps 4] [--micro-batches 4] [--batch 8] [--seq-len 32]

BEFORE: a disagmoe-run whose ranks run each micro-batch's forward then backward on one thread per
rank (git before the streams commit); AFTER: one with the comm, forward and backward streams
(runtime/train/TrainStep.h). Model samples/models/mixtral_tiny compiled (by --compiler, default
AFTER_BIN_DIR/disagmoe) for 2 attention + 2 FFN ranks; disagmoe-run --train --micro-batches M
--steps STEPS (SGD, lr 0.1) on seeded ids [batch, seq-len]; OPENBLAS_NUM_THREADS=1 and
OMP_NUM_THREADS=1 for both (the same thread counts as bench_train.py; the streams add threads per
rank, not BLAS threads). Runs alternate BEFORE/AFTER; every step but the first of each run is
timed (the "(S s)" of its step line). Prints the median and best of each, the ratio, and checks
that both binaries print the same losses (the streams keep the bits). Nothing is left behind.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile

import numpy as np

SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples", "models", "mixtral_tiny")


def run(cmd):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"bench_streams: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r.stdout


def step_lines(out, steps):
    found = re.findall(r"^step (\d+): loss (\S+) over \d+ target tokens \((\S+) s\)", out, re.M)
    if len(found) != steps:
        raise SystemExit(f"bench_streams: expected {steps} step lines:\n{out}")
    return [loss for _, loss, _ in found], [float(t) for n, _, t in found if int(n) >= 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--compiler")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--micro-batches", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=32)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench_streams_")
    try:
        ids = np.random.default_rng(1234).integers(0, 256, size=(args.batch, args.seq_len), dtype=np.int64)
        ids_path = os.path.join(work, "ids.npy")
        np.save(ids_path, ids)
        plan = os.path.join(work, "plan")
        compiler = args.compiler or os.path.join(args.after, "disagmoe")
        run([compiler, "compile", os.path.join(SAMPLE, "model.onnx"), "-o", plan, "--attn-ranks", "2",
             "--ffn-ranks", "2", "--batch", str(args.batch), "--seq-len", str(args.seq_len)])
        times = {"before": [], "after": []}
        losses = {}
        for _ in range(args.runs):
            for name in ("before", "after"):
                out = run([os.path.join(getattr(args, name), "disagmoe-run"), plan, "--train", "--input", ids_path,
                           "--micro-batches", str(args.micro_batches), "--optimizer", "sgd", "--lr", "0.1",
                           "--steps", str(args.steps)])
                l, t = step_lines(out, args.steps)
                if losses.setdefault(name, l) != l:
                    raise SystemExit(f"bench_streams: {name} printed different losses in two runs")
                times[name] += t
        if losses["before"] != losses["after"]:
            raise SystemExit(f"bench_streams: losses differ: before {losses['before']} after {losses['after']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = statistics.median
    b, a = med(times["before"]), med(times["after"])
    print(f"mixtral_tiny [{args.batch},{args.seq_len}], 2+2 ranks, {args.micro_batches} micro-batches, "
          f"{args.runs} runs x {args.steps - 1} timed steps, OpenBLAS 1 thread; losses identical: "
          f"{' '.join(losses['after'])}")
    print(f"before (sequential) {b * 1e3:8.2f} ms (median of {len(times['before'])}, best "
          f"{min(times['before']) * 1e3:.2f})")
    print(f"after  (streams)    {a * 1e3:8.2f} ms (median of {len(times['after'])}, best "
          f"{min(times['after']) * 1e3:.2f})   before/after {b / a:.2f}")


if __name__ == "__main__":
    main()
