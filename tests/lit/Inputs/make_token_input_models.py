"""Writes variants of the Hugging Face export with input_ids, attention_mask and position_ids inputs
(samples/models/mixtral_variants/hf_masking_utils_inputs_opset17) whose token input is not the first
(tests/lit/raise/token-input-by-name.test):

- mask_first.onnx: the inputs reordered to attention_mask, position_ids, input_ids;
- tokens_last.onnx: reordered the same way and input_ids renamed "tokens" (no input is named
  input_ids; "tokens" is the only input a plan does not bind);
- two_candidates.onnx: as tokens_last, plus an unused int64 input "segment_ids": two inputs could
  hold the token ids.
Run with Debian's /usr/bin/python3 (onnx).
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "..", "..", "..", "samples", "models", "mixtral_variants",
                      "hf_masking_utils_inputs_opset17", "model.onnx")


def reordered():
    m = onnx.load(SAMPLE)
    by_name = {i.name: i for i in m.graph.input}
    order = ["attention_mask", "position_ids", "input_ids"]
    assert set(order) <= set(by_name), list(by_name)
    rest = [i for i in m.graph.input if i.name not in order]
    kept = [by_name[n] for n in order] + rest
    copies = [onnx.ValueInfoProto() for _ in kept]
    for c, i in zip(copies, kept):
        c.CopyFrom(i)
    del m.graph.input[:]
    m.graph.input.extend(copies)
    return m


def rename_input(m, old, new):
    for i in m.graph.input:
        if i.name == old:
            i.name = new
    for node in m.graph.node:
        for k, name in enumerate(node.input):
            if name == old:
                node.input[k] = new


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    onnx.save(reordered(), os.path.join(out_dir, "mask_first.onnx"))
    m = reordered()
    rename_input(m, "input_ids", "tokens")
    onnx.save(m, os.path.join(out_dir, "tokens_last.onnx"))
    m.graph.input.append(helper.make_tensor_value_info("segment_ids", TensorProto.INT64, ["batch", "seq"]))
    onnx.save(m, os.path.join(out_dir, "two_candidates.onnx"))


if __name__ == "__main__":
    main(sys.argv[1])
