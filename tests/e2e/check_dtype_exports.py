"""The float16 and bfloat16 forms of Hugging Face's Mixtral (samples/models/mixtral_dtypes, written
by samples/models/mixtral_variants/export_variants.py) against independent oracles:
  - weights: every initializer is of the form's dtype and is, bit for bit, an initializer of the
    fp32 export of the same module code and seed (mixtral_variants/<dtype_base>) rounded to that
    dtype (round to nearest even; matched by value, one to one: the exports name folded weights
    differently);
  - logits in the dtype against fp32 on the rounded weights (golden/logits_*, PyTorch fp32), within
    the reduced-precision bound derived in tests/numerics/error_model.py (dtype_logits_bound, unit
    roundoff 2^-11 / 2^-8): for bfloat16, PyTorch eager in bf16 (golden/logits_bfloat16_*; the
    file itself is refused by onnxruntime's CPU provider, which has no bf16 Expand/MatMul: asserted,
    so that a newer onnxruntime that runs it becomes the oracle); for float16, onnxruntime running
    the file (torch 1.13's CPU has no fp16 matmul).
  - the compiler (issue 12): `disagmoe compile` imports each form and computes it in fp32 on the
    stored weights (normalize-onnx's WidenLowPrecision.cpp), saying so in one note line; every
    weight of the plan keeps the initializer's dtype and bytes (dtype, length 2 bytes an element);
    the compiled plan's logits match golden/logits_* at every golden shape within the fp32 bound
    error_model.logits_bound. Derivation: the runtime widens each stored weight exactly (every
    float16 / bfloat16 value is a float32), so the plan and the golden (PyTorch fp32 on the weights
    rounded to the dtype, export_variants.py's rounded_fp32) are two fp32 evaluations of one real
    function, whose difference the fp32 error model bounds (sigma = sqrt(2D/3) u, D from the
    shapes). Two exact-arithmetic differences between the file and that function are not
    performed by either: the file's roundings of activations to the dtype (its Casts, dropped) and
    of constants (its inv_freq buffer rounded by model.to(dtype), from which the compiler recovers
    theta = 10000, and the softmax scale sqrt(head_dim) rounded to the dtype, which the plan takes
    as 1/sqrt(head_dim)): the golden computes inv_freq and the scale in fp32 too, so the bound
    needs no term for them. Against the file's own dtype arithmetic (onnxruntime fp16, PyTorch
    bf16) the plan is held to the dtype bound in e2e.onnxruntime_oracle and below.
Exits 77 (CTest: skipped) when onnxruntime-node is not installed.
  check_dtype_exports.py BIN_DIR REPO_DIR WORK_DIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "numerics"))
import error_model  # noqa: E402
from checks import Checks  # noqa: E402

SKIP = 77
TYPES = {"float16": onnx.TensorProto.FLOAT16, "bfloat16": onnx.TensorProto.BFLOAT16}


def round_bf16_bits(x):
    """float32 -> bfloat16 bit patterns, round to nearest even (as torch's .to(torch.bfloat16))."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def dtype_bits(t):
    """A FLOAT16 / BFLOAT16 initializer's bit patterns (uint16), from raw_data or int32_data."""
    if t.raw_data:
        return np.frombuffer(t.raw_data, dtype=np.uint16).reshape(tuple(t.dims))
    return np.array(t.int32_data, dtype=np.uint16).reshape(tuple(t.dims))


def rounded_bits(x, dtype):
    x = np.asarray(x, dtype=np.float32)
    return x.astype(np.float16).view(np.uint16) if dtype == "float16" else round_bf16_bits(x)


def check_weights(check, name, model, fp32_model, dtype):
    inits = list(model.graph.initializer)
    wrong = [t.name for t in inits if t.data_type != TYPES[dtype]]
    check(not wrong, f"{name}: every initializer is {dtype} {wrong[:3] or ''}")
    refs = [onnx.numpy_helper.to_array(t) for t in fp32_model.graph.initializer
            if t.data_type == onnx.TensorProto.FLOAT]
    used, unmatched = set(), []
    for t in inits:
        bits = dtype_bits(t)
        hit = next((i for i, r in enumerate(refs) if i not in used and r.shape == bits.shape and
                    np.array_equal(rounded_bits(r, dtype), bits)), None)
        if hit is None:
            unmatched.append(t.name)
        else:
            used.add(hit)
    check(not unmatched and len(used) == len(refs),
          f"{name}: the {len(inits)} initializers are the fp32 export's {len(refs)} rounded to {dtype}, "
          f"one to one {unmatched[:3] or ''}")


def check_compiled(check, bin_dir, work, path, name, cfg, dtype):
    """The form compiled (one note line on the stored dtype), its plan's weights in that dtype, and
    the plan's logits against golden/logits_* (fp32 bound; the module docstring derives it) and,
    for bfloat16, against PyTorch eager in bf16 (the dtype bound: the plan is the fp32 side)."""
    vdir = os.path.dirname(path)
    for ids in sorted(glob.glob(os.path.join(vdir, "golden", "ids_b*_s*.npy"))):
        shape = os.path.basename(ids)[len("ids_"):-len(".npy")]
        batch, seq = (int(x[1:]) for x in shape.split("_"))
        plan = os.path.join(work, f"{name}_{shape}_plan")
        c = subprocess.run([os.path.join(bin_dir, "disagmoe"), "compile", path, "-o", plan, "--batch", str(batch),
                            "--seq-len", str(seq)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        notes = [l for l in c.stderr.splitlines() if " note: " in l and f"weights stored in {dtype}" in l]
        check(c.returncode == 0 and len(notes) == 1 and "computes in fp32" in notes[0],
              f"{name} {shape}: compiles, with one note on the {dtype} weights "
              f"({notes[0].split(': note: ')[-1] if notes else c.stderr.strip()[-300:]})")
        if c.returncode != 0:
            continue
        weights = json.load(open(os.path.join(plan, "plan.json")))["model"]["weights"]
        wrong = [w["name"] for w in weights if w["dtype"] != dtype or w["length"] != 2 * int(np.prod(w["shape"]))]
        check(weights and not wrong, f"{name} {shape}: the plan's {len(weights)} weights are {dtype}, 2 bytes an "
              f"element {wrong[:3] or ''}")
        out = plan + "_logits.npy"
        r = subprocess.run([os.path.join(bin_dir, "disagmoe-run"), plan, "--input", ids, "--output", out],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        check(r.returncode == 0, f"{name} {shape}: disagmoe-run {r.stdout.strip()[-200:] if r.returncode else 'ran'}")
        if r.returncode != 0:
            continue
        ours = np.load(out)
        ok, text = error_model.logits_bound(cfg, seq).check(ours, np.load(os.path.join(vdir, "golden", f"logits_{shape}.npy")))
        check(ok, f"{name} {shape}: the plan vs PyTorch fp32 on the rounded weights: {text}")
        if dtype == "bfloat16":
            ok, text = error_model.dtype_logits_bound(cfg, seq, dtype).check(
                np.load(os.path.join(vdir, "golden", f"logits_bfloat16_{shape}.npy")), ours)
            check(ok, f"{name} {shape}: PyTorch bf16 vs the plan (fp32 on the same weights): {text}")


def main(bin_dir, repo, work):
    oracle_dir = os.path.join(repo, "tests", "oracle")
    if not os.path.isdir(os.path.join(oracle_dir, "node_modules", "onnxruntime-node")) or not shutil.which("node"):
        print("skipped: onnxruntime-node is not installed (scripts/setup.sh installs it from npm)")
        return SKIP
    check = Checks()
    forms = sorted(glob.glob(os.path.join(repo, "samples", "models", "mixtral_dtypes", "*", "model.onnx")))
    check(len(forms) == 2, f"two dtype forms found ({len(forms)})")
    for path in forms:
        vdir = os.path.dirname(path)
        name = os.path.basename(vdir)
        cfg = json.load(open(os.path.join(vdir, "golden", "config.json")))
        dtype = cfg["dtype"]
        model = onnx.load(path)
        fp32 = onnx.load(os.path.join(repo, "samples", "models", "mixtral_variants", cfg["dtype_base"], "model.onnx"))
        check_weights(check, name, model, fp32, dtype)
        out_type = model.graph.output[0].type.tensor_type.elem_type
        check(out_type == TYPES[dtype], f"{name}: the logits are {dtype} (elem_type {out_type})")
        for ids in sorted(glob.glob(os.path.join(vdir, "golden", "ids_b*_s*.npy"))):
            shape = os.path.basename(ids)[len("ids_"):-len(".npy")]
            seq = int(shape.split("_")[1][1:])
            ref = np.load(os.path.join(vdir, "golden", f"logits_{shape}.npy"))
            bound = error_model.dtype_logits_bound(cfg, seq, dtype)
            ort_out = os.path.join(work, f"{name}_{shape}_ort.npy")
            r = subprocess.run(["node", os.path.join(oracle_dir, "run_onnxruntime.js"), path, ids, ort_out],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if dtype == "bfloat16":
                check(r.returncode != 0, f"{name} {shape}: onnxruntime's CPU provider refuses the bf16 file "
                      f"({r.stdout.strip().splitlines()[-1] if r.stdout.strip() else 'it ran: make it the oracle'})")
                got = np.load(os.path.join(vdir, "golden", f"logits_bfloat16_{shape}.npy"))
                oracle = "PyTorch bf16"
            else:
                check(r.returncode == 0, f"{name} {shape}: onnxruntime runs the file {r.stdout.strip()[-200:]}")
                if r.returncode != 0:
                    continue
                got = np.load(ort_out)
                oracle = "onnxruntime fp16"
            ok, text = bound.check(got, ref)
            check(ok, f"{name} {shape}: {oracle} vs PyTorch fp32 on the rounded weights: {text}")
        check_compiled(check, bin_dir, work, path, name, cfg, dtype)
    return check.summary()


if __name__ == "__main__":
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(*sys.argv[1:4]))
