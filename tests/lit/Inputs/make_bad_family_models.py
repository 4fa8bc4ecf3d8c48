"""Writes variants of the committed family exports that the raise pass must refuse, naming the
node at fault (tests/lit/raise/raise-families-bad.test):

- qwen3_k_unnormed.onnx: Qwen3 sample with layer 0's k read around its RMSNorm (q normalised,
  k not): neither Qwen3 nor plain attention;
- qwen3_yarn.onnx: Qwen3 sample whose RoPE inverse frequencies are scaled in part (as YaRN's
  interpolation does): no longer theta^(-2i/d) for one theta, kept as the plan's rope_inv_freq;
- qwen3_negative_freq.onnx: the same with one frequency negative: refused;
- gpt_oss_up_limit.onnx: GPT-OSS sample with expert 0 of layer 0 clamping its up input to +-6
  while its gate is clamped at 7: not the reference clamped SwiGLU.
Run with Debian's /usr/bin/python3 (onnx, numpy).
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.join(HERE, "..", "..", "..", "samples", "models")


def node(m, name):
    return next(n for n in m.graph.node if n.name == name)


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    m = onnx.load(os.path.join(SAMPLES, "qwen3_moe_tiny", "model.onnx"))
    t = node(m, "/layers.0/self_attn/Transpose_1")
    t.input[0] = node(m, "/layers.0/self_attn/Reshape_1").output[0]
    onnx.save(m, os.path.join(out_dir, "qwen3_k_unnormed.onnx"))

    m = onnx.load(os.path.join(SAMPLES, "qwen3_moe_tiny", "model.onnx"))
    # The inverse-frequency constant that the rotary embedding expands.
    freq_name = node(m, "/rotary_emb/Expand").input[0]
    const = next(n for n in m.graph.node if n.output[0] == freq_name)
    freqs = numpy_helper.to_array(const.attribute[0].t).copy()
    freqs.reshape(-1)[4:] /= 4.0  # the low frequencies interpolated by a factor 4
    const.attribute[0].t.CopyFrom(numpy_helper.from_array(freqs))
    onnx.save(m, os.path.join(out_dir, "qwen3_yarn.onnx"))
    freqs.reshape(-1)[5] = -freqs.reshape(-1)[5]
    const.attribute[0].t.CopyFrom(numpy_helper.from_array(freqs))
    onnx.save(m, os.path.join(out_dir, "qwen3_negative_freq.onnx"))

    m = onnx.load(os.path.join(SAMPLES, "gpt_oss_tiny", "model.onnx"))
    clip = node(m, "/layers.0/mlp/experts/Clip_1")
    for i, bound in ((1, -6.0), (2, 6.0)):
        c = next(n for n in m.graph.node if n.output[0] == clip.input[i])
        c.attribute[0].t.CopyFrom(numpy_helper.from_array(np.array(bound, dtype=np.float32)))
    onnx.save(m, os.path.join(out_dir, "gpt_oss_up_limit.onnx"))


if __name__ == "__main__":
    main(sys.argv[1])
