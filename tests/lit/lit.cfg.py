# lit configuration: FileCheck tests over disagmoe-opt / disagmoe output.
import os
import shutil
import subprocess

import lit.formats

config.name = "disagmoe"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.exec_root

config.environment["PATH"] = os.pathsep.join(
    [config.disagmoe_bin, config.filecheck_dir, "/usr/lib/llvm-19/bin", config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%samples", os.path.join(config.source_root, "samples")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
# Debian's python3 (with onnx and numpy), not the first python3 on PATH.
config.substitutions.append(("%python", config.python))
# %expect-exit1 CMD: CMD must exit with code 1 and write exactly one line on stderr (the CLIs' error
# contract); its output passes through for FileCheck. Use it instead of `not` for refused inputs.
config.substitutions.append(
    ("%expect-exit1", config.python + " " + os.path.join(config.test_source_root, "Inputs", "expect_exit1.py")))

# Features of the cuda backend (issue 14): "cuda-backend" where this build has it (nvcc found);
# "cuda-device" where nvidia-smi lists a GPU (tests/e2e/check_nccl.py counts GPUs the same way).
# Tests of `--backend cuda` REQUIRE or are UNSUPPORTED on these.
if config.disagmoe_have_cuda == "ON":
    config.available_features.add("cuda-backend")


def _nvidia_smi_lists_a_gpu():
    # CUDA_VISIBLE_DEVICES="" or "-1" hides every GPU from the CUDA runtime, not from nvidia-smi.
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and (visible.strip() == "" or visible.strip().startswith("-1")):
        return False
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return any(line.startswith("GPU ") for line in out.stdout.splitlines())


if _nvidia_smi_lists_a_gpu():
    config.available_features.add("cuda-device")
