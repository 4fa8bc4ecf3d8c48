"""Oracle for YaRN's RoPE tables in onnxruntime's rotary caches (issue 16): mixtral_ort_rotary's
com.microsoft.RotaryEmbedding and mixtral_ort_gqa's GroupQueryAttention (do_rotary) with caches
m cos(p w_i), m sin(p w_i) (tests/lit/Inputs/make_yarn_rotary_caches.py: YaRN's frequencies and
attention factor, as onnxruntime-genai's builder writes a YaRN model), run by onnxruntime-node
(its own rotary kernels read the caches) and by our compiler + executor (normalize-onnx measures
the frequencies and the factor from the caches: the plan's rope_inv_freq, rope_attention_factor)
on the sample's golden ids at every golden shape; the logits must agree within the fp32 error
model's bound (tests/numerics/error_model.py logits_bound), and the edit must matter: onnxruntime's
logits differ from the unedited sample's PyTorch golden by more than that bound. Exits 77 (CTest:
skipped) when onnxruntime-node is not installed.
  check_yarn_rotary_caches.py BIN_DIR REPO_DIR WORK_DIR
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

EDITS = {"yarn_ort_rotary.onnx": "mixtral_ort_rotary", "yarn_ort_gqa.onnx": "mixtral_ort_gqa"}


def main(bin_dir, repo, work):
    oracle_dir = os.path.join(repo, "tests", "oracle")
    if not os.path.isdir(os.path.join(oracle_dir, "node_modules", "onnxruntime-node")):
        print("skipped: onnxruntime-node is not installed (tests/oracle, scripts/setup.sh)")
        sys.exit(SKIP)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run([sys.executable, os.path.join(repo, "tests", "lit", "Inputs", "make_yarn_rotary_caches.py"), work])
    passed = failed = 0
    for file, form in EDITS.items():
        model = os.path.join(work, file)
        golden = os.path.join(repo, "samples", "models", "newer_opsets", form, "golden")
        cfg = json.load(open(os.path.join(golden, "config.json")))
        for ids in sorted(glob.glob(os.path.join(golden, "ids_b*_s*.npy"))):
            shape = os.path.basename(ids)[len("ids_"):-len(".npy")]
            batch, seq = (int(x) for x in shape[1:].split("_s"))
            tag = f"{file[:-5]}_{shape}"
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
            factor = json.load(open(os.path.join(plan, "plan.json")))["model"].get("rope_attention_factor")
            passed += ok
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {file} {shape}: ours vs onnxruntime: {text} "
                  f"(plan rope_attention_factor {factor})")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main(*sys.argv[1:4])
