#!/usr/bin/python3
"""Training goldens of a family sample: loss, every parameter's gradient, one SGD step, one AdamW
step and two AdamW steps, by PyTorch autograd and torch.optim on the family exporter's own module
and weights (never changes its outputs).

    /usr/bin/python3 samples/models/family_common/export_train_goldens.py FAMILY_DIR [--variant NAME]
    /usr/bin/python3 samples/models/family_common/export_train_goldens.py FAMILY_DIR --check

FAMILY_DIR is a family sample folder with an export.py (e.g. samples/models/qwen3_moe_tiny);
--variant selects one of its VARIANTS by name (default: the one whose subdir is "."). FAMILY_DIR may
also be samples/models/mixtral_variants (export_variants.py; --variant required, e.g.
hf_masking_utils_window_opset16): the model is that script's build() of the variant, its goldens go
to <variant>/golden/train/. The dtype forms of that script (DTYPE_VARIANTS: hf_bf16_opset17,
hf_fp16_opset17, in samples/models/mixtral_dtypes) are trained from fp32 master weights initialised
from the dtype-rounded weights (export_variants.py's rounded_fp32: every parameter rounded to
bfloat16 / float16 and back, what the file stores and the runtime widens exactly at load), in fp32,
as the plan computes them; their goldens go to ../mixtral_dtypes/<form>/golden/train/. The model is
built exactly as the exporter builds it (same seed), and
must reproduce golden/logits_b2_s8.npy (within the fp32 error model's regeneration bound). The batch is golden/ids_b2_s8.npy; targets are the next token within each sequence
and the loss is the mean cross-entropy over those B*(S-1) = 14 targets (docs/architecture.md,
"Training semantics and numerics"), as in samples/models/mixtral_tiny/export_grads.py.

Writes <variant dir>/golden/train/ (float32; linear weights as [in, out], like the runtime):
  loss.npy [1]                the loss
  grads.npz                   dL/dW of every parameter, under the runtime's keys (below)
  sgd.npz                     parameters after one torch.optim.SGD step (lr 0.1) from the initial
                              weights: every non-expert key and experts 0-3 of every layer
  adamw.npz                   parameters after one torch.optim.AdamW step (ADAMW: lr 1e-3, betas
                              0.9/0.999, eps 1e-8, weight decay 0.01 = disagmoe-run --optimizer adamw's
                              defaults) from the same gradients: every non-expert key, experts 0, 1,
                              E-2 and E-1 of every layer (both ends of the contiguous expert split) and
                              every expert with a zero gradient (below)
  adamw2.npz                  the same keys after two AdamW steps on the same batch (the second step's
                              gradient taken at the weights after the first), "mask_<key>" the elements
                              whose gradient exceeds ADAMW_MIN_GRAD in magnitude or is exactly zero at
                              each of the two steps (bits of the flattened key, np.packbits), and
                              "loss" [2] the loss of each step
  idle_batch.npz              only where the golden batch reaches every expert: a [1, 4] batch "ids"
                              that leaves an expert without a token (the first of IDLE_SEEDS, drawn
                              with router margins by family_export.draw_ids), its "loss" [1], and
                              every zero-gradient expert's parameters after one AdamW step from the
                              initial weights (train.json "idle_batch": seed, routing)
  train.json                  lr, AdamW hyper-parameters, target count, key lists, routing (below),
                              torch version

Routing: train.json "expert_load" {"l{l}": [tokens per expert]} counts, per MoE layer, the tokens
of the batch whose top-k (on the scores each router records through family_export's
record_router_scores) holds the expert; "idle_experts" lists every "l{l}_expert{e}" with load 0 (no
token reaches it), "zero_grad_experts" every expert whose every gradient is exactly 0: the idle ones
and those reached only by a sequence's last token, whose output no loss term depends on. AdamW still
decays them (w *= 1 - lr * wd): a parameter with no gradient (None) gets a zero gradient before the
step, as an optimizer with gradient buffers (Megatron, the runtime) sees it.
--check regenerates into a temporary folder and compares every array within the fp32 error
model's bound (tests/numerics/error_model.py).

Keys (disagmoe-run --save-grads names): embed, final_norm, head, l{l}_attn_norm, l{l}_ffn_norm,
l{l}_q|k|v|o, l{l}_q_norm, l{l}_k_norm (Qwen3), l{l}_router, l{l}_expert{e}_w1|w3|w2
(gate_proj|up_proj|down_proj), l{l}_dense_w1|w3|w2 (a dense layer's FFN) and l{l}_shared_w1|w3|w2
(shared experts; DeepSeek), l{l}_q|k|v|o_bias, l{l}_sinks, l{l}_router_bias, l{l}_expert{e}_b1|b2
(GPT-OSS; its stacked expert parameters split per expert, w1 the interleaved gate/up [hidden, 2*inner]),
l{l}_kv_a, l{l}_kv_norm, l{l}_kv_b (DeepSeek-V2's MLA; l{l}_q is its q_proj); Mixtral's
block_sparse_moe.gate is l{l}_router, its experts' w1|w3|w2 keep their names.
"""

