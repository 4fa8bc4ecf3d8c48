"""The training demo (issue 7): the sample model learns real English text and its loss falls.

  check_training_demo.py BIN_DIR SAMPLE_DIR TEXT_FILE WORK_DIR

Compiles samples/models/mixtral_tiny (2 attention + 2 FFN ranks) for batches [8, 32] and trains it
for STEPS steps on TEXT_FILE as byte-level tokens (AdamW lr 3e-3, clipping at 1, 4 warm-up steps,
cosine decay to 3e-4). Closed-form baselines from the text itself:
  ln(256)   the loss of a uniform guess over the byte vocabulary (where an untrained model starts)
  H1        the unigram entropy -sum_b p(b) ln p(b) of the text's bytes: the lowest loss any model
            that ignores the context can reach
Passes when the mean loss of the last 5 steps is below H1 (so the model uses context, not only
byte frequencies), hence below ln(256), and at least 1 nat below the first step's loss.
"""
import math
import os
import re
import subprocess
import sys
import time

import numpy as np

STEPS = 30


def main(bin_dir, sample, text, work):
    os.makedirs(work, exist_ok=True)
    plan = os.path.join(work, "plan")
    subprocess.run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sample, "model.onnx"), "-o", plan,
                    "--attn-ranks", "2", "--ffn-ranks", "2", "--batch", "8", "--seq-len", "32"], check=True,
                   stdout=subprocess.DEVNULL)
    start = time.time()
    r = subprocess.run([os.path.join(bin_dir, "disagmoe-run"), plan, "--train", "--batch", "8", "--seq-len", "32",
                        "--data", text, "--data-format", "bytes", "--optimizer", "adamw", "--lr", "3e-3",
                        "--clip-grad", "1", "--warmup-steps", "4", "--total-steps", str(STEPS), "--lr-min", "3e-4",
                        "--steps", str(STEPS), "--loss-log", os.path.join(work, "loss.jsonl")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.time() - start
    print(r.stdout)
    if r.returncode != 0:
        raise SystemExit(f"disagmoe-run failed ({r.returncode})")
    losses = [float(x) for x in re.findall(r"step \d+/\d+ \| loss ([0-9.eE+-]+)", r.stdout)]
    data = np.frombuffer(open(text, "rb").read(), dtype=np.uint8)
    p = np.bincount(data, minlength=256) / len(data)
    p = p[p > 0]
    h1 = float(-(p * np.log(p)).sum())
    last = sum(losses[-5:]) / 5
    print(f"{len(losses)} steps in {seconds:.1f} s: first loss {losses[0]:.4f}, mean of the last 5 {last:.4f}; "
          f"ln(256) = {math.log(256):.4f}, unigram entropy H1 = {h1:.4f}")
    ok = len(losses) == STEPS and last < h1 < math.log(256) and last < losses[0] - 1.0
    print("ok   the loss falls below the unigram entropy" if ok else "FAIL the loss did not fall enough")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
