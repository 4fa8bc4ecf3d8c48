"""End-to-end: compile the committed Mixtral-style export, run the plan on CPU ranks, and compare the
logits with the PyTorch goldens written by samples/models/mixtral_tiny/export.py.

Oracle: PyTorch eager logits (golden/logits_b{B}_s{S}.npy), within the fp32 error model's bound for
the sample's chain at that sequence length (tests/numerics/error_model.py logits_bound).
Run with Debian's /usr/bin/python3 (numpy).
  check_sample_logits.py BIN_DIR SAMPLE_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "numerics"))
import error_model  # noqa: E402

SHAPES = [(2, 8), (1, 5), (3, 12)]
# (A-ranks, F-ranks): the 2+2, and uneven splits of the 8 experts.
RANKS = [(2, 2), (1, 3), (3, 4)]


def run(cmd):
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        print(result.stdout)
        raise SystemExit(f"FAILED ({result.returncode}): {' '.join(cmd)}")
    return result.stdout


def main(bin_dir, sample, work):
    failures = 0
    worst = 0.0
    cfg = json.load(open(os.path.join(sample, "golden", "config.json")))
    for batch, seq in SHAPES:
        ids = os.path.join(sample, "golden", f"ids_b{batch}_s{seq}.npy")
        ref = np.load(os.path.join(sample, "golden", f"logits_b{batch}_s{seq}.npy"))
        for attn, ffn in RANKS:
            plan = os.path.join(work, f"plan_b{batch}_s{seq}_a{attn}_f{ffn}")
            out = plan + "_logits.npy"
            run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sample, "model.onnx"),
                 "-o", plan, "--batch", str(batch), "--seq-len", str(seq),
                 "--attn-ranks", str(attn), "--ffn-ranks", str(ffn)])
            run([os.path.join(bin_dir, "disagmoe-run"), plan, "--input", ids, "--output", out])
            ours = np.load(out)
            if ours.shape != ref.shape:
                print(f"[b{batch} s{seq} A{attn} F{ffn}] shape {ours.shape} != {ref.shape}")
                failures += 1
                continue
            bound = error_model.logits_bound(cfg, seq)
            ok, text = bound.check(ours, ref)
            worst = max(worst, bound.share(ours, ref))
            failures += not ok
            print(f"[b{batch} s{seq} A{attn} F{ffn}] {text} {'ok' if ok else 'FAIL'}")
    # Experts placed from a concentrated (Zipf) routing profile: non-contiguous expert-to-rank maps.
    model = json.load(open(os.path.join(work, "plan_b2_s8_a2_f2", "plan.json")))["model"]
    profile = os.path.join(work, "concentrated-profile.json")
    with open(profile, "w") as f:
        json.dump({"format": "disagmoe-routing-profile", "version": 1,
                   "layers": [{"layer": l, "expert_loads": [1000 // (e + 1) for e in range(model["num_experts"])]}
                              for l in range(model["num_layers"])]}, f)
    plan = os.path.join(work, "plan_profiled")
    run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sample, "model.onnx"), "-o", plan,
         "--routing-profile", profile])
    run([os.path.join(bin_dir, "disagmoe-run"), plan, "--input",
         os.path.join(sample, "golden", "ids_b2_s8.npy"), "--output", plan + "_logits.npy"])
    bound = error_model.logits_bound(cfg, 8)
    got, want = np.load(plan + "_logits.npy"), np.load(os.path.join(sample, "golden", "logits_b2_s8.npy"))
    ok, text = bound.check(got, want)
    failures += not ok
    worst = max(worst, bound.share(got, want))
    print(f"[b2 s8 A2 F2, experts placed from a routing profile] {text} {'ok' if ok else 'FAIL'}")
    print(f"closest to its bound: {worst:.0%} of it")
    print(f"{len(SHAPES) * len(RANKS) + 1 - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(*sys.argv[1:4]))
