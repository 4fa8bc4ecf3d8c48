#!/usr/bin/python3
"""Training goldens of the tiny Mixtral sample: loss, gradients and one optimizer step.

Run with Debian's Python (torch 1.13):

    /usr/bin/python3 samples/models/mixtral_tiny/export_grads.py [--out DIR]
    /usr/bin/python3 samples/models/mixtral_tiny/export_grads.py --check [DIR]

It imports export.py's model code and weights (build_model) and never changes export.py's outputs
(model.onnx and golden/*); it writes DIR/golden/train/ (DIR defaults to this script's folder).
--check regenerates into a temporary folder and compares every file within the fp32 error model's bound
(tests/numerics/error_model.py).

The batch is golden/ids_b2_s8.npy; targets are the next token within each sequence (token t
predicts t+1; the last position of a sequence has no target), and the loss is the mean
cross-entropy over those B*(S-1) = 14 target tokens (docs/architecture.md, "Training semantics and
numerics"):

    loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))

Files (float32; linear weights [in, out] like the other goldens; T = 16 tokens flattened row-major):
  loss.npy [1], d_logits.npy [2,8,256]       the loss and dL/dlogits
  grad_<key>.npy                             dL/dW of every parameter (keys below)
  sgd_<key>.npy, adamw_<key>.npy             the parameter after one torch.optim.SGD step (lr 0.1)
                                             and one torch.optim.AdamW step (lr 1e-3, betas (0.9,
                                             0.999), eps 1e-8, weight decay 0.01), for every key in
                                             train.json "step_keys": every non-expert parameter,
                                             experts 0-3 of layer 0 and expert 0 of layer 1 (no
                                             tokens), to keep the folder small
  final_hidden.npy, d_final_norm.npy, d_final_hidden.npy
                                             input of the final norm, dL/d(its output), dL/d(its input)
  layer-0 intermediates and their gradients (the tensors of golden/ are the forward values):
    l0_q.npy, l0_k.npy, l0_v.npy             projections before RoPE, [T, heads*16] / [T, kv_heads*16]
    l0_q_rope.npy, l0_k_rope.npy             after RoPE
    l0_attn_heads.npy                        attention output before o_proj [T, 64]
    l0_d_<name>.npy                          dL/d(that tensor) for name in x (embedding output),
                                             attn_norm, q, k, v, q_rope, k_rope, attn_heads, h (=
                                             dL/d attn_out), ffn_norm, router_logits, topk_weights
                                             (the k gates, aligned with golden/l0_topk_ids), out
                                             (the layer's output = dL/d moe_out)
    l0_attn_norm_dx.npy, l0_ffn_norm_dx.npy  the norms' own input gradients (vector-Jacobian
                                             product of the norm alone with l0_d_attn_norm /
                                             l0_d_ffn_norm)
    l0_router_dx.npy                         dL/d ffn_norm through the router (gates) only
    l0_experts_dx.npy                        dL/d ffn_norm through the experts only (gates fixed)
  train.json                                 hyper-parameters, target count, key lists
  sched_sgd_<key>.npy, sched_adamw_<key>.npy the step_keys parameters after SCHED["steps"] steps on the
                                             same batch with gradient clipping
                                             (torch.nn.utils.clip_grad_norm_, max norm SCHED["clip_grad"])
                                             and linear warm-up + cosine decay of the lr (lr_at below, set
                                             on the param group before each step), once with SGD and once
                                             with AdamW; sched.json holds SCHED and, under "sched_sgd"/"sched_adamw", each
                                             step's loss, grad norm before clipping (clip_grad_norm_'s
                                             return) and lr

Keys: embed, l{l}_attn_norm, l{l}_q, l{l}_k, l{l}_v, l{l}_o, l{l}_ffn_norm, l{l}_router,
l{l}_expert{e}_w1, l{l}_expert{e}_w3, l{l}_expert{e}_w2, final_norm, head.
"""

import argparse
import copy
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # keep the sample folder clean
sys.path.insert(0, HERE)
import export  # noqa: E402  (the model code and weights; its outputs are untouched)
from export import error_model  # noqa: E402  (tests/numerics/error_model.py: the regeneration bound)

