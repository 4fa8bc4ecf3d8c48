"""The mpi comm backend against the local one (issue 7): `mpirun -np WORLD disagmoe-run PLAN --comm mpi`.

For the sample compiled with 2 attention and 2 FFN ranks per group and p = 2 groups (8 ranks):
  - forward logits under --comm mpi are bit-identical to --comm local;
  - a training step's gradients and weights (SGD, one micro-batch; AdamW, two steps of two
    micro-batches) are bit-identical too, file by file;
  - a rank that fails (--fail-rank 5, a test hook) ends the whole job within a deadline, with a
    non-zero exit code and a message naming rank 5, instead of hanging the other ranks;
  - the training loop under mpi (--data, --loss-log, --save-checkpoint, --resume; AdamW with the
    router bias update on, plan compiled for [4, 16]): 4 steps in one mpi run, 2 steps + --resume + 2
    under mpi, and 4 steps on --comm local write byte-identical checkpoints, --save-weights files
    and loss logs (times removed).
  check_mpi.py BIN_DIR SAMPLE_DIR WORK_DIR MPIRUN [DATA_FILE]
"""
import json
import os
import subprocess
import sys
import time

import numpy as np
from checks import Checks

WORLD = 8
FAIL_DEADLINE_S = 30


def mpirun_prefix(mpirun):
    cmd = [mpirun, "--oversubscribe", "-np", str(WORLD)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    return cmd


def run(cmd, expect_ok=True, timeout=120):
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if expect_ok and result.returncode != 0:
        print(result.stdout)
        raise SystemExit(f"FAILED ({result.returncode}): {' '.join(cmd)}")
    return result


def same_files(a, b):
    names = sorted(os.listdir(a))
    if names != sorted(os.listdir(b)):
        return False, "different file lists"
    for n in names:
        with open(os.path.join(a, n), "rb") as fa, open(os.path.join(b, n), "rb") as fb:
            if fa.read() != fb.read():
                return False, n
    return True, f"{len(names)} files"


def loop_checks(check, bin_dir, sample, work, mpi, data_file):
    run_bin = os.path.join(bin_dir, "disagmoe-run")
    plan = os.path.join(work, "plan_b4")
    run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sample, "model.onnx"), "-o", plan,
         "--attn-ranks", "2", "--ffn-ranks", "2", "--groups", "2", "--batch", "4", "--seq-len", "16"])
    common = [run_bin, plan, "--train", "--batch", "4", "--seq-len", "16", "--data", data_file, "--data-format",
              "bytes", "--optimizer", "adamw", "--lr", "3e-3", "--router-bias-update-rate", "0.01",
              "--clip-grad", "1"]
    path = lambda name: os.path.join(work, name)  # noqa: E731

    def full(comm, tag):
        return (mpi if comm == "mpi" else []) + common + [
            "--comm", comm, "--steps", "4", "--save-checkpoint", path(f"{tag}.safetensors"), "--save-weights",
            path(f"{tag}_w"), "--loss-log", path(f"{tag}.jsonl")]
    run(full("mpi", "loop_mpi"))
    run(full("local", "loop_local"))
    run(mpi + common + ["--comm", "mpi", "--steps", "2", "--save-checkpoint", path("loop_half.safetensors"),
                        "--loss-log", path("loop_res.jsonl")])
    text = run(mpi + common + ["--comm", "mpi", "--steps", "4", "--resume", path("loop_half.safetensors"),
                               "--save-checkpoint", path("loop_res.safetensors"), "--save-weights",
                               path("loop_res_w"), "--loss-log", path("loop_res.jsonl")]).stdout
    check("resumed from" in text and "step 3/4" in text and "step 2/4" not in text,
          "mpi: the resumed run starts at step 3")
    ck = {t: open(path(f"{t}.safetensors"), "rb").read() for t in ("loop_mpi", "loop_local", "loop_res")}
    check(ck["loop_mpi"] == ck["loop_local"], f"mpi checkpoint after 4 steps byte-identical to the local one "
                                              f"({len(ck['loop_mpi'])} bytes)")
    check(ck["loop_res"] == ck["loop_mpi"], "mpi 2 steps + --resume + 2: checkpoint byte-identical to 4 steps")
    for other in ("loop_local_w", "loop_res_w"):
        ok, what = same_files(path("loop_mpi_w"), path(other))
        check(ok, f"mpi --save-weights after 4 steps byte-identical to {other} ({what})")

    def log(name):
        rows = [json.loads(line) for line in open(path(name))]
        for r in rows:
            r.pop("tokens_per_s")
            r.pop("seconds")
        return rows
    logs = [log(f"{t}.jsonl") for t in ("loop_mpi", "loop_local", "loop_res")]
    check(len(logs[0]) == 4 and logs[0] == logs[1] == logs[2],
          "loss logs of mpi, local and mpi-resumed runs identical, steps 1-4")


