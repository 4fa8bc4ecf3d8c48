"""The nccl comm backend (issue 7): `mpirun -np WORLD disagmoe-run PLAN --comm nccl`.

  check_nccl.py no-device BIN_DIR SAMPLE_DIR WORK_DIR MPIRUN
      Without a CUDA device (nvidia-smi lists none): a 2-rank job ends within a deadline, exit code
      non-zero, each rank naming itself: "--comm nccl needs a CUDA device on every rank:
      cudaGetDeviceCount returned 0 on rank R". Skipped (77) where a GPU is visible. The same under a
      torchrun-style launch (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; no mpirun): the ranks meet at
      the TCP rendezvous (the control plane that carries rank 0's NCCL id) and each names itself.
  check_nccl.py gpu BIN_DIR SAMPLE_DIR WORK_DIR MPIRUN
      With one GPU per rank (at least 3): the sample compiled for 2 A-ranks + 1 F-rank
      - forward logits: --comm nccl bit-identical to --comm local (the forward only moves bytes);
      - one SGD step: loss within 1e-6 relative, gradients and weights within the all-reduce's
        rounding (ncclAllReduce sums the 2 A-ranks' gradients in its own order: Comm.h).
      Skipped (77) with fewer than 3 GPUs.
Both skip (77) where the nccl backend was not built (the run says "not built").
"""
import os
import shutil
import socket
import subprocess
import sys
import time

import numpy as np
from checks import Checks

SKIP = 77
DEADLINE_S = 60


def gpu_count():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    try:
        out = subprocess.run([smi, "-L"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def mpirun_prefix(mpirun, world):
    cmd = [mpirun, "--oversubscribe", "-np", str(world)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    return cmd


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_launch(cmd, world, timeout):
    """`world` processes with torchrun's variables; [(rc, stdout + stderr)] by rank."""
    port = free_port()
    procs = []
    for r in range(world):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_"))}
        env.update(RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port))
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
    out = []
    for p in procs:
        try:
            text, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            text, _ = p.communicate()
        out.append((p.returncode, text))
    return out


def run(cmd, expect_ok=True, timeout=300):
    # stdout and stderr apart: the checks never depend on how the two interleave.
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if expect_ok and r.returncode != 0:
        print(r.stdout)
        print(r.stderr)
        raise SystemExit(f"FAILED ({r.returncode}): {' '.join(cmd)}")
    return r


def compile_plan(bin_dir, sample, plan, attn, ffn):
    run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sample, "model.onnx"), "-o", plan,
         "--attn-ranks", str(attn), "--ffn-ranks", str(ffn)])


def nccl_built(run_bin, plan):
    r = run([run_bin, plan, "--comm", "nccl"], expect_ok=False)
    return "is not built" not in r.stderr


def no_device(bin_dir, sample, work, mpirun):
    if gpu_count() > 0:
        print("skipped: a CUDA device is visible (the gpu mode covers it)")
        return SKIP
    plan = os.path.join(work, "plan_1_1")
    p = lambda name: os.path.join(work, name)  # noqa: E731
    compile_plan(bin_dir, sample, plan, 1, 1)
    run_bin = os.path.join(bin_dir, "disagmoe-run")
    if not nccl_built(run_bin, plan):
        print("skipped: the nccl comm backend is not built here")
        return SKIP
    check = Checks()
    start = time.time()
    r = run(mpirun_prefix(mpirun, 2) + [run_bin, plan, "--comm", "nccl", "--train"], expect_ok=False,
            timeout=DEADLINE_S + 30)
    took = time.time() - start
    check(r.returncode != 0 and took <= DEADLINE_S,
          f"no CUDA device: the job ended in {took:.1f} s (deadline {DEADLINE_S} s), exit code {r.returncode}")
    for rank in (0, 1):
        want = f"--comm nccl needs a CUDA device on every rank: cudaGetDeviceCount returned 0 on rank {rank}"
        check(want in r.stderr, f"rank {rank} names itself: '{want}'")
    check("step 1:" not in r.stdout, "no training step ran")
    r = run([run_bin, plan, "--comm", "nccl"], expect_ok=False)
    check(r.returncode == 1 and "launch it as mpirun -np WORLD disagmoe-run PLAN --comm nccl" in r.stderr,
          "without mpirun: exit 1 and how to launch it")
    start = time.time()
    results = torchrun_launch([run_bin, plan, "--comm", "nccl", "--train", "--timeout", "20"], 2, DEADLINE_S + 30)
    took = time.time() - start
    check(all(rc not in (0, None) for rc, _ in results) and took <= DEADLINE_S,
          f"torchrun-style launch, no CUDA device: both ranks ended in {took:.1f} s, "
          f"exit codes {[rc for rc, _ in results]}")
    for rank, (_, text) in enumerate(results):
        want = f"--comm nccl needs a CUDA device on every rank: cudaGetDeviceCount returned 0 on rank {rank}"
        lines = [line for line in text.strip().splitlines() if line.startswith("disagmoe-run:")]
        check(len(lines) == 1 and want in lines[0] and "step 1:" not in text,
              f"torchrun-style launch: rank {rank} names itself in one line: {lines}")
    r = run(mpirun_prefix(mpirun, 2) + [run_bin, plan, "--comm", "nccl", "--train", "--loss-log", p("x.jsonl")],
            expect_ok=False, timeout=DEADLINE_S + 30)
    check(r.returncode != 0 and "do not run on --comm nccl in this version" in r.stderr
          and not os.path.exists(p("x.jsonl")), "--loss-log with --comm nccl: refused, nothing written")
    return check.summary()


