"""Writes copies of committed exports with one stray node inserted after a named node (its output
rerouted through the stray node), which the raise pass must refuse naming the stray node and its
op type (tests/lit/raise/refuse-stray-nodes.test); and one unmodified copy (control.onnx) written
by the same code path, which must still compile.

  mixtral_pv_mul.onnx       mixtral_tiny: softmax(QK^T)V of layer 1 scaled by 2 before o_proj
  mixtral_probs_mul.onnx    mixtral_tiny: layer 1's attention probabilities scaled by 2
  mixtral_pv_sigmoid.onnx   mixtral_tiny: a Sigmoid on layer 1's softmax(QK^T)V
  mixtral_expert_mul.onnx   mixtral_tiny: expert 3 of layer 1's output scaled by 2 before the combine
  mixtral_router_mul.onnx   mixtral_tiny: layer 2's router probabilities scaled by 2 before TopK
  mixtral_gate_mul.onnx     mixtral_tiny: layer 1's flattened gates [tokens * k, 1] scaled by 2 before
                            the experts gather them (not the router's own gates, where a constant
                            is a routed_scaling_factor)
  mixtral_expert_relu.onnx  mixtral_tiny: a Relu on expert 3 of layer 1's gated activation
  deepseek_shared_mul.onnx  deepseek_moe_tiny: layer 1's shared-expert output scaled by 2
  gpt_oss_einsum_mul.onnx   gpt_oss_tiny/einsum: layer 1's gathered-experts output scaled by 2
Run with Debian's /usr/bin/python3 (onnx).
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.join(HERE, "..", "..", "..", "samples", "models")

VARIANTS = [
    ("mixtral_pv_mul", "mixtral_tiny", "/layers.1/self_attn/MatMul_1", "Mul"),
    ("mixtral_probs_mul", "mixtral_tiny", "/layers.1/self_attn/Softmax", "Mul"),
    ("mixtral_pv_sigmoid", "mixtral_tiny", "/layers.1/self_attn/MatMul_1", "Sigmoid"),
    ("mixtral_expert_mul", "mixtral_tiny", "/layers.1/block_sparse_moe/experts.3/w2/MatMul", "Mul"),
    ("mixtral_router_mul", "mixtral_tiny", "/layers.2/block_sparse_moe/Softmax", "Mul"),
    ("mixtral_gate_mul", "mixtral_tiny", "/layers.1/block_sparse_moe/Flatten_3", "Mul"),
    ("mixtral_expert_relu", "mixtral_tiny", "/layers.1/block_sparse_moe/experts.3/Mul_1", "Relu"),
    ("deepseek_shared_mul", "deepseek_moe_tiny", "/layers.1/mlp/shared_experts/down_proj/MatMul", "Mul"),
    ("gpt_oss_einsum_mul", "gpt_oss_tiny/einsum", "/layers.1/mlp/Einsum_2", "Mul"),
]


def insert_after(m, where, op):
    """Reroutes `where`'s first output through a new node `<where>_stray` of type `op` (Mul, Add:
    with the constant 2), keeping topological order."""
    g = m.graph
    idx = next(i for i, n in enumerate(g.node) if n.name == where)
    out = g.node[idx].output[0]
    g.node[idx].output[0] = out + "_pre_stray"
    new = []
    if op in ("Mul", "Add"):
        new.append(helper.make_node("Constant", [], [out + "_two"], name=where + "_stray_two",
                                    value=helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])))
        new.append(helper.make_node(op, [out + "_pre_stray", out + "_two"], [out], name=where + "_stray"))
    else:
        new.append(helper.make_node(op, [out + "_pre_stray"], [out], name=where + "_stray"))
    for k, n in enumerate(new):
        g.node.insert(idx + 1 + k, n)


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    onnx.save(onnx.load(os.path.join(SAMPLES, "mixtral_tiny", "model.onnx")),
              os.path.join(out_dir, "control.onnx"))
    for name, sample, where, op in VARIANTS:
        m = onnx.load(os.path.join(SAMPLES, sample, "model.onnx"))
        insert_after(m, where, op)
        onnx.checker.check_model(m)
        onnx.save(m, os.path.join(out_dir, name + ".onnx"))


if __name__ == "__main__":
    main(sys.argv[1])
