"""Models whose initializers have an element type the compiler refuses (compiler/pipeline/
WeightDtypes.h), written from the fp32 sample samples/models/mixtral_variants/hf_casts_opset17:

- float64.onnx: the whole model in float64, as torch.onnx.export writes model.double(): every
  float initializer, Constant, ConstantOfShape value, Cast target and value type made double;
- int8.onnx / uint8.onnx: layer 0's q projection weight quantised per tensor (QDQ form:
  DequantizeLinear(W_q int8|uint8, scale, zero_point) in place of the float initializer), as
  onnxruntime's quantisation tools write static int8 / uint8 weights.

Each is checked by onnx.checker (a valid model), so the compiler's refusal, not the loader, is what
the test sees.

  /usr/bin/python3 make_refused_dtype_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = os.path.join(HERE, "..", "..", "..", "samples", "models", "mixtral_variants", "hf_casts_opset17",
                    "model.onnx")


def to_double_tensor(t):
    if t.data_type != TensorProto.FLOAT:
        return t
    out = numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name)
    return out


def float64_model():
    m = onnx.load(BASE)
    g = m.graph
    for i, t in enumerate(g.initializer):
        g.initializer[i].CopyFrom(to_double_tensor(t))
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                a.t.CopyFrom(to_double_tensor(a.t))
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.DOUBLE
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.DOUBLE
    return m


def quantised_model(dtype):
    m = onnx.load(BASE)
    g = m.graph
    # The first MatMul reading an initializer: layer 0's q projection (constant folding stores it
    # [in, out] as onnx::MatMul_<n>).
    names = {t.name for t in g.initializer}
    mm = next(n for n in g.node if n.op_type == "MatMul" and n.input[1] in names)
    w = next(t for t in g.initializer if t.name == mm.input[1])
    v = numpy_helper.to_array(w)
    if dtype == TensorProto.INT8:
        scale, zero, q = np.abs(v).max() / 127.0, 0, np.clip(np.round(v / (np.abs(v).max() / 127.0)), -127, 127).astype(np.int8)
        zp = np.array(zero, dtype=np.int8)
    else:
        lo, hi = float(v.min()), float(v.max())
        scale = (hi - lo) / 255.0
        zero = int(round(-lo / scale))
        q = np.clip(np.round(v / scale) + zero, 0, 255).astype(np.uint8)
        zp = np.array(zero, dtype=np.uint8)
    g.initializer.remove(w)
    g.initializer.extend([numpy_helper.from_array(q, w.name + "_quantized"),
                          numpy_helper.from_array(np.array(scale, dtype=np.float32), w.name + "_scale"),
                          numpy_helper.from_array(zp, w.name + "_zero_point")])
    dq = helper.make_node("DequantizeLinear", [w.name + "_quantized", w.name + "_scale", w.name + "_zero_point"],
                          [w.name], name=w.name + "_DequantizeLinear")
    g.node.insert(0, dq)
    return m


def main(out):
    os.makedirs(out, exist_ok=True)
    for name, model in [("float64", float64_model()), ("int8", quantised_model(TensorProto.INT8)),
                        ("uint8", quantised_model(TensorProto.UINT8))]:
        path = os.path.join(out, name + ".onnx")
        onnx.save(model, path)
        onnx.checker.check_model(path)


if __name__ == "__main__":
    main(sys.argv[1])
