"""Writes variants of the committed com.microsoft.MoE samples (samples/models/ms_moe_tiny) whose
attributes contradict their weights or name a form we do not run; the raise pass must refuse each
with one line naming the node and the attribute or input at fault
(tests/lit/raise/raise-contrib-moe-bad.test). Each variant edits layer 0's MoE node only.
Run with Debian's /usr/bin/python3 (onnx, numpy).
  make_bad_contrib_moe_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.join(HERE, "..", "..", "..", "samples", "models", "ms_moe_tiny")


def load(form):
    m = onnx.load(os.path.join(SAMPLES, form, "model.onnx"))
    moe = next(n for n in m.graph.node if n.op_type == "MoE" and n.name.startswith("/layers.0/"))
    return m, moe


def set_attr(node, name, value):
    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(kept)
    if value is not None:
        node.attribute.append(helper.make_attribute(name, value))


def initializer(m, name):
    return next(i for i in m.graph.initializer if i.name == name)


def main(out):
    os.makedirs(out, exist_ok=True)
    save = lambda m, name: onnx.save(m, os.path.join(out, name + ".onnx"))

    # swiglu without swiglu_fusion: the default 0 leaves fc1 without a value half.
    m, moe = load("swiglu_interleaved")
    set_attr(moe, "swiglu_fusion", None)
    save(m, "swiglu_no_fusion")

    # Separate gate/up weights (fc1 [4, 32, 64] + fc3) declared as an interleaved fused SwiGLU.
    m, moe = load("silu_fc3")
    set_attr(moe, "activation_type", "swiglu")
    set_attr(moe, "swiglu_fusion", 1)
    del moe.input[6:]
    save(m, "fusion_contradicts_fc1")

    # A fused fc1 [4, 64, 64] declared as single-projection silu.
    m, moe = load("swiglu_interleaved")
    set_attr(moe, "activation_type", "silu")
    set_attr(moe, "swiglu_fusion", None)
    save(m, "silu_on_fused_fc1")

    # k larger than the 4 experts.
    m, moe = load("swiglu_interleaved")
    set_attr(moe, "k", 5)
    save(m, "k_too_large")

    # An activation that the op does not define.
    m, moe = load("silu_fc3")
    set_attr(moe, "activation_type", "swish")
    save(m, "unknown_activation")

    # relu gated by fc3: only silu is gated by fc3 (SwiGLU); relu(fc1) * fc3 is refused.
    m, moe = load("silu_fc3")
    set_attr(moe, "activation_type", "relu")
    save(m, "relu_with_fc3")

    # The pre-1.22 layout: fc1/fc3 [E, hidden, inter], fc2 [E, inter, hidden].
    m, moe = load("silu_fc3")
    for i in (2, 4, 6):
        t = initializer(m, moe.input[i])
        t.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(
            numpy_helper.to_array(t).transpose(0, 2, 1)), t.name))
    save(m, "legacy_layout")

    # router_probs already softmaxed: the op would apply softmax a second time.
    m, moe = load("swiglu_interleaved")
    probs = moe.input[1] + "_softmax"
    sm = helper.make_node("Softmax", [moe.input[1]], [probs], name="/layers.0/router_softmax", axis=-1)
    idx = list(m.graph.node).index(moe)
    m.graph.node.insert(idx, sm)
    moe.input[1] = probs
    save(m, "softmax_router_probs")

    # activation_beta 0.5: neither SwiGLU (beta 0) nor the clamped SwiGLU (beta 1).
    m, moe = load("swiglu_oai_bias")
    set_attr(moe, "activation_beta", 0.5)
    save(m, "beta_half")

    # A fused SwiGLU whose fc1 bias covers only the gate half ([4, 32] instead of [4, 64]).
    m, moe = load("swiglu_oai_bias")
    t = initializer(m, moe.input[3])
    t.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(numpy_helper.to_array(t)[:, :32]), t.name))
    save(m, "fc1_bias_half")

    # An fc3 beside an interleaved fused fc1 that already holds the value rows.
    m, moe = load("swiglu_interleaved")
    fc3 = numpy_helper.from_array(np.zeros((4, 32, 64), dtype=np.float32), "moe.0.fc3_extra")
    m.graph.initializer.append(fc3)
    while len(moe.input) < 6:
        moe.input.append("")
    moe.input.append(fc3.name)
    save(m, "fused_with_fc3")

    # A com.microsoft opset other than 1 (the only version of com.microsoft.MoE).
    m, moe = load("swiglu_interleaved")
    for o in m.opset_import:
        if o.domain == "com.microsoft":
            o.version = 2
    save(m, "ms_opset2")

    # onnxruntime's quantised MoE (what onnxruntime-genai writes for int4/int8 experts): refused,
    # naming the node and its weight bits.
    m, _ = load("swiglu_interleaved")
    for node in m.graph.node:
        if node.op_type == "MoE":
            node.op_type = "QMoE"
            set_attr(node, "expert_weight_bits", 4)
    save(m, "qmoe")


if __name__ == "__main__":
    main(sys.argv[1])
