"""An edited sample against onnxruntime (the oracle where no PyTorch golden exists for the edit):
onnxruntime-node and our compiler + executor run the edited file on the unedited sample's golden
ids at every golden shape; the logits must agree within the fp32 error model's bound
(tests/numerics/error_model.py logits_bound), and the edit must matter: onnxruntime's logits differ
from the unedited sample's PyTorch golden by more than that bound. Used by
check_gqa_window_sinks.py and check_yarn_rotary_caches.py.
"""
import glob
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "numerics"))
import error_model  # noqa: E402

from check_onnxruntime_oracle import run  # noqa: E402


def check_edited(bin_dir, oracle_dir, model, golden, work, label, note=None):
    """(passed, failed) lines for `model` (an edit of the sample whose golden/ dir is `golden`).
    note(plan_dir) -> str, when given, adds to each line (a plan field, say)."""
    cfg = json.load(open(os.path.join(golden, "config.json")))
    passed = failed = 0
    for ids in sorted(glob.glob(os.path.join(golden, "ids_b*_s*.npy"))):
        shape = os.path.basename(ids)[len("ids_"):-len(".npy")]
        batch, seq = (int(x) for x in shape[1:].split("_s"))
        tag = f"{label}_{shape}"
        ort_out, ours = os.path.join(work, f"ort_{tag}.npy"), os.path.join(work, f"ours_{tag}.npy")
        plan = os.path.join(work, f"plan_{tag}")
        run(["node", os.path.join(oracle_dir, "run_onnxruntime.js"), model, ids, ort_out])
        run([os.path.join(bin_dir, "disagmoe"), "compile", model, "-o", plan,
             "--batch", str(batch), "--seq-len", str(seq)])
        run([os.path.join(bin_dir, "disagmoe-run"), plan, "--input", ids, "--output", ours])
        bound = error_model.logits_bound(cfg, seq)
        ok, text = bound.check(np.load(ours), np.load(ort_out))
        moved, moved_text = bound.check(np.load(ort_out), np.load(os.path.join(golden, f"logits_{shape}.npy")))
        if moved:
            ok = False
            text += f"; but onnxruntime's logits equal the unedited golden ({moved_text})"
        if note:
            text += f" ({note(plan)})"
        passed += ok
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {label} {shape}: ours vs onnxruntime: {text}")
    return passed, failed
