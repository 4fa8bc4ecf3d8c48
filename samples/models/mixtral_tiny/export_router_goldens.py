#!/usr/bin/python3
"""Router-training goldens of the tiny Mixtral sample (issue 7, "Router training as practitioners
run it"): top-k ties, the Switch-Transformer load-balancing auxiliary loss, the capacity factor
and DeepSeek-V3's auxiliary-loss-free bias update.

Run with Debian's Python (torch 1.13):

    /usr/bin/python3 samples/models/mixtral_tiny/export_router_goldens.py [--out DIR]
    /usr/bin/python3 samples/models/mixtral_tiny/export_router_goldens.py --check [DIR]

It imports export.py / export_grads.py (model, weights, keys) and never changes their outputs; it
writes DIR/golden/router/ (DIR defaults to this script's folder). --check regenerates into a
temporary folder and compares every file within the fp32 error model's bound
(tests/numerics/error_model.py).

Aux loss (Fedus et al. 2021, "Switch Transformers", eq. 4), per MoE layer l and micro-batch m of
T_m tokens, with the Megatron-core switch_load_balancing_loss_func normalisation (sum_i f_i = 1;
Hugging Face Mixtral's load_balancing_loss_func is top_k times this):

    p_t = softmax(router logits z_t)                   (all E experts)
    c_i = #{(t, j): topk(p_t, k)[j] = i}               (top-k choices, before any drop)
    aux_{l,m} = alpha * E * sum_i (c_i / (k T_m)) * (1/T_m) sum_t p_ti
    total = CE (mean over the batch's targets) + sum_l sum_m (T_m / T) aux_{l,m}

The counts are constants (no gradient through top-k); the gradient reaches the router logits
through p. With micro-batches = 1 there is one m (the global batch of T = B*S tokens); with
micro-batches = 2 (batch 2) each sequence is one micro-batch.

Top-k ties (variant "tie"): the model with crafted router weights whose logits tie, layer 0's router
all zero (all E logits of every token equal) and layer 1's router with experts 3 and 6 copies of
expert 1 (their logits equal bit for bit). Ties go to the LOWER expert id, as the ONNX TopK
specification says ("If two elements are equal, the element with the lower index appears first"),
which torch.topk does NOT promise (on CPU it returns [6, 5] for eight zeros); the golden therefore
selects with a stable descending torch.sort. One plain step (CE only, no aux loss):
  tie_loss.npy [1], tie_grad_<key>.npy     the loss and the gradients of every non-expert weight and
                                           of layers 0-1's experts (experts 2-7 of layer 0 get none)
  tie_load.npy [L, E] int64                the top-k counts of every layer
  tie_router_l0.npy, tie_router_l1.npy     the crafted router weights [hidden, E] (float32, [in, out])

Capacity factor (variants cap_m1, cap_m2; CAPACITY below; CE only): per layer and micro-batch of T_m
tokens each expert takes at most ceil(C T_m k / E) assignments, granted to every token's first choice
in token order, then to every second choice (GShard's priority); a dropped assignment contributes
nothing (its expert never sees the token; the kept gates keep their pre-drop values):
  v_loss.npy [1], v_grad_<key>.npy         as above, for every non-expert weight and layers 0-1's experts
  v_dropped.npy [L] int64                  dropped assignments per layer (the whole batch)

DeepSeek-V3 auxiliary-loss-free balancing (report §2.1.2; BIAS below): every layer's router ranks the
experts by softmax probability + b (float32), the gates are the unbiased probabilities of the chosen
experts renormalised, and after each optimizer step b_i += u * sign(mean_j c_j - c_i) with c the
step's top-k counts. BIAS["steps"] SGD steps (lr BIAS["lr"]) on the golden batch, b = 0 at the start:
  bias_loss.npy [steps], bias_load.npy [steps, L, E] int64   each step's loss and top-k counts
  bias_b.npy [L, E]                          b after the last update
  bias_w_<key>.npy                           every non-expert weight after the last step

Files, per variant v in aux_m1, aux_m2 (ALPHA below, golden batch golden/ids_b2_s8.npy):
  v_loss.npy [1]                 the cross-entropy alone (what `loss` prints)
  v_aux.npy [1]                  sum_l sum_m (T_m/T) aux_{l,m}
  v_grad_<key>.npy               d(total)/dW of every non-expert parameter (export_grads.py's keys,
                                 [in, out]; the aux term reaches all of them below the last router;
                                 expert weights are left out to keep the folder small)
  load.npy [L, E] int64          c_i of the global batch per layer (the per-expert load)
  router.json                    alpha, variants, key list
"""

