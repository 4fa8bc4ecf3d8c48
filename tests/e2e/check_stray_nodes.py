"""Property check of raise-onnx-to-moe: a node inserted inside a real export is never dropped
silently.

For each family sample, a seeded choice of float nodes that compute on the token stream gets a stray
Mul(., 2), Add(., 2), Sigmoid or Neg after it (insert_after of tests/lit/Inputs/
make_stray_node_models.py). The mutated model either is refused by `disagmoe compile` (exit code
1, errors naming a node), or it compiles and then its logits from disagmoe-run must equal
onnxruntime-node's on the mutated model (max abs error <= 1e-4): the compiler kept the node's
effect (e.g. a constant on the router's gates raised as routed_scaling_factor). Without
onnxruntime-node a compiled mutant is a failure (nothing can show that its effect was kept).
  check_stray_nodes.py BIN_DIR SAMPLES_DIR WORK_DIR [PER_SAMPLE]
"""
import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import shape_inference

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lit", "Inputs"))
from make_stray_node_models import insert_after  # noqa: E402

SAMPLES = ["mixtral_tiny", "qwen3_moe_tiny", "qwen3_moe_tiny/dense_masked", "deepseek_moe_tiny",
           "deepseek_v2_lite_tiny", "gpt_oss_tiny", "gpt_oss_tiny/einsum", "gpt_oss_tiny/dense_masked",
           "qwen3_moe_tiny/hf_forms", "gpt_oss_tiny/hf_dense", "gpt_oss_tiny/hf_loop", "gpt_oss_tiny/hf_yarn", "mixtral_variants/hf_masking_utils_window_opset16",
           "mixtral_variants/hf_masking_utils_inputs_opset17", "mixtral_variants/hf_masking_utils_past_opset17",
           "mixtral_tiny/expert_hit"] + [
    # The newer exporters' forms (issue 16): the normalize patterns that decompose fused operators
    # must not let a stray node through either.
    "newer_opsets/" + n for n in ["mixtral_opset18", "qwen3_opset23_rmsnorm", "mixtral_ort_fused_norms",
                                  "mixtral_opset23_attention", "mixtral_ort_rotary", "mixtral_opset23_rotary",
                                  "mixtral_ort_gqa", "qwen3_opset21", "gpt_oss_ort_gqa",
                                  "mixtral_ort_genai", "qwen3_ort_rotary_interleaved"]]
# Not the fp32 error model's bound: a stray Neg or Sigmoid changes the computation's conditioning
# (a residual cancelled, a norm's input squashed), which the model does not count; what this test
# catches is a node dropped or misapplied (a Mul or Add by 2, a Sigmoid, a Neg), which moves the
# logits by O(1), about 1e4 times this absolute tolerance.
TOLERANCE = 1e-4
OPS = ["Mul", "Add", "Sigmoid", "Neg"]  # a constant factor or offset, a non-linearity, a sign flip


def float_data_nodes(m):
    """Names of nodes whose float output depends on the token ids through values (not a Shape)."""
    users = {}
    for n in m.graph.node:
        for i in n.input:
            users.setdefault(i, []).append(n)
    data, work = set(), [m.graph.input[0].name]
    while work:
        v = work.pop()
        if v in data:
            continue
        data.add(v)
        work.extend(o for n in users.get(v, []) if n.op_type != "Shape" for o in n.output)
    elem = {v.name: v.type.tensor_type.elem_type for v in shape_inference.infer_shapes(m).graph.value_info}
    return [n.name for n in m.graph.node
            if n.name and n.output and n.output[0] in data and elem.get(n.output[0]) == onnx.TensorProto.FLOAT]


def main(bin_dir, samples_dir, work, per_sample):
    oracle = os.path.join(HERE, "..", "oracle")
    have_ort = os.path.isdir(os.path.join(oracle, "node_modules", "onnxruntime-node")) and shutil.which("node")
    rng = random.Random(20261129)
    refused = kept = failed = 0
    for sample in SAMPLES:
        path = os.path.join(samples_dir, sample, "model.onnx")
        ids = os.path.join(samples_dir, sample, "golden", "ids_b2_s8.npy")
        # attention_mask / position_ids inputs: onnxruntime gets the values the plan binds.
        cfg_path = os.path.join(samples_dir, sample, "golden", "config.json")
        cfg = json.load(open(cfg_path)) if os.path.exists(cfg_path) else {}
        feeds = [f"{n}={os.path.join(samples_dir, sample, 'golden', f'{n}_b2_s8.npy')}"
                 for n in cfg.get("graph_inputs", [])[1:]]
        names = float_data_nodes(onnx.load(path))
        for where in rng.sample(names, min(per_sample, len(names))):
            m = onnx.load(path)
            op = rng.choice(OPS)
            insert_after(m, where, op)
            mutant = os.path.join(work, "mutant.onnx")
            onnx.save(m, mutant)
            plan = os.path.join(work, "plan")
            shutil.rmtree(plan, ignore_errors=True)
            r = subprocess.run([os.path.join(bin_dir, "disagmoe"), "compile", mutant, "-o", plan,
                                "--batch", "2", "--seq-len", "8"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                ok = r.returncode == 1 and "node '" in r.stderr and not os.path.exists(os.path.join(plan, "plan.json"))
                refused += ok
                failed += not ok
                if not ok:
                    print(f"FAIL {sample} {op} after {where}: exit {r.returncode}: {r.stderr.strip()[:300]}")
                continue
            if not have_ort:
                failed += 1
                print(f"FAIL {sample} {where}: compiled, and onnxruntime-node is not installed to show "
                      "that the stray node's effect was kept")
                continue
            ours, ort = os.path.join(work, "ours.npy"), os.path.join(work, "ort.npy")
            subprocess.run([os.path.join(bin_dir, "disagmoe-run"), plan, "--input", ids, "--output", ours],
                           check=True, stdout=subprocess.DEVNULL)
            subprocess.run(["node", os.path.join(oracle, "run_onnxruntime.js"), mutant, ids, ort] + feeds, check=True)
            err = float(np.abs(np.load(ours) - np.load(ort)).max())
            ok = err <= TOLERANCE
            kept += ok
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {sample} {op} after {where}: compiled; logits vs onnxruntime on the "
                  f"mutant: max abs error {err:.3e}")
    print(f"{refused} refused, {kept} compiled with the stray node's effect kept, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    work_dir = sys.argv[3]
    shutil.rmtree(work_dir, ignore_errors=True)
    os.makedirs(work_dir)
    try:
        code = main(sys.argv[1], sys.argv[2], work_dir, int(sys.argv[4]) if len(sys.argv) > 4 else 6)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    sys.exit(code)