import argparse
import copy
import importlib.util
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "numerics"))
import error_model  # noqa: E402  (tests/numerics/error_model.py: the regeneration bound)
IDS_FILE = "ids_b2_s8.npy"
SGD_LR = 0.1
# torch.optim.AdamW's arguments = disagmoe-run --optimizer adamw's defaults (runtime/train/Optimizer.h,
# runtime/tools/DistributedRun.cpp).
ADAMW = {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01}
ADAMW_MIN_GRAD = 1e-5  # issue 7: AdamW weights compared where |gradient| exceeds this
MASK_FLIPS = 1e-3  # the share of adamw2's mask that may cross ADAMW_MIN_GRAD on another kernel
IDLE_SEQ, IDLE_SEEDS = 4, range(7000, 7100)  # idle_batch.npz's search
LINEAR = {"q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o",
          "kv_a_proj_with_mqa": "kv_a", "kv_b_proj": "kv_b"}  # the last two: DeepSeek-V2's MLA
EXPERT = {"gate_proj": "w1", "up_proj": "w3", "down_proj": "w2"}


def param_key(name):
    """PyTorch parameter name -> (runtime key, is a Linear weight stored [out, in])."""
    p = name.split(".")
    if name == "embed_tokens.weight":
        return "embed", False
    if name == "norm.weight":
        return "final_norm", False
    if name == "lm_head.weight":
        return "head", True
    if p[0] == "layers" and p[-1] == "weight":
        l = f"l{p[1]}_"
        if p[2] == "input_layernorm":
            return l + "attn_norm", False
        if p[2] == "post_attention_layernorm":
            return l + "ffn_norm", False
        if p[2] == "self_attn" and p[3] in LINEAR:
            return l + LINEAR[p[3]], True
        if p[2] == "self_attn" and p[3] in ("q_norm", "k_norm"):
            return l + p[3], False
        if p[2] == "self_attn" and p[3] == "kv_a_layernorm":
            return l + "kv_norm", False
        if p[2] in ("mlp", "block_sparse_moe") and p[3] in ("gate", "router"):
            return l + "router", True
        if p[2] == "block_sparse_moe" and p[3] == "experts" and p[5] in ("w1", "w2", "w3"):  # Mixtral
            return f"{l}expert{p[4]}_{p[5]}", True
        if p[2] == "mlp" and p[3] == "experts" and p[5] in EXPERT:
            return f"{l}expert{p[4]}_{EXPERT[p[5]]}", True
        if p[2] == "mlp" and p[3] in EXPERT:  # a dense layer's FFN (DeepSeek)
            return f"{l}dense_{EXPERT[p[3]]}", True
        if p[2] == "mlp" and p[3] == "shared_experts" and p[4] in EXPERT:
            return f"{l}shared_{EXPERT[p[4]]}", True
    if p[0] == "layers" and p[-1] == "bias":
        l = f"l{p[1]}_"
        if p[2] == "self_attn" and p[3] in LINEAR:  # GPT-OSS projection biases
            return l + LINEAR[p[3]] + "_bias", False
        if p[2] == "mlp" and p[3] == "router":
            return l + "router_bias", False
    if p[0] == "layers" and p[2:] == ["self_attn", "sinks"]:
        return f"l{p[1]}_sinks", False
    raise SystemExit(f"export_train_goldens.py: no runtime key for parameter {name}")