import argparse
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
import export  # noqa: E402
import export_grads  # noqa: E402
from export import error_model  # noqa: E402  (tests/numerics/error_model.py: the regeneration bound)

CFG = export.CONFIG
ALPHA = 0.5  # large, so the aux term's share of the router gradient is well above the tolerance


def router_logits(model, ids):
    """Forward of the whole model, keeping each layer's router logits [T, E] (with their graph)."""
    captured = []
    hooks = [layer.block_sparse_moe.gate.register_forward_hook(lambda m, i, o: captured.append(o))
             for layer in model.layers]
    logits = model(ids)
    for h in hooks:
        h.remove()
    return logits, captured


def aux_term(z, k, E):
    """aux / alpha for one group of tokens: E * sum_i f_i P_i, plus the counts c."""
    p = F.softmax(z, dim=-1, dtype=torch.float)
    _, top = torch.topk(p, k, dim=-1)
    c = F.one_hot(top, num_classes=E).sum(dim=(0, 1)).to(p.dtype)
    T = z.shape[0]
    return E * torch.sum(c / (k * T) * p.mean(dim=0)), c


def onnx_route(moe):
    """SparseMoeBlock.route with ONNX TopK's tie rule (stable descending sort: lower id first)."""
    def route(x):
        logits = moe.gate(x)
        probs = F.softmax(logits, dim=-1, dtype=torch.float)
        order = torch.sort(probs, dim=-1, descending=True, stable=True).indices[:, :moe.top_k]
        w = torch.gather(probs, 1, order)
        w = w / w.sum(dim=-1, keepdim=True)
        return logits, probs, w.to(x.dtype), order
    return route


def tie_model():
    """The sample with tied routers (module docstring) and the ONNX tie rule in every layer."""
    model = export.build_model()
    with torch.no_grad():
        model.layers[0].block_sparse_moe.gate.weight.zero_()
        g1 = model.layers[1].block_sparse_moe.gate.weight  # [E, hidden]
        g1[3] = g1[1]
        g1[6] = g1[1]
    for layer in model.layers:
        layer.block_sparse_moe.route = onnx_route(layer.block_sparse_moe)
    return model


def tie_variant(ids):
    model = tie_model()
    logits, zs = router_logits(model, ids)
    loss = export_grads.lm_loss(logits, ids)
    loss.backward()
    E, k = CFG["num_experts"], CFG["top_k"]
    files = {"tie_loss.npy": np.array([loss.item()], dtype=np.float32)}
    loads = []
    for z in zs:
        top = torch.sort(F.softmax(z.detach(), dim=-1), dim=-1, descending=True, stable=True).indices[:, :k]
        loads.append(np.bincount(top.reshape(-1).numpy(), minlength=E).astype(np.int64))
    files["tie_load.npy"] = np.stack(loads)
    for name, p in model.named_parameters():
        key, g = export_grads.as_golden(name, p.grad)
        if "_expert" not in key or key.startswith(("l0_", "l1_")):
            files[f"tie_grad_{key}.npy"] = g
    for l in (0, 1):
        files[f"tie_router_l{l}.npy"] = export.f32(model.layers[l].block_sparse_moe.gate.weight.detach().t())
    return files


CAPACITY = 1.0  # 4 slots per expert for 16 tokens: the golden batch drops 4, 7, 9, 6 assignments in layers 0-3


