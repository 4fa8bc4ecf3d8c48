"""Functional equivalence of partitioned plans (issue: partitioning and exchange fusion).

For the committed 4-layer sample, plans with p = 1, 2 and 4 groups per side and several A-rank
counts (F-ranks per group fixed) must give bit-identical logits: the executor adds N2M vectors in
ascending F-rank order and each F-rank adds its experts in ascending id (DESIGN.md, "Exchanges"),
so neither the group count nor the attention data split changes any floating-point sum.
Changing the number of F-ranks regroups the per-token sum over experts ((a+b)+c vs a+(b+c)), so
those plans are compared with a tolerance instead. Every plan is also within 1e-4 of PyTorch.
  check_group_equivalence.py BIN_DIR SAMPLE_DIR WORK_DIR
"""
import os
import subprocess
import sys

import numpy as np
from checks import Checks

PYTORCH_TOLERANCE = 1e-4
REGROUPED_TOLERANCE = 1e-5
BATCH, SEQ = 3, 12


def run(cmd):
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        print(result.stdout)
        raise SystemExit(f"FAILED ({result.returncode}): {' '.join(cmd)}")


def logits(bin_dir, sample, work, groups, attn, ffn):
    plan = os.path.join(work, f"plan_p{groups}_a{attn}_f{ffn}")
    out = plan + "_logits.npy"
    run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sample, "model.onnx"), "-o", plan,
         "--batch", str(BATCH), "--seq-len", str(SEQ), "--groups", str(groups),
         "--attn-ranks", str(attn), "--ffn-ranks", str(ffn)])
    run([os.path.join(bin_dir, "disagmoe-run"), plan, "--input",
         os.path.join(sample, "golden", f"ids_b{BATCH}_s{SEQ}.npy"), "--output", out])
    return np.load(out)


def main(bin_dir, sample, work):
    ref = np.load(os.path.join(sample, "golden", f"logits_b{BATCH}_s{SEQ}.npy"))
    check = Checks()

    base = logits(bin_dir, sample, work, 1, 1, 2)
    for groups in (1, 2, 4):
        for attn in (1, 2, 3):
            got = base if (groups, attn) == (1, 1) else logits(bin_dir, sample, work, groups, attn, 2)
            err = float(np.abs(got - ref).max())
            check(err <= PYTORCH_TOLERANCE, f"p={groups} A={attn} F=2: max abs error vs PyTorch {err:.3e}")
            check(np.array_equal(got, base), f"p={groups} A={attn} F=2: bit-identical to p=1 A=1 F=2")
    for ffn in (1, 3, 8):
        got = logits(bin_dir, sample, work, 2, 2, ffn)
        err = float(np.abs(got - ref).max())
        diff = float(np.abs(got - base).max())
        check(err <= PYTORCH_TOLERANCE, f"p=2 A=2 F={ffn}: max abs error vs PyTorch {err:.3e}")
        check(diff <= REGROUPED_TOLERANCE, f"p=2 A=2 F={ffn}: within {REGROUPED_TOLERANCE} of F=2 ({diff:.3e})")
    return check.summary()


if __name__ == "__main__":
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(*sys.argv[1:4]))
