#!/usr/bin/python3
"""One training step of the family samples against PyTorch autograd goldens.

    check_training_families.py BIN_DIR SAMPLES_DIR WORK_DIR [--mpirun MPIRUN] [SAMPLE ...]

For each sample (default: FAMILIES) with golden/train/ written by
samples/models/family_common/export_train_goldens.py (or, for another export form of the same module
and weights, SAME_MODEL, that sample's): compile with 2 attention ranks, 2 FFN ranks
and p = 2 groups, run `disagmoe-run --train` (SGD, lr 0.1) on golden/ids_b2_s8.npy with
--save-grads and --save-weights, and compare
  - the loss:                          relative error within the fp32 error model's tail bound for
                                       the loss's chain (tests/numerics/error_model.py loss_bound)
  - every parameter's gradient:        within the model's bounds per tensor (grad_bound: normwise
                                       2 sqrt(2D/3) u, per element 6 sqrt(2D/3) u of max|grad|;
                                       every key of grads.npz must be written, and no other)
  - the weights after one SGD step:    max abs error <= 1e-6 (the keys of sgd.npz)
  - the weights after one AdamW step   max abs error <= 1e-6 on every element whose torch gradient
    (--optimizer adamw, its defaults   exceeds 1e-5 in magnitude (issue 7; a smaller gradient's update
    lr 1e-3, betas 0.9/0.999, eps 1e-8, lr * g / (|g| + eps) flips sign under rounding) or is exactly
    weight decay 0.01):                zero (the weight decay alone), the keys of adamw.npz
  - routing: the tokens per expert of every MoE layer (the "step 1 expert load" line) equal torch's
    top-k counts (train.json "expert_load")
  - idle experts (train.json "idle_experts": no token of the batch reaches them): our gradient is
    exactly zero, and their AdamW step is the weight decay alone, compared on every element (also
    within 1e-6 relative: the decay itself is 1e-5 relative), and against the closed form
    w0 * (1 - lr * wd) where sgd.npz holds w0 (zero gradient: SGD keeps w0);
    experts reached only by last tokens ("zero_grad_experts") are compared on every element too.
    Where the golden batch reaches every expert (gpt_oss_tiny, deepseek_v2_lite_tiny), the same on
    idle_batch.npz's [1, 4] batch, which leaves one without a token: loss, routing, zero gradients
    and the decayed weights of its zero-gradient experts
Also with two micro-batches (the gradients must not depend on the split), and two AdamW steps on the
same batch with two micro-batches: each step's loss (relative 1e-5) and the weights after step 2
within 1e-6 where adamw2.npz's mask says both steps' torch gradients exceed 1e-5 or are exactly zero
(every element of an expert idle at both steps). With --mpirun, the one-micro-batch SGD and AdamW
steps and the two AdamW steps with two micro-batches also run as
`mpirun -np WORLD disagmoe-run --comm mpi` (one process per rank) and their gradient and weight
files must be byte-identical to the local comm's.
"""

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "numerics"))
import error_model  # noqa: E402

FAMILIES = ["qwen3_moe_tiny", "qwen3_moe_tiny/norm_topk_false", "deepseek_moe_tiny", "gpt_oss_tiny",
            "deepseek_v2_lite_tiny", "qwen3_moe_tiny/dense_masked", "gpt_oss_tiny/dense_masked", "gpt_oss_tiny/einsum",
            "qwen3_moe_tiny/hf_forms", "gpt_oss_tiny/hf_dense", "gpt_oss_tiny/hf_loop",
            # GPT-OSS's YaRN RoPE (rope_inv_freq, rope_attention_factor), its own model and goldens.
            "gpt_oss_tiny/hf_yarn",
            # The Hugging Face forms of the Mixtral sample's modules (samples/models/mixtral_variants, issue 12):
            # RMSNorm casts, both generations of transformers' causal masks (with and without a sliding
            # window) and the scaled_dot_product_attention symbolic; goldens by export_train_goldens.py
            # samples/models/mixtral_variants --variant NAME, each from its own model (the window
            # variants' losses differ from the full-causal ones').
            "mixtral_variants/hf_casts_opset17", "mixtral_variants/hf_mask_converter_opset17",
            "mixtral_variants/hf_mask_converter_window_opset14", "mixtral_variants/hf_masking_utils_opset17",
            "mixtral_variants/hf_masking_utils_window_opset16", "mixtral_variants/sdpa_symbolic_opset17",
            # attention_mask and position_ids as graph inputs, bound to ones and 0..S-1 at compile time.
            "mixtral_variants/hf_masking_utils_inputs_opset17", "mixtral_variants/hf_mask_converter_inputs_opset15",
            # optimum's text-generation-with-past signature: the KV caches bound empty, present.* dropped.
            "mixtral_variants/hf_masking_utils_past_opset17",
            # The float16 / bfloat16 exports (samples/models/mixtral_dtypes): fp32 master weights
            # initialised from the stored (dtype-rounded) weights, trained in fp32; goldens by
            # export_train_goldens.py samples/models/mixtral_variants --variant hf_bf16_opset17|hf_fp16_opset17.
            "mixtral_dtypes/hf_bf16_opset17", "mixtral_dtypes/hf_fp16_opset17"]