def keep_mask(top, E, k, C):
    """[T, k] 1.0 where the assignment fits its expert's capacity ceil(C T k / E) (GShard priority)."""
    T = top.shape[0]
    cap = math.ceil(C * T * k / E)
    used = [0] * E
    keep = torch.ones(T, k)
    for j in range(k):
        for t in range(T):
            e = int(top[t, j])
            if used[e] >= cap:
                keep[t, j] = 0.0
            else:
                used[e] += 1
    return keep


def capacity_forward(moe, dropped):
    """SparseMoeBlock.forward with the capacity rule; adds each call's drops to dropped[0]."""
    def forward(x):
        bsz, seq, hidden = x.shape
        x = x.view(-1, hidden)
        _, _, w, ids = moe.route(x)
        keep = keep_mask(ids, moe.num_experts, moe.top_k, CAPACITY)
        dropped[0] += int((keep == 0).sum())
        final = torch.zeros_like(x)
        mask = (F.one_hot(ids, num_classes=moe.num_experts) * keep[..., None].long()).permute(2, 1, 0)
        for e in range(moe.num_experts):
            idx, top_x = torch.where(mask[e])
            out = moe.experts[e](x[None, top_x].reshape(-1, hidden)) * w[top_x, idx, None]
            final.index_add_(0, top_x, out)
        return final.reshape(bsz, seq, hidden)
    return forward


def capacity_variant(ids, micro):
    """CE over the batch with the capacity rule applied per micro-batch (consecutive sequences)."""
    model = export.build_model()
    drops = [[0] for _ in model.layers]
    for layer, d in zip(model.layers, drops):
        layer.block_sparse_moe.forward = capacity_forward(layer.block_sparse_moe, d)
    B = ids.shape[0]
    per = B // micro
    n_targets = B * (ids.shape[1] - 1)
    total = torch.zeros(())
    for m in range(micro):
        mb = ids[m * per:(m + 1) * per]
        logits = model(mb)
        V = logits.shape[-1]
        total = total + F.cross_entropy(logits[:, :-1].reshape(-1, V), mb[:, 1:].reshape(-1), reduction="sum")
    loss = total / n_targets
    loss.backward()
    files = {"loss.npy": np.array([loss.item()], dtype=np.float32),
             "dropped.npy": np.array([d[0] for d in drops], dtype=np.int64)}
    for name, p in model.named_parameters():
        key, g = export_grads.as_golden(name, p.grad)
        if "_expert" not in key or key.startswith(("l0_", "l1_")):
            files[f"grad_{key}.npy"] = g
    return files


BIAS = {"rate": 0.01, "steps": 3, "lr": 0.1}


def biased_route(moe, b):
    """SparseMoeBlock.route choosing by probs + b (ONNX tie rule), gates from the unbiased probs."""
    def route(x):
        logits = moe.gate(x)
        probs = F.softmax(logits, dim=-1, dtype=torch.float)
        order = torch.sort(probs + b, dim=-1, descending=True, stable=True).indices[:, :moe.top_k]
        moe.last_ids = order
        w = torch.gather(probs, 1, order)
        w = w / w.sum(dim=-1, keepdim=True)
        return logits, probs, w.to(x.dtype), order
    return route


def bias_variant(ids):
    model = export.build_model()
    E, k = CFG["num_experts"], CFG["top_k"]
    biases = [torch.zeros(E, dtype=torch.float32) for _ in model.layers]
    for layer, b in zip(model.layers, biases):
        layer.block_sparse_moe.route = biased_route(layer.block_sparse_moe, b)
    opt = torch.optim.SGD(model.parameters(), lr=BIAS["lr"])
    losses, loads = [], []
    for _ in range(BIAS["steps"]):
        opt.zero_grad()
        loss = export_grads.lm_loss(model(ids), ids)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        step_load = []
        for layer, b in zip(model.layers, biases):
            c = F.one_hot(layer.block_sparse_moe.last_ids, num_classes=E).sum(dim=(0, 1)).to(torch.float32)
            b += BIAS["rate"] * torch.sign(c.mean() - c)  # in place: the route closure sees it
            step_load.append(c.numpy().astype(np.int64))
        loads.append(np.stack(step_load))
    files = {"bias_loss.npy": np.array(losses, dtype=np.float32), "bias_load.npy": np.stack(loads),
             "bias_b.npy": np.stack([b.numpy() for b in biases]).astype(np.float32)}
    for name, p in model.named_parameters():
        key, w = export_grads.as_golden(name, p)
        if "_expert" not in key:
            files[f"bias_w_{key}.npy"] = w
    return files


