"""Writes mixtral_ort_gqa (samples/models/newer_opsets) with onnxruntime's sliding window and
attention sinks on its GroupQueryAttention nodes, the way onnxruntime-genai exports Mistral- and
GPT-OSS-style layers: gqa_window_sinks.onnx, layers 0 and 2 local_window_size = 2 with a head_sink
initializer [num_heads], layers 1 and 3 full attention (GPT-OSS alternates sliding and full layers).
A structural input for tests/lit/raise/gqa-window-sinks.test (the weights are the sample's).

  python3 make_gqa_window_sinks.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "..", "..", "..", "samples", "models", "newer_opsets", "mixtral_ort_gqa",
                      "model.onnx")


def main(out):
    os.makedirs(out, exist_ok=True)
    m = onnx.load(SAMPLE)
    gqas = [n for n in m.graph.node if n.op_type == "GroupQueryAttention"]
    for layer, gqa in enumerate(gqas):
        if layer % 2:
            continue
        heads = next(helper.get_attribute_value(a) for a in gqa.attribute if a.name == "num_heads")
        gqa.attribute.append(helper.make_attribute("local_window_size", 2))
        name = f"model.layers.{layer}.self_attn.sinks"
        m.graph.initializer.append(numpy_helper.from_array(
            np.linspace(-1.0, 1.0, heads).astype(np.float32), name))
        while len(gqa.input) < 11:
            gqa.input.append("")
        gqa.input.append(name)
    onnx.save(m, os.path.join(out, "gqa_window_sinks.onnx"))


if __name__ == "__main__":
    main(sys.argv[1])