CFG = export.CONFIG
IDS_FILE = "ids_b2_s8.npy"
SGD = {"lr": 0.1}
ADAMW = {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01}
# A regenerated golden agrees with the committed one within the fp32 error model's bound for a
# gradient's chain (forward, loss, backward, the sum over the batch's 16 tokens), times the steps of
# the longest trajectory (SCHED); AdamW weights on the elements whose step rounding cannot flip.
GRAD_CHAIN = error_model.grad_chain_length(CFG, 8, 16)
# Clipping + schedule trajectories: the first step's norm (6.27) is clipped, later ones need not be.
SCHED = {"steps": 5, "clip_grad": 2.0, "warmup_steps": 2, "total_steps": 4, "lr_min": 1e-3,
         "sgd_lr": 0.1, "adamw_lr": 1e-2}


def param_key(name):
    """PyTorch parameter name -> (golden key, is a Linear weight stored [out, in])."""
    p = name.split(".")
    if name == "embed_tokens.weight":
        return "embed", False
    if name == "norm.weight":
        return "final_norm", False
    if name == "lm_head.weight":
        return "head", True
    l = p[1]
    if p[2] == "input_layernorm":
        return f"l{l}_attn_norm", False
    if p[2] == "post_attention_layernorm":
        return f"l{l}_ffn_norm", False
    if p[2] == "self_attn":
        return f"l{l}_{p[3][0]}", True  # q_proj -> q, ...
    if p[2] == "block_sparse_moe" and p[3] == "gate":
        return f"l{l}_router", True
    if p[2] == "block_sparse_moe" and p[3] == "experts":
        return f"l{l}_expert{p[4]}_{p[5]}", True
    raise SystemExit(f"unknown parameter {name}")


def as_golden(name, t):
    key, linear = param_key(name)
    t = t.detach()
    return key, export.f32(t.t() if linear else t)


def step_key(key):
    """Keys whose post-step weights are written (to keep the folder small): every non-expert
    parameter, experts 0-3 of layer 0, and expert 0 of layer 1 (which receives no token of the batch:
    zero gradient, but AdamW's weight decay still moves it)."""
    if "_expert" not in key:
        return True
    return key.split("_")[1] in ("expert0", "expert1", "expert2", "expert3") if key.startswith("l0_") \
        else key.startswith("l1_expert0_")


def lm_loss(logits, ids):
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))


def flat_heads(t):
    """[b, heads, s, d] -> [b*s, heads*d] (the runtime's [T, heads, d] layout)."""
    b, n, s, d = t.shape
    return t.transpose(1, 2).reshape(b * s, n * d)


def layer0_decomposed(l0, x, cos, sin, mask):
    """Layer 0 with every intermediate kept (same operations as DecoderLayer.forward)."""
    t = {}
    att, moe = l0.self_attn, l0.block_sparse_moe
    b, s, H = x.shape
    t["x"] = x
    an = l0.input_layernorm(x)
    t["attn_norm"] = an
    q, k, v = att.q_proj(an), att.k_proj(an), att.v_proj(an)
    t["q"], t["k"], t["v"] = q, k, v
    qh = q.view(b, s, att.num_heads, att.head_dim).transpose(1, 2)
    kh = k.view(b, s, att.num_kv_heads, att.head_dim).transpose(1, 2)
    vh = v.view(b, s, att.num_kv_heads, att.head_dim).transpose(1, 2)
    qr, kr = export.apply_rotary_pos_emb(qh, kh, cos, sin)
    t["q_rope"], t["k_rope"] = qr, kr
    n_rep = att.num_heads // att.num_kv_heads
    kk, vv = export.repeat_kv(kr, n_rep), export.repeat_kv(vh, n_rep)
    scores = torch.matmul(qr, kk.transpose(2, 3)) / (att.head_dim ** 0.5)
    probs = F.softmax(scores + mask, dim=-1, dtype=torch.float32).to(qr.dtype)
    heads = torch.matmul(probs, vv).transpose(1, 2).contiguous().reshape(b, s, att.num_heads * att.head_dim)
    t["attn_heads"] = heads
    ao = att.o_proj(heads)
    h = x + ao
    t["h"] = h
    fn = l0.post_attention_layernorm(h)
    t["ffn_norm"] = fn
    fnf = fn.reshape(-1, H)
    logits, _, w, ids = moe.route(fnf)
    t["router_logits"], t["topk_weights"] = logits, w
    mo = combine(moe, fnf, w, ids).reshape(b, s, H)
    out = h + mo
    t["out"] = out
    return t, ids


