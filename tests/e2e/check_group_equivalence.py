"""Functional equivalence of partitioned plans (issue: partitioning and exchange fusion).

For the committed 4-layer sample, plans with p = 1, 2 and 4 groups per side and 1, 2 and 3 A-ranks
per group (F-ranks per group fixed at 2), and with 1, 3 and 8 F-ranks:
  - bit-identical where every rank computes the same shapes in the same order: the group count p at
    a fixed A-rank and F-rank count (the executor adds N2M vectors in ascending F-rank order and
    each F-rank adds its experts in ascending id, docs/training.md "Numerics"), on any BLAS kernel;
  - within the fp32 error model's bound of the p = 1 plan of the same A-rank count otherwise: another
    A-rank count changes how many rows a GEMM has (a BLAS kernel may round a row differently by the
    row count), another F-rank count regroups the per-token sum over experts ((a+b)+c vs a+(b+c));
  - every plan within the bound of PyTorch's logits.
Bounds: tests/numerics/error_model.py (logits_bound of the sample's config at the golden length).
  check_group_equivalence.py BIN_DIR SAMPLE_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np
from checks import Checks

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "numerics"))
import error_model  # noqa: E402

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
    cfg = json.load(open(os.path.join(sample, "golden", "config.json")))
    bound = error_model.logits_bound(cfg, SEQ)
    check = Checks()

    def vs(got, want, what):
        ok, text = bound.check(got, want)
        check(ok, f"{what}: {text}")

    first = {}
    for attn in (1, 2, 3):
        for groups in (1, 2, 4):
            got = logits(bin_dir, sample, work, groups, attn, 2)
            vs(got, ref, f"p={groups} A={attn} F=2 vs PyTorch")
            if groups == 1:
                first[attn] = got
            else:
                check(np.array_equal(got, first[attn]), f"p={groups} A={attn} F=2: bit-identical to p=1 A={attn} F=2")
        if attn > 1:
            vs(first[attn], first[1], f"p=1 A={attn} F=2 vs p=1 A=1 F=2 (another row count per GEMM)")
    base = logits(bin_dir, sample, work, 2, 2, 2)
    for ffn in (1, 3, 8):
        got = logits(bin_dir, sample, work, 2, 2, ffn)
        vs(got, ref, f"p=2 A=2 F={ffn} vs PyTorch")
        vs(got, base, f"p=2 A=2 F={ffn} vs F=2 (the expert sum regrouped)")
    return check.summary()


if __name__ == "__main__":
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(*sys.argv[1:4]))