# Other export forms of the same module, weights and golden batch (export.py VARIANTS: "the same
# weights as ./"): checked against that sample's training goldens (torch's math is the same).
SAME_MODEL = {"qwen3_moe_tiny/dense_masked": "qwen3_moe_tiny", "gpt_oss_tiny/dense_masked": "gpt_oss_tiny",
              "gpt_oss_tiny/einsum": "gpt_oss_tiny", "qwen3_moe_tiny/hf_forms": "qwen3_moe_tiny",
              "gpt_oss_tiny/hf_dense": "gpt_oss_tiny",
              "gpt_oss_tiny/hf_loop": "gpt_oss_tiny"}
# The loss (relative) and every gradient (per tensor) are held to the fp32 error model's bounds for
# the sample's chain (tests/numerics/error_model.py loss_bound, grad_bound: 14 target tokens of [2, 8]),
# set per sample by set_bounds(); tests/e2e/check_mutations.py shows they catch real changes.
SGD_TOL = 1e-6
BOUNDS = {}
ADAMW_TOL, ADAMW_MIN_GRAD, DECAY_REL_TOL = 1e-6, 1e-5, 1e-6
ADAMW_ARGS = ["--optimizer", "adamw", "--lr", "1e-3", "--beta1", "0.9", "--beta2", "0.999", "--eps", "1e-8",
              "--weight-decay", "0.01"]
STEP_RE = re.compile(r"^step (\d+): loss (\S+) over (\d+) target tokens", re.M)


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout}")
    return r.stdout


def set_bounds(sdir):
    cfg = json.load(open(os.path.join(sdir, "golden", "config.json")))
    BOUNDS["loss"] = error_model.loss_bound(cfg, 8, 14)
    BOUNDS["grad"] = error_model.grad_bound(cfg, 8, 14)


def loss_tol():
    return BOUNDS["loss"].element