def combine(moe, fnf, w, ids):
    """SparseMoeBlock.forward's loop over experts, with given gates."""
    final = torch.zeros_like(fnf)
    mask = F.one_hot(ids, num_classes=moe.num_experts).permute(2, 1, 0)
    for e in range(moe.num_experts):
        idx, top_x = torch.where(mask[e])
        out = moe.experts[e](fnf[None, top_x].reshape(-1, fnf.shape[-1])) * w[top_x, idx, None]
        final.index_add_(0, top_x, out)
    return final


def lr_at(lr_max, step):
    """Linear warm-up over W steps from lr_max/W, cosine decay to lr_min at step T, then lr_min
    (runtime/train/LrSchedule.h; Megatron-LM's and Hugging Face's warm-up + cosine). step >= 1."""
    w, t, lo = SCHED["warmup_steps"], SCHED["total_steps"], SCHED["lr_min"]
    if step <= w:
        return lr_max * step / w
    if step > t:
        return lo
    return lo + (lr_max - lo) * 0.5 * (1.0 + math.cos(math.pi * (step - w) / (t - w)))


def sched_trajectory(ids, make_opt, lr_max):
    """SCHED["steps"] steps on `ids`: backward, clip_grad_norm_, lr from lr_at, optimizer step."""
    model = export.build_model()
    opt = make_opt(list(model.parameters()), lr_max)
    log = {"loss": [], "grad_norm": [], "lr": []}
    for step in range(1, SCHED["steps"] + 1):
        opt.zero_grad()
        loss = lm_loss(model(ids), ids)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), SCHED["clip_grad"])
        lr = lr_at(lr_max, step)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        log["loss"].append(loss.item())
        log["grad_norm"].append(norm.item())
        log["lr"].append(lr)
    assert log["grad_norm"][0] > SCHED["clip_grad"], "the first step must be clipped"
    weights = {}
    for name, p in model.named_parameters():
        key, w = as_golden(name, p)
        if step_key(key):
            weights[key] = w
    return log, weights


def vjp(fn, x, dy, params=()):
    x = x.detach().requires_grad_(True)
    return torch.autograd.grad(fn(x), [x, *params], dy)


