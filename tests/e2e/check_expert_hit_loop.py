#!/usr/bin/python3
"""transformers' current expert loop (over the experts the example input hit), traced by
torch.onnx.export: samples/models/mixtral_tiny/expert_hit (export_expert_hit.py).

  - onnxruntime on the committed file, at the shape it was traced on (every expert of every layer
    hit), against PyTorch's golden logits of mixtral_tiny (the same model);
  - ours against those goldens at every golden shape of mixtral_tiny, including the two whose
    batches miss experts (the compiled plan routes every input; the file itself runs only on
    batches that hit every expert);
  - one training step of the form against mixtral_tiny's training goldens
    (tests/e2e/check_training.py on the form's model);
  - a file traced on a batch that misses experts (mixtral_tiny's golden ids_b1_s5) is refused in
    one line naming the first such layer and exactly the experts PyTorch's router did not pick
    for that batch there.
  check_expert_hit_loop.py BIN_DIR REPO_DIR WORK_DIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "numerics"))
sys.path.insert(0, HERE)
import error_model  # noqa: E402
from checks import Checks  # noqa: E402

SKIP = 77


def run(cmd, timeout=600):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)


def hit_sets(base, ids):
    """Per layer, the experts PyTorch's router picks for `ids` (mixtral_tiny's modules)."""
    code = (
        "import sys, json, numpy as np, torch\n"
        f"sys.dont_write_bytecode = True; sys.path.insert(0, {base!r})\n"
        "import export as mt\n"
        "model = mt.build_model().eval(); hits = []\n"
        "def hook(mod, inp, out):\n"
        "    x = inp[0].reshape(-1, inp[0].shape[-1]); hits.append(sorted(set(mod.route(x)[3].flatten().tolist())))\n"
        "for l in model.layers: l.block_sparse_moe.register_forward_hook(hook)\n"
        f"with torch.no_grad(): model(torch.from_numpy(np.load({ids!r})))\n"
        "print(json.dumps(hits))\n")
    r = run(["/usr/bin/python3", "-c", code])
    if r.returncode != 0:
        raise SystemExit(f"FAIL PyTorch routing of {ids}: {r.stdout[-500:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(bin_dir, repo, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    base = os.path.join(repo, "samples", "models", "mixtral_tiny")
    form = os.path.join(base, "expert_hit")
    model = os.path.join(form, "model.onnx")
    cfg = json.load(open(os.path.join(form, "golden", "config.json")))
    compile_, run_ = os.path.join(bin_dir, "disagmoe"), os.path.join(bin_dir, "disagmoe-run")
    check = Checks()
    oracle = os.path.join(repo, "tests", "oracle")
    if os.path.isdir(os.path.join(oracle, "node_modules", "onnxruntime-node")) and shutil.which("node"):
        shape = cfg["trace_shape"]
        out = os.path.join(work, f"ort_{shape}.npy")
        r = run(["node", os.path.join(oracle, "run_onnxruntime.js"), model,
                 os.path.join(form, "golden", f"ids_{shape}.npy"), out])
        seq = int(shape.split("_s")[1])
        ok, text = (error_model.logits_bound(cfg, seq).check(np.load(out), np.load(
            os.path.join(form, "golden", f"logits_{shape}.npy"))) if r.returncode == 0 else (False, r.stdout[-300:]))
        check(ok, f"onnxruntime on the file at {shape} (the traced shape) vs PyTorch: {text}")
    else:
        check.skip("onnxruntime-node is not installed (scripts/setup.sh installs it)")
    for ids in sorted(glob.glob(os.path.join(base, "golden", "ids_b*_s*.npy"))):
        shape = os.path.basename(ids)[len("ids_"):-len(".npy")]
        batch, seq = (int(x[1:]) for x in shape.split("_"))
        plan, out = os.path.join(work, f"plan_{shape}"), os.path.join(work, f"ours_{shape}.npy")
        r = run([compile_, "compile", model, "-o", plan, "--batch", str(batch), "--seq-len", str(seq)])
        if r.returncode == 0:
            r = run([run_, plan, "--input", ids, "--output", out])
        ok, text = (error_model.logits_bound(cfg, seq).check(
            np.load(out), np.load(os.path.join(base, "golden", f"logits_{shape}.npy")))
            if r.returncode == 0 else (False, r.stdout.strip()[-300:]))
        hits = [len(h) for h in hit_sets(base, ids)]
        check(ok, f"ours at {shape} (experts hit per layer {hits} of {cfg['num_experts']}) vs PyTorch: {text}")
    # One training step against mixtral_tiny's goldens.
    sample = os.path.join(work, "train_sample")
    os.makedirs(sample)
    os.symlink(os.path.abspath(model), os.path.join(sample, "model.onnx"))
    os.symlink(os.path.abspath(os.path.join(base, "golden")), os.path.join(sample, "golden"))
    for py in glob.glob(os.path.join(base, "*.py")):
        os.symlink(os.path.abspath(py), os.path.join(sample, os.path.basename(py)))
    r = run([sys.executable, os.path.join(HERE, "check_training.py"), bin_dir, sample, os.path.join(work, "train")])
    tail = (r.stdout.strip().splitlines() or [""])[-1]
    if r.returncode != 0:
        print(r.stdout[-2000:])
    check(r.returncode == 0, f"one training step vs mixtral_tiny's goldens (tests/e2e/check_training.py): {tail}")
    # A file traced on a batch that misses experts is refused, naming them.
    partial_ids = os.path.join(base, "golden", "ids_b1_s5.npy")
    partial = os.path.join(work, "partial")
    r = run(["/usr/bin/python3", os.path.join(base, "export_expert_hit.py"), "--trace-ids", partial_ids,
             "--out", partial], timeout=300)
    if r.returncode != 0:
        check(False, f"export_expert_hit.py --trace-ids failed: {r.stdout[-300:]}")
        return check.summary()
    hits = hit_sets(base, partial_ids)
    layer = next(i for i, h in enumerate(hits) if len(h) < cfg["num_experts"])
    missing = [e for e in range(cfg["num_experts"]) if e not in hits[layer]]
    r = run([compile_, "compile", os.path.join(partial, "model.onnx"), "-o", os.path.join(work, "partial_plan"),
             "--batch", "1", "--seq-len", "5"])
    lines = r.stdout.strip().splitlines()
    noun = "expert" if len(missing) == 1 else "experts"
    verb = "is" if len(missing) == 1 else "are"
    want = (f"node '/layers.{layer}/block_sparse_moe/Split' (Split): experts: the loop over the experts hit "
            f"(Split of NonZero, Hugging Face's expert_hit) was traced with {len(hits[layer])} of "
            f"{cfg['num_experts']} experts hit")
    want_missing = f"; {noun} {', '.join(map(str, missing))} {verb} not in the file"
    check(r.returncode == 1 and len(lines) == 1 and want in lines[0] and want_missing in lines[0]
          and not os.path.exists(os.path.join(work, "partial_plan", "plan.json")),
          f"traced on ids_b1_s5 (layer {layer} hits {hits[layer]}): refused in one line naming "
          f"{want_missing}: exit {r.returncode}: {lines[-1] if lines else ''}")
    return check.summary()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__.strip().splitlines()[-1].strip())
    sys.exit(main(*sys.argv[1:]))
