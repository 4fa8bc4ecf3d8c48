"""A minimal NumPy interpreter for the ONNX ops that model.onnx uses.

onnxruntime is not packaged for Debian and onnx 1.12 has no reference
evaluator, so export.py runs the exported graph with this to check it against
the eager PyTorch goldens at every golden shape (which also checks that the
dynamic batch and sequence axes are really dynamic).  It covers exactly the op
types and attributes that a PyTorch 1.13 opset-17 export of this model
contains, and raises on anything else.
"""

import numpy as np
from onnx import helper, numpy_helper

_INT64_MAX = np.iinfo(np.int64).max

_ONNX_TO_NP = {1: np.float32, 6: np.int32, 7: np.int64, 9: np.bool_, 11: np.float64}


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _slice(x, starts, ends, axes=None, steps=None):
    axes = list(range(len(starts))) if axes is None else [int(a) % x.ndim for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    idx = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        if st != 1:
            raise NotImplementedError("Slice with step != 1")
        n = x.shape[a]
        s, e = int(s), int(e)
        s = max(0, min(n, s + n if s < 0 else s))
        e = max(0, min(n, e + n if e < 0 else e))
        idx[a] = slice(s, e)
    return x[tuple(idx)]


def _reshape(x, shape, allowzero=0):
    shape = [int(d) for d in shape]
    if not allowzero:
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(shape)


def _topk(x, k, axis, largest, sorted_):
    if not largest or not sorted_:
        raise NotImplementedError("TopK other than largest, sorted")
    # Stable sort of -x: ties go to the lower index, as the ONNX spec says.
    order = np.argsort(-x, axis=axis, kind="stable")
    ids = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, ids, axis=axis), ids.astype(np.int64)


def _div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        return (np.trunc(a / b)).astype(a.dtype)
    return (a / b).astype(np.result_type(a, b))


def run_node(node, ins):
    op = node.op_type
    at = _attrs(node)
    if op == "Constant":
        return [numpy_helper.to_array(at["value"])]
    if op == "Shape":
        return [np.array(ins[0].shape, dtype=np.int64)]
    if op == "Gather":
        return [np.take(ins[0], ins[1].astype(np.int64), axis=at.get("axis", 0))]
    if op == "Unsqueeze":
        x = ins[0]
        axes = sorted(int(a) % (x.ndim + len(ins[1])) for a in ins[1])
        for a in axes:
            x = np.expand_dims(x, a)
        return [x]
    if op == "Squeeze":
        axes = tuple(int(a) % ins[0].ndim for a in ins[1])
        return [np.squeeze(ins[0], axis=axes)]
    if op == "Concat":
        return [np.concatenate(ins, axis=at["axis"])]
    if op == "Reshape":
        return [_reshape(ins[0], ins[1], at.get("allowzero", 0))]
    if op == "Flatten":
        a = at.get("axis", 1)
        return [ins[0].reshape(int(np.prod(ins[0].shape[:a])), -1)]
    if op == "Transpose":
        return [np.transpose(ins[0], at.get("perm"))]
    if op == "Expand":
        shape = np.broadcast_shapes(ins[0].shape, tuple(int(d) for d in ins[1]))
        return [np.broadcast_to(ins[0], shape).copy()]
    if op == "Slice":
        return [_slice(ins[0], ins[1], ins[2], *(ins[3:5]))]
    if op == "Split":
        axis = at.get("axis", 0)
        pts = np.cumsum(ins[1])[:-1]
        return list(np.split(ins[0], pts, axis=axis))
    if op == "ConstantOfShape":
        v = numpy_helper.to_array(at["value"]) if "value" in at else np.zeros(1, np.float32)
        return [np.full(tuple(int(d) for d in ins[0]), v[0], dtype=v.dtype)]
    if op == "Cast":
        return [ins[0].astype(_ONNX_TO_NP[at["to"]])]
    if op == "Range":
        return [np.arange(ins[0], ins[1], ins[2]).astype(ins[0].dtype)]
    if op == "MatMul":
        return [np.matmul(ins[0], ins[1])]
    if op == "Add":
        return [ins[0] + ins[1]]
    if op == "Mul":
        return [ins[0] * ins[1]]
    if op == "Div":
        return [_div(ins[0], ins[1])]
    if op == "Pow":
        return [np.power(ins[0], ins[1]).astype(ins[0].dtype)]
    if op == "Neg":
        return [-ins[0]]
    if op == "Sqrt":
        return [np.sqrt(ins[0])]
    if op == "Sigmoid":
        return [(1.0 / (1.0 + np.exp(-ins[0]))).astype(ins[0].dtype)]
    if op == "Cos":
        return [np.cos(ins[0])]
    if op == "Sin":
        return [np.sin(ins[0])]
    if op == "Equal":
        return [np.equal(ins[0], ins[1])]
    if op == "Where":
        return [np.where(ins[0], ins[1], ins[2])]
    if op == "ReduceMean":
        return [np.mean(ins[0], axis=tuple(at["axes"]), keepdims=bool(at.get("keepdims", 1)))]
    if op == "ReduceSum":
        return [np.sum(ins[0], axis=tuple(int(a) for a in ins[1]), keepdims=bool(at.get("keepdims", 1)))]
    if op == "Softmax":
        x = ins[0]
        ax = at.get("axis", -1)
        m = np.max(x, axis=ax, keepdims=True)
        e = np.exp(x - m)
        return [(e / np.sum(e, axis=ax, keepdims=True)).astype(x.dtype)]
    if op == "TopK":
        return list(_topk(ins[0], int(ins[1][0]), at.get("axis", -1), at.get("largest", 1), at.get("sorted", 1)))
    if op == "OneHot":
        idx, depth, vals = ins
        depth = int(np.asarray(depth).reshape(-1)[0])
        if at.get("axis", -1) != -1:
            raise NotImplementedError("OneHot axis != -1")
        idx = np.where(idx < 0, idx + depth, idx)
        hot = idx[..., None] == np.arange(depth)
        return [np.where(hot, vals[1], vals[0]).astype(vals.dtype)]
    if op == "NonZero":
        return [np.array(np.nonzero(ins[0]), dtype=np.int64).reshape(ins[0].ndim, -1)]
    if op == "ScatterElements":
        if at.get("reduction", b"none") not in (b"none", "none"):
            raise NotImplementedError("ScatterElements with reduction")
        out = ins[0].copy()
        idx = np.where(ins[1] < 0, ins[1] + ins[0].shape[at.get("axis", 0)], ins[1])
        np.put_along_axis(out, idx, ins[2], axis=at.get("axis", 0))
        return [out]
    if op == "Trilu":
        k = int(ins[1]) if len(ins) > 1 and ins[1] is not None else 0
        x = ins[0]
        return [np.triu(x, k) if at.get("upper", 1) else np.tril(x, k)]
    raise NotImplementedError(f"op {op}")


def run_model(model, feeds):
    """Run model (an onnx.ModelProto) on feeds {name: array}; returns {output name: array}."""
    env = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    env.update(feeds)
    env[""] = None
    for node in model.graph.node:
        ins = [env[n] for n in node.input]
        outs = run_node(node, ins)
        for name, val in zip(node.output, outs):
            env[name] = val
    return {o.name: env[o.name] for o in model.graph.output}