# GPT-OSS's experts are stacked parameters [experts, ...]; expert e's slice is its runtime weight
# (gate_up_proj [hidden, 2*inner] already [in, out], gate/up interleaved as the plan's fused w1).
STACKED = {"gate_up_proj": "w1", "gate_up_proj_bias": "b1", "down_proj": "w2", "down_proj_bias": "b2"}


def golden_arrays(name, t):
    """(runtime key, float32 array) pairs of parameter `name` with value (or gradient) t."""
    p = name.split(".")
    if p[0] == "layers" and p[2:4] == ["mlp", "experts"] and len(p) == 5 and p[4] in STACKED:
        return [(f"l{p[1]}_expert{e}_{STACKED[p[4]]}", f32(t[e])) for e in range(t.shape[0])]
    key, linear = param_key(name)
    return [(key, f32(t.t() if linear else t))]


def step_key(key):
    return "_expert" not in key or key.split("_")[1] in ("expert0", "expert1", "expert2", "expert3")


def expert_of(key):
    """"l1_expert5_w1" -> ("l1_expert5", 5); None for a non-expert key."""
    p = key.split("_")
    if len(p) < 3 or not p[1].startswith("expert"):
        return None
    return f"{p[0]}_{p[1]}", int(p[1][len("expert"):])


def zero_grad_experts(grads):
    """Experts ("l{l}_expert{e}") whose every gradient is exactly zero."""
    experts = {}
    for key, g in grads.items():
        e = expert_of(key)
        if e:
            experts[e[0]] = experts.get(e[0], True) and not g.any()
    return sorted((e for e, zero in experts.items() if zero), key=expert_order)


def expert_order(name):
    """"l1_expert7" sorts before "l1_expert21"."""
    l, e = name.split("_")
    return int(l[1:]), int(e[len("expert"):])


def expert_loads(model, ids, grads, num_experts):
    """{"l{l}": tokens per expert} of every MoE layer: the top-k of the scores each router records
    (family_export.record_router_scores, in layer order) over every token of the batch."""
    import family_export  # on sys.path once export.py is loaded
    moe_layers = sorted({int(k.split("_")[0][1:]) for k in grads if expert_of(k)})
    scores = family_export._router_scores(model, ids)
    if len(scores) != len(moe_layers):
        raise SystemExit(f"export_train_goldens.py: {len(scores)} routers recorded, {len(moe_layers)} MoE layers")
    loads = {}
    for l, s in zip(moe_layers, scores):
        top = torch.topk(s.reshape(-1, num_experts), model.cfg["top_k"], dim=-1).indices
        loads[f"l{l}"] = torch.bincount(top.reshape(-1), minlength=num_experts).tolist()
    return loads


def routing(model, ids, grads, num_experts, name):
    """(expert_load, idle_experts, zero_grad_experts) of the batch `ids` with gradients `grads`."""
    loads = expert_loads(model, ids, grads, num_experts)
    idle = sorted((f"{l}_expert{e}" for l, load in loads.items() for e, n in enumerate(load) if n == 0),
                  key=expert_order)
    zero_grad = zero_grad_experts(grads)
    if not set(idle) <= set(zero_grad):
        raise SystemExit(f"{name}: experts without tokens but with a gradient: {sorted(set(idle) - set(zero_grad))}")
    return loads, idle, zero_grad


def idle_batch(model, num_experts, name):
    """Where the golden batch reaches every expert: the first seeded [1, IDLE_SEQ] batch
    (family_export.draw_ids, router margins kept) that leaves an expert of some layer without a token;
    its loss, routing and the weights of its zero-gradient experts after one AdamW step."""
    import family_export
    for seed in IDLE_SEEDS:
        ids, _, _ = family_export.draw_ids(model, 1, IDLE_SEQ, seed)
        m = copy.deepcopy(model)
        m.zero_grad(set_to_none=True)
        loss = lm_loss(m(ids), ids)
        loss.backward()
        for p in m.parameters():
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        grads = {k: a for n, p in m.named_parameters() for k, a in golden_arrays(n, p.grad)}
        loads, idle, zero_grad = routing(m, ids, grads, num_experts, name)
        if not idle:
            continue
        adamw(list(m.parameters())).step()
        arrays = {k: a for n, p in m.named_parameters() for k, a in golden_arrays(n, p)
                  if expert_of(k) and expert_of(k)[0] in zero_grad}
        arrays.update(ids=ids.numpy().astype(np.int64), loss=np.array([loss.item()], dtype=np.float32))
        return {"arrays": arrays, "meta": {"seed": seed, "shape": [1, IDLE_SEQ], "expert_load": loads,
                                            "idle_experts": idle, "zero_grad_experts": zero_grad}}
    raise SystemExit(f"{name}: no seed in {IDLE_SEEDS} leaves an expert without a token")