def generate(out_dir):
    torch.set_num_threads(1)  # fixed reduction order
    gdir = os.path.join(HERE, "golden")
    tdir = os.path.join(out_dir, "golden", "train")
    os.makedirs(tdir, exist_ok=True)
    for f in os.listdir(tdir):
        if f.endswith(".npy") or f in ("train.json", "sched.json"):
            os.remove(os.path.join(tdir, f))
    files = {}
    ids = torch.from_numpy(np.load(os.path.join(gdir, IDS_FILE)))
    B, S = ids.shape
    H, V = CFG["hidden_size"], CFG["vocab_size"]

    # 1. Loss and parameter gradients through the plain module.
    model = export.build_model()
    logits = model(ids)
    same, text = error_model.compare_regenerated("golden/logits", np.load(os.path.join(gdir, f"logits_b{B}_s{S}.npy")),
                                                 export.f32(logits), export.GOLDEN_CHAIN)
    assert same, f"the model no longer reproduces golden/logits: {text}"
    loss = lm_loss(logits, ids)
    loss.backward()
    files["loss.npy"] = np.array([loss.item()], dtype=np.float32)
    grads = {}
    for name, p in model.named_parameters():
        key, g = as_golden(name, p.grad)
        grads[key] = g
        files[f"grad_{key}.npy"] = g

    # 2. One optimizer step each, from the initial weights and these gradients.
    for prefix, make in (("sgd", lambda ps: torch.optim.SGD(ps, lr=SGD["lr"])),
                         ("adamw", lambda ps: torch.optim.AdamW(ps, lr=ADAMW["lr"], betas=tuple(ADAMW["betas"]),
                                                                eps=ADAMW["eps"],
                                                                weight_decay=ADAMW["weight_decay"]))):
        m = copy.deepcopy(model)
        for p_new, p_old in zip(m.parameters(), model.parameters()):
            p_new.grad = p_old.grad.detach().clone()
        make(list(m.parameters())).step()
        for name, p in m.named_parameters():
            key, w = as_golden(name, p)
            if step_key(key):
                files[f"{prefix}_{key}.npy"] = w

    # 3. Intermediates: the same forward decomposed, every tensor's gradient kept.
    model.zero_grad()
    cos, sin, mask = model.rope_and_mask(ids)
    x0 = model.embed_tokens(ids)
    l0 = model.layers[0]
    t, top_ids = layer0_decomposed(l0, x0, cos, sin, mask)
    assert torch.equal(t["out"], l0(x0, cos, sin, mask)), "layer 0 decomposition differs from the module"
    assert np.array_equal(export.i64(top_ids), np.load(os.path.join(gdir, "l0_topk_ids.npy")))
    for v in t.values():
        v.retain_grad()
    xf = t["out"]
    for layer in model.layers[1:]:
        xf = layer(xf, cos, sin, mask)
    xf.retain_grad()
    fin = model.norm(xf)
    fin.retain_grad()
    lg = model.lm_head(fin)
    lg.retain_grad()
    loss2 = lm_loss(lg, ids)
    assert loss2.item() == loss.item(), "decomposed forward changes the loss"
    loss2.backward()
    for name, p in model.named_parameters():
        key, g = as_golden(name, p.grad)
        assert np.allclose(g, grads[key], rtol=0, atol=1e-6), f"decomposed gradient of {name} differs"

    flat = lambda x: export.f32(x.reshape(-1, x.shape[-1]))  # noqa: E731
    files["d_logits.npy"] = export.f32(lg.grad)
    files["final_hidden.npy"] = flat(xf)
    files["d_final_norm.npy"] = flat(fin.grad)
    files["d_final_hidden.npy"] = flat(xf.grad)
    for name in ("q", "k", "v", "attn_heads"):
        files[f"l0_{name}.npy"] = flat(t[name])
    for name in ("q_rope", "k_rope"):
        files[f"l0_{name}.npy"] = export.f32(flat_heads(t[name]))
    for name in ("x", "attn_norm", "q", "k", "v", "attn_heads", "h", "ffn_norm", "router_logits", "topk_weights",
                 "out"):
        files[f"l0_d_{name}.npy"] = flat(t[name].grad)
    for name in ("q_rope", "k_rope"):
        files[f"l0_d_{name}.npy"] = export.f32(flat_heads(t[name].grad))

    # The norms alone, the router alone (through the gates) and the experts alone (gates fixed).
    files["l0_attn_norm_dx.npy"] = flat(vjp(l0.input_layernorm, x0, t["attn_norm"].grad)[0])
    files["l0_ffn_norm_dx.npy"] = flat(vjp(l0.post_attention_layernorm, t["h"], t["ffn_norm"].grad)[0])
    moe = l0.block_sparse_moe
    fnf = t["ffn_norm"].reshape(-1, H)
    files["l0_router_dx.npy"] = export.f32(vjp(lambda z: moe.route(z)[2], fnf, t["topk_weights"].grad)[0])
    w_fixed = t["topk_weights"].detach()
    files["l0_experts_dx.npy"] = export.f32(
        vjp(lambda z: combine(moe, z, w_fixed, top_ids), fnf, t["out"].grad.reshape(-1, H))[0])
    total = files["l0_router_dx.npy"] + files["l0_experts_dx.npy"]
    assert np.allclose(total, files["l0_d_ffn_norm.npy"], rtol=0, atol=1e-6), "router + experts != d ffn_norm"

    # 4. Clipping and the lr schedule over several steps (SGD and AdamW).
    sched_logs = {}
    for prefix, make, lr_max in (
            ("sched_sgd", lambda ps, lr: torch.optim.SGD(ps, lr=lr), SCHED["sgd_lr"]),
            ("sched_adamw", lambda ps, lr: torch.optim.AdamW(ps, lr=lr, betas=tuple(ADAMW["betas"]), eps=ADAMW["eps"],
                                                             weight_decay=ADAMW["weight_decay"]), SCHED["adamw_lr"])):
        log, weights = sched_trajectory(ids, make, lr_max)
        sched_logs[prefix] = log
        for key, w in weights.items():
            files[f"{prefix}_{key}.npy"] = w

    step_keys = sorted(k for k in grads if step_key(k))
    meta = {
        "ids": IDS_FILE,
        "targets": "next token within each sequence; the last position has none",
        "target_tokens": int(B * (S - 1)),
        "loss": "mean cross-entropy over the target tokens",
        "sgd": SGD,
        "adamw": ADAMW,
        "keys": sorted(grads),
        "step_keys": step_keys,
        "torch": torch.__version__,
    }
    for name in sorted(files):
        np.save(os.path.join(tdir, name), files[name], allow_pickle=False)
    with open(os.path.join(tdir, "train.json"), "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(tdir, "sched.json"), "w") as f:
        json.dump({"sched": SCHED, "step_keys": step_keys, "torch": torch.__version__, **sched_logs}, f, indent=2,
                  sort_keys=True)
        f.write("\n")
    return files, meta


def check(ref_dir):
    ok = True
    tmp = tempfile.mkdtemp(prefix="mixtral_tiny_grads_")
    try:
        generate(tmp)
        rd, td = os.path.join(ref_dir, "golden", "train"), os.path.join(tmp, "golden", "train")
        ref_files = set(os.listdir(rd)) if os.path.isdir(rd) else set()
        new_files = set(os.listdir(td))
        for f in sorted(ref_files ^ new_files):
            print(f"golden/train/{f}: present in only one of the two folders")
            ok = False
        for f in sorted(ref_files & new_files):
            chain = GRAD_CHAIN * (SCHED["steps"] if f.startswith("sched") else 1)
            if f.endswith(".npy"):
                x, y = np.load(os.path.join(rd, f)), np.load(os.path.join(td, f))
                mask = None
                if f.startswith("adamw_"):
                    mask = error_model.adamw_mask(np.load(os.path.join(rd, "grad_" + f[len("adamw_"):])))
                if f.startswith("sched_adamw_"):
                    # Five AdamW steps: a gradient at the rounding level flips its lr-sized update at
                    # any step; each element within the trajectory bound (the losses and gradient
                    # norms of sched.json are held to the fp32 bound).
                    lrs = json.load(open(os.path.join(rd, "sched.json")))["sched_adamw"]["lr"]
                    tol = error_model.adamw_trajectory_bound(lrs, *ADAMW["betas"])
                    err = float(np.abs(y.astype(np.float64) - x).max())
                    good = err <= tol
                    text = f"golden/train/{f}: max abs difference {err:.2e} (AdamW trajectory bound {tol:.2e})"
                else:
                    good, text = error_model.compare_regenerated(f"golden/train/{f}", x, y, chain, mask)
            elif f in ("train.json", "sched.json"):
                with open(os.path.join(rd, f)) as fa, open(os.path.join(td, f)) as fb:
                    good, text = error_model.compare_json(f"golden/train/{f}", json.load(fa), json.load(fb), chain)
            else:
                continue
            if not good:
                print(text)
                ok = False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(error_model.worst_regenerated())
    print("check: OK" if ok else "check: FAILED")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE, help="output folder (default: this script's folder)")
    ap.add_argument("--check", nargs="?", const=HERE, metavar="DIR",
                    help="regenerate into a temporary folder and compare with DIR")
    args = ap.parse_args()
    if args.check is not None:
        sys.exit(0 if check(args.check) else 1)
    files, meta = generate(args.out)
    tdir = os.path.join(args.out, "golden", "train")
    total = sum(os.path.getsize(os.path.join(tdir, f)) for f in os.listdir(tdir))
    print(f"loss {float(files['loss.npy'][0]):.6f} over {meta['target_tokens']} target tokens")
    print(f"golden/train/: {len(os.listdir(tdir))} files, {total} bytes")


if __name__ == "__main__":
    main()
