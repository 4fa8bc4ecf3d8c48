"""One training step of the compiled sample against PyTorch (issue 7).

Compiles samples/models/mixtral_tiny/model.onnx with 2 attention ranks and 2 FFN ranks, with one
group per side and with p = 2 groups (--groups 2), runs `disagmoe-run --train` on the golden batch
(ids_b2_s8, next-token targets) and compares with golden/train/ (export_grads.py, PyTorch 1.13
autograd and torch.optim):
  loss                      relative error <= 1e-5
  gradient of every weight  ||got - torch|| / ||torch|| <= 1e-4
  weights after one SGD step (lr 0.1)       max |got - torch| <= 1e-6
  weights after one AdamW step (lr 1e-3)    max |got - torch| <= 1e-6 where |torch grad| > 1e-5
and the same with the batch split into 2 micro-batches. Layer 1's expert 0 receives no token: its
gradient must be exactly zero and its AdamW step (weight decay only) must still match.
  check_training.py BIN_DIR SAMPLE_DIR WORK_DIR
"""
import json
import os
import re
import subprocess
import sys

import numpy as np

LOSS_TOL, GRAD_TOL, STEP_TOL, ADAMW_MIN_GRAD = 1e-5, 1e-4, 1e-6, 1e-5


def run(cmd):
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        print(result.stdout)
        raise SystemExit(f"FAILED ({result.returncode}): {' '.join(cmd)}")
    return result.stdout


def main(bin_dir, sample, work):
    gold = os.path.join(sample, "golden", "train")
    meta = json.load(open(os.path.join(gold, "train.json")))
    ids = os.path.join(sample, "golden", meta["ids"])
    torch_loss = float(np.load(os.path.join(gold, "loss.npy"))[0])
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        passed += ok
        failed += not ok
        print(("ok   " if ok else "FAIL ") + what)

    for groups in (1, 2):
        plan = os.path.join(work, f"plan_p{groups}")
        run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sample, "model.onnx"), "-o", plan,
             "--attn-ranks", "2", "--ffn-ranks", "2", "--groups", str(groups)])
        for micro in (1, 2):
            tag = f"p={groups} A=2 F=2 micro-batches={micro}"
            out = os.path.join(work, f"p{groups}_m{micro}")
            text = run([os.path.join(bin_dir, "disagmoe-run"), plan, "--train", "--input", ids, "--optimizer", "sgd",
                        "--lr", "0.1", "--micro-batches", str(micro), "--save-grads", out + "_grads",
                        "--save-weights", out + "_sgd"])
            loss = float(re.search(r"step 1: loss ([0-9.eE+-]+)", text).group(1))
            err = abs(loss - torch_loss) / torch_loss
            check(err <= LOSS_TOL, f"{tag}: loss {loss:.7f} vs PyTorch {torch_loss:.7f}, relative error {err:.2e}")
            run([os.path.join(bin_dir, "disagmoe-run"), plan, "--train", "--input", ids, "--optimizer", "adamw",
                 "--lr", "1e-3", "--beta1", "0.9", "--beta2", "0.999", "--eps", "1e-8", "--weight-decay", "0.01",
                 "--micro-batches", str(micro), "--save-weights", out + "_adamw"])

            worst, worst_key = 0.0, None
            for key in meta["keys"]:
                got = np.load(os.path.join(out + "_grads", key + ".npy")).astype(np.float64)
                want = np.load(os.path.join(gold, f"grad_{key}.npy")).astype(np.float64)
                norm = np.linalg.norm(want)
                e = np.linalg.norm(got - want) / (norm if norm > 0 else 1.0)
                if e > worst:
                    worst, worst_key = e, key
            check(worst <= GRAD_TOL, f"{tag}: gradients of {len(meta['keys'])} weights, largest "
                                     f"||err||/||grad|| {worst:.2e} ({worst_key})")
            idle = np.load(os.path.join(out + "_grads", "l1_expert0_w1.npy"))
            check(not idle.any(), f"{tag}: layer 1 expert 0 (no tokens) has a zero gradient")

            sgd_err = adamw_err = 0.0
            for key in meta["step_keys"]:
                g = np.load(os.path.join(gold, f"grad_{key}.npy"))
                s = np.abs(np.load(os.path.join(out + "_sgd", key + ".npy")).astype(np.float64)
                           - np.load(os.path.join(gold, f"sgd_{key}.npy")))
                sgd_err = max(sgd_err, float(s.max()))
                a = np.abs(np.load(os.path.join(out + "_adamw", key + ".npy")).astype(np.float64)
                           - np.load(os.path.join(gold, f"adamw_{key}.npy")))
                mask = np.abs(g) > ADAMW_MIN_GRAD
                if key.startswith("l1_expert0_"):
                    mask = np.ones_like(mask)  # zero gradient: the step is the weight decay alone
                if mask.any():
                    adamw_err = max(adamw_err, float(a[mask].max()))
            check(sgd_err <= STEP_TOL, f"{tag}: weights after one SGD step ({len(meta['step_keys'])} weights), "
                                       f"max abs error {sgd_err:.2e}")
            check(adamw_err <= STEP_TOL, f"{tag}: weights after one AdamW step, max abs error {adamw_err:.2e} "
                                         f"where |grad| > {ADAMW_MIN_GRAD}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(*sys.argv[1:4]))
