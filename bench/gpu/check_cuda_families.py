#!/usr/bin/python3
"""The cuda backend against the cpu backend on every family sample, on one GPU (bench/gpu/run.sh).

    check_cuda_families.py BIN_DIR SAMPLES_DIR WORK_DIR [SAMPLE ...]

For each sample (default: SAMPLES), compiled with 2 attention ranks, 2 FFN ranks and p = 2 groups
(every rank a thread on the one device, --comm local): the forward logits and one SGD training step
(lr 0.1, the loss and every gradient) of `disagmoe-run --backend cuda --precision fp32` against
`--backend cpu` on golden/ids_b2_s8.npy. Bounds: both backends are held to the fp32 error model's
bound against PyTorch (tests/numerics/error_model.py logits_bound, loss_bound, grad_bound; the cpu
backend's e2e tests check it), so by the triangle inequality their difference is within twice it.
Needs a CUDA device; run.sh calls it only when disagmoe-bench-cuda --probe found one.
"""

import json
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "numerics"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import error_model  # noqa: E402
from checks import Checks  # noqa: E402

SAMPLES = ["mixtral_tiny", "qwen3_moe_tiny", "deepseek_moe_tiny", "gpt_oss_tiny", "deepseek_v2_lite_tiny"]
LOSS_RE = re.compile(r"^step 1: loss (\S+) over (\d+) target tokens", re.M)


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    return r.returncode, r.stdout


def twice(bound):
    """The bound between two implementations each within `bound` of the same reference."""
    bound.normwise *= 2
    bound.element *= 2
    return bound


def check_sample(check, bin_dir, sdir, work, name):
    cfg = json.load(open(os.path.join(sdir, "golden", "config.json")))
    ids = os.path.join(sdir, "golden", "ids_b2_s8.npy")
    plan = os.path.join(work, "plan")
    rc, out = run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sdir, "model.onnx"), "-o", plan,
                   "--attn-ranks", "2", "--ffn-ranks", "2", "--groups", "2"])
    if not check(rc == 0, f"{name}: compile 2+2, p = 2" + ("" if rc == 0 else f": {out.strip()}")):
        return
    runner = os.path.join(bin_dir, "disagmoe-run")
    outs = {}
    for backend in ("cpu", "cuda"):
        extra = ["--backend", backend] + (["--precision", "fp32"] if backend == "cuda" else [])
        logits = os.path.join(work, f"logits_{backend}.npy")
        rc, out = run([runner, plan, "--input", ids, "--output", logits] + extra)
        if not check(rc == 0, f"{name}: forward --backend {backend}" + ("" if rc == 0 else f": {out.strip()}")):
            return
        grads = os.path.join(work, f"grads_{backend}")
        rc, out = run([runner, plan, "--train", "--verbose", "--input", ids, "--optimizer", "sgd", "--lr", "0.1",
                       "--save-grads", grads] + extra)
        m = LOSS_RE.search(out)
        if not check(rc == 0 and m, f"{name}: training step --backend {backend}" +
                     ("" if rc == 0 and m else f": {out.strip()}")):
            return
        outs[backend] = (np.load(logits), float(m.group(1)), int(m.group(2)), grads)
    (cpu_logits, cpu_loss, cpu_tokens, cpu_grads), (gpu_logits, gpu_loss, gpu_tokens, gpu_grads) = (
        outs["cpu"], outs["cuda"])
    ok, text = twice(error_model.logits_bound(cfg, 8)).check(gpu_logits, cpu_logits)
    check(ok, f"{name}: logits cuda vs cpu: {text}")
    loss_tol = twice(error_model.loss_bound(cfg, 8, cpu_tokens)).element
    rel = abs(gpu_loss - cpu_loss) / abs(cpu_loss)
    check(rel <= loss_tol and gpu_tokens == cpu_tokens,
          f"{name}: loss cuda {gpu_loss} vs cpu {cpu_loss} (rel {rel:.2e}, bound {loss_tol:.2e})")
    keys = sorted(f for f in os.listdir(cpu_grads) if f.endswith(".npy"))
    check(keys == sorted(f for f in os.listdir(gpu_grads) if f.endswith(".npy")), f"{name}: the same gradient files")
    bound = twice(error_model.grad_bound(cfg, 8, cpu_tokens))
    bad = []
    for key in keys:
        ok, text = bound.check(np.load(os.path.join(gpu_grads, key)), np.load(os.path.join(cpu_grads, key)))
        if not ok:
            bad.append(f"{key[:-4]}: {text}")
    check(not bad, f"{name}: {len(keys)} gradients cuda vs cpu within twice the fp32 bound" +
          ("" if not bad else ": " + "; ".join(bad[:3])))


def main(bin_dir, samples_dir, work, names):
    check = Checks()
    for name in names or SAMPLES:
        wdir = os.path.join(work, name.replace("/", "_"))
        os.makedirs(wdir, exist_ok=True)
        check_sample(check, bin_dir, os.path.join(samples_dir, name), wdir, name)
    return check.summary()


if __name__ == "__main__":
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))
