"""Oracle: every committed export run by onnxruntime-node (CPU) and by our compiler + executor on the
same golden token ids gives the same logits, within the fp32 error model's bound of two evaluations
(tests/numerics/error_model.py logits_bound). onnxruntime shares no code with
us: it imports the ONNX file itself and runs the exported graph node by node, loop over experts
included. Where onnxruntime's CPU provider lacks a form (golden/oracle.json: "onnxruntime": false),
the PyTorch golden logits are the oracle and the output line says so. Exits 77 (CTest: skipped)
with a message when onnxruntime-node is not installed (npm
unreachable when scripts/setup.sh ran).
  check_onnxruntime_oracle.py BIN_DIR REPO_DIR WORK_DIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "numerics"))
import error_model  # noqa: E402

SKIP = 77


def config_of(model_dir):
    """golden/config.json of the sample or, for an export form without one, of its parent sample."""
    d = model_dir
    while not os.path.exists(os.path.join(d, "golden", "config.json")):
        if os.path.dirname(d) == d:
            raise SystemExit(f"FAIL: no golden/config.json for {model_dir} or a folder above it")
        d = os.path.dirname(d)
    return json.load(open(os.path.join(d, "golden", "config.json")))


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print(r.stdout)
        raise SystemExit(f"FAILED ({r.returncode}): {' '.join(cmd)}")


def fed_check(oracle_dir, model, golden, shape, prefix, cfg, length, unfed_logits, out):
    """onnxruntime fed golden/<prefix>_<input>_<shape>.npy for every graph input against PyTorch's
    golden/<prefix>_logits_<shape>.npy (sequences of `length` tokens), which must also differ from
    `unfed_logits` (the same ids with the plan's bound inputs): (ok, text)."""
    feeds = [f"{n}={os.path.join(golden, f'{prefix}_{n}_{shape}.npy')}" for n in cfg["graph_inputs"][1:]]
    run(["node", os.path.join(oracle_dir, "run_onnxruntime.js"), model,
         os.path.join(golden, f"{prefix}_ids_{shape}.npy"), out] + feeds)
    torch_logits = np.load(os.path.join(golden, f"{prefix}_logits_{shape}.npy"))
    ok, text = error_model.logits_bound(cfg, length).check(np.load(out), torch_logits)
    return ok and not np.allclose(torch_logits, unfed_logits, atol=1e-3), text


# Samples the compiler refuses by design (issue 12), with the start of the refusal expected.
NOT_IMPORTED = {"deepseek_v3_tiny": "node '/layers.0/self_attn/q_a_proj/MatMul' (MatMul): MLA: a low-rank query"}


def main(bin_dir, repo, work):
    oracle_dir = os.path.join(repo, "tests", "oracle")
    if not os.path.isdir(os.path.join(oracle_dir, "node_modules", "onnxruntime-node")) or not shutil.which("node"):
        print("skipped: onnxruntime-node is not installed (scripts/setup.sh installs it from npm; "
              "npm was unreachable or node is missing)")
        return SKIP
    passed = failed = 0
    models = sorted(glob.glob(os.path.join(repo, "samples", "models", "**", "model.onnx"), recursive=True))
    for model in models:
        golden = os.path.join(os.path.dirname(model), "golden")
        name = os.path.relpath(os.path.dirname(model), os.path.join(repo, "samples", "models"))
        if name in NOT_IMPORTED:
            # onnxruntime on the file vs PyTorch (the file is the module), and the compiler's
            # one-line refusal, naming the node, with nothing written.
            for ids in sorted(glob.glob(os.path.join(golden, "ids_b*_s*.npy"))):
                shape = os.path.basename(ids)[len("ids_"):-len(".npy")]
                seq = int(shape.split("_")[1][1:])
                ort_out = os.path.join(work, f"{name.replace('/', '_')}_{shape}_ort.npy")
                run(["node", os.path.join(oracle_dir, "run_onnxruntime.js"), model, ids, ort_out])
                ok, text = error_model.logits_bound(config_of(os.path.dirname(model)), seq).check(
                    np.load(ort_out), np.load(os.path.join(golden, f"logits_{shape}.npy")))
                passed += ok
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {name} {shape}: onnxruntime vs PyTorch: {text}")
            plan = os.path.join(work, name.replace("/", "_") + "_refused_plan")
            r = subprocess.run([os.path.join(bin_dir, "disagmoe"), "compile", model, "-o", plan],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            lines = r.stderr.strip().splitlines()
            ok = (r.returncode == 1 and len(lines) == 1 and NOT_IMPORTED[name] in lines[0]
                  and not os.path.exists(plan))
            passed += ok
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name}: not imported (issue 12), refused in one line: "
                  f"{lines[-1] if lines else '(no message)'}")
            continue
        # The float16 / bfloat16 forms (samples/models/mixtral_dtypes): the plan computes in fp32 on
        # the stored weights, onnxruntime in the dtype, so the two differ by the dtype evaluation's
        # rounding: error_model.dtype_logits_bound (fp32 on the rounded weights against the dtype).
        # onnxruntime's CPU provider has no bfloat16 kernels: there the PyTorch golden (fp32 on the
        # rounded weights) is the oracle, with the fp32 bound, and onnxruntime must still refuse.
        dtype = config_of(os.path.dirname(model)).get("dtype")
        for ids in sorted(glob.glob(os.path.join(golden, "ids_b*_s*.npy"))):
            shape = os.path.basename(ids)[len("ids_"):-len(".npy")]
            batch, seq = (int(x[1:]) for x in shape.split("_"))
            tag = f"{name.replace('/', '_')}_{shape}"
            ort_out = os.path.join(work, tag + "_ort.npy")
            # golden/oracle.json marks a form onnxruntime's CPU provider does not run (the fused
            # com.microsoft.MoE with a separate fc3 or concatenated SwiGLU): PyTorch's golden is
            # the oracle there, and the line says so.
            # onnxruntime is still asked: the form must really fail there (else it is the oracle).
            oracle_file = os.path.join(golden, "oracle.json")
            use_ort = (not os.path.exists(oracle_file) or json.load(open(oracle_file))["onnxruntime"]) and \
                dtype != "bfloat16"
            # Exports with attention_mask / position_ids inputs: onnxruntime is fed the values the
            # compiled plan binds (golden/<input>_<shape>.npy: ones, 0..S-1).
            cfg = config_of(os.path.dirname(model))
            extra = [f"{n}={os.path.join(golden, f'{n}_{shape}.npy')}" for n in cfg.get("graph_inputs", [])[1:]]
            ort_cmd = ["node", os.path.join(oracle_dir, "run_onnxruntime.js"), model, ids, ort_out] + extra
            if use_ort:
                run(ort_cmd)
            else:
                r = subprocess.run(ort_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                lines = [l for l in r.stdout.splitlines() if l.startswith("run_onnxruntime:")]
                if r.returncode == 0:
                    use_ort = True
                    print(f"note {name} {shape}: onnxruntime now runs this form (golden/oracle.json is stale)")
                else:
                    print(f"     {name} {shape}: onnxruntime refuses the form: {lines[-1] if lines else r.stdout[-200:]}")
                    ort_out = os.path.join(golden, f"logits_{shape}.npy")
            plan = os.path.join(work, tag + "_plan")
            ours = os.path.join(work, tag + "_ours.npy")
            run([os.path.join(bin_dir, "disagmoe"), "compile", model, "-o", plan,
                 "--batch", str(batch), "--seq-len", str(seq)])
            run([os.path.join(bin_dir, "disagmoe-run"), plan, "--input", ids, "--output", ours])
            in_dtype = use_ort and dtype in ("float16", "bfloat16")
            bound = (error_model.dtype_logits_bound(cfg, seq, dtype) if in_dtype
                     else error_model.logits_bound(cfg, seq))
            ok, text = bound.check(np.load(ours), np.load(ort_out))
            passed += ok
            failed += not ok
            oracle = ((f"onnxruntime in {dtype} (ours in fp32 on the same weights)" if in_dtype else "onnxruntime")
                      if use_ort else "the PyTorch golden (onnxruntime's CPU provider lacks this form)")
            print(f"{'ok  ' if ok else 'FAIL'} {name} {shape}: vs {oracle}: {text}")
            checks = []
            if extra and "padded_tokens" in cfg:
                # The file honours a padded mask: onnxruntime on a left-padded batch equals PyTorch's
                # logits for it (golden/padded_*), which differ from the unpadded ones.
                checks.append(("padded", seq, f"padded by {cfg['padded_tokens']}"))
            if "past_tokens" in cfg:
                # The file honours a real KV cache: onnxruntime fed PyTorch's caches of a prefix
                # (golden/cached_*) equals PyTorch's logits for the tokens after it, which differ
                # from the same tokens' logits from an empty cache.
                checks.append(("cached", seq + cfg["past_tokens"], f"after {cfg['past_tokens']} cached tokens"))
            for prefix, length, label in checks:
                ok, text = fed_check(oracle_dir, model, golden, shape, prefix, cfg, length,
                                     np.load(ort_out), os.path.join(work, f"{tag}_ort_{prefix}.npy"))
                passed += ok
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {name} {shape} {label}: onnxruntime vs PyTorch: {text}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(*sys.argv[1:4]))
