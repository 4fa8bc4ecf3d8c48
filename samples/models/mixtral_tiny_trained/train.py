#!/usr/bin/python3
"""Train the mixtral_tiny model on real text and export the trained weights, with goldens.

    /usr/bin/python3 samples/models/mixtral_tiny_trained/train.py [--steps N] [--aux-coef C] [--out DIR]

Model: samples/models/mixtral_tiny/export.py's module code and initialisation (torch.manual_seed(0)),
unchanged hyper-parameters (vocab 256, hidden 64, 4 layers, 8 experts, top-2). Data: the bytes of
samples/data/kjv_ot.txt (public domain; token = byte), the last 5% held out for validation. Each step
takes BATCH random windows of SEQ bytes (torch.Generator seeded with 1). Loss: mean next-byte
cross-entropy plus aux_coef times the Switch/Mixtral load-balancing loss
E * sum_e f_e * P_e per MoE layer (f_e: fraction of the token-expert assignments routed to e, P_e: mean
router probability of e), averaged over layers; Mixtral's reference config uses 0.02. AdamW
(lr 3e-3, betas (0.9, 0.95), weight decay 0.01), 100 warm-up steps then cosine decay to 10%, gradient
clipping at norm 1. One thread, fixed seeds: the run is deterministic on a given machine.

Writes DIR/model.onnx, DIR/golden/ (as samples/models/mixtral_e32/export.py writes them: ids and
logits at three shapes, the layer-0 router at the trace shape) and DIR/training.json (the loss curve
and validation loss), DIR defaulting to this script's folder.
"""

import argparse
import importlib.util
import json
import math
import os
import sys
import time

sys.dont_write_bytecode = True

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


variants = load("mixtral_variants", os.path.join(ROOT, "samples", "models", "mixtral_e32", "export.py"))
tiny = variants.tiny
CONFIG = dict(tiny.CONFIG)

DATA = os.path.join(ROOT, "samples", "data", "kjv_ot.txt")
SEQ, BATCH = 128, 8
LR, WARMUP, MIN_LR_FRACTION = 3e-3, 100, 0.1
HOLDOUT = 0.05


def forward_with_router(model, ids):
    """Logits and the load-balancing loss (mean over layers) of ids [B, S]."""
    cos, sin, mask = model.rope_and_mask(ids)
    x = model.embed_tokens(ids)
    aux = 0.0
    for layer in model.layers:
        h = x + layer.self_attn(layer.input_layernorm(x), cos, sin, mask)
        n = layer.post_attention_layernorm(h)
        moe = layer.block_sparse_moe
        _, probs, _, top = moe.route(n.reshape(-1, n.shape[-1]))
        e = moe.num_experts
        f = F.one_hot(top, e).float().sum(dim=(0, 1)) / top.numel()
        aux = aux + e * torch.sum(f * probs.mean(dim=0))
        x = h + moe(n)
    return model.lm_head(model.norm(x)), aux / len(model.layers)


def lr_at(step, steps):
    if step < WARMUP:
        return LR * (step + 1) / WARMUP
    t = (step - WARMUP) / max(1, steps - WARMUP)
    return LR * (MIN_LR_FRACTION + (1 - MIN_LR_FRACTION) * 0.5 * (1 + math.cos(math.pi * t)))


def windows(data, count, g):
    starts = torch.randint(0, len(data) - SEQ - 1, (count,), generator=g)
    x = torch.stack([data[s:s + SEQ + 1] for s in starts.tolist()])
    return x[:, :-1], x[:, 1:]


def evaluate(model, data, g, batches=8):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for _ in range(batches):
            x, y = windows(data, BATCH, g)
            logits, _ = forward_with_router(model, x)
            total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)))
    model.train()
    return total / batches


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--aux-coef", type=float, default=0.02)
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()
    torch.set_num_threads(1)  # deterministic, and no spinning threads on a shared machine

    raw = np.frombuffer(open(DATA, "rb").read(), dtype=np.uint8).astype(np.int64)
    cut = int(len(raw) * (1 - HOLDOUT))
    train, valid = torch.from_numpy(raw[:cut].copy()), torch.from_numpy(raw[cut:].copy())

    tiny.CONFIG = CONFIG
    model = tiny.build_model()  # torch.manual_seed(0): the untrained tiny sample's weights
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.95), weight_decay=0.01)
    g = torch.Generator().manual_seed(1)
    gv = torch.Generator().manual_seed(2)
    curve = []
    start = time.time()
    valid0 = evaluate(model, valid, torch.Generator().manual_seed(3))
    for step in range(args.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args.steps)
        x, y = windows(train, BATCH, g)
        logits, aux = forward_with_router(model, x)
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss = ce + args.aux_coef * aux
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 25 == 0 or step == args.steps - 1:
            entry = {"step": step, "loss": round(float(ce), 4), "aux": round(float(aux), 4),
                     "lr": round(lr_at(step, args.steps), 6), "seconds": round(time.time() - start, 1)}
            if step % 250 == 0 or step == args.steps - 1:
                entry["valid_loss"] = round(evaluate(model, valid, gv), 4)
            curve.append(entry)
            print(json.dumps(entry), flush=True)
    model.eval()
    valid1 = evaluate(model, valid, torch.Generator().manual_seed(3))
    elapsed = time.time() - start

    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)  # the goldens, as the exporters write them
    variants.export(model, CONFIG, args.out)
    with open(os.path.join(args.out, "training.json"), "w") as f:
        json.dump({"data": "samples/data/kjv_ot.txt", "holdout_fraction": HOLDOUT, "seq": SEQ, "batch": BATCH,
                   "steps": args.steps, "aux_coef": args.aux_coef, "lr": LR, "warmup": WARMUP,
                   "tokens_seen": args.steps * SEQ * BATCH, "seconds": round(elapsed, 1),
                   "valid_loss_before": round(valid0, 4), "valid_loss_after": round(valid1, 4),
                   "curve": curve}, f, indent=1)
        f.write("\n")
    print(f"validation loss (nats/byte) {valid0:.4f} -> {valid1:.4f} in {elapsed:.0f} s")


if __name__ == "__main__":
    main()
