"""NumPy interpreter of the ONNX ops in the family sample exports: the Mixtral sample's
(../mixtral_tiny/onnx_ref.py) plus the ones the other families add (Clip, ReduceMax, Sub, Slice
with steps, unsorted TopK, Einsum, ...). Raises on anything else."""

import os
import sys

import numpy as np
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mixtral_tiny"))
import onnx_ref as base  # noqa: E402


def _slice(x, starts, ends, axes=None, steps=None):
    axes = list(range(len(starts))) if axes is None else [int(a) % x.ndim for a in axes]
    steps = [1] * len(starts) if steps is None else [int(s) for s in steps]
    idx = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        n = x.shape[a]
        s, e = int(s), int(e)
        if st > 0:
            s = max(0, min(n, s + n if s < 0 else s))
            e = max(0, min(n, e + n if e < 0 else e))
        else:
            s = max(-1, min(n - 1, s + n if s < 0 else s))
            e = max(-1, min(n - 1, e + n if e < 0 else e))
            if e == -1:
                e = None
        idx[a] = slice(s, e, st)
    return x[tuple(idx)]


def run_node(node, ins):
    op = node.op_type
    at = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if op == "Slice":
        return [_slice(ins[0], ins[1], ins[2], *(ins[3:5]))]
    if op == "TopK":
        # Unsorted TopK may return any order; this returns descending order (ties: lower index).
        x, k, axis = ins[0], int(ins[1][0]), at.get("axis", -1)
        if not at.get("largest", 1):
            raise NotImplementedError("TopK smallest")
        order = np.argsort(-x, axis=axis, kind="stable")
        ids = np.take(order, np.arange(k), axis=axis)
        return [np.take_along_axis(x, ids, axis=axis), ids.astype(np.int64)]
    if op == "Gemm":
        a = ins[0].T if at.get("transA", 0) else ins[0]
        b = ins[1].T if at.get("transB", 0) else ins[1]
        y = at.get("alpha", 1.0) * (a @ b)
        if len(ins) > 2 and ins[2] is not None:
            y = y + at.get("beta", 1.0) * ins[2]
        return [y.astype(ins[0].dtype)]
    if op == "Clip":
        x = ins[0]
        lo = ins[1] if len(ins) > 1 and ins[1] is not None else None
        hi = ins[2] if len(ins) > 2 and ins[2] is not None else None
        if lo is not None:
            x = np.maximum(x, lo)
        if hi is not None:
            x = np.minimum(x, hi)
        return [x.astype(ins[0].dtype)]
    if op == "ReduceMax":
        return [np.max(ins[0], axis=tuple(at["axes"]), keepdims=bool(at.get("keepdims", 1)))]
    if op == "Sub":
        return [ins[0] - ins[1]]
    if op == "Tile":
        return [np.tile(ins[0], tuple(int(r) for r in ins[1]))]
    if op == "Less":
        return [np.less(ins[0], ins[1])]
    if op == "Greater":
        return [np.greater(ins[0], ins[1])]
    if op == "LessOrEqual":  # masking_utils' kv_idx <= q_idx
        return [np.less_equal(ins[0], ins[1])]
    if op == "And":
        return [np.logical_and(ins[0], ins[1])]
    if op == "GatherElements":  # DeepSeek-V3's scores.gather(1, topk_indices)
        axis = at.get("axis", 0)
        idx = np.where(ins[1] < 0, ins[1] + ins[0].shape[axis], ins[1])
        return [np.take_along_axis(ins[0], idx, axis=axis)]
    if op == "Not":  # DeepSeek-V3's masked_fill(~score_mask.bool(), 0)
        return [np.logical_not(ins[0])]
    if op == "Min":
        return [np.minimum(*ins)]
    if op == "Max":
        return [np.maximum(*ins)]
    if op == "Einsum":
        return [np.einsum(at["equation"].decode() if isinstance(at["equation"], bytes) else at["equation"], *ins)]
    if op == "ScatterElements" and at.get("reduction", b"none") in (b"add", "add"):
        out = ins[0].copy()
        axis = at.get("axis", 0)
        idx = np.where(ins[1] < 0, ins[1] + ins[0].shape[axis], ins[1])
        it = np.nditer(idx, flags=["multi_index"])
        for v in it:
            pos = list(it.multi_index)
            pos[axis] = int(v)
            out[tuple(pos)] += ins[2][it.multi_index]
        return [out]
    return base.run_node(node, ins)


def run_model(model, feeds):
    env = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    env.update(feeds)
    env[""] = None
    for node in model.graph.node:
        outs = run_node(node, [env[n] for n in node.input])
        for name, val in zip(node.output, outs):
            env[name] = val
    return {o.name: env[o.name] for o in model.graph.output}
