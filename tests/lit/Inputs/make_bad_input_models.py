"""Writes variants of the Hugging Face export with attention_mask and position_ids inputs
(samples/models/mixtral_variants/hf_masking_utils_inputs_opset17) whose extra inputs the compiled
plan cannot bind (tests/lit/raise/bind-graph-inputs.test):

- long_mask.onnx: attention_mask declared [batch, 16], a mask longer than the 8 tokens compiled
  (padding to a fixed length, or a KV cache): the plan runs no padding;
- mask_4d.onnx: attention_mask declared [batch, 1, seq, seq] (a custom 4-D mask);
- token_type.onnx: a fourth input token_type_ids [batch, seq], which nothing binds;
and of the KV-cache export (hf_masking_utils_past_opset17: past_key_values.<layer>.key|value
[batch, 2, past, 8] in, present.* out), whose caches the plan binds empty:
- past_dynamic_heads.onnx: past_key_values.0.key declared [batch, heads, past, 8] (the cache's
  heads unknown: its empty value has no shape);
- past_length_3.onnx: past_key_values.0.key declared [batch, 2, 3, 8], a cache of 3 tokens that an
  empty one cannot be;
- past_int.onnx: past_key_values.0.value declared int64;
- only_present.onnx: the logits output removed, every output a cache;
- renamed_present.onnx: present.0.key renamed cache_k (not a name the compiler drops).
Run with Debian's /usr/bin/python3 (onnx).
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = os.path.join(HERE, "..", "..", "..", "samples", "models", "mixtral_variants")
SAMPLE = os.path.join(VARIANTS, "hf_masking_utils_inputs_opset17", "model.onnx")
PAST_SAMPLE = os.path.join(VARIANTS, "hf_masking_utils_past_opset17", "model.onnx")


def set_dims(value_info, dims):
    shape = value_info.type.tensor_type.shape
    del shape.dim[:]
    for d in dims:
        if isinstance(d, int):
            shape.dim.add().dim_value = d
        else:
            shape.dim.add().dim_param = d


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    m = onnx.load(SAMPLE)
    set_dims(next(i for i in m.graph.input if i.name == "attention_mask"), ["batch", 16])
    onnx.save(m, os.path.join(out_dir, "long_mask.onnx"))

    m = onnx.load(SAMPLE)
    set_dims(next(i for i in m.graph.input if i.name == "attention_mask"), ["batch", 1, "seq", "seq"])
    onnx.save(m, os.path.join(out_dir, "mask_4d.onnx"))

    m = onnx.load(SAMPLE)
    m.graph.input.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "seq"]))
    onnx.save(m, os.path.join(out_dir, "token_type.onnx"))

    def past_input(m, name):
        return next(i for i in m.graph.input if i.name == name)

    m = onnx.load(PAST_SAMPLE)
    set_dims(past_input(m, "past_key_values.0.key"), ["batch", "heads", "past_sequence_length", 8])
    onnx.save(m, os.path.join(out_dir, "past_dynamic_heads.onnx"))

    m = onnx.load(PAST_SAMPLE)
    set_dims(past_input(m, "past_key_values.0.key"), ["batch", 2, 3, 8])
    onnx.save(m, os.path.join(out_dir, "past_length_3.onnx"))

    m = onnx.load(PAST_SAMPLE)
    past_input(m, "past_key_values.0.value").type.tensor_type.elem_type = TensorProto.INT64
    onnx.save(m, os.path.join(out_dir, "past_int.onnx"))

    m = onnx.load(PAST_SAMPLE)
    m.graph.output.remove(next(o for o in m.graph.output if o.name == "logits"))
    onnx.save(m, os.path.join(out_dir, "only_present.onnx"))

    m = onnx.load(PAST_SAMPLE)
    for node in m.graph.node:
        node.output[:] = ["cache_k" if o == "present.0.key" else o for o in node.output]
        node.input[:] = ["cache_k" if i == "present.0.key" else i for i in node.input]
    next(o for o in m.graph.output if o.name == "present.0.key").name = "cache_k"
    onnx.save(m, os.path.join(out_dir, "renamed_present.onnx"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
