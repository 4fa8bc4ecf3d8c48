"""One training step of the compiled sample against PyTorch (issue 7).

Compiles samples/models/mixtral_tiny/model.onnx with 2 attention ranks and 2 FFN ranks, with one
group per side and with p = 2 groups (--groups 2), runs `disagmoe-run --train` on the golden batch
(ids_b2_s8, next-token targets) and compares with golden/train/ (export_grads.py, PyTorch 1.13
autograd and torch.optim):
  loss                      relative error within the fp32 error model's tail bound for the loss
                            (tests/numerics/error_model.py loss_bound, 14 target tokens of [2, 8])
  gradient of every weight  within grad_bound per tensor (normwise 2 sqrt(2D/3) u, per element
                            6 sqrt(2D/3) u of max|grad|)
  weights after one SGD step (lr 0.1)       max |got - torch| <= 1e-6
  weights after one AdamW step (lr 1e-3)    max |got - torch| <= 1e-6 where |torch grad| > 1e-5
and the same with the batch split into 2 micro-batches. Layer 1's expert 0 receives no token: its
gradient must be exactly zero and its AdamW step (weight decay only) must still match.
Clipping and the lr schedule (p = 2, golden/train/sched.json, PyTorch's clip_grad_norm_ and a
warm-up + cosine lr set before each step): SCHED_STEPS steps with SGD and with AdamW, each step's
lr (closed form, relative 1e-9), grad norm before clipping and loss (relative SCHED_TOL), and the
weights after the last step (SGD: max abs SCHED_STEP_TOL; AdamW: each element within the trajectory
bound of tests/numerics/error_model.py, since near-zero gradients flip the sign of their lr-sized
update; ||err|| / ||total update|| is printed).
  check_training.py BIN_DIR SAMPLE_DIR WORK_DIR
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
from checks import Checks

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "numerics"))
import error_model  # noqa: E402

STEP_TOL, ADAMW_MIN_GRAD = 1e-6, 1e-5
# The five-step trajectories: loss and gradient norm of every step relative SCHED_TOL, SGD weights max
# abs SCHED_STEP_TOL (not derived: a trajectory's error depends on every step's gradients, of which the
# goldens hold the first); AdamW weights within error_model.adamw_trajectory_bound, since a gradient
# at the rounding level flips its lr-sized update at any step.
SCHED_TOL, SCHED_STEP_TOL = 1e-4, 1e-5
STEP_RE = re.compile(r"step (\d+): loss ([0-9.eE+-]+) .* lr ([0-9.eE+-]+), grad norm ([0-9.eE+-]+)")


def initial_weights(sample, cache={}):
    """The sample's weights before training, by golden key (export.py's build_model)."""
    if not cache:
        sys.path.insert(0, sample)
        sys.dont_write_bytecode = True
        import export_grads  # noqa: E402
        for name, p in export_grads.export.build_model().named_parameters():
            key, w = export_grads.as_golden(name, p)
            cache[key] = w.astype(np.float64)
    return cache


def run(cmd):
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        print(result.stdout)
        raise SystemExit(f"FAILED ({result.returncode}): {' '.join(cmd)}")
    return result.stdout


def main(bin_dir, sample, work):
    gold = os.path.join(sample, "golden", "train")
    meta = json.load(open(os.path.join(gold, "train.json")))
    ids = os.path.join(sample, "golden", meta["ids"])
    torch_loss = float(np.load(os.path.join(gold, "loss.npy"))[0])
    cfg = json.load(open(os.path.join(sample, "golden", "config.json")))
    loss_tol = error_model.loss_bound(cfg, 8, 14).element
    grad_bound = error_model.grad_bound(cfg, 8, 14)
    check = Checks()

    for groups in (1, 2):
        plan = os.path.join(work, f"plan_p{groups}")
        run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sample, "model.onnx"), "-o", plan,
             "--attn-ranks", "2", "--ffn-ranks", "2", "--groups", str(groups)])
        for micro in (1, 2):
            tag = f"p={groups} A=2 F=2 micro-batches={micro}"
            out = os.path.join(work, f"p{groups}_m{micro}")
            text = run([os.path.join(bin_dir, "disagmoe-run"), plan, "--train", "--input", ids, "--optimizer", "sgd",
                        "--lr", "0.1", "--micro-batches", str(micro), "--save-grads", out + "_grads",
                        "--save-weights", out + "_sgd"])
            loss = float(re.search(r"step 1: loss ([0-9.eE+-]+)", text).group(1))
            err = abs(loss - torch_loss) / torch_loss
            check(err <= loss_tol, f"{tag}: loss {loss:.7f} vs PyTorch {torch_loss:.7f}, relative error {err:.2e} "
                                   f"(bound {loss_tol:.1e})")
            run([os.path.join(bin_dir, "disagmoe-run"), plan, "--train", "--input", ids, "--optimizer", "adamw",
                 "--lr", "1e-3", "--beta1", "0.9", "--beta2", "0.999", "--eps", "1e-8", "--weight-decay", "0.01",
                 "--micro-batches", str(micro), "--save-weights", out + "_adamw"])

            worst, worst_text, all_ok = -1.0, "", True
            for key in meta["keys"]:
                got = np.load(os.path.join(out + "_grads", key + ".npy"))
                want = np.load(os.path.join(gold, f"grad_{key}.npy"))
                ok, text = grad_bound.check(got, want)
                all_ok &= ok
                if not ok or grad_bound.share(got, want) > worst:
                    worst, worst_text = (grad_bound.share(got, want), f"{key}: {text}") if ok else (99.0, f"{key}: {text}")
            check(all_ok, f"{tag}: gradients of {len(meta['keys'])} weights within the bound; closest "
                          f"{worst_text}")
            idle = np.load(os.path.join(out + "_grads", "l1_expert0_w1.npy"))
            check(not idle.any(), f"{tag}: layer 1 expert 0 (no tokens) has a zero gradient")

            sgd_err = adamw_err = 0.0
            for key in meta["step_keys"]:
                g = np.load(os.path.join(gold, f"grad_{key}.npy"))
                s = np.abs(np.load(os.path.join(out + "_sgd", key + ".npy")).astype(np.float64)
                           - np.load(os.path.join(gold, f"sgd_{key}.npy")))
                sgd_err = max(sgd_err, float(s.max()))
                a = np.abs(np.load(os.path.join(out + "_adamw", key + ".npy")).astype(np.float64)
                           - np.load(os.path.join(gold, f"adamw_{key}.npy")))
                mask = np.abs(g) > ADAMW_MIN_GRAD
                if key.startswith("l1_expert0_"):
                    mask = np.ones_like(mask)  # zero gradient: the step is the weight decay alone
                if mask.any():
                    adamw_err = max(adamw_err, float(a[mask].max()))
            check(sgd_err <= STEP_TOL, f"{tag}: weights after one SGD step ({len(meta['step_keys'])} weights), "
                                       f"max abs error {sgd_err:.2e}")
            check(adamw_err <= STEP_TOL, f"{tag}: weights after one AdamW step, max abs error {adamw_err:.2e} "
                                         f"where |grad| > {ADAMW_MIN_GRAD}")
    sched = json.load(open(os.path.join(gold, "sched.json")))
    cfg = sched["sched"]
    for opt in ("sgd", "adamw"):
        out = os.path.join(work, f"sched_{opt}")
        text = run([os.path.join(bin_dir, "disagmoe-run"), os.path.join(work, "plan_p2"), "--train", "--input", ids,
                    "--optimizer", opt, "--lr", str(cfg[f"{opt}_lr"]), "--steps", str(cfg["steps"]),
                    "--clip-grad", str(cfg["clip_grad"]), "--warmup-steps", str(cfg["warmup_steps"]),
                    "--total-steps", str(cfg["total_steps"]), "--lr-min", str(cfg["lr_min"]),
                    "--save-weights", out])
        steps = [m.groups() for m in STEP_RE.finditer(text)]
        want = sched[f"sched_{opt}"]
        check(len(steps) == cfg["steps"], f"sched {opt}: {len(steps)} step lines")
        rel = lambda a, b: abs(a - b) / abs(b)  # noqa: E731
        lr_err = max(rel(float(s[2]), w) for s, w in zip(steps, want["lr"]))
        norm_err = max(rel(float(s[3]), w) for s, w in zip(steps, want["grad_norm"]))
        loss_err = max(rel(float(s[1]), w) for s, w in zip(steps, want["loss"]))
        check(lr_err <= 1e-6, f"sched {opt}: lr of {cfg['steps']} steps {[s[2] for s in steps]}, "
                              f"max relative error {lr_err:.1e}")
        check(norm_err <= SCHED_TOL, f"sched {opt}: grad norm before clipping, max relative error {norm_err:.2e}"
                                     f" (torch {['%.4f' % x for x in want['grad_norm']]}, clip {cfg['clip_grad']})")
        check(loss_err <= SCHED_TOL, f"sched {opt}: loss of every step, max relative error {loss_err:.2e}")
        # SGD: max abs error. AdamW: near-zero gradients flip the sign of their (lr-sized) update under
        # rounding, so the error is measured against the size of the whole update, per weight.
        werr, wkey, update_share = 0.0, None, 0.0
        want_lr = sched[f"sched_{opt}"]["lr"]
        for key in sched["step_keys"]:
            got = np.load(os.path.join(out, key + ".npy")).astype(np.float64)
            want = np.load(os.path.join(gold, f"sched_{opt}_{key}.npy")).astype(np.float64)
            e = float(np.abs(got - want).max())
            if opt == "adamw":
                init = initial_weights(sample)[key]
                update_share = max(update_share, float(np.linalg.norm(got - want) / np.linalg.norm(want - init)))
            if e > werr:
                werr, wkey = e, key
        if opt == "adamw":
            print(f"sched adamw: largest ||err|| / ||update|| of a weight {update_share:.2e} (reported, not a bound)")
        tol, what = (SCHED_STEP_TOL, "max abs error") if opt == "sgd" else (
            error_model.adamw_trajectory_bound(want_lr, 0.9, 0.999), "max abs error (AdamW trajectory bound)")
        check(werr <= tol, f"sched {opt}: weights after {cfg['steps']} steps ({len(sched['step_keys'])} weights), "
                           f"largest {what} {werr:.2e} ({wkey})")
    return check.summary()


if __name__ == "__main__":
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(*sys.argv[1:4]))
