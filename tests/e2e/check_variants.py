"""Export settings and router forms (samples/models/mixtral_variants): each variant compiles, the
plan's hyper-parameters equal the exporter's config, and its logits match PyTorch's (within the fp32 error model's
bound, tests/numerics/error_model.py) at every
golden shape. For the external-data variant, compiling never reads the weight bytes (it succeeds
without the data file) while running without it is an error naming the initializer and the file;
a data file shorter than the tensors' offsets + lengths is refused at compile time naming the
first such tensor and the file.
Further folders of forms of the same modules (samples/models/mixtral_dtypes: the float16 /
bfloat16 exports, compiled in fp32 on their stored weights, against PyTorch fp32 on the rounded
weights) are checked the same way.
  check_variants.py BIN_DIR VARIANTS_DIR WORK_DIR [MORE_DIR ...]
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from checks import Checks
from check_families import check_component_hyperparameters, same

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "numerics"))
import error_model  # noqa: E402

KEYS = ["hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "expert_hidden",
        "num_experts", "top_k", "router_scoring", "vocab_size"]


def run(cmd, expect_ok=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if expect_ok and r.returncode != 0:
        print(r.stdout)
        raise SystemExit(f"FAILED ({r.returncode}): {' '.join(cmd)}")
    return r


def main(bin_dir, variants_dir, work, *more_dirs):
    disagmoe, runner = os.path.join(bin_dir, "disagmoe"), os.path.join(bin_dir, "disagmoe-run")
    check = Checks()

    vdirs = [v for d in (variants_dir,) + more_dirs for v in sorted(glob.glob(os.path.join(d, "*", "")))]
    check(len(vdirs) > len(more_dirs), f"{len(vdirs)} variant folders found")
    for vdir in vdirs:
        name = os.path.basename(os.path.dirname(vdir))
        cfg = json.load(open(os.path.join(vdir, "golden", "config.json")))
        for ids_path in sorted(glob.glob(os.path.join(vdir, "golden", "ids_b*_s*.npy"))):
            shape = os.path.basename(ids_path)[len("ids_"):-len(".npy")]
            batch, seq = (int(x[1:]) for x in shape.split("_"))
            plan = os.path.join(work, f"{name}_{shape}")
            run([disagmoe, "compile", os.path.join(vdir, "model.onnx"), "-o", plan,
                 "--batch", str(batch), "--seq-len", str(seq)])
            model = json.load(open(os.path.join(plan, "plan.json")))["model"]
            wrong = [k for k in KEYS + ["rope_theta"] if not same(model.get(k), cfg[k])]
            check(not wrong, f"{name} {shape}: hyper-parameters equal the exporter's {wrong or ''}")
            check_component_hyperparameters(check, f"{name} {shape}", model, cfg)
            out = plan + "_logits.npy"
            run([runner, plan, "--input", ids_path, "--output", out])
            ok, text = error_model.logits_bound(cfg, seq).check(
                np.load(out), np.load(os.path.join(vdir, "golden", f"logits_{shape}.npy")))
            check(ok, f"{name} {shape}: vs PyTorch {text}")
        if cfg["external_data"]:
            # The model without its data file: compiling works, running names the weight and file.
            lone = os.path.join(work, f"{name}_no_data")
            os.makedirs(lone, exist_ok=True)
            shutil.copy(os.path.join(vdir, "model.onnx"), lone)
            plan = os.path.join(work, f"{name}_no_data_plan")
            r = run([disagmoe, "compile", os.path.join(lone, "model.onnx"), "-o", plan], expect_ok=False)
            check(r.returncode == 0, f"{name}: compiles without reading the external data ({r.stdout.strip()})")
            r = run([runner, plan, "--input", os.path.join(vdir, "golden", "ids_b2_s8.npy")], expect_ok=False)
            msg = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
            first = json.load(open(os.path.join(plan, "plan.json")))["model"]["weights"][0]["name"]
            check(r.returncode != 0 and "model.onnx.data" in msg and f'weight "{first}"' in msg,
                  f"{name}: running without the data file fails naming weight and file ({msg})")
            # A data file shorter than the tensors claim: compile refuses it, naming the first
            # tensor past its end (found here from the model's own external_data entries) and the
            # file, and writes no plan.
            short = os.path.join(work, f"{name}_short_data")
            os.makedirs(short, exist_ok=True)
            shutil.copy(os.path.join(vdir, "model.onnx"), short)
            data = open(os.path.join(vdir, "model.onnx.data"), "rb").read()
            cut = len(data) // 2
            open(os.path.join(short, "model.onnx.data"), "wb").write(data[:cut])
            m = onnx.load(os.path.join(vdir, "model.onnx"), load_external_data=False)
            past = None
            for t in m.graph.initializer:
                kv = {e.key: e.value for e in t.external_data}
                if kv and int(kv.get("offset", 0)) + int(kv.get("length", 0)) > cut:
                    past = t.name
                    break
            plan = os.path.join(work, f"{name}_short_plan")
            r = run([disagmoe, "compile", os.path.join(short, "model.onnx"), "-o", plan], expect_ok=False)
            lines = r.stdout.strip().splitlines()
            check(r.returncode != 0 and len(lines) == 1 and f"initializer '{past}'" in lines[0]
                  and "model.onnx.data' is " + str(cut) + " bytes" in lines[0] and not os.path.exists(plan),
                  f"{name}: a data file cut to {cut} bytes is refused naming '{past}' and the file, "
                  f"no plan written ({lines[-1][:150] if lines else ''})")
    return check.summary()


if __name__ == "__main__":
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(*sys.argv[1:]))
