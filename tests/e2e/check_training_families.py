#!/usr/bin/python3
"""One training step of the family samples against PyTorch autograd goldens.

    check_training_families.py BIN_DIR SAMPLES_DIR WORK_DIR [--mpirun MPIRUN] [SAMPLE ...]

For each sample (default: FAMILIES) with golden/train/ written by
samples/models/family_common/export_train_goldens.py: compile with 2 attention ranks, 2 FFN ranks
and p = 2 groups, run `disagmoe-run --train` (SGD, lr 0.1) on golden/ids_b2_s8.npy with
--save-grads and --save-weights, and compare
  - the loss:                          relative error <= 1e-5
  - every parameter's gradient:        ||ours - torch|| / ||torch|| <= 1e-4 (every key of grads.npz
                                       must be written, and no other)
  - the weights after one SGD step:    max abs error <= 1e-6 (the keys of sgd.npz)
Also with two micro-batches (the gradients must not depend on the split). With --mpirun, the
one-micro-batch step also runs as `mpirun -np WORLD disagmoe-run --comm mpi` (one process per rank)
and its gradient and weight files must be byte-identical to the local comm's.
"""

import filecmp
import os
import re
import shutil
import subprocess
import sys

import numpy as np

FAMILIES = ["qwen3_moe_tiny", "qwen3_moe_tiny/norm_topk_false", "deepseek_moe_tiny", "gpt_oss_tiny",
            "deepseek_v2_lite_tiny"]
LOSS_TOL, GRAD_TOL, SGD_TOL = 1e-5, 1e-4, 1e-6


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout}")
    return r.stdout


def check_sample(bin_dir, sdir, work, name, micro_batches):
    tdir = os.path.join(sdir, "golden", "train")
    plan = os.path.join(work, "plan")
    gdir, wdir = os.path.join(work, f"grads_m{micro_batches}"), os.path.join(work, f"weights_m{micro_batches}")
    if not os.path.exists(os.path.join(plan, "plan.json")):
        run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sdir, "model.onnx"), "-o", plan,
             "--attn-ranks", "2", "--ffn-ranks", "2", "--groups", "2"])
    out = run([os.path.join(bin_dir, "disagmoe-run"), plan, "--train", "--input",
               os.path.join(sdir, "golden", "ids_b2_s8.npy"), "--optimizer", "sgd", "--lr", "0.1",
               "--micro-batches", str(micro_batches), "--save-grads", gdir, "--save-weights", wdir])
    m = re.search(r"^step 1: loss (\S+) over (\d+) target tokens", out, re.M)
    if not m:
        raise SystemExit(f"FAIL: {name}: no loss line in\n{out}")
    failures = []
    label = f"{name} (m={micro_batches})"
    ref_loss = float(np.load(os.path.join(tdir, "loss.npy"))[0])
    loss_err = abs(float(m.group(1)) - ref_loss) / abs(ref_loss)
    if loss_err > LOSS_TOL or int(m.group(2)) != 14:
        failures.append(f"{label}: loss {m.group(1)} over {m.group(2)} targets vs torch {ref_loss:.7f} (rel {loss_err:.2e})")
    grads = np.load(os.path.join(tdir, "grads.npz"))
    written = {f[:-4] for f in os.listdir(gdir) if f.endswith(".npy")}
    if written != set(grads.files):
        failures.append(f"{label}: gradient keys differ: only ours {sorted(written - set(grads.files))[:5]}, "
                        f"only torch {sorted(set(grads.files) - written)[:5]}")
    worst_grad = (0.0, "")
    for key in grads.files:
        if key not in written:
            continue
        ours, ref = np.load(os.path.join(gdir, key + ".npy")).astype(np.float64), grads[key].astype(np.float64)
        if ours.shape != ref.shape:
            failures.append(f"{label}: grad {key} shape {ours.shape} vs {ref.shape}")
            continue
        norm = np.linalg.norm(ref)
        err = np.linalg.norm(ours - ref) / norm if norm > 0 else np.linalg.norm(ours)
        worst_grad = max(worst_grad, (float(err), key))
        if not err <= GRAD_TOL:
            failures.append(f"{label}: grad {key}: relative error {err:.2e} > {GRAD_TOL}")
    sgd = np.load(os.path.join(tdir, "sgd.npz"))
    worst_sgd = (0.0, "")
    for key in sgd.files:
        path = os.path.join(wdir, key + ".npy")
        if not os.path.exists(path):
            failures.append(f"{label}: --save-weights wrote no {key}")
            continue
        ours = np.load(path).astype(np.float64)
        err = float(np.max(np.abs(ours - sgd[key]))) if ours.shape == sgd[key].shape else float("inf")
        worst_sgd = max(worst_sgd, (err, key))
        if not err <= SGD_TOL:
            failures.append(f"{label}: weights {key} after one SGD step: max abs error {err:.2e} > {SGD_TOL}")
    print(f"{label}: loss rel {loss_err:.1e}; {len(grads.files)} gradients, worst {worst_grad[0]:.1e} "
          f"({worst_grad[1]}); {len(sgd.files)} weights after SGD, worst {worst_sgd[0]:.1e} ({worst_sgd[1]})")
    return failures


def check_mpi(bin_dir, sdir, work, name, mpirun):
    """The m = 1 step under mpirun --comm mpi: files byte-identical to the local comm's."""
    import json
    with open(os.path.join(work, "plan", "plan.json")) as f:
        world = json.load(f)["placement"]["world_size"]
    cmd = [mpirun, "--oversubscribe", "-np", str(world)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    gdir, wdir = os.path.join(work, "grads_mpi"), os.path.join(work, "weights_mpi")
    run(cmd + [os.path.join(bin_dir, "disagmoe-run"), os.path.join(work, "plan"), "--comm", "mpi", "--train",
               "--input", os.path.join(sdir, "golden", "ids_b2_s8.npy"), "--optimizer", "sgd", "--lr", "0.1",
               "--save-grads", gdir, "--save-weights", wdir])
    failures = []
    for local, mpi in ((os.path.join(work, "grads_m1"), gdir), (os.path.join(work, "weights_m1"), wdir)):
        names = sorted(os.listdir(local))
        if names != sorted(os.listdir(mpi)):
            failures.append(f"{name}: mpi wrote other files than local in {os.path.basename(mpi)}")
            continue
        _, mismatch, errors = filecmp.cmpfiles(local, mpi, names, shallow=False)
        if mismatch or errors:
            failures.append(f"{name}: mpi differs from local in {(mismatch + errors)[:5]}")
    print(f"{name}: --comm mpi on {world} processes: "
          f"{'byte-identical to local' if not failures else 'DIFFERS'}")
    return failures


def main(bin_dir, samples_dir, work, names, mpirun=None):
    shutil.rmtree(work, ignore_errors=True)
    failures = []
    for name in names:
        sdir = os.path.join(samples_dir, name)
        swork = os.path.join(work, name.replace("/", "__"))
        os.makedirs(swork)
        for mb in (1, 2):
            failures += check_sample(bin_dir, sdir, swork, name, mb)
        if mpirun:
            failures += check_mpi(bin_dir, sdir, swork, name, mpirun)
    for f in failures:
        print("FAIL " + f)
    if not failures:
        shutil.rmtree(work, ignore_errors=True)
        print("OK")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rest, mpirun = sys.argv[4:], None
    if rest[:1] == ["--mpirun"]:
        mpirun, rest = rest[1], rest[2:]
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], rest or FAMILIES, mpirun))
