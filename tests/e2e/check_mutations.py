#!/usr/bin/python3
"""Mutation tests of the numerical checks (issue 18): each tolerance is tight enough to catch a real change.

    check_mutations.py BIN_DIR SAMPLES_DIR WORK_DIR [SAMPLE ...]

For each family sample (default: SAMPLES), compile the plan (2 A-ranks + 2 F-ranks, p = 2 where the
layer count allows), then run the forward check (golden/logits_b2_s8.npy) and the training check
(one step's loss and every parameter's gradient against golden/train/) with the bounds of
tests/numerics/error_model.py, the same bounds the forward and training tests use:
  - on the plan as compiled: every check passes (the control);
  - on each mutant of the plan: at least one check fails.
Mutants (plan.json edited, or a copy of the weights file with one tensor scaled, the plan pointed at
it with its size and modification time):
  eps x10       every RMSNorm's epsilon (and the q/k and MLA kv norms') ten times too large
  rope +1%      rope_theta 1% too large
  router 1e-3   the router's scale 1e-3 relative too large: routed_scaling_factor where the family has
                one, else the first MoE layer's router weight
  expert 1e-4   the first MoE layer's most loaded expert's down projection (w2) 1e-4 relative too large
The report lists, per mutant, which checks caught it and by how much (measured / bound).
"""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
from checks import Checks

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "numerics"))
import error_model  # noqa: E402

SAMPLES = ["mixtral_tiny", "qwen3_moe_tiny", "deepseek_moe_tiny", "gpt_oss_tiny", "deepseek_v2_lite_tiny"]
SHAPE = (2, 8)


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout}")
    return r.stdout


class Goldens:
    """A sample's forward logits and training goldens (mixtral_tiny's per-file layout or the
    families' npz layout)."""

    def __init__(self, sdir):
        g = os.path.join(sdir, "golden")
        self.cfg = json.load(open(os.path.join(g, "config.json")))
        self.ids = os.path.join(g, "ids_b%d_s%d.npy" % SHAPE)
        self.logits = np.load(os.path.join(g, "logits_b%d_s%d.npy" % SHAPE))
        t = os.path.join(g, "train")
        self.loss = float(np.load(os.path.join(t, "loss.npy")).reshape(-1)[0])
        if os.path.exists(os.path.join(t, "grads.npz")):
            z = np.load(os.path.join(t, "grads.npz"))
            self.grads = {k: z[k] for k in z.files}
        else:
            self.grads = {f[len("grad_"):-len(".npy")]: np.load(os.path.join(t, f))
                          for f in os.listdir(t) if f.startswith("grad_") and f.endswith(".npy")}
        meta = json.load(open(os.path.join(t, "train.json")))
        self.expert_load = meta.get("expert_load")


def checks_on(bin_dir, plan, gold, work):
    """Runs the forward and training checks on `plan`; returns {check: (ok, measured / bound)}."""
    b, s = SHAPE
    tokens = b * (s - 1)  # next-token targets
    out = {}
    logits = os.path.join(work, "logits.npy")
    run([os.path.join(bin_dir, "disagmoe-run"), plan, "--input", gold.ids, "--output", logits])
    bound = error_model.logits_bound(gold.cfg, s)
    ok, _ = bound.check(np.load(logits), gold.logits)
    out["forward logits"] = (ok, bound.share(np.load(logits), gold.logits))
    gdir = os.path.join(work, "grads")
    shutil.rmtree(gdir, ignore_errors=True)
    text = run([os.path.join(bin_dir, "disagmoe-run"), plan, "--train", "--input", gold.ids, "--optimizer", "sgd",
                "--lr", "0.1", "--save-grads", gdir])
    loss = float(re.search(r"^step 1: loss (\S+) over", text, re.M).group(1))
    lb = error_model.loss_bound(gold.cfg, s, tokens)
    ok, _ = lb.check(np.array([loss]), np.array([gold.loss]))
    out["training loss"] = (ok, lb.share(np.array([loss]), np.array([gold.loss])))
    gb = error_model.grad_bound(gold.cfg, s, tokens)
    worst, all_ok = 0.0, True
    for key, want in gold.grads.items():
        got = np.load(os.path.join(gdir, key + ".npy"))
        ok, _ = gb.check(got, want)
        all_ok &= ok
        worst = max(worst, gb.share(got, want))
    out["training gradients"] = (all_ok, worst)
    return out



