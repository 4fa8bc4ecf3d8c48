#!/usr/bin/env python3
"""Writes the small ONNX models that OnnxLoaderTest.cpp loads.

Usage: /usr/bin/python3 make_bad_models.py OUT_DIR [SAMPLE_MODEL]

With SAMPLE_MODEL (samples/models/mixtral_tiny/model.onnx), also writes
OUT_DIR/mixtral_tiny.expect with its opset, initializer and node counts as
onnx.load sees them, for the test that loads the sample.

Needs the `onnx` and `numpy` Python packages (Debian: python3-onnx, python3-numpy,
importable by /usr/bin/python3). Every model is tiny (< 16 KB) and the output is
deterministic. Values of the good model's weights follow closed formulas that the
C++ test recomputes:
    emb[i]  = 0.001 * i        (float32, [300, 8], raw_data, > 4096 bytes)
    W[i]    = 0.25 * i - 1.0   (float32, [8, 4], raw_data)
    bias[i] = i + 1            (float32, [4], packed float_data)
    shape   = [0, -1, 4]       (int64, [3], int64_data varints: no file range)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def emb_values():
    return (np.arange(300 * 8, dtype=np.float32) * np.float32(0.001)).reshape(300, 8)


def w_values():
    return (np.arange(8 * 4, dtype=np.float32) * np.float32(0.25) - np.float32(1.0)).reshape(8, 4)


def raw_tensor(name, dtype, dims, raw):
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    t.raw_data = raw
    return t


def ids_input(name="input_ids", elem=TensorProto.INT64):
    return helper.make_tensor_value_info(name, elem, ["batch", "seq"])


def model(nodes, inputs, outputs, inits, opset=OPSET, name="g", value_info=None):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=inits, value_info=value_info or [])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="make_bad_models")
    m.ir_version = 8
    return m


def good_nodes():
    shape_const = helper.make_tensor("shape_c", TensorProto.INT64, [3], [0, -1, 4])
    return [
        helper.make_node("Gather", ["emb", "input_ids"], ["h"], name="embed"),
        helper.make_node("MatMul", ["h", "W"], ["y"], name="proj"),
        helper.make_node("Add", ["y", "bias"], ["z"], name="add_bias"),
        helper.make_node("Constant", [], ["shp"], name="shape_const", value=shape_const),
        helper.make_node("Reshape", ["z", "shp"], ["r"], name="reshape1"),
        helper.make_node("Reshape", ["r", "shape"], ["logits"], name="reshape2"),
    ]


def good_inits():
    return [
        numpy_helper.from_array(emb_values(), "emb"),                       # raw_data
        numpy_helper.from_array(w_values(), "W"),                           # raw_data
        helper.make_tensor("bias", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0]),  # packed float_data
        helper.make_tensor("shape", TensorProto.INT64, [3], [0, -1, 4]),    # int64_data (varints)
    ]


def good_model(nodes=None):
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", 4])
    return model(nodes or good_nodes(), [ids_input()], [out], good_inits())


def save(m, path):
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def tiny(nodes, inits, inputs=None, outputs=None, opset=OPSET):
    """A model whose inputs/outputs default to input_ids -> out (float)."""
    inputs = inputs if inputs is not None else [ids_input()]
    outputs = outputs if outputs is not None else [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)]
    return model(nodes, inputs, outputs, inits, opset=opset)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    P = lambda n: os.path.join(out, n)

    # --- good models -------------------------------------------------------
    good = good_model()
    onnx.checker.check_model(good)
    save(good, P("good.onnx"))
    nodes = good_nodes()
    save(good_model(list(reversed(nodes))), P("unsorted.onnx"))

    # --- not ONNX / truncated / empty --------------------------------------
    with open(P("not_onnx.txt"), "w") as f:
        f.write("This is a plain text file, not an ONNX model.\nSecond line.\n")
    data = good.SerializeToString()
    # A top-level field that IR 8 does not have (field 30, varint 5), as a newer
    # exporter might write: skipped by protobuf and by the offset walk.
    with open(P("unknown_field.onnx"), "wb") as f:
        f.write(data + bytes([0xF0, 0x01, 0x05]))
    with open(P("truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    open(P("empty.onnx"), "wb").close()

    gather = helper.make_node("Gather", ["emb", "input_ids"], ["out"], name="embed")
    emb = numpy_helper.from_array(np.ones((4, 2), np.float32), "emb")

    # --- bad tensors -------------------------------------------------------
    save(tiny([gather], [raw_tensor("emb", TensorProto.FLOAT, [-2, 4], b"\0" * 32)]), P("negative_dim.onnx"))
    save(tiny([gather], [raw_tensor("emb", TensorProto.FLOAT, [1 << 32, 1 << 32, 4], b"\0" * 16)]),
         P("overflow_dims.onnx"))
    save(tiny([gather], [raw_tensor("emb", TensorProto.FLOAT, [4, 2], b"\0" * 20)]), P("short_raw.onnx"))
    save(tiny([gather], [raw_tensor("emb", TensorProto.FLOAT, [4, 2], b"\0" * 40)]), P("long_raw.onnx"))

    # --- bad structure -----------------------------------------------------
    # cycle: a = Add(h, b); b = Relu(a); out = Identity(b)
    cyc = [
        helper.make_node("Gather", ["emb", "input_ids"], ["h"], name="embed"),
        helper.make_node("Add", ["h", "b"], ["a"], name="add_a"),
        helper.make_node("Relu", ["a"], ["b"], name="relu_b"),
        helper.make_node("Identity", ["b"], ["out"], name="ident"),
    ]
    save(tiny(cyc, [emb]), P("cycle.onnx"))
    undef = [
        helper.make_node("Gather", ["emb", "input_ids"], ["h"], name="embed"),
        helper.make_node("Add", ["h", "ghost"], ["out"], name="add_ghost"),
    ]
    save(tiny(undef, [emb]), P("undefined_input.onnx"))
    for n in undef:
        n.name = ""
    save(tiny(undef, [emb]), P("undefined_input_unnamed.onnx"))
    dup = [
        helper.make_node("Gather", ["emb", "input_ids"], ["h"], name="embed"),
        helper.make_node("Relu", ["h"], ["out"], name="relu1"),
        helper.make_node("Sigmoid", ["h"], ["out"], name="sigmoid2"),
    ]
    save(tiny(dup, [emb]), P("duplicate_producer.onnx"))
    save(tiny([gather], [emb], opset=11), P("opset11.onnx"))
    save(tiny([gather], [emb], opset=24), P("opset24.onnx"))

    # --- opsets 18..23 (NewerOpsets.h): written by hand, libonnx 1.12 has no schemas for them ---
    emb8 = numpy_helper.from_array(emb_values(), "emb")
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [-1])
    reduce18 = [
        helper.make_node("Gather", ["emb", "input_ids"], ["h"], name="embed"),
        helper.make_node("ReduceMean", ["h", "axes"], ["m"], name="mean18", keepdims=1),
        helper.make_node("Split", ["h"], ["s0", "s1", "s2"], name="split18", axis=2, num_outputs=3),
        helper.make_node("Add", ["s0", "m"], ["out"], name="add"),
    ]
    m18 = tiny(reduce18, [emb8, axes], opset=18)
    save(m18, P("opset18_forms.onnx"))
    m23 = tiny(reduce18[:1] + [
        helper.make_node("RMSNormalization", ["h", "scale"], ["out"], name="rms23", axis=-1,
                         epsilon=1e-6, stash_type=1)],
        [emb8, numpy_helper.from_array(np.ones(8, np.float32), "scale")], opset=23)
    m23.ir_version = 11
    save(m23, P("opset23_rmsnorm.onnx"))
    # The opset-13 spelling in an opset-18 file, a signature from later opsets, and two operators
    # the frontend does not import: all refused in one line.
    bad18 = [
        helper.make_node("Gather", ["emb", "input_ids"], ["h"], name="embed"),
        helper.make_node("ReduceMean", ["h"], ["m"], name="mean_axes_attr", axes=[-1]),
        helper.make_node("Pad", ["h", "pads", "", "pad_axes"], ["p"], name="pad_axes"),
        helper.make_node("Gelu", ["h"], ["g"], name="gelu20"),
        helper.make_node("Attention", ["h", "h", "h"], ["out"], name="attention23", q_num_heads=2,
                         kv_num_heads=2),
    ]
    pads = helper.make_tensor("pads", TensorProto.INT64, [2], [0, 0])
    pad_axes = helper.make_tensor("pad_axes", TensorProto.INT64, [1], [2])
    save(tiny(bad18, [emb8, pads, pad_axes], opset=23), P("opset23_not_imported.onnx"))
    # RMSNormalization exists from opset 23 only.
    save(tiny(m23.graph.node[:], [emb8, numpy_helper.from_array(np.ones(8, np.float32), "scale")],
              opset=18), P("opset18_rmsnorm.onnx"))
    # A model-local function (torch's dynamo exporter keeps onnxscript functions): inlined.
    fn = helper.make_function(
        "pkg.test", "Scaled", ["x"], ["y"],
        [helper.make_node("Constant", [], ["c"], name="c", value_float=2.0),
         helper.make_node("Mul", ["x", "c"], ["t"], name="mul"),
         helper.make_node("Relu", ["t"], ["y"], name="relu")],
        [helper.make_opsetid("", 18)])
    call = [helper.make_node("Gather", ["emb", "input_ids"], ["h"], name="embed"),
            helper.make_node("Scaled", ["h"], ["out"], name="scaled", domain="pkg.test")]
    mf = tiny(call, [emb8], opset=18)
    mf.opset_import.append(helper.make_opsetid("pkg.test", 1))
    mf.functions.append(fn)
    save(mf, P("local_function.onnx"))
    fn_bad = helper.make_function("pkg.test", "Scaled", ["x"], ["y"],
                                  [helper.make_node("Relu", ["x"], ["y"], name="relu")],
                                  [helper.make_opsetid("", 17)])
    mf.ClearField("functions")
    mf.functions.append(fn_bad)
    save(mf, P("local_function_other_opset.onnx"))
    fids = helper.make_node("MatMul", ["input_ids", "emb2"], ["out"], name="mm")
    save(tiny([fids], [numpy_helper.from_array(np.ones((2, 2), np.float32), "emb2")],
              inputs=[helper.make_tensor_value_info("input_ids", TensorProto.FLOAT, ["batch", 2])]),
         P("float_ids.onnx"))
    save(tiny([], [emb]), P("no_nodes.onnx"))
    # optional (empty-string) inputs are fine: Clip(h, "", max)
    opt = [
        helper.make_node("Gather", ["emb", "input_ids"], ["h"], name="embed"),
        helper.make_node("Clip", ["h", "", "mx"], ["out"], name="clip"),
    ]
    save(tiny(opt, [emb, numpy_helper.from_array(np.array(0.5, np.float32), "mx")]), P("optional_input.onnx"))

    # --- external data -----------------------------------------------------
    # weights.bin: 64 bytes of 0xAB padding, then emb (4x2 float), then W (8x4 float).
    e = np.arange(8, dtype=np.float32).reshape(4, 2) * np.float32(0.5)
    w = w_values()
    with open(P("weights.bin"), "wb") as f:
        f.write(b"\xab" * 64)
        f.write(e.tobytes())
        f.write(w.tobytes())

    def ext_tensor(name, dims, location, offset=None, length=None):
        t = TensorProto()
        t.name = name
        t.data_type = TensorProto.FLOAT
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", offset), ("length", length)):
            if v is not None:
                entry = t.external_data.add()
                entry.key = k
                entry.value = str(v)
        return t

    w_pad = np.zeros((2, 8), np.float32)  # h is [b, s, 2] and W is [8, 4]: widen h with P first
    ext_nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["h"], name="embed"),
        helper.make_node("MatMul", ["h", "P"], ["h8"], name="pad"),
        helper.make_node("MatMul", ["h8", "W"], ["out"], name="proj"),
    ]
    pinit = numpy_helper.from_array(w_pad, "P")
    save(tiny(ext_nodes, [ext_tensor("emb", [4, 2], "weights.bin", 64, 32), pinit,
                          ext_tensor("W", [8, 4], "weights.bin", 96)]), P("external.onnx"))
    save(tiny(ext_nodes, [ext_tensor("emb", [4, 2], "missing.bin", 0, 32), pinit,
                          ext_tensor("W", [8, 4], "sub/missing2.bin")]), P("external_missing.onnx"))
    save(tiny(ext_nodes, [ext_tensor("emb", [4, 2], "weights.bin", 64, 20), pinit,
                          ext_tensor("W", [8, 4], "weights.bin", 96)]), P("external_bad_length.onnx"))
    save(tiny(ext_nodes, [ext_tensor("emb", [4, 2], "../weights.bin", 64, 32), pinit,
                          ext_tensor("W", [8, 4], "weights.bin", 96)]), P("external_escape.onnx"))

    # --- a shape computation, as exporters write it ---------------------------
    # h = emb[ids] : [batch, seq, 8]; r = Reshape(h, Concat(Unsqueeze(Gather(Shape(h), 0)),
    # Unsqueeze(Gather(Shape(h), 1)), [2], [4])) : [batch, seq, 2, 4]; out = Softmax(r) * mask,
    # mask = Cast(Equal(Shape(r), 4)) of shape [4] (a boolean shape value).
    sc = lambda name, v: helper.make_node("Constant", [], [name], name=name + "_c",
                                          value=numpy_helper.from_array(np.array(v, np.int64), name))
    chain = [
        helper.make_node("Gather", ["emb", "input_ids"], ["h"], name="embed"),
        helper.make_node("Shape", ["h"], ["h_shape"], name="shape"),
        sc("zero", 0), sc("one", 1), sc("axes0", [0]), sc("heads", [2]), sc("hd", [4]), sc("four", 4),
        helper.make_node("Gather", ["h_shape", "zero"], ["b"], name="gather_b", axis=0),
        helper.make_node("Gather", ["h_shape", "one"], ["s"], name="gather_s", axis=0),
        helper.make_node("Unsqueeze", ["b", "axes0"], ["b1"], name="unsq_b"),
        helper.make_node("Unsqueeze", ["s", "axes0"], ["s1"], name="unsq_s"),
        helper.make_node("Concat", ["b1", "s1", "heads", "hd"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["h", "target"], ["r"], name="split_heads"),
        helper.make_node("Softmax", ["r"], ["p"], name="softmax", axis=-1),
        helper.make_node("Shape", ["r"], ["r_shape"], name="shape_r"),
        helper.make_node("Equal", ["r_shape", "four"], ["is4"], name="equal4"),
        helper.make_node("Cast", ["is4"], ["mask"], name="cast_mask", to=TensorProto.FLOAT),
        helper.make_node("Mul", ["p", "mask"], ["out"], name="mul_mask"),
    ]
    chain_emb = numpy_helper.from_array(np.ones((16, 8), np.float32), "emb")
    shape_chain = tiny(chain, [chain_emb], outputs=[
        helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", "seq", 2, 4])])
    onnx.checker.check_model(shape_chain)
    save(shape_chain, P("shape_chain.onnx"))

    if len(sys.argv) > 2 and os.path.exists(sys.argv[2]):
        sample = onnx.load(sys.argv[2], load_external_data=False)
        opset = [o.version for o in sample.opset_import if o.domain in ("", "ai.onnx")]
        with open(P("mixtral_tiny.expect"), "w") as f:
            f.write(f"opset {opset[0] if opset else 0}\n")
            f.write(f"initializers {len(sample.graph.initializer)}\n")
            f.write(f"nodes {len(sample.graph.node)}\n")
    elif os.path.exists(P("mixtral_tiny.expect")):
        os.remove(P("mixtral_tiny.expect"))

    with open(P("stamp"), "w") as f:
        f.write("ok\n")


if __name__ == "__main__":
    main()
