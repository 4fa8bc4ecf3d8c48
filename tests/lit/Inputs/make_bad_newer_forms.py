"""Edits of samples/models/newer_opsets forms that the compiler must refuse, each in one line naming
the node and what it uses that moe.attention or the training plan does not represent.

  make_bad_newer_forms.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
FORMS = os.path.join(HERE, "..", "..", "..", "samples", "models", "newer_opsets")


def load(form):
    return onnx.load(os.path.join(FORMS, form, "model.onnx"))


def set_attr(node, name, value):
    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(kept)
    node.attribute.append(helper.make_attribute(name, value))


def main(out):
    os.makedirs(out, exist_ok=True)
    save = lambda m, name: onnx.save(m, os.path.join(out, name + ".onnx"))  # noqa: E731

    # cos scaled by 1.1, sin by 1.2: not one attention factor (YaRN scales both alike).
    m = load("mixtral_ort_rotary")
    for t in m.graph.initializer:
        if t.name in ("rotary.cos_cache", "rotary.sin_cache"):
            scale = np.float32(1.1 if t.name == "rotary.cos_cache" else 1.2)
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) * scale, t.name))
    save(m, "rotary_mscale")

    # Interleaved pairs (GPT-J style) on the first RotaryEmbedding only (layer 0's q): q and k
    # rotate different dims.
    m = load("mixtral_ort_rotary")
    rope = next(n for n in m.graph.node if n.op_type == "RotaryEmbedding")
    set_attr(rope, "interleaved", 1)
    save(m, "rotary_interleaved")

    # interleaved = 2: neither layout.
    m = load("mixtral_ort_rotary")
    rope = next(n for n in m.graph.node if n.op_type == "RotaryEmbedding")
    set_attr(rope, "interleaved", 2)
    save(m, "rotary_interleaved2")

    # Attention-23 reading a KV cache (past_key, past_value as graph inputs).
    m = load("mixtral_opset23_attention")
    att = next(n for n in m.graph.node if n.op_type == "Attention")
    m.graph.input.extend([helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [1, 4, 0, 8])
                          for n in ("past_key", "past_value")])
    att.input.extend(["", "past_key", "past_value"])
    save(m, "attention_past_kv")

    # GroupQueryAttention on packed QKV whose projection adds a LoRA adapter (x A B, rank 4) to the
    # fused qkv_proj: the Add's other operand is no constant bias, so the query is not split.
    m = load("mixtral_ort_gqa_packed")
    mm = next(n for n in m.graph.node if n.name == "/layers.0/self_attn/qkv_proj/MatMul")
    gqa = next(n for n in m.graph.node if n.op_type == "GroupQueryAttention")
    rng = np.random.default_rng(0)
    m.graph.initializer.extend([
        numpy_helper.from_array(rng.standard_normal((64, 4)).astype(np.float32), "lora.A"),
        numpy_helper.from_array(rng.standard_normal((4, 128)).astype(np.float32), "lora.B")])
    at = list(m.graph.node).index(gqa)
    for i, n in enumerate([
            helper.make_node("MatMul", [mm.input[0], "lora.A"], ["lora/xa"], name="/layers.0/lora/MatMul_A"),
            helper.make_node("MatMul", ["lora/xa", "lora.B"], ["lora/xab"], name="/layers.0/lora/MatMul_B"),
            helper.make_node("Add", [mm.output[0], "lora/xab"], ["lora/qkv"], name="/layers.0/lora/Add")]):
        m.graph.node.insert(at + i, n)
    gqa.input[0] = "lora/qkv"
    save(m, "gqa_packed")

    # GroupQueryAttention with a softcap (Gemma-2 style logit capping; a local window is imported).
    m = load("mixtral_ort_gqa")
    gqa = next(n for n in m.graph.node if n.op_type == "GroupQueryAttention")
    set_attr(gqa, "softcap", 50.0)
    save(m, "gqa_softcap")

    # Attention-23 with a softcap (Gemma-2 style logit capping).
    m = load("mixtral_opset23_attention")
    att = next(n for n in m.graph.node if n.op_type == "Attention")
    set_attr(att, "softcap", 30.0)
    save(m, "attention_softcap")


if __name__ == "__main__":
    main(sys.argv[1])