def scale_weight(doc, name, factor, work):
    """A copy of the weights file with tensor `name` scaled; the plan points at the copy."""
    w = next(x for x in doc["model"]["weights"] if x["name"] == name)
    assert w["dtype"] == "float32", w
    src = w["file"]
    dst = os.path.join(work, "mutant_" + os.path.basename(src))
    shutil.copyfile(src, dst)
    with open(dst, "r+b") as f:
        f.seek(w["offset"])
        x = np.frombuffer(f.read(w["length"]), dtype="<f4").astype(np.float64)
        f.seek(w["offset"])
        f.write((x * factor).astype("<f4").tobytes())
    for x in doc["model"]["weights"]:
        if x["file"] == src:
            x["file"] = dst
    st = os.stat(dst)
    for f in doc["files"]:
        if f["path"] == src:
            f.update(path=dst, size=st.st_size, mtime_ns=st.st_mtime_ns)


def moe_layer(doc):
    return min(c["layer"] for c in doc["model"]["components"] if c["kind"] == "router")


def mutate_eps(doc, gold, work):
    for c in doc["model"]["components"]:
        for k in ("eps", "qk_norm_eps", "kv_norm_eps"):
            if k in c:
                c[k] *= 10
    doc["model"]["rms_norm_eps"] *= 10


def mutate_rope(doc, gold, work):
    doc["model"]["rope_theta"] *= 1.01


def mutate_router(doc, gold, work):
    routers = [c for c in doc["model"]["components"] if c["kind"] == "router"]
    if all("routed_scaling_factor" in c for c in routers):
        for c in routers:
            c["routed_scaling_factor"] *= 1 + 1e-3
        doc["model"]["routed_scaling_factor"] *= 1 + 1e-3
        return "every router's routed_scaling_factor"
    layer = moe_layer(doc)
    router = next(c for c in doc["model"]["components"] if c["kind"] == "router" and c["layer"] == layer)
    scale_weight(doc, router["weight"], 1 + 1e-3, work)
    return f"layer {layer} router weight"


def mutate_expert(doc, gold, work):
    layer = moe_layer(doc)
    load = gold.expert_load
    if isinstance(load, dict):
        load = load.get(f"l{layer}", load.get(str(layer)))
    elif isinstance(load, list):
        load = load[0] if load and isinstance(load[0], list) else load
    e = int(np.argmax(load)) if load else 0
    experts = next(c for c in doc["model"]["components"] if c["kind"] == "experts" and c["layer"] == layer)
    w2 = next(x for x in experts["experts"] if x["expert"] == e)["w2"]
    scale_weight(doc, w2, 1 + 1e-4, work)
    return f"layer {layer} expert {e} w2"


MUTANTS = [("eps x10", mutate_eps), ("rope +1%", mutate_rope), ("router 1e-3", mutate_router),
           ("expert 1e-4", mutate_expert)]


def report(results):
    return ", ".join(f"{k} {'ok' if ok else 'FAILS'} ({r:.2f} of bound)" for k, (ok, r) in results.items())


def main(bin_dir, samples_dir, work, names):
    check = Checks()
    for name in names:
        sdir = os.path.join(samples_dir, name)
        gold = Goldens(sdir)
        base = os.path.join(work, name.replace("/", "_"))
        plan = os.path.join(base, "plan")
        os.makedirs(base, exist_ok=True)  # compile -o creates only the plan directory itself
        groups = 2 if gold.cfg["num_layers"] % 2 == 0 else 1
        run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sdir, "model.onnx"), "-o", plan,
             "--attn-ranks", "2", "--ffn-ranks", "2", "--groups", str(groups)])
        control = checks_on(bin_dir, plan, gold, base)
        check(all(ok for ok, _ in control.values()), f"{name}: unmutated plan passes: {report(control)}")
        for label, mutate in MUTANTS:
            mdir = os.path.join(base, label.replace(" ", "_").replace("%", "pct"))
            shutil.rmtree(mdir, ignore_errors=True)
            os.makedirs(mdir)
            doc = json.load(open(os.path.join(plan, "plan.json")))
            what = mutate(doc, gold, mdir)
            with open(os.path.join(mdir, "plan.json"), "w") as f:
                json.dump(doc, f)
            results = checks_on(bin_dir, mdir, gold, mdir)
            caught = [k for k, (ok, _) in results.items() if not ok]
            check(bool(caught), f"{name}: mutant {label}{' (' + what + ')' if what else ''} caught by "
                                f"{caught or 'nothing'}: {report(results)}")
    return check.summary()


if __name__ == "__main__":
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:] or SAMPLES))
