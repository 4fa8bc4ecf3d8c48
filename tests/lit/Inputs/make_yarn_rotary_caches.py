"""Writes two newer_opsets samples with YaRN's RoPE tables in their cos/sin caches, the way
onnxruntime-genai's builder exports a YaRN model (GPT-OSS, Qwen3 with rope_scaling): the caches
hold m cos(p w_i) and m sin(p w_i), w_i YaRN's blend of interpolated and extrapolated frequencies
and m its attention factor 0.1 ln(factor) + 1 (transformers' _compute_yarn_parameters; Peng et al.
2023, eq. 22), here factor 4, beta_fast 32, beta_slow 1, original_max_position_embeddings 16,
truncate false:
  yarn_ort_rotary.onnx  mixtral_ort_rotary's com.microsoft.RotaryEmbedding caches (head_dim 8)
  yarn_ort_gqa.onnx     mixtral_ort_gqa's GroupQueryAttention do_rotary caches (head_dim 16)
The weights are the samples'; no PyTorch golden exists for these models (onnxruntime is the
oracle, tests/e2e/check_yarn_rotary_caches.py).

  python3 make_yarn_rotary_caches.py OUT_DIR
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
FORMS = os.path.join(HERE, "..", "..", "..", "samples", "models", "newer_opsets")
YARN = {"factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0, "original_max_position_embeddings": 16}


def yarn_caches(theta, dim, rows):
    """[rows, dim/2] fp32 caches m cos(p w), m sin(p w) (fp32 frequencies and angles, cos/sin in
    float64 rounded once, times m in fp32)."""
    factor = YARN["factor"]
    m = np.float32(0.1 * math.log(factor) + 1.0)

    def correction_dim(rotations):
        return dim * math.log(YARN["original_max_position_embeddings"] / (rotations * 2 * math.pi)) / (
            2 * math.log(theta))

    low = max(correction_dim(YARN["beta_fast"]), 0)
    high = min(correction_dim(YARN["beta_slow"]), dim - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(dim // 2, dtype=np.float32) - low) / (high - low), 0, 1).astype(np.float32)
    pos = (np.float32(theta) ** (np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim))).astype(np.float32)
    extra = (np.float32(1) - ramp).astype(np.float32)
    inv = ((np.float32(1) / (np.float32(factor) * pos)) * (1 - extra) + (np.float32(1) / pos) * extra).astype(np.float32)
    angles = np.outer(np.arange(rows, dtype=np.float32), inv).astype(np.float32).astype(np.float64)
    cos = (np.cos(angles).astype(np.float32) * m).astype(np.float32)
    sin = (np.sin(angles).astype(np.float32) * m).astype(np.float32)
    return cos, sin


def rewrite(form, out):
    m = onnx.load(os.path.join(FORMS, form, "model.onnx"))
    inits = {t.name: t for t in m.graph.initializer}
    rows, half = inits["rotary.cos_cache"].dims
    cfg_theta = 10000.0  # both bases: mixtral's rope_theta
    cos, sin = yarn_caches(cfg_theta, 2 * half, rows)
    inits["rotary.cos_cache"].CopyFrom(numpy_helper.from_array(cos, "rotary.cos_cache"))
    inits["rotary.sin_cache"].CopyFrom(numpy_helper.from_array(sin, "rotary.sin_cache"))
    onnx.save(m, out)


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    rewrite("mixtral_ort_rotary", os.path.join(out_dir, "yarn_ort_rotary.onnx"))
    rewrite("mixtral_ort_gqa", os.path.join(out_dir, "yarn_ort_gqa.onnx"))


if __name__ == "__main__":
    main(sys.argv[1])
