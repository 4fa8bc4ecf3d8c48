#!/usr/bin/python3
"""Newer exporters' forms (samples/models/newer_opsets, issue 16): opset 18 and 23 signatures,
RMSNormalization, onnxruntime's fused (Skip)SimplifiedLayerNormalization, the opset-23 Attention
and a model-local RMSNorm function. Each form is its base sample rewritten with the same weights
(newer_opsets/write_forms.py), so, for every form and every golden shape:
  - onnxruntime on the form vs the base's PyTorch golden logits, and vs onnxruntime on the base file
    (within tests/numerics/error_model.py logits_bound: the form itself is right);
  - `disagmoe compile FORM --batch B --seq-len S` + `disagmoe-run` vs onnxruntime on the form
    (logits_bound), the compiler's import of the form;
  - where the base has golden/train (config.json "base"), one training step of the form (SGD, AdamW,
    the idle batch where there is one; check_training_families.check_sample with m = 1) against
    the base's training goldens, or the form's own golden/train where it has one (a form that
    permutes weights, with the base's goldens permuted alike).
One line per form and shape (and per trained form); a failure to compile or run is a FAIL line with
the tool's last output line, never a crash. Exits 1 on any failure, 77 (CTest: skipped) when
onnxruntime-node is not installed.
  check_newer_forms.py BIN_DIR REPO_DIR WORK_DIR [MODEL_DIR ...]
MODEL_DIRs (default: every samples/models/newer_opsets/*/) may name other samples, e.g. the bases
themselves, to check this script's comparisons on files the compiler already imports.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "numerics"))
sys.path.insert(0, HERE)
import error_model  # noqa: E402
import check_training_families as training  # noqa: E402

SKIP = 77
TIMEOUT = 600


def run(cmd):
    """(ok, last output line)."""
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {TIMEOUT} s: {' '.join(cmd)}"
    lines = [l for l in r.stdout.strip().splitlines() if l.strip()]
    last = lines[-1] if lines else ""
    return r.returncode == 0, (last if r.returncode == 0 else f"exit {r.returncode}: {last[-300:]}")


def onnxruntime(oracle_dir, model, ids, out, feeds=()):
    """feeds: NAME=VALUES.npy for the graph inputs after the token ids."""
    return run(["node", os.path.join(oracle_dir, "run_onnxruntime.js"), model, ids, out] + list(feeds))


def check_form(bin_dir, repo, work, mdir, oracle_dir):
    """Returns (passed, failed) line counts for one form directory."""
    samples = os.path.join(repo, "samples", "models")
    name = os.path.relpath(mdir, samples)
    model = os.path.join(mdir, "model.onnx")
    cfg = json.load(open(os.path.join(mdir, "golden", "config.json")))
    base = cfg.get("base", name)
    base_dir = os.path.join(samples, base)
    tag = name.replace("/", "_")
    passed = failed = 0

    def line(ok, text):
        nonlocal passed, failed
        passed += ok
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {text}", flush=True)

    shapes = sorted(glob.glob(os.path.join(mdir, "golden", "ids_b*_s*.npy")))
    if not shapes:
        line(False, f"{name}: no golden/ids_b*_s*.npy")
    for ids in shapes:
        shape = os.path.basename(ids)[len("ids_"):-len(".npy")]
        batch, seq = (int(x[1:]) for x in shape.split("_"))
        bound = error_model.logits_bound(cfg, seq)
        golden = np.load(os.path.join(mdir, "golden", f"logits_{shape}.npy"))
        # 1. The form under onnxruntime: PyTorch's logits and onnxruntime's on the base file.
        ort_out = os.path.join(work, f"{tag}_{shape}_ort.npy")
        # A form with the onnxruntime-genai builder's I/O (attention_mask, past_key_values.*) is fed
        # what the compiled plan binds (golden/<input>_<shape>.npy: ones, empty caches).
        feeds = [f"{n}={os.path.join(mdir, 'golden', f'{n}_{shape}.npy')}" for n in cfg.get("graph_inputs", [])[1:]]
        ok, msg = onnxruntime(oracle_dir, model, ids, ort_out, feeds)
        if not ok:
            line(False, f"{name} {shape}: onnxruntime refuses the form: {msg}")
            continue
        ort = np.load(ort_out)
        ok, text = bound.check(ort, golden)
        diffs = f"max abs vs PyTorch {np.abs(ort.astype(np.float64) - golden).max():.1e}"
        if base != name:
            base_out = os.path.join(work, f"{tag}_{shape}_ort_base.npy")
            bok, bmsg = onnxruntime(oracle_dir, os.path.join(base_dir, "model.onnx"), ids, base_out)
            if bok:
                diffs += f", vs onnxruntime on {base} {np.abs(ort.astype(np.float64) - np.load(base_out)).max():.1e}"
            else:
                ok, diffs = False, diffs + f"; onnxruntime on {base} failed: {bmsg}"
        line(ok, f"{name} {shape}: onnxruntime on the form vs PyTorch: {text}; {diffs}")
        # 2. Our compiler and executor on the form vs onnxruntime on it.
        plan = os.path.join(work, f"{tag}_{shape}_plan")
        ours = os.path.join(work, f"{tag}_{shape}_ours.npy")
        ok, msg = run([os.path.join(bin_dir, "disagmoe"), "compile", model, "-o", plan,
                       "--batch", str(batch), "--seq-len", str(seq)])
        if not ok:
            line(False, f"{name} {shape}: disagmoe compile failed: {msg}")
            continue
        ok, msg = run([os.path.join(bin_dir, "disagmoe-run"), plan, "--input", ids, "--output", ours])
        if not ok:
            line(False, f"{name} {shape}: disagmoe-run failed: {msg}")
            continue
        try:
            ok, text = bound.check(np.load(ours), ort)
        except Exception as e:  # noqa: BLE001  (no or an unreadable output file: a FAIL line)
            ok, text = False, f"{ours}: {type(e).__name__}: {e}"
        line(ok, f"{name} {shape}: ours vs onnxruntime: {text}")
    # 3. One training step against the base's training goldens (the form's own golden/train where
    # the form permutes weights: the base's goldens permuted alike, write_forms.py).
    tdir = os.path.join(mdir, "golden", "train")
    own_goldens = os.path.isdir(tdir)
    if not own_goldens:
        tdir = os.path.join(base_dir, "golden", "train")
    if os.path.isdir(tdir):
        swork = os.path.join(work, f"{tag}_train")
        shutil.rmtree(swork, ignore_errors=True)
        os.makedirs(swork)
        label = f"{name} train (" + (f"its own goldens: {base}'s permuted" if own_goldens else f"goldens of {base}") + ")"
        same_ids = os.path.exists(os.path.join(mdir, "golden", "ids_b2_s8.npy")) and np.array_equal(
            np.load(os.path.join(mdir, "golden", "ids_b2_s8.npy")),
            np.load(os.path.join(base_dir, "golden", "ids_b2_s8.npy")))
        if not same_ids:
            line(False, f"{label}: golden/ids_b2_s8.npy differs from the base's")
        elif not os.path.exists(os.path.join(tdir, "grads.npz")):
            # mixtral_tiny's goldens (export_grads.py's layout): tests/e2e/check_training.py on the
            # form's model with the base's golden folder.
            sample = os.path.join(swork, "sample")
            os.makedirs(sample)
            os.symlink(os.path.abspath(os.path.join(mdir, "model.onnx")), os.path.join(sample, "model.onnx"))
            os.symlink(os.path.abspath(os.path.join(base_dir, "golden")), os.path.join(sample, "golden"))
            for py in glob.glob(os.path.join(base_dir, "*.py")):  # export_grads.py: the initial weights
                os.symlink(os.path.abspath(py), os.path.join(sample, os.path.basename(py)))
            r = subprocess.run([sys.executable, os.path.join(HERE, "check_training.py"), bin_dir, sample,
                                os.path.join(swork, "work")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
            tail = (r.stdout.strip().splitlines() or [""])[-1]
            if r.returncode != 0:
                print(r.stdout[-2000:])
            line(r.returncode == 0, f"{label} (tests/e2e/check_training.py): {tail[-200:]}")
        else:
            try:
                failures = training.check_sample(bin_dir, mdir, tdir, swork, name, 1)
            except SystemExit as e:  # a compile or run failure (check_training_families.run)
                lines = str(e).strip().splitlines() or [""]
                failures = [f"training step: {lines[-1][-300:]}"]
            except Exception as e:  # noqa: BLE001  (a missing file, an unreadable output: a FAIL line)
                failures = [f"{type(e).__name__}: {e}"]
            for f in failures[:5]:
                print(f"     {f}")
            line(not failures, f"{label}: loss, gradients, SGD and AdamW steps"
                 + (f": {len(failures)} failures" if failures else ""))
    return passed, failed


def main(bin_dir, repo, work, dirs):
    oracle_dir = os.path.join(repo, "tests", "oracle")
    if not os.path.isdir(os.path.join(oracle_dir, "node_modules", "onnxruntime-node")) or not shutil.which("node"):
        print("skipped: onnxruntime-node is not installed (scripts/setup.sh installs it from npm; "
              "npm was unreachable or node is missing)")
        return SKIP
    if not dirs:
        dirs = sorted(os.path.dirname(p) for p in
                      glob.glob(os.path.join(repo, "samples", "models", "newer_opsets", "*", "model.onnx")))
    passed = failed = 0
    for d in dirs:
        p, f = check_form(bin_dir, repo, work, os.path.abspath(d.rstrip("/")), oracle_dir)
        passed, failed = passed + p, failed + f
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(*sys.argv[1:4], sys.argv[4:]))