def variant(ids, micro):
    model = export.build_model()
    logits, zs = router_logits(model, ids)
    ce = export_grads.lm_loss(logits, ids)
    B, S = ids.shape
    E, k = CFG["num_experts"], CFG["top_k"]
    T = B * S
    per = B // micro  # equal micro-batches of consecutive sequences (batch 2: one sequence each)
    aux = torch.zeros(())
    loads = []
    for z in zs:
        total_c = torch.zeros(E)
        for m in range(micro):
            zm = z[m * per * S:(m + 1) * per * S]
            a, c = aux_term(zm, k, E)
            aux = aux + ALPHA * (zm.shape[0] / T) * a
            total_c += c
        loads.append(total_c.numpy().astype(np.int64))
    (ce + aux).backward()
    files = {"loss.npy": np.array([ce.item()], dtype=np.float32), "aux.npy": np.array([aux.item()], dtype=np.float32)}
    for name, p in model.named_parameters():
        key, g = export_grads.as_golden(name, p.grad)
        if "_expert" not in key:
            files[f"grad_{key}.npy"] = g
    return files, np.stack(loads)


def generate(out_dir):
    gdir = os.path.join(out_dir, "golden", "router")
    os.makedirs(gdir, exist_ok=True)
    ids = torch.from_numpy(np.load(os.path.join(HERE, "golden", export_grads.IDS_FILE)))
    meta = {"alpha": ALPHA, "ids": export_grads.IDS_FILE, "variants": {}}
    bias = bias_variant(ids)
    meta["bias"] = dict(BIAS, loss=[float(x) for x in bias["bias_loss.npy"]])
    for f, a in bias.items():
        np.save(os.path.join(gdir, f), a)
    tie = tie_variant(ids)
    meta["tie_loss"] = float(tie["tie_loss.npy"][0])
    for f, a in tie.items():
        np.save(os.path.join(gdir, f), a)
    for micro in (1, 2):
        files, load = variant(ids, micro)
        name = f"aux_m{micro}"
        meta["variants"][name] = {"micro_batches": micro, "loss": float(files["loss.npy"][0]),
                                  "aux": float(files["aux.npy"][0])}
        for f, a in files.items():
            np.save(os.path.join(gdir, f"{name}_{f}"), a)
        np.save(os.path.join(gdir, "load.npy"), load)
        files = capacity_variant(ids, micro)
        meta["capacity"] = CAPACITY
        meta.setdefault("capacity_variants", {})[f"cap_m{micro}"] = {
            "micro_batches": micro, "loss": float(files["loss.npy"][0]), "dropped": files["dropped.npy"].tolist()}
        for f, a in files.items():
            np.save(os.path.join(gdir, f"cap_m{micro}_{f}"), a)
    with open(os.path.join(gdir, "router.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    return gdir


def check(ref_dir):
    ref = os.path.join(ref_dir, "golden", "router")
    tmp = tempfile.mkdtemp(prefix="router-goldens-")
    try:
        new = generate(tmp)
        names = sorted(os.listdir(ref))
        if names != sorted(os.listdir(new)):
            raise SystemExit("file lists differ")
        for n in names:
            if n.endswith(".npy"):
                same, text = error_model.compare_regenerated(n, np.load(os.path.join(ref, n)),
                                                             np.load(os.path.join(new, n)), export_grads.GRAD_CHAIN)
                if not same:
                    raise SystemExit(text)
        print(error_model.worst_regenerated())
        print(f"{len(names)} files match")
    finally:
        shutil.rmtree(tmp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--check", nargs="?", const=HERE)
    a = ap.parse_args()
    if a.check:
        check(a.check)
    else:
        print(generate(a.out))


if __name__ == "__main__":
    main()
