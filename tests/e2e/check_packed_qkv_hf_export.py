#!/usr/bin/python3
"""A packed-QKV export trains and leaves in Hugging Face layout exactly as its unpacked base.

samples/models/newer_opsets/mixtral_ort_gqa_packed is mixtral_tiny with each layer's q/k/v
projections packed into one qkv_proj weight (onnxruntime-genai's layout, [in, out] with a row
stride, on layers 1 and 3; [out, in] behind a Transpose on layers 0 and 2), the same weight values
(write_forms.py). The compiler splits the packed weight into three projections that reference its
bytes. Both plans compute with the same values in the same order, so:
  - `--export-hf` of the untrained packed plan is byte-identical to mixtral_tiny's (q_proj, k_proj
    and v_proj come out of the strided views as HF's separate [out, in] tensors);
  - after the same training steps on the same data both exports are byte-identical, and differ
    from the untrained export (the check can fail: training moved the weights);
  - the packed plan's export loads back with --init-weights and exports again byte-identically.
mixtral_tiny's own training and export are checked against PyTorch elsewhere (e2e.training,
e2e.hf_weights); this script checks the packed form's path onto them.
  check_packed_qkv_hf_export.py BIN_DIR REPO_DIR WORK_DIR
"""
import filecmp
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from checks import Checks  # noqa: E402

SHAPE = ["--batch", "2", "--seq-len", "8"]
TRAIN = ["--train", "--steps", "3", "--micro-batches", "1", "--data-format", "bytes"]


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"FAIL exit {r.returncode}: {' '.join(cmd)}\n{r.stdout[-2000:]}")
    return r.stdout


def main(bin_dir, repo, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    compile_, run_ = os.path.join(bin_dir, "disagmoe"), os.path.join(bin_dir, "disagmoe-run")
    data = os.path.join(repo, "samples", "data", "kjv_ot.txt")
    models = os.path.join(repo, "samples", "models")
    plans = {}
    for name, rel in [("packed", "newer_opsets/mixtral_ort_gqa_packed"), ("base", "mixtral_tiny")]:
        plans[name] = os.path.join(work, name + "_plan")
        run([compile_, "compile", os.path.join(models, rel, "model.onnx"), "-o", plans[name],
             "--attn-ranks", "2", "--ffn-ranks", "2"] + SHAPE)
    out = lambda *parts: os.path.join(work, "_".join(parts))  # noqa: E731
    check = Checks()
    for name in plans:
        run([run_, plans[name], "--seed", "1", "--export-hf", out(name, "init")] + SHAPE)
        run([run_, plans[name], "--data", data, "--export-hf", out(name, "trained")] + SHAPE + TRAIN)
    st = "model.safetensors"
    same = lambda a, b: filecmp.cmp(os.path.join(a, st), os.path.join(b, st), shallow=False)  # noqa: E731
    check(same(out("packed", "init"), out("base", "init")),
          "untrained: the packed-QKV plan's HF export equals mixtral_tiny's byte for byte")
    check(same(out("packed", "trained"), out("base", "trained")),
          "after 3 training steps: the packed-QKV plan's HF export equals mixtral_tiny's byte for byte")
    check(not same(out("packed", "init"), out("packed", "trained")),
          "training moved the packed plan's weights (the trained export differs from the untrained one)")
    run([run_, plans["packed"], "--init-weights", out("packed", "trained"), "--export-hf", out("packed", "again")]
        + SHAPE)
    check(same(out("packed", "trained"), out("packed", "again")),
          "the packed plan reloads its own HF export (--init-weights) and exports it again byte for byte")
    return check.summary()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__.strip().splitlines()[-1].strip())
    sys.exit(main(*sys.argv[1:]))