def check_sample(bin_dir, sdir, tdir, work, name, micro_batches):
    set_bounds(sdir)
    plan = os.path.join(work, "plan")
    gdir, wdir = os.path.join(work, f"grads_m{micro_batches}"), os.path.join(work, f"weights_m{micro_batches}")
    if not os.path.exists(os.path.join(plan, "plan.json")):
        run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sdir, "model.onnx"), "-o", plan,
             "--attn-ranks", "2", "--ffn-ranks", "2", "--groups", "2"])
    out = run([os.path.join(bin_dir, "disagmoe-run"), plan, "--train", "--verbose", "--input",
               os.path.join(sdir, "golden", "ids_b2_s8.npy"), "--optimizer", "sgd", "--lr", "0.1",
               "--micro-batches", str(micro_batches), "--save-grads", gdir, "--save-weights", wdir])
    m = re.search(r"^step 1: loss (\S+) over (\d+) target tokens", out, re.M)
    if not m:
        raise SystemExit(f"FAIL: {name}: no loss line in\n{out}")
    failures = []
    label = f"{name} (m={micro_batches})"
    ref_loss = float(np.load(os.path.join(tdir, "loss.npy"))[0])
    loss_err = abs(float(m.group(1)) - ref_loss) / abs(ref_loss)
    if loss_err > loss_tol() or int(m.group(2)) != 14:
        failures.append(f"{label}: loss {m.group(1)} over {m.group(2)} targets vs torch {ref_loss:.7f} (rel {loss_err:.2e})")
    grads = np.load(os.path.join(tdir, "grads.npz"))
    written = {f[:-4] for f in os.listdir(gdir) if f.endswith(".npy")}
    if written != set(grads.files):
        failures.append(f"{label}: gradient keys differ: only ours {sorted(written - set(grads.files))[:5]}, "
                        f"only torch {sorted(set(grads.files) - written)[:5]}")
    worst_grad = (0.0, "")
    for key in grads.files:
        if key not in written:
            continue
        ours, ref = np.load(os.path.join(gdir, key + ".npy")).astype(np.float64), grads[key].astype(np.float64)
        if ours.shape != ref.shape:
            failures.append(f"{label}: grad {key} shape {ours.shape} vs {ref.shape}")
            continue
        ok, text = BOUNDS["grad"].check(ours, ref)
        share = BOUNDS["grad"].share(ours, ref)
        worst_grad = max(worst_grad, (float(share), f"{key}: {text}"))
        if not ok:
            failures.append(f"{label}: grad {key}: {text}")
    sgd = np.load(os.path.join(tdir, "sgd.npz"))
    worst_sgd = (0.0, "")
    for key in sgd.files:
        path = os.path.join(wdir, key + ".npy")
        if not os.path.exists(path):
            failures.append(f"{label}: --save-weights wrote no {key}")
            continue
        ours = np.load(path).astype(np.float64)
        err = float(np.max(np.abs(ours - sgd[key]))) if ours.shape == sgd[key].shape else float("inf")
        worst_sgd = max(worst_sgd, (err, key))
        if not err <= SGD_TOL:
            failures.append(f"{label}: weights {key} after one SGD step: max abs error {err:.2e} > {SGD_TOL}")
    print(f"{label}: loss rel {loss_err:.1e} (bound {loss_tol():.1e}); {len(grads.files)} gradients, closest to the "
          f"bound {worst_grad[0]:.0%} of it ({worst_grad[1]}); {len(sgd.files)} weights after SGD, worst {worst_sgd[0]:.1e} ({worst_sgd[1]})")
    if micro_batches == 1:
        failures += check_adamw_step(bin_dir, sdir, tdir, work, label, gdir, grads, sgd)
        failures += check_idle_batch(bin_dir, tdir, work, label)
    else:
        failures += check_adamw_two_steps(bin_dir, sdir, tdir, work, label, micro_batches)
    return failures


def expert_keys(experts, keys):
    """Every key of `keys` that belongs to one of `experts` ("l{l}_expert{e}")."""
    return {k for k in keys if any(k.startswith(e + "_") for e in experts)}


LOAD_RE = re.compile(r"^step 1 expert load: (.*)$", re.M)


def check_expert_load(out, meta, label):
    """The runtime's per-expert token counts of step 1 against torch's top-k (train.json)."""
    m = LOAD_RE.search(out)
    if not m:
        return [f"{label}: no 'step 1 expert load' line"]
    ours = {l: [int(n) for n in counts.split()] for l, counts in re.findall(r"(l\d+) \[([\d ]*)\]", m.group(1))}
    bad = [l for l, load in meta["expert_load"].items() if ours.get(l) != load]
    return [f"{label}: expert load of {l}: ours {ours.get(l)}, torch {meta['expert_load'][l]}" for l in bad]


def decay_only_ok(ours, ref):
    """A zero-gradient step is w0 (1 - lr wd): a relative change of 1e-5, below the absolute tolerance
    for |w| < 0.1, so it is also held to 1e-6 relative (a missing decay is 1e-5 relative)."""
    return ours.shape == ref.shape and bool(np.all(np.abs(ours.astype(np.float64) - ref) <= DECAY_REL_TOL * np.abs(ref)))


def masked_error(ours, ref, mask):
    """Max |ours - ref| over the elements where mask is set (0 where none is)."""
    if ours.shape != ref.shape:
        return float("inf")
    err = np.abs(ours.astype(np.float64) - ref.astype(np.float64))
    return float(err[mask].max()) if mask.any() else 0.0


