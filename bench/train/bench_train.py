#!/usr/bin/python3
"""Speed of our CPU training step against PyTorch eager, and of our CPU forward against
onnxruntime-node, on the sample model (samples/models/mixtral_tiny) with the same batch.

    /usr/bin/python3 bench/train/bench_train.py BIN_DIR [--batch 8] [--seq-len 32] [--threads 2]
                                               [--runs 5] [--steps 6]

- Ours: `disagmoe compile` with 1 attention rank and 1 FFN rank (2 in-process rank threads),
  OPENBLAS_NUM_THREADS=1. Training: `disagmoe-run --train --steps STEPS` (SGD, lr 0.1), the
  per-step time it prints ("(S s)", the whole step: forward, loss, backward, all-reduce, clipping
  norm, optimizer); steps 2.. of every run (step 1 touches fresh memory). Forward: `disagmoe-run`
  (its "N tokens in S s": rank threads started to joined), one per process, RUNS processes.
- PyTorch eager (Debian python3-torch): export.build_model() (the module the sample was exported
  from), torch.set_num_threads(THREADS); a step is zero_grad, forward, the same causal LM loss,
  backward, torch.optim.SGD(lr 0.1).step(), timed with perf_counter; steps 2.. of RUNS runs.
  Both start from the same weights on the same ids: step 1's losses must agree within 1e-4
  (relative), or the benchmark stops (it would not be timing the same computation).
- onnxruntime-node (tests/oracle/node_modules): ort_forward.js, intra-op THREADS threads, all
  graph optimisations, RUNS timed session.run calls after a warm-up.
Prints the medians and the ratios (> 1: ours is faster). Nothing is left behind (temp dir removed).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SAMPLE = os.path.join(ROOT, "samples", "models", "mixtral_tiny")


def run(cmd, env=None):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"bench_train: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout}")
    return r.stdout


def ours(bin_dir, plan, ids_path, args):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    step_times, losses, fwd_times = [], [], []
    for _ in range(args.runs):
        out = run([os.path.join(bin_dir, "disagmoe-run"), plan, "--train", "--input", ids_path, "--optimizer", "sgd",
                   "--lr", "0.1", "--steps", str(args.steps)], env)
        steps = re.findall(r"^step (\d+): loss (\S+) over \d+ target tokens \((\S+) s\)", out, re.M)
        if len(steps) != args.steps:
            raise SystemExit(f"bench_train: expected {args.steps} step lines:\n{out}")
        losses.append(float(steps[0][1]))
        step_times += [float(t) for n, _, t in steps if int(n) >= 2]
        out = run([os.path.join(bin_dir, "disagmoe-run"), plan, "--input", ids_path], env)
        m = re.search(r"(\d+) tokens in (\S+) s", out)
        if not m:
            raise SystemExit(f"bench_train: no forward time in:\n{out}")
        fwd_times.append(float(m.group(2)))
    return step_times, losses[0], fwd_times


def torch_eager(ids, args):
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, SAMPLE)
    sys.dont_write_bytecode = True
    import export
    torch.set_num_threads(args.threads)
    t = torch.from_numpy(ids)
    times, first_loss = [], None
    for _ in range(args.runs):
        model = export.build_model()
        opt = torch.optim.SGD(list(model.parameters()), lr=0.1)
        for step in range(1, args.steps + 1):
            t0 = time.perf_counter()
            opt.zero_grad()
            logits = model(t)
            V = logits.shape[-1]
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), t[:, 1:].reshape(-1))
            loss.backward()
            opt.step()
            dt = time.perf_counter() - t0
            if step == 1 and first_loss is None:
                first_loss = loss.item()
            if step >= 2:
                times.append(dt)
    return times, first_loss


def ort_forward(model, ids_path, args):
    out = run(["node", os.path.join(os.path.dirname(os.path.abspath(__file__)), "ort_forward.js"), model, ids_path,
               str(args.runs), str(args.threads)])
    return [float(x) for x in re.findall(r"^run \d+: (\S+) s", out, re.M)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bin_dir")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=6)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench_train_")
    try:
        ids = np.random.default_rng(1234).integers(0, 256, size=(args.batch, args.seq_len), dtype=np.int64)
        ids_path = os.path.join(work, "ids.npy")
        np.save(ids_path, ids)
        plan = os.path.join(work, "plan")
        model = os.path.join(SAMPLE, "model.onnx")
        run([os.path.join(args.bin_dir, "disagmoe"), "compile", model, "-o", plan, "--attn-ranks", "1",
             "--ffn-ranks", "1", "--groups", "1", "--batch", str(args.batch), "--seq-len", str(args.seq_len)])
        our_steps, our_loss, our_fwd = ours(args.bin_dir, plan, ids_path, args)
        torch_steps, torch_loss = torch_eager(ids, args)
        if abs(our_loss - torch_loss) > 1e-4 * abs(torch_loss):
            raise SystemExit(f"bench_train: step-1 losses differ: ours {our_loss} vs torch {torch_loss}")
        ort = ort_forward(model, ids_path, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = statistics.median
    print(f"mixtral_tiny, batch [{args.batch},{args.seq_len}], {args.threads} threads, {args.runs} runs; "
          f"step-1 loss ours {our_loss:.6f}, torch {torch_loss:.6f}")
    print(f"training step  ours {med(our_steps) * 1e3:8.2f} ms (median of {len(our_steps)})   "
          f"PyTorch eager {med(torch_steps) * 1e3:8.2f} ms (median of {len(torch_steps)})   "
          f"ratio torch/ours {med(torch_steps) / med(our_steps):.2f}")
    print(f"forward        ours {med(our_fwd) * 1e3:8.2f} ms (median of {len(our_fwd)})   "
          f"onnxruntime   {med(ort) * 1e3:8.2f} ms (median of {len(ort)})   "
          f"ratio ort/ours {med(ort) / med(our_fwd):.2f}")


if __name__ == "__main__":
    main()