def gpu(bin_dir, sample, work, mpirun):
    have = gpu_count()
    if have < 3:
        print(f"skipped: {have} CUDA device(s) visible; the nccl run needs one per rank (3)")
        return SKIP
    plan = os.path.join(work, "plan_2_1")
    compile_plan(bin_dir, sample, plan, 2, 1)
    run_bin = os.path.join(bin_dir, "disagmoe-run")
    if not nccl_built(run_bin, plan):
        print("skipped: the nccl comm backend is not built here")
        return SKIP
    check = Checks()
    mpi = mpirun_prefix(mpirun, 3)
    ids = os.path.join(sample, "golden", "ids_b2_s8.npy")
    p = lambda name: os.path.join(work, name)  # noqa: E731

    run([run_bin, plan, "--input", ids, "--output", p("local.npy")])
    r = run(mpi + [run_bin, plan, "--comm", "nccl", "--input", ids, "--output", p("nccl.npy")])
    check("nccl: 3 ranks" in r.stdout, "rank 0 reports the nccl world")
    a, b = np.load(p("local.npy")), np.load(p("nccl.npy"))
    check(a.shape == b.shape and a.tobytes() == b.tobytes(),
          f"forward logits {list(a.shape)}: --comm nccl bit-identical to --comm local")

    outs = {}
    for comm in ("local", "nccl"):
        cmd = [run_bin, plan, "--train", "--comm", comm, "--input", ids, "--save-grads", p(f"{comm}_grads"),
               "--save-weights", p(f"{comm}_weights")]
        outs[comm] = run((mpi if comm == "nccl" else []) + cmd).stdout
    loss = {c: float(next(line for line in o.splitlines() if line.startswith("step 1:")).split()[3])
            for c, o in outs.items()}
    check(abs(loss["nccl"] - loss["local"]) <= 1e-6 * abs(loss["local"]),
          f"loss: nccl {loss['nccl']:.9g}, local {loss['local']:.9g}")
    for kind in ("grads", "weights"):
        names = sorted(os.listdir(p(f"local_{kind}")))
        check(names == sorted(os.listdir(p(f"nccl_{kind}"))), f"{kind}: same {len(names)} files")
        worst = 0.0
        for n in names:
            x = np.load(os.path.join(p(f"local_{kind}"), n)).astype(np.float64)
            y = np.load(os.path.join(p(f"nccl_{kind}"), n)).astype(np.float64)
            # Two orders of a 2-term fp32 sum differ by at most 2 (k - 1) 2^-24 sum|d_i| (Comm.h);
            # sum|d_i| is not saved, so the bound is taken relative to the tensor's largest entry.
            scale = max(np.abs(x).max(), 1e-30)
            worst = max(worst, float(np.abs(x - y).max() / scale))
        check(worst <= 4 * 2.0 ** -24 * 8, f"{kind}: largest difference {worst:.3g} of each tensor's max |value|")
    return check.summary()


if __name__ == "__main__":
    mode, bin_dir, sample, work, mpirun = sys.argv[1:6]
    os.makedirs(work, exist_ok=True)
    sys.exit({"no-device": no_device, "gpu": gpu}[mode](bin_dir, sample, work, mpirun))