def main(bin_dir, sample, work, mpirun, data_file=None):
    run_bin = os.path.join(bin_dir, "disagmoe-run")
    ids = os.path.join(sample, "golden", "ids_b2_s8.npy")
    plan = os.path.join(work, "plan")
    run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sample, "model.onnx"), "-o", plan,
         "--attn-ranks", "2", "--ffn-ranks", "2", "--groups", "2"])
    mpi = mpirun_prefix(mpirun)
    check = Checks()

    local_logits, mpi_logits = os.path.join(work, "local.npy"), os.path.join(work, "mpi.npy")
    run([run_bin, plan, "--input", ids, "--output", local_logits])
    run(mpi + [run_bin, plan, "--comm", "mpi", "--input", ids, "--output", mpi_logits])
    a, b = np.load(local_logits), np.load(mpi_logits)
    check(a.shape == b.shape and a.tobytes() == b.tobytes(),
          f"forward logits {list(a.shape)}: --comm mpi bit-identical to --comm local")

    for name, extra in (("sgd", ["--optimizer", "sgd"]),
                        ("adamw", ["--optimizer", "adamw", "--micro-batches", "2", "--steps", "2"])):
        outs = {}
        for comm in ("local", "mpi"):
            d = os.path.join(work, f"{name}_{comm}")
            cmd = [run_bin, plan, "--train", "--comm", comm, "--input", ids, "--save-grads", d + "_grads",
                   "--save-weights", d + "_weights"] + extra
            outs[comm] = (d, run((mpi if comm == "mpi" else []) + cmd).stdout)
        loss = [line for line in outs["local"][1].splitlines() if line.startswith("step")]
        loss_mpi = [line.split(" (")[0] for line in outs["mpi"][1].splitlines() if line.startswith("step")]
        check(bool(loss_mpi) and [line.split(" (")[0] for line in loss] == loss_mpi,
              f"{name}: losses printed by mpi and local agree: {loss_mpi}")
        for kind in ("grads", "weights"):
            ok, what = same_files(outs["local"][0] + "_" + kind, outs["mpi"][0] + "_" + kind)
            check(ok, f"{name}: {kind} after the step bit-identical between mpi and local ({what})")

    if data_file:
        loop_checks(check, bin_dir, sample, work, mpi, data_file)

    start = time.time()
    result = run(mpi + [run_bin, plan, "--comm", "mpi", "--train", "--input", ids, "--fail-rank", "5"],
                 expect_ok=False, timeout=FAIL_DEADLINE_S + 30)
    took = time.time() - start
    check(result.returncode != 0 and took <= FAIL_DEADLINE_S,
          f"failing rank 5: job ended in {took:.1f} s (deadline {FAIL_DEADLINE_S} s) with exit code "
          f"{result.returncode}")
    check("rank 5: injected failure" in result.stdout and "rank 5 failed" in result.stdout,
          "failing rank 5: the output names the failed rank (itself, and in the other ranks' messages)")
    if check.failed:
        print(result.stdout)
    return check.summary()


if __name__ == "__main__":
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(*sys.argv[1:6]))
