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
import os
import shutil
import sys

from check_onnxruntime_oracle import SKIP, run  # noqa: E402
from edited_form_oracle import check_edited  # noqa: E402


def main(bin_dir, repo, work):
    oracle_dir = os.path.join(repo, "tests", "oracle")
    if not os.path.isdir(os.path.join(oracle_dir, "node_modules", "onnxruntime-node")):
        print("skipped: onnxruntime-node is not installed (tests/oracle, scripts/setup.sh)")
        sys.exit(SKIP)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run([sys.executable, os.path.join(repo, "tests", "lit", "Inputs", "make_gqa_window_sinks.py"), work])
    golden = os.path.join(repo, "samples", "models", "newer_opsets", "mixtral_ort_gqa", "golden")
    passed, failed = check_edited(bin_dir, oracle_dir, os.path.join(work, "gqa_window_sinks.onnx"), golden,
                                  work, "gqa_window_sinks")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main(*sys.argv[1:4])