def check_adamw_step(bin_dir, sdir, tdir, work, label, gdir, grads, sgd):
    """One AdamW step (m = 1) from the initial weights vs torch.optim.AdamW (adamw.npz)."""
    wdir = os.path.join(work, "adamw_m1")
    out = run([os.path.join(bin_dir, "disagmoe-run"), os.path.join(work, "plan"), "--train", "--verbose", "--input",
               os.path.join(sdir, "golden", "ids_b2_s8.npy")] + ADAMW_ARGS + ["--save-weights", wdir])
    ref = np.load(os.path.join(tdir, "adamw.npz"))
    with open(os.path.join(tdir, "train.json")) as f:
        meta = json.load(f)
    idle, zero_grad = meta["idle_experts"], meta["zero_grad_experts"]
    idle_set, zero_set = expert_keys(idle, grads.files), expert_keys(zero_grad, grads.files)
    failures, worst, masked_out = check_expert_load(out, meta, label), (0.0, ""), 0
    for key in ref.files:
        path = os.path.join(wdir, key + ".npy")
        if not os.path.exists(path):
            failures.append(f"{label}: --save-weights (adamw) wrote no {key}")
            continue
        ours = np.load(path)
        # Elements with an exactly zero torch gradient (embedding rows of absent tokens, experts
        # without a token or with only last tokens) are compared too: their step is the weight decay
        # alone, with no sign to flip.
        mask = (np.abs(grads[key]) > ADAMW_MIN_GRAD) | (grads[key] == 0)
        if key in zero_set and not mask.all():
            failures.append(f"{label}: {key}: train.json says zero gradient, grads.npz does not")
        if key in zero_set and not decay_only_ok(ours, ref[key]):
            failures.append(f"{label}: {key} (zero gradient) after AdamW: not torch's w0 (1 - lr wd) within 1e-6 relative")
        masked_out += int(mask.size - mask.sum())
        err = masked_error(ours, ref[key], mask)
        worst = max(worst, (err, key))
        if not err <= ADAMW_TOL:
            failures.append(f"{label}: weights {key} after one AdamW step: max abs error {err:.2e} > {ADAMW_TOL} "
                            f"where |torch grad| > {ADAMW_MIN_GRAD} or = 0")
    for key in sorted(idle_set):
        g = np.load(os.path.join(gdir, key + ".npy"))
        if g.any():
            failures.append(f"{label}: {key} (no token): gradient not zero (max |g| {np.abs(g).max():.2e})")
        if key in sgd.files and key in ref.files:  # closed form: w0 * (1 - lr * wd), w0 = the SGD golden
            decayed = (sgd[key].astype(np.float64) * (1 - 1e-3 * 0.01))
            err = float(np.max(np.abs(np.load(os.path.join(wdir, key + ".npy")) - decayed)))
            if not err <= ADAMW_TOL:
                failures.append(f"{label}: idle {key} after AdamW: {err:.2e} from w0 * (1 - lr * wd)")
    for key in sorted(zero_set - idle_set):
        if np.load(os.path.join(gdir, key + ".npy")).any():
            failures.append(f"{label}: {key} (reached only by last tokens): gradient not zero")
    last_only = [e for e in zero_grad if e not in idle]
    print(f"{label}: {len(ref.files)} weights after one AdamW step, worst {worst[0]:.1e} ({worst[1]}), "
          f"{masked_out} elements with 0 < |torch grad| <= {ADAMW_MIN_GRAD} not compared; expert loads = "
          f"torch's; experts without a token (zero gradient, weight decay only): "
          f"{', '.join(idle) if idle else 'none in this batch'}; zero gradient, only last tokens: "
          f"{', '.join(last_only) if last_only else 'none'}")
    return failures


