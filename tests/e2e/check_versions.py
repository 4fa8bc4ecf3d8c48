"""--version of every binary and the producer recorded in checkpoints (issue 17).

  check_versions.py BIN_DIR SOURCE_DIR SAMPLE_DIR WORK_DIR

The oracle is the source tree itself: the version of the top-level CMakeLists.txt's
project(disagmoe VERSION x.y.z) and `git rev-parse --short=7 HEAD` ("unknown" outside a git checkout).
The binaries must have been built from that commit (a build rereads it).
1. `disagmoe --version`, `disagmoe compile --version`, `disagmoe inspect --version`, `disagmoe-opt --version`
   and `disagmoe-run --version` print "<tool> x.y.z (commit c)" and exit 0.
2. A training checkpoint's __metadata__.producer is "disagmoe x.y.z (commit c)".
"""
import json
import os
import re
import struct
import subprocess
import sys

from checks import Checks


def main(bin_dir, source_dir, sample, work):
    os.makedirs(work, exist_ok=True)
    check = Checks()
    cmake = open(os.path.join(source_dir, "CMakeLists.txt")).read()
    version = re.search(r"project\(disagmoe VERSION ([0-9]+\.[0-9]+\.[0-9]+)", cmake).group(1)
    git = subprocess.run(["git", "-C", source_dir, "rev-parse", "--short=7", "HEAD"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    commit = git.stdout.strip() if git.returncode == 0 and git.stdout.strip() else "unknown"

    # 1. --version.
    for tool, args in (("disagmoe", ["--version"]), ("disagmoe", ["compile", "--version"]),
                       ("disagmoe", ["inspect", "--version"]), ("disagmoe-opt", ["--version"]),
                       ("disagmoe-run", ["--version"])):
        r = subprocess.run([os.path.join(bin_dir, tool)] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        expected = f"{tool} {version} (commit {commit})\n"
        check(r.returncode == 0 and r.stdout == expected,
              f"{tool} {' '.join(args)} prints {expected.strip()!r}" + ("" if r.stdout == expected else
                                                                        f" (got {r.stdout[:200]!r})"))

    # 2. The checkpoint's producer.
    plan = os.path.join(work, "plan")
    subprocess.run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sample, "model.onnx"), "-o", plan],
                   check=True, stdout=subprocess.DEVNULL)
    ckpt = os.path.join(work, "ckpt.safetensors")
    subprocess.run([os.path.join(bin_dir, "disagmoe-run"), plan, "--train", "--steps", "1", "--save-checkpoint",
                    ckpt], check=True, stdout=subprocess.DEVNULL)
    raw = open(ckpt, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    producer = json.loads(raw[8:8 + n])["__metadata__"].get("producer")
    check(producer == f"disagmoe {version} (commit {commit})", f"the checkpoint's __metadata__.producer is {producer!r}")
    return check.summary()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