def adamw_key(key, num_experts, idle):
    e = expert_of(key)
    return e is None or e[1] in (0, 1, num_experts - 2, num_experts - 1) or e[0] in idle


def adamw(params):
    return torch.optim.AdamW(params, lr=ADAMW["lr"], betas=tuple(ADAMW["betas"]), eps=ADAMW["eps"],
                             weight_decay=ADAMW["weight_decay"])


def adamw_steps(model, ids, grads, keys):
    """Two AdamW steps on a copy of `model` (whose .grad holds the first step's gradients): the
    weights after step 1, after step 2 with the mask of its compared elements, and step 2's loss."""
    m = copy.deepcopy(model)
    for p_new, p_old in zip(m.parameters(), model.parameters()):
        p_new.grad = torch.zeros_like(p_old) if p_old.grad is None else p_old.grad.detach().clone()
    opt = adamw(list(m.parameters()))
    opt.step()
    step1 = {k: a for name, p in m.named_parameters() for k, a in golden_arrays(name, p) if k in keys}
    opt.zero_grad(set_to_none=False)  # zero, not None: an idle expert still decays at step 2
    loss2 = lm_loss(m(ids), ids)
    loss2.backward()
    grads2 = {k: a for name, p in m.named_parameters() for k, a in golden_arrays(name, p.grad) if k in keys}
    opt.step()
    step2 = {k: a for name, p in m.named_parameters() for k, a in golden_arrays(name, p) if k in keys}
    for k in keys:
        # Exactly zero gradients count as compared: that step is the weight decay alone (plus the
        # first step's momentum, set by a gradient above the threshold or zero), no sign to flip.
        ok1 = (np.abs(grads[k]) > ADAMW_MIN_GRAD) | (grads[k] == 0)
        ok2 = (np.abs(grads2[k]) > ADAMW_MIN_GRAD) | (grads2[k] == 0)
        step2["mask_" + k] = np.packbits((ok1 & ok2).reshape(-1))  # np.unpackbits(.., count=size) reads it
    return step1, step2, loss2.item()


def lm_loss(logits, ids):
    """Mean cross-entropy of each position's next token within its sequence."""
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))


def f32(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))


def load_family(family_dir):
    script = "export.py"
    if not os.path.exists(os.path.join(family_dir, script)) and os.path.exists(os.path.join(family_dir, MIXTRAL_VARIANTS)):
        script = MIXTRAL_VARIANTS
    spec = importlib.util.spec_from_file_location("family_export_module", os.path.join(family_dir, script))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# samples/models/mixtral_variants: export settings and attention/mask/RMSNorm forms of the Mixtral
# sample's modules (../mixtral_tiny/export.py), VARIANTS {name: (opset, fold, external, router scoring,
# mask form, RMSNorm form)}, each model made by its build(), its folder <name>/.
MIXTRAL_VARIANTS = "export_variants.py"


def mixtral_variant(module, name):
    """A variant of export_variants.py as a family variant: its build() (which seeds its weights
    itself) with two additions that change no output: model.cfg (the config family_export reads)
    and routers that record the scores their top-k selects on (family_export.record_router_scores:
    the probabilities, or the logits for "topk_softmax"), for the routing and idle batch below."""
    dtype = module.DTYPE_VARIANTS.get(name)  # a dtype form: DTYPE_BASE's modules, rounded weights
    if name not in module.VARIANTS and dtype is None:
        raise SystemExit(f"export_train_goldens.py: no variant {name} in {MIXTRAL_VARIANTS}")
    _, _, _, scoring, mask_form, norm_form = module.VARIANTS[module.DTYPE_BASE if dtype else name]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import family_export  # samples/models/family_common, this script's folder

    class RecordingRouter(module.Router):
        def route(self, x):
            logits, probs, w, ids = super().route(x)
            family_export.record_router_scores(logits if self.scoring == "topk_softmax" else probs)
            return logits, probs, w, ids

    def build():
        model = module.build(scoring, mask_form, norm_form)
        if dtype is not None:
            model = module.rounded_fp32(model, dtype)  # fp32 master weights = the stored ones
        model.cfg = dict(module.CONFIG)
        for layer in model.layers:
            layer.block_sparse_moe.__class__ = RecordingRouter  # a class, so that deepcopy keeps it
        return model

    subdir = os.path.relpath(os.path.join(module.DTYPE_OUT, name), os.path.dirname(module.__file__)) if dtype else name
    return {"name": name, "subdir": subdir, "weight_seed": 0, "build": build}