def check_idle_batch(bin_dir, tdir, work, label):
    """Where the golden batch reaches every expert, golden/train/idle_batch.npz's short batch leaves
    one without a token: one AdamW step on it, the loss, the routing, exact zero gradients of the
    zero-gradient experts and their decayed weights (every element) against torch."""
    with open(os.path.join(tdir, "train.json")) as f:
        meta = json.load(f).get("idle_batch")
    if meta is None:
        return []
    ref = np.load(os.path.join(tdir, "idle_batch.npz"))
    ids, gdir, wdir = (os.path.join(work, n) for n in ("idle_ids.npy", "idle_grads", "idle_adamw"))
    np.save(ids, ref["ids"])
    out = run([os.path.join(bin_dir, "disagmoe-run"), os.path.join(work, "plan"), "--train", "--verbose", "--input", ids]
              + ADAMW_ARGS + ["--save-grads", gdir, "--save-weights", wdir])
    failures = check_expert_load(out, meta, label + " idle batch")
    m = STEP_RE.search(out)
    ref_loss = float(ref["loss"][0])
    loss_err = abs(float(m.group(2)) - ref_loss) / abs(ref_loss) if m else float("inf")
    if not loss_err <= loss_tol():
        failures.append(f"{label}: idle batch loss {m.group(2) if m else '?'} vs torch {ref_loss:.7f}")
    keys = [k for k in ref.files if k not in ("ids", "loss")]
    worst = (0.0, "")
    for key in keys:
        if np.load(os.path.join(gdir, key + ".npy")).any():
            failures.append(f"{label}: idle batch: {key}: gradient not zero")
        ours = np.load(os.path.join(wdir, key + ".npy"))
        err = masked_error(ours, ref[key], np.ones(ref[key].shape, bool))
        worst = max(worst, (err, key))
        if not err <= ADAMW_TOL or not decay_only_ok(ours, ref[key]):
            failures.append(f"{label}: idle batch: {key} after AdamW (weight decay only): max abs error {err:.2e}"
                            f" (or above 1e-6 relative)")
    print(f"{label}: idle batch {tuple(ref['ids'].shape)} (seed {meta['seed']}): loss rel {loss_err:.1e}, expert "
          f"loads = torch's; without a token: {', '.join(meta['idle_experts'])}; {len(keys)} zero-gradient "
          f"expert weights after AdamW, worst {worst[0]:.1e} ({worst[1]})")
    return failures


def check_adamw_two_steps(bin_dir, sdir, tdir, work, label, micro_batches):
    """Two AdamW steps on the same batch vs torch (adamw2.npz: weights, masks, the two losses)."""
    wdir = os.path.join(work, f"adamw2_m{micro_batches}")
    out = run([os.path.join(bin_dir, "disagmoe-run"), os.path.join(work, "plan"), "--train", "--verbose", "--input",
               os.path.join(sdir, "golden", "ids_b2_s8.npy"), "--steps", "2", "--micro-batches",
               str(micro_batches)] + ADAMW_ARGS + ["--save-weights", wdir])
    ref = np.load(os.path.join(tdir, "adamw2.npz"))
    failures = []
    steps = [(int(m.group(1)), float(m.group(2))) for m in STEP_RE.finditer(out)]
    ref_loss = ref["loss"].astype(np.float64)
    if [s for s, _ in steps] != [1, 2]:
        failures.append(f"{label}: AdamW x2: step lines {steps}")
        loss_err = float("inf")
    else:
        loss_err = max(abs(l - r) / abs(r) for (_, l), r in zip(steps, ref_loss))
        if not loss_err <= loss_tol():
            failures.append(f"{label}: AdamW x2: losses {[l for _, l in steps]} vs torch {list(ref_loss)}")
    keys = [k for k in ref.files if k != "loss" and not k.startswith("mask_")]
    worst, compared = (0.0, ""), 0
    for key in keys:
        path = os.path.join(wdir, key + ".npy")
        if not os.path.exists(path):
            failures.append(f"{label}: --save-weights (adamw x2) wrote no {key}")
            continue
        want = ref[key]
        mask = np.unpackbits(ref["mask_" + key], count=want.size).reshape(want.shape).astype(bool)
        compared += int(mask.sum())
        err = masked_error(np.load(path), want, mask)
        worst = max(worst, (err, key))
        if not err <= ADAMW_TOL:
            failures.append(f"{label}: weights {key} after two AdamW steps: max abs error {err:.2e} > {ADAMW_TOL}")
    print(f"{label}: two AdamW steps: loss rel {loss_err:.1e}; {len(keys)} weights, worst {worst[0]:.1e} "
          f"({worst[1]}) over {compared} elements with |torch grad| > {ADAMW_MIN_GRAD} or 0 at both steps")
    return failures


