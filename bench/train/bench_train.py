#!/usr/bin/python3
"""Speed of our CPU training step against PyTorch eager, and of our CPU forward against
onnxruntime-node, on the sample model (samples/models/mixtral_tiny) with the same batch.

    /usr/bin/python3 bench/train/bench_train.py BIN_DIR [--batch 8] [--seq-len 32] [--threads 1]
                                               [--runs 7] [--steps 6]

The machine is shared, so the peers are measured in the same run, INTERLEAVED: each of the RUNS
rounds runs ours (training, then forward), PyTorch's training run and onnxruntime's forward one
after the other, so a load change hits all of them alike. Medians and minima (best round) printed.
Threads (printed): ours 1 A-rank + 1 F-rank in one process (each rank's streams are threads; within
one micro-batch each rank waits for the other, so one computes at a time), OpenBLAS/OpenMP 1; PyTorch
THREADS intra-op and 1 inter-op thread; onnxruntime THREADS intra-op and 1 inter-op thread.
- Ours: `disagmoe compile` with 1 attention rank and 1 FFN rank (2 in-process rank threads),
  OPENBLAS_NUM_THREADS=1, OMP_NUM_THREADS=1. Training: `disagmoe-run --train --steps STEPS` (SGD, lr 0.1), the
  per-step time it prints ("(S s)", the whole step: forward, loss, backward, all-reduce, clipping
  norm, optimizer); steps 2.. of every run (step 1 touches fresh memory). Forward: `disagmoe-run`
  (its "N tokens in S s": rank threads started to joined), one timed run per round.
- PyTorch eager (Debian python3-torch): export.build_model() (the module the sample was exported
  from), torch.set_num_threads(THREADS); a step is zero_grad, forward, the same causal LM loss,
  backward, torch.optim.SGD(lr 0.1).step(), timed with perf_counter; steps 2.. of RUNS runs.
  Both start from the same weights on the same ids: step 1's losses must agree within 1e-4
  (relative), or the benchmark stops (it would not be timing the same computation).
- onnxruntime-node (tests/oracle/node_modules): ort_forward.js, intra-op THREADS threads, all
  graph optimisations; per round one process: a warm-up session.run, then one timed one.
  Ours likewise: `disagmoe-run --warmup 1` (one untimed forward, then the timed one; its time
  still includes starting the rank threads, which onnxruntime's session.run does not pay).
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


def our_env():
    return dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


def ours_train(bin_dir, plan, ids_path, args):
    """One training run: (step-1 loss, times of steps 2..)."""
    out = run([os.path.join(bin_dir, "disagmoe-run"), plan, "--train", "--input", ids_path, "--optimizer", "sgd",
               "--lr", "0.1", "--steps", str(args.steps)], our_env())
    steps = re.findall(r"^step (\d+): loss (\S+) over \d+ target tokens \((\S+) s\)", out, re.M)
    if len(steps) != args.steps:
        raise SystemExit(f"bench_train: expected {args.steps} step lines:\n{out}")
    return float(steps[0][1]), [float(t) for n, _, t in steps if int(n) >= 2]


def ours_forward(bin_dir, plan, ids_path):
    out = run([os.path.join(bin_dir, "disagmoe-run"), plan, "--input", ids_path, "--warmup", "1"], our_env())
    m = re.search(r"(\d+) tokens in (\S+) s", out)
    if not m:
        raise SystemExit(f"bench_train: no forward time in:\n{out}")
    return float(m.group(2))


def torch_train(ids, args):
    """One PyTorch training run from the sample's initial weights: (step-1 loss, times of steps 2..)."""
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, SAMPLE)
    sys.dont_write_bytecode = True
    import export
    t = torch.from_numpy(ids)
    times, first_loss = [], None
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
        if step == 1:
            first_loss = loss.item()
        else:
            times.append(dt)
    return first_loss, times


def ort_forward(model, ids_path, args):
    out = run(["node", os.path.join(os.path.dirname(os.path.abspath(__file__)), "ort_forward.js"), model, ids_path,
               "1", str(args.threads)])
    return [float(x) for x in re.findall(r"^run \d+: (\S+) s", out, re.M)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bin_dir")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=7)
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
        import torch
        torch.set_num_threads(args.threads)
        torch.set_num_interop_threads(1)
        our_steps, our_fwd, torch_steps, ort = [], [], [], []
        our_loss = torch_loss = None
        for _ in range(args.runs):  # interleaved rounds: a load change hits every contender alike
            loss, times = ours_train(args.bin_dir, plan, ids_path, args)
            our_loss = loss if our_loss is None else our_loss
            our_steps += times
            our_fwd.append(ours_forward(args.bin_dir, plan, ids_path))
            loss, times = torch_train(ids, args)
            torch_loss = loss if torch_loss is None else torch_loss
            torch_steps += times
            ort += ort_forward(model, ids_path, args)
        if abs(our_loss - torch_loss) > 1e-4 * abs(torch_loss):
            raise SystemExit(f"bench_train: step-1 losses differ: ours {our_loss} vs torch {torch_loss}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = statistics.median
    load = os.getloadavg()[0]
    print(f"mixtral_tiny, batch [{args.batch},{args.seq_len}], {args.runs} interleaved rounds, load average {load:.1f} "
          f"on {os.cpu_count()} CPUs; step-1 loss ours {our_loss:.6f}, torch {torch_loss:.6f}")
    print(f"threads: ours 1 A-rank + 1 F-rank in one process (their stream threads; within a micro-batch one "
          f"computes at a time), OpenBLAS 1 thread; "
          f"PyTorch {torch.get_num_threads()} intra-op + {torch.get_num_interop_threads()} inter-op; "
          f"onnxruntime {args.threads} intra-op + 1 inter-op")
    print(f"training step  ours {med(our_steps) * 1e3:8.2f} ms (median of {len(our_steps)}, best "
          f"{min(our_steps) * 1e3:.2f})   PyTorch eager {med(torch_steps) * 1e3:8.2f} ms (median of "
          f"{len(torch_steps)}, best {min(torch_steps) * 1e3:.2f})   ratio torch/ours "
          f"{med(torch_steps) / med(our_steps):.2f} (best/best {min(torch_steps) / min(our_steps):.2f})")
    print(f"forward        ours {med(our_fwd) * 1e3:8.2f} ms (median of {len(our_fwd)}, best "
          f"{min(our_fwd) * 1e3:.2f})   onnxruntime   {med(ort) * 1e3:8.2f} ms (median of {len(ort)}, best "
          f"{min(ort) * 1e3:.2f})   ratio ort/ours {med(ort) / med(our_fwd):.2f} "
          f"(best/best {min(ort) / min(our_fwd):.2f})")


if __name__ == "__main__":
    main()