def pick_variant(module, name):
    if hasattr(module, "export_variant"):  # mixtral_variants/export_variants.py
        if name is None:
            raise SystemExit(f"export_train_goldens.py: {MIXTRAL_VARIANTS} needs --variant NAME")
        return mixtral_variant(module, name)
    for v in module.VARIANTS:
        if (name is None and v["subdir"] == ".") or v["name"] == name:
            return v
    raise SystemExit(f"export_train_goldens.py: no variant {name or 'with subdir .'} in export.py")


def generate(family_dir, variant, out_root):
    torch.set_num_threads(1)  # fixed reduction order
    torch.manual_seed(variant["weight_seed"])  # as family_export.generate_variant
    model = variant["build"]()
    vdir = os.path.join(family_dir, variant["subdir"])
    ids = torch.from_numpy(np.load(os.path.join(vdir, "golden", IDS_FILE)))
    B, S = ids.shape
    logits = model(ids)
    ref = np.load(os.path.join(vdir, "golden", f"logits_b{B}_s{S}.npy"))
    same, text = error_model.compare_regenerated(f"golden/logits_b{B}_s{S}.npy", ref, f32(logits),
                                                 error_model.forward_chain_of(os.path.join(vdir, "golden")))
    if not same:
        raise SystemExit(f"{variant['name']}: the rebuilt model no longer reproduces {text}")
    loss = lm_loss(logits, ids)
    loss.backward()
    grads, sgd = {}, {}
    for name, p in model.named_parameters():
        grads.update(golden_arrays(name, p.grad))
    num_experts = 1 + max((expert_of(k)[1] for k in grads if expert_of(k)), default=-1)
    loads, idle, zero_grad = routing(model, ids, grads, num_experts, variant["name"])
    keys = {k for k in grads if adamw_key(k, num_experts, zero_grad)}
    step1, step2, loss2 = adamw_steps(model, ids, grads, keys)  # on a copy, before SGD moves the model
    step2["loss"] = np.array([loss.item(), loss2], dtype=np.float32)
    extra = None if idle else idle_batch(model, num_experts, variant["name"])  # also before SGD
    opt = torch.optim.SGD(list(model.parameters()), lr=SGD_LR)
    opt.step()
    for name, p in model.named_parameters():
        sgd.update((k, a) for k, a in golden_arrays(name, p) if step_key(k))
    # Into the sample's folder, or (--check) a folder of the variant's name under out_root (a dtype
    # form's subdir climbs out of mixtral_variants).
    climbs = variant["subdir"].startswith(os.pardir)
    sub = variant["name"] if climbs and out_root != family_dir else variant["subdir"]
    tdir = os.path.join(out_root, sub, "golden", "train")
    os.makedirs(tdir, exist_ok=True)
    np.save(os.path.join(tdir, "loss.npy"), np.array([loss.item()], dtype=np.float32), allow_pickle=False)
    np.savez(os.path.join(tdir, "grads.npz"), **{k: grads[k] for k in sorted(grads)})
    np.savez(os.path.join(tdir, "sgd.npz"), **{k: sgd[k] for k in sorted(sgd)})
    np.savez(os.path.join(tdir, "adamw.npz"), **{k: step1[k] for k in sorted(step1)})
    np.savez(os.path.join(tdir, "adamw2.npz"), **{k: step2[k] for k in sorted(step2)})
    if extra:
        np.savez(os.path.join(tdir, "idle_batch.npz"), **{k: extra["arrays"][k] for k in sorted(extra["arrays"])})
    meta = {"variant": variant["name"], "ids": IDS_FILE, "target_tokens": int(B * (S - 1)),
            "loss": "mean cross-entropy over the next-token targets within each sequence",
            "sgd": {"lr": SGD_LR}, "keys": sorted(grads), "step_keys": sorted(sgd), "torch": torch.__version__,
            "adamw": dict(ADAMW, min_grad=ADAMW_MIN_GRAD, keys=sorted(step1)), "idle_experts": idle,
            "zero_grad_experts": zero_grad, "expert_load": loads}
    if extra:
        meta["idle_batch"] = extra["meta"]
    with open(os.path.join(tdir, "train.json"), "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
    return tdir, loss.item()


def compare(ref_dir, new_dir, cfg):
    """Every file of new_dir against ref_dir within the fp32 error model's bound for a gradient's
    chain (tests/numerics/error_model.py); AdamW weights where rounding cannot flip the step."""
    ok = True
    chain = error_model.grad_chain_length(cfg, 8, 16)
    grads = np.load(os.path.join(ref_dir, "grads.npz"))
    for f in ("loss.npy", "grads.npz", "sgd.npz", "adamw.npz", "adamw2.npz", "idle_batch.npz", "train.json"):
        a, b = os.path.join(ref_dir, f), os.path.join(new_dir, f)
        if f == "idle_batch.npz" and not os.path.exists(a) and not os.path.exists(b):
            continue  # the golden batch leaves an expert idle already
        if not os.path.exists(a) or not os.path.exists(b):
            print(f"{a if not os.path.exists(a) else b}: missing")
            ok = False
        elif f == "train.json":
            with open(a) as fa, open(b) as fb:
                same, text = error_model.compare_json(a, json.load(fa), json.load(fb), chain)
            if not same:
                print(text)
                ok = False
        else:
            x, y = np.load(a), np.load(b)
            pairs = [(k, x[k], y[k]) for k in x.files] if f.endswith(".npz") else [(f, x, y)]
            if f.endswith(".npz") and sorted(x.files) != sorted(y.files):
                print(f"{a}: keys differ")
                ok = False
                continue
            for k, u, v in pairs:
                if k.startswith("mask_"):
                    # Which elements adamw2 compares (|g| > ADAMW_MIN_GRAD at both steps): a gradient
                    # within rounding of the threshold crosses it on another kernel; the weights are
                    # compared on both masks' elements, and the masks may differ on MASK_FLIPS of them.
                    a_bits, b_bits = np.unpackbits(u), np.unpackbits(v)
                    flips = int(np.count_nonzero(a_bits != b_bits))
                    if u.shape != v.shape or flips > MASK_FLIPS * a_bits.size:
                        print(f"{a}: {k}: {flips} of {a_bits.size} elements differ")
                        ok = False
                    continue
                mask = None
                if f == "adamw.npz":
                    mask = error_model.adamw_mask(grads[k], ADAMW_MIN_GRAD)
                elif f == "adamw2.npz" and not k.startswith("mask_") and "mask_" + k in x.files:
                    mask = (np.unpackbits(x["mask_" + k], count=u.size).reshape(u.shape).astype(bool)
                            & np.unpackbits(y["mask_" + k], count=u.size).reshape(u.shape).astype(bool))
                same, text = error_model.compare_regenerated(f"{a}: {k}", u, v, chain * (2 if f == "adamw2.npz" else 1),
                                                             mask)
                if not same:
                    print(text)
                    ok = False
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("family_dir")
    ap.add_argument("--variant", help="variant name (default: the variant whose subdir is '.')")
    ap.add_argument("--check", action="store_true", help="regenerate into a temporary folder and compare")
    args = ap.parse_args()
    family_dir = os.path.abspath(args.family_dir)
    sys.path.insert(0, family_dir)
    variant = pick_variant(load_family(family_dir), args.variant)
    if not args.check:
        tdir, loss = generate(family_dir, variant, family_dir)
        print(f"{variant['name']}: loss {loss:.6f}; wrote {tdir}")
        return 0
    tmp = tempfile.mkdtemp(prefix="family_train_goldens_")
    try:
        tdir, _ = generate(family_dir, variant, tmp)
        gdir = os.path.join(family_dir, variant["subdir"], "golden")
        with open(os.path.join(gdir, "config.json")) as f:
            cfg = json.load(f)
        ok = compare(os.path.join(gdir, "train"), tdir, cfg)
        print(error_model.worst_regenerated())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("check: OK" if ok else "check: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
