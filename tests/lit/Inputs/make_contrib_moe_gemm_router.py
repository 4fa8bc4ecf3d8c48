"""Writes variants of the committed com.microsoft.MoE samples (samples/models/ms_moe_tiny) whose
router_probs come from an ONNX Gemm instead of MatMul (+ Add); the logits are the same numbers, so
the sample's PyTorch golden stays the oracle (tests/lit/raise/raise-contrib-moe-gemm.test). Each
variant edits every layer's router.
Run with Debian's /usr/bin/python3 (onnx, numpy).
  make_contrib_moe_gemm_router.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.join(HERE, "..", "..", "..", "samples", "models", "ms_moe_tiny")


def to_gemm(form, trans_b, attrs):
    """Each MoE's router_probs = MatMul(x, Wg) [+ Add(b)] rewritten as Gemm(x, Wg or Wg^T, b)."""
    m = onnx.load(os.path.join(SAMPLES, form, "model.onnx"))
    g = m.graph
    producers = {o: n for n in g.node for o in n.output}
    inits = {i.name: i for i in g.initializer}
    drop, replace = set(), {}
    for moe in [n for n in g.node if n.op_type == "MoE"]:
        top = producers[moe.input[1]]
        bias = None
        if top.op_type == "Add":
            mm = next(producers[i] for i in top.input if i in producers and producers[i].op_type == "MatMul")
            bias = next(i for i in top.input if i in inits)
            drop.add(id(mm))
        else:
            mm = top
        x, w = mm.input
        b = w
        if trans_b:
            b = w + "_T"
            g.initializer.append(numpy_helper.from_array(
                np.ascontiguousarray(numpy_helper.to_array(inits[w]).T), b))
        gemm = helper.make_node("Gemm", [x, b] + ([bias] if bias else []), [moe.input[1]],
                                name=top.name + "_gemm", transB=1 if trans_b else 0, **attrs)
        replace[id(top)] = gemm
    nodes = [replace.get(id(n), n) for n in g.node if id(n) not in drop]
    del g.node[:]
    g.node.extend(nodes)
    used = {i for n in g.node for i in n.input}
    keep = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    onnx.checker.check_model(m)
    return m


def main(out):
    os.makedirs(out, exist_ok=True)
    save = lambda m, name: onnx.save(m, os.path.join(out, name + ".onnx"))
    # Router bias (swiglu_oai_bias): Gemm(x, Wg^T [E, H], b, transB = 1), alpha/beta written as 1.
    save(to_gemm("swiglu_oai_bias", True, dict(alpha=1.0, beta=1.0)), "gemm_transb_bias")
    # No bias (relu_default): Gemm(x, Wg [H, E]) with attributes left to their defaults; beta is
    # irrelevant without C.
    save(to_gemm("relu_default", False, dict(beta=0.5)), "gemm_plain")
    # Refused: a scaled logit, and a scaled bias.
    save(to_gemm("swiglu_oai_bias", True, dict(alpha=2.0)), "gemm_alpha")
    save(to_gemm("swiglu_oai_bias", True, dict(beta=0.5)), "gemm_beta")


if __name__ == "__main__":
    main(sys.argv[1])