def check_mpi(bin_dir, sdir, work, name, mpirun):
    """The m = 1 SGD and AdamW steps and the two AdamW steps with m = 2 under mpirun --comm mpi: files
    byte-identical to the local comm's."""
    with open(os.path.join(work, "plan", "plan.json")) as f:
        world = json.load(f)["placement"]["world_size"]
    cmd = [mpirun, "--oversubscribe", "-np", str(world)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    gdir, wdir = os.path.join(work, "grads_mpi"), os.path.join(work, "weights_mpi")
    run(cmd + [os.path.join(bin_dir, "disagmoe-run"), os.path.join(work, "plan"), "--comm", "mpi", "--train", "--verbose",
               "--input", os.path.join(sdir, "golden", "ids_b2_s8.npy"), "--optimizer", "sgd", "--lr", "0.1",
               "--save-grads", gdir, "--save-weights", wdir])
    adir = os.path.join(work, "adamw_mpi")
    run(cmd + [os.path.join(bin_dir, "disagmoe-run"), os.path.join(work, "plan"), "--comm", "mpi", "--train", "--verbose",
               "--input", os.path.join(sdir, "golden", "ids_b2_s8.npy")] + ADAMW_ARGS + ["--save-weights", adir])
    a2dir = os.path.join(work, "adamw2_mpi")
    run(cmd + [os.path.join(bin_dir, "disagmoe-run"), os.path.join(work, "plan"), "--comm", "mpi", "--train", "--verbose",
               "--input", os.path.join(sdir, "golden", "ids_b2_s8.npy"), "--steps", "2", "--micro-batches", "2"]
        + ADAMW_ARGS + ["--save-weights", a2dir])
    failures = []
    for local, mpi in ((os.path.join(work, "grads_m1"), gdir), (os.path.join(work, "weights_m1"), wdir),
                       (os.path.join(work, "adamw_m1"), adir), (os.path.join(work, "adamw2_m2"), a2dir)):
        names = sorted(os.listdir(local))
        if names != sorted(os.listdir(mpi)):
            failures.append(f"{name}: mpi wrote other files than local in {os.path.basename(mpi)}")
            continue
        _, mismatch, errors = filecmp.cmpfiles(local, mpi, names, shallow=False)
        if mismatch or errors:
            failures.append(f"{name}: mpi differs from local in {(mismatch + errors)[:5]}")
    print(f"{name}: --comm mpi on {world} processes (SGD gradients and weights, AdamW weights after 1 step and 2 steps m=2): "
          f"{'byte-identical to local' if not failures else 'DIFFERS'}")
    return failures


def main(bin_dir, samples_dir, work, names, mpirun=None):
    shutil.rmtree(work, ignore_errors=True)
    failures = []
    for name in names:
        sdir = os.path.join(samples_dir, name)
        swork = os.path.join(work, name.replace("/", "__"))
        os.makedirs(swork)
        ref = SAME_MODEL.get(name, name)
        tdir = os.path.join(samples_dir, ref, "golden", "train")
        if ref != name and not filecmp.cmp(os.path.join(sdir, "golden", "ids_b2_s8.npy"),
                                           os.path.join(samples_dir, ref, "golden", "ids_b2_s8.npy"), shallow=False):
            failures.append(f"{name}: golden/ids_b2_s8.npy differs from {ref}'s, whose training goldens it uses")
            continue
        for mb in (1, 2):
            failures += check_sample(bin_dir, sdir, tdir, swork, name, mb)
        if mpirun:
            failures += check_mpi(bin_dir, sdir, swork, name, mpirun)
    for f in failures:
        print("FAIL " + f)
    if not failures:
        shutil.rmtree(work, ignore_errors=True)
        print("OK")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rest, mpirun = sys.argv[4:], None
    if rest[:1] == ["--mpirun"]:
        mpirun, rest = rest[1], rest[2:]
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], rest or FAMILIES, mpirun))
