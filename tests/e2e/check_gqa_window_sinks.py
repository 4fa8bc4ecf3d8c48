"""Oracle for com.microsoft.GroupQueryAttention with local_window_size and head_sink (issue 16):
samples/models/newer_opsets/mixtral_ort_gqa with layers 0 and 2 given local_window_size = 2 and a
head_sink initializer (tests/lit/Inputs/make_gqa_window_sinks.py, GPT-OSS's alternation of sliding
and full layers), run by onnxruntime-node (CPU, its own GroupQueryAttention kernel: the window and
sink semantics as onnxruntime defines them) and by our compiler + executor on the sample's golden
ids at every golden shape; the logits must agree within the fp32 error model's bound
(tests/numerics/error_model.py logits_bound). The edit must matter: onnxruntime's logits for it
differ from the unedited sample's PyTorch golden by more than that bound (else the window and sinks
were not exercised). No PyTorch golden exists for the edited file (PyTorch's module has no window
or sinks); onnxruntime is the oracle. Exits 77 (CTest: skipped) when onnxruntime-node is not
installed.
  check_gqa_window_sinks.py BIN_DIR REPO_DIR WORK_DIR
"""
import glob
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "numerics"))
import error_model  # noqa: E402

from check_onnxruntime_oracle import SKIP, run  # noqa: E402


def main(bin_dir, repo, work):
    oracle_dir = os.path.join(repo, "tests", "oracle")
    if not os.path.isdir(os.path.join(oracle_dir, "node_modules", "onnxruntime-node")):
        print("skipped: onnxruntime-node is not installed (tests/oracle, scripts/setup.sh)")
        sys.exit(SKIP)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run([sys.executable, os.path.join(repo, "tests", "lit", "Inputs", "make_gqa_window_sinks.py"), work])
    model = os.path.join(work, "gqa_window_sinks.onnx")
    golden = os.path.join(repo, "samples", "models", "newer_opsets", "mixtral_ort_gqa", "golden")
    cfg = json.load(open(os.path.join(golden, "config.json")))
    passed = failed = 0
    for ids in sorted(glob.glob(os.path.join(golden, "ids_b*_s*.npy"))):
        shape = os.path.basename(ids)[len("ids_"):-len(".npy")]
        batch, seq = (int(x) for x in shape[1:].split("_s"))
        ort_out = os.path.join(work, f"ort_{shape}.npy")
        ours = os.path.join(work, f"ours_{shape}.npy")
        plan = os.path.join(work, f"plan_{shape}")
        run(["node", os.path.join(oracle_dir, "run_onnxruntime.js"), model, ids, ort_out])
        run([os.path.join(bin_dir, "disagmoe"), "compile", model, "-o", plan,
             "--batch", str(batch), "--seq-len", str(seq)])
        run([os.path.join(bin_dir, "disagmoe-run"), plan, "--input", ids, "--output", ours])
        bound = error_model.logits_bound(cfg, seq)
        ok, text = bound.check(np.load(ours), np.load(ort_out))
        # The window and sinks change the logits: onnxruntime's must differ from the unedited
        # sample's golden by more than the bound.
        moved, moved_text = bound.check(np.load(ort_out), np.load(os.path.join(golden, f"logits_{shape}.npy")))
        if moved:
            ok = False
            text += f"; but onnxruntime's logits equal the unedited golden ({moved_text})"
        passed += ok
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} gqa_window_sinks {shape}: ours vs onnxruntime: {text}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main(*sys.argv[1:4])
