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
import json
import os
import shutil
import sys

from check_onnxruntime_oracle import SKIP, run  # noqa: E402
from edited_form_oracle import check_edited  # noqa: E402

EDITS = {"yarn_ort_rotary.onnx": "mixtral_ort_rotary", "yarn_ort_gqa.onnx": "mixtral_ort_gqa"}


def attention_factor(plan):
    model = json.load(open(os.path.join(plan, "plan.json")))["model"]
    return f"plan rope_attention_factor {model.get('rope_attention_factor')}"


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
        golden = os.path.join(repo, "samples", "models", "newer_opsets", form, "golden")
        p, f = check_edited(bin_dir, oracle_dir, os.path.join(work, file), golden, work, file[:-5],
                            attention_factor)
        passed, failed = passed + p, failed + f
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main(*sys.argv[1:4])
