"""Router training options against PyTorch (issue 7, "Router training as practitioners run it").

Top-k ties: the plan's layer-0 and layer-1 router weights are pointed at crafted weights
(golden/router/tie_router_l*.npy: layer 0 all zero, so all 8 logits of every token tie; layer 1 with
experts 3 and 6 copies of expert 1). One SGD step must match the PyTorch golden that selects with
ONNX TopK's rule (lower expert id first; torch.topk itself picks differently on 16 + 5 of the 16
tokens): loss within the fp32 bound (relative LOSS_TOL), per-expert load exact (layer 0: all 16 tokens on experts 0 and 1),
gradients of every non-expert weight and of layers 0-1's experts ||err||/||grad|| <= GRAD_TOL, and
experts 2-7 of layer 0 exactly zero.

The forward pass of the tied plan is also checked against onnxruntime-node (its own TopK) on the
sample's ONNX file with the same crafted router initializers: logits within the fp32 bound (where
onnxruntime-node is not installed: a SKIP line, and the test fails).

Capacity factor (`--capacity-factor 1`, golden/router/cap_m*: PyTorch with the same GShard-priority
drop rule) with micro-batches 1 and 2: loss relative LOSS_TOL, dropped assignments per layer exact,
gradients of every non-expert weight and of layers 0-1's experts ||err||/||grad|| <= GRAD_TOL.

The Switch load-balancing auxiliary loss (`--aux-loss-coef`): compiles the sample with 2 attention
and 2 FFN ranks and p = 2 groups, runs one step on the golden batch with micro-batches 1 and 2 and
compares with golden/router/ (export_router_goldens.py, PyTorch 1.13 autograd):
  loss (cross-entropy alone)              relative error <= LOSS_TOL
  aux loss                                relative error <= LOSS_TOL
  gradient of every non-expert weight     ||got - torch|| / ||torch|| <= GRAD_TOL
  per-expert load line                    equal to the golden top-k counts of every layer
A run without the flag prints no aux loss and the same per-expert load, and its router gradient
differs from the aux run's (the aux term is not silently dropped).
DeepSeek-V3 bias update (`--router-bias-update-rate 0.01`, golden/router/bias_*: PyTorch choosing by
probability + b, b_i += u sign(mean load - load_i) after each step): 3 SGD steps (lr 0.1), each step's
loss relative 1e-4 and per-expert load exact, b after the last update within 1e-7, every non-expert
weight after step 3 within 1e-5 (max abs); the same run without the bias chooses differently.

With --mpirun MPIRUN: aux loss + capacity factor + bias update (2 micro-batches, 2 steps) under `mpirun -np WORLD disagmoe-run
--comm mpi` gives byte-identical gradients and the same step and load lines as the local comm.
  check_router_training.py BIN_DIR SAMPLE_DIR WORK_DIR [--mpirun MPIRUN]
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

# LOSS_TOL and GRAD_TOL: the fp32 error model's bounds for the sample's chain (tests/numerics/error_model.py, 14 target
# tokens of [2, 8]): the loss and aux loss relative (loss_bound's tail bound), a gradient's
# ||err|| / ||grad|| (grad_bound's normwise bound). Set by set_bounds(SAMPLE_DIR) before any check.
LOSS_TOL = GRAD_TOL = None


def set_bounds(sample):
    global LOSS_TOL, GRAD_TOL
    cfg = json.load(open(os.path.join(sample, "golden", "config.json")))
    LOSS_TOL = error_model.loss_bound(cfg, 8, 14).element
    GRAD_TOL = error_model.grad_bound(cfg, 8, 14).normwise


def run(cmd):
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        print(result.stdout)
        raise SystemExit(f"FAILED ({result.returncode}): {' '.join(cmd)}")
    return result.stdout


def parse_load(text, step=1):
    line = re.search(rf"step {step} expert load:(.*)", text).group(1)
    return [[int(c) for c in layer.split()] for layer in re.findall(r"l\d+ \[([^\]]*)\]", line)]


def compare_mpi(bin_dir, plan, ids, work, mpirun, check):
    """Aux loss + capacity factor: local comm against mpirun --comm mpi, byte for byte."""
    opts = ["--train", "--verbose", "--input", ids, "--optimizer", "sgd", "--micro-batches", "2", "--aux-loss-coef", "0.5",
            "--capacity-factor", "1", "--steps", "2", "--router-bias-update-rate", "0.01"]
    local = run([os.path.join(bin_dir, "disagmoe-run"), plan] + opts + ["--save-grads", os.path.join(work, "loc")])
    world = json.load(open(os.path.join(plan, "plan.json")))["placement"]["world_size"]
    mpi = [mpirun, "--oversubscribe", "-np", str(world)]
    if os.geteuid() == 0:
        mpi.insert(1, "--allow-run-as-root")
    remote = run(mpi + [os.path.join(bin_dir, "disagmoe-run"), plan, "--comm", "mpi"] + opts +
                 ["--save-grads", os.path.join(work, "mpi")])
    lines = lambda t: [re.sub(r"\([0-9.]+ s\)", "", l) for l in t.splitlines() if l.startswith("step ")]
    check(lines(local) == lines(remote) and len(lines(local)) == 4,
          f"mpi: step and load lines equal the local comm's: {lines(remote)}")
    names = sorted(os.listdir(os.path.join(work, "loc")))
    same = names == sorted(os.listdir(os.path.join(work, "mpi"))) and all(
        open(os.path.join(work, "loc", n), "rb").read() == open(os.path.join(work, "mpi", n), "rb").read()
        for n in names)
    check(same, f"mpi: {len(names)} gradient files byte-identical to the local comm's")


def onnxruntime_tie_forward(bin_dir, sample, tied_plan, routers, gold, ids, work, check):
    """Our forward on the tied plan against onnxruntime-node on model.onnx with the tied routers."""
    oracle = os.path.join(sample, "..", "..", "..", "tests", "oracle")
    if not os.path.isdir(os.path.join(oracle, "node_modules", "onnxruntime-node")) or not shutil.which("node"):
        check.skip("tied routers: forward logits against onnxruntime's TopK: onnxruntime-node is not "
                   "installed (scripts/setup.sh installs it from npm)")
        return
    import onnx
    from onnx import numpy_helper
    model = onnx.load(os.path.join(sample, "model.onnx"))
    for layer, name in routers.items():
        if layer > 1:
            continue
        init = next(i for i in model.graph.initializer if i.name == name)
        w = np.load(os.path.join(gold, f"tie_router_l{layer}.npy"))
        assert list(init.dims) == list(w.shape), (init.dims, w.shape)
        init.CopyFrom(numpy_helper.from_array(w, name))
    tied_onnx = os.path.join(work, "tied.onnx")
    onnx.save(model, tied_onnx)
    ort_out, our_out = os.path.join(work, "tied_ort.npy"), os.path.join(work, "tied_ours.npy")
    run(["node", os.path.join(oracle, "run_onnxruntime.js"), tied_onnx, ids, ort_out])
    run([os.path.join(bin_dir, "disagmoe-run"), tied_plan, "--input", ids, "--output", our_out])
    cfg = json.load(open(os.path.join(sample, "golden", "config.json")))
    ok, text = error_model.logits_bound(cfg, 8).check(np.load(our_out).reshape(-1), np.load(ort_out).reshape(-1))
    check(ok, f"tied routers: forward logits against onnxruntime's TopK: {text}")


def main(bin_dir, sample, work, mpirun=None):
    set_bounds(sample)
    gold = os.path.join(sample, "golden", "router")
    meta = json.load(open(os.path.join(gold, "router.json")))
    ids = os.path.join(sample, "golden", meta["ids"])
    load = np.load(os.path.join(gold, "load.npy")).tolist()
    check = Checks()

    plan = os.path.join(work, "plan_p2")
    run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sample, "model.onnx"), "-o", plan,
         "--attn-ranks", "2", "--ffn-ranks", "2", "--groups", "2"])
    base = [os.path.join(bin_dir, "disagmoe-run"), plan, "--train", "--verbose", "--input", ids, "--optimizer", "sgd"]

    plain = run(base + ["--save-grads", os.path.join(work, "plain_grads")])
    check("aux loss" not in plain, "without --aux-loss-coef no aux loss is printed")
    check(parse_load(plain) == load, f"per-expert load {parse_load(plain)} equals PyTorch's top-k counts")

    # Top-k ties: the same plan with layers 0-1's router weights read from a crafted file.
    tied = json.load(open(os.path.join(plan, "plan.json")))
    weights = tied["model"]["weights"]
    routers = {c["layer"]: c["weight"] for c in tied["model"]["components"] if c["kind"] == "router"}
    raw = os.path.join(work, "tied_routers.bin")
    with open(raw, "wb") as f:
        for layer in (0, 1):
            w = np.load(os.path.join(gold, f"tie_router_l{layer}.npy")).astype("<f4")
            entry = next(x for x in weights if x["name"] == routers[layer])
            assert entry["shape"] == list(w.shape) and not entry["transposed"], entry
            entry.update(file=raw, offset=f.tell(), length=w.nbytes)
            f.write(w.tobytes())
    tied_plan = os.path.join(work, "plan_tied")
    os.makedirs(tied_plan, exist_ok=True)
    with open(os.path.join(tied_plan, "plan.json"), "w") as f:
        json.dump(tied, f)
    tie_grads = os.path.join(work, "tie_grads")
    text = run([os.path.join(bin_dir, "disagmoe-run"), tied_plan, "--train", "--verbose", "--input", ids, "--optimizer", "sgd",
                "--save-grads", tie_grads])
    loss = float(re.search(r"step 1: loss ([0-9.eE+-]+)", text).group(1))
    err = abs(loss - meta["tie_loss"]) / meta["tie_loss"]
    check(err <= LOSS_TOL, f"tied routers: loss {loss:.7f} vs PyTorch (ONNX TopK ties) {meta['tie_loss']:.7f}, "
                           f"relative error {err:.2e}")
    tie_load = np.load(os.path.join(gold, "tie_load.npy")).tolist()
    check(parse_load(text) == tie_load, f"tied routers: per-expert load {parse_load(text)[:2]} (layers 0-1) "
                                        f"equals the lower-id tie rule's")
    worst, worst_key, zero_ok = 0.0, "", True
    keys = sorted(f[len("tie_grad_"):-4] for f in os.listdir(gold) if f.startswith("tie_grad_"))
    for key in keys:
        want = np.load(os.path.join(gold, f"tie_grad_{key}.npy")).astype(np.float64)
        got = np.load(os.path.join(tie_grads, key + ".npy")).astype(np.float64)
        if not np.any(want):
            zero_ok = zero_ok and not np.any(got)
            continue
        err = np.linalg.norm(got - want) / np.linalg.norm(want)
        if err > worst:
            worst, worst_key = err, key
    check(worst <= GRAD_TOL, f"tied routers: {len(keys)} gradients, worst ||err||/||grad|| {worst:.2e} ({worst_key})")
    check(zero_ok, "tied routers: the experts PyTorch gives no token (layer 0 experts 2-7) have exactly zero gradients")
    onnxruntime_tie_forward(bin_dir, sample, tied_plan, routers, gold, ids, work, check)

    # DeepSeek-V3's auxiliary-loss-free bias update over 3 steps.
    bias = meta["bias"]
    bias_dir = os.path.join(work, "bias_weights")
    steps = ["--steps", str(bias["steps"]), "--lr", str(bias["lr"])]
    text = run(base + steps + ["--router-bias-update-rate", str(bias["rate"]), "--save-weights", bias_dir])
    unbiased = run(base + steps)
    want_load = np.load(os.path.join(gold, "bias_load.npy")).tolist()
    for s in range(1, bias["steps"] + 1):
        loss = float(re.search(rf"step {s}: loss ([0-9.eE+-]+)", text).group(1))
        err = abs(loss - bias["loss"][s - 1]) / bias["loss"][s - 1]
        check(err <= 1e-4, f"bias update u={bias['rate']}: step {s} loss {loss:.7f} vs PyTorch "
                           f"{bias['loss'][s - 1]:.7f}, relative error {err:.2e}")
        check(parse_load(text, s) == want_load[s - 1], f"bias update: step {s} per-expert load equals PyTorch's")
    check(any(parse_load(text, s) != parse_load(unbiased, s) for s in range(2, bias["steps"] + 1)),
          "bias update: the biased choice differs from the unbiased run's in a later step")
    want_b = np.load(os.path.join(gold, "bias_b.npy"))
    got_b = np.stack([np.load(os.path.join(bias_dir, f"l{l}_router_selection_bias.npy")) for l in range(len(want_b))])
    berr = float(np.abs(got_b - want_b).max())
    check(berr <= 1e-7, f"bias update: b after step {bias['steps']} within {berr:.1e} of PyTorch's")
    werr, wkey = 0.0, ""
    for f in sorted(os.listdir(gold)):
        if f.startswith("bias_w_"):
            key = f[len("bias_w_"):-4]
            e = float(np.abs(np.load(os.path.join(bias_dir, key + ".npy")) - np.load(os.path.join(gold, f))).max())
            if e > werr:
                werr, wkey = e, key
    check(werr <= 1e-5, f"bias update: weights after step {bias['steps']}, max abs error {werr:.2e} ({wkey})")

    for name, v in sorted(meta["capacity_variants"].items()):
        micro = v["micro_batches"]
        grads = os.path.join(work, f"{name}_grads")
        text = run(base + ["--micro-batches", str(micro), "--capacity-factor", str(meta["capacity"]),
                           "--save-grads", grads])
        tag = f"capacity factor {meta['capacity']} micro-batches={micro}"
        loss = float(re.search(r"step 1: loss ([0-9.eE+-]+)", text).group(1))
        err = abs(loss - v["loss"]) / v["loss"]
        check(err <= LOSS_TOL, f"{tag}: loss {loss:.7f} vs PyTorch {v['loss']:.7f}, relative error {err:.2e}")
        got = [int(d) for d in re.search(r"dropped per layer \[([^\]]*)\]", text).group(1).split()]
        check(got == v["dropped"], f"{tag}: dropped assignments per layer {got} vs PyTorch {v['dropped']}")
        worst, worst_key = 0.0, ""
        keys = sorted(f[len(name) + 6:-4] for f in os.listdir(gold) if f.startswith(name + "_grad_"))
        for key in keys:
            want = np.load(os.path.join(gold, f"{name}_grad_{key}.npy")).astype(np.float64)
            got = np.load(os.path.join(grads, key + ".npy")).astype(np.float64)
            if not np.any(want):
                worst, worst_key = (worst, worst_key) if not np.any(got) else (np.inf, key)
                continue
            err = np.linalg.norm(got - want) / np.linalg.norm(want)
            if err > worst:
                worst, worst_key = err, key
        check(worst <= GRAD_TOL, f"{tag}: {len(keys)} gradients, worst ||err||/||grad|| {worst:.2e} ({worst_key})")

    for name, v in sorted(meta["variants"].items()):
        micro = v["micro_batches"]
        grads = os.path.join(work, f"{name}_grads")
        text = run(base + ["--micro-batches", str(micro), "--aux-loss-coef", str(meta["alpha"]),
                           "--save-grads", grads])
        tag = f"p=2 A=2 F=2 micro-batches={micro} alpha={meta['alpha']}"
        loss = float(re.search(r"step 1: loss ([0-9.eE+-]+)", text).group(1))
        aux = float(re.search(r"aux loss ([0-9.eE+-]+)", text).group(1))
        for what, got, want in (("loss", loss, v["loss"]), ("aux loss", aux, v["aux"])):
            err = abs(got - want) / abs(want)
            check(err <= LOSS_TOL, f"{tag}: {what} {got:.7f} vs PyTorch {want:.7f}, relative error {err:.2e}")
        check(parse_load(text) == load, f"{tag}: per-expert load equals PyTorch's")
        worst, worst_key = 0.0, ""
        keys = sorted(f[len(name) + 6:-4] for f in os.listdir(gold) if f.startswith(name + "_grad_"))
        for key in keys:
            want = np.load(os.path.join(gold, f"{name}_grad_{key}.npy")).astype(np.float64)
            got = np.load(os.path.join(grads, key + ".npy")).astype(np.float64)
            err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
            if err > worst:
                worst, worst_key = err, key
        check(worst <= GRAD_TOL, f"{tag}: {len(keys)} gradients, worst ||err||/||grad|| {worst:.2e} ({worst_key})")
        if micro == 1:
            a = np.load(os.path.join(grads, "l0_router.npy"))
            b = np.load(os.path.join(work, "plain_grads", "l0_router.npy"))
            rel = np.linalg.norm(a - b) / np.linalg.norm(b)
            check(rel > 100 * GRAD_TOL, f"{tag}: the aux term changes the router gradient by {rel:.2e} (relative)")

    if mpirun:
        compare_mpi(bin_dir, plan, ids, work, mpirun, check)
    return check.summary()


if __name__ == "__main__":
    if len(sys.argv) not in (4, 6) or (len(sys.argv) == 6 and sys.argv[4] != "--mpirun"):
        raise SystemExit(__doc__)
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(*sys.argv[1:4], *sys.argv[5:]))
