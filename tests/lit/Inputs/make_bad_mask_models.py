"""Writes variants of the Hugging Face masking_utils export (samples/models/mixtral_variants/
hf_masking_utils_opset17) whose folded mask is neither causal nor a sliding window, which the raise
pass must refuse naming the node (tests/lit/raise/refuse-bad-masks.test):

- anti_causal.onnx: kv_idx >= q_idx instead of kv_idx <= q_idx (each query sees the future);
- bidirectional.onnx: the boolean mask replaced by all-true (every key visible: an encoder mask).
Run with Debian's /usr/bin/python3 (onnx, numpy).
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "..", "..", "..", "samples", "models", "mixtral_variants",
                      "hf_masking_utils_opset17", "model.onnx")


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    m = onnx.load(SAMPLE)
    le = next(n for n in m.graph.node if n.op_type == "LessOrEqual")
    le.op_type = "GreaterOrEqual"
    onnx.save(m, os.path.join(out_dir, "anti_causal.onnx"))

    m = onnx.load(SAMPLE)
    # eager_mask's where(mask, 0, finfo.min) reads an all-true [1, 1, 8, 8] mask instead (compiled
    # at the default seq 8).
    where = next(n for n in m.graph.node if n.op_type == "Where" and
                 any(o.op_type == "Expand" and o.output[0] == n.input[0] for o in m.graph.node))
    ones = helper.make_node("Constant", [], ["all_visible"], name="all_visible",
                            value=numpy_helper.from_array(np.ones((1, 1, 8, 8), dtype=bool)))
    m.graph.node.insert(list(m.graph.node).index(where), ones)
    where.input[0] = "all_visible"
    onnx.save(m, os.path.join(out_dir, "bidirectional.onnx"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
