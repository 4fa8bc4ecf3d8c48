#!/usr/bin/python3
"""Torch oracle for the sigmoid group-limited router (cpu::routerGates / routerGatesBackward).

    /usr/bin/python3 tests/unit/runtime/oracle/make_sigmoid_router.py   # rewrites sigmoid_router.json

The router is written here from transformers' modeling_deepseek_v3.py (DeepseekV3TopkRouter,
followed at commit 00b676f8f0489b88652a31d70751cc540dd06305): scores = sigmoid(logits) in fp32;
the choice adds e_score_correction_bias, sums each group's top-2, keeps the topk_group best groups
(masked_fill of the others to 0.0) and takes the top-k; the weights are the unbiased scores at the
chosen experts, divided by (their sum + 1e-20) with norm_topk_prob, times routed_scaling_factor.
dlogits is torch autograd's gradient of sum(weights * dweights). Logits are redrawn until every
boundary the choice depends on (the topk_group-th group, the k-th expert) has a margin >= 1e-3,
so that fp32 rounding differences cannot flip a choice. The chosen ids are listed by descending
masked choice (torch's sorted=False order is unspecified).
"""
import json
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
MARGIN = 1e-3

CASES = [
    # name, tokens, experts, n_group, topk_group, top_k, norm_topk_prob, scale, bias std
    ("v3_like_renorm", 6, 8, 4, 2, 2, True, 2.5, 0.1),
    ("groups_no_renorm", 5, 16, 4, 3, 4, False, 1.0, 0.2),
    ("one_group_renorm", 4, 8, 1, 1, 3, True, 1.0, 0.0),
    ("wide_groups_renorm_scaled", 5, 12, 3, 2, 5, True, 1.5, 0.3),
]


def choice_of(scores, bias, n_group, topk_group):
    choice = scores + bias.unsqueeze(0)
    t, e = choice.shape
    if n_group > 1:
        group_scores = choice.view(t, n_group, e // n_group).topk(2, dim=-1)[0].sum(dim=-1)
        group_idx = torch.topk(group_scores, k=topk_group, dim=-1, sorted=False)[1]
        group_mask = torch.zeros_like(group_scores)
        group_mask.scatter_(1, group_idx, 1)
        score_mask = group_mask.unsqueeze(-1).expand(t, n_group, e // n_group).reshape(t, e)
        choice = choice.masked_fill(~score_mask.bool(), 0.0)
    else:
        group_scores = None
    return choice, group_scores


def has_margin(values, k):
    top = torch.sort(values, dim=-1, descending=True)[0]
    return k >= values.shape[-1] or bool((top[:, k - 1] - top[:, k] >= MARGIN).all())


def case(name, tokens, experts, n_group, topk_group, top_k, renorm, scale, bias_std, gen):
    bias = (torch.randn(experts, generator=gen) * bias_std).float()
    while True:
        logits = (torch.randn(tokens, experts, generator=gen) * 1.5).float()
        with torch.no_grad():
            choice, group_scores = choice_of(torch.sigmoid(logits), bias, n_group, topk_group)
        if has_margin(choice, top_k) and (group_scores is None or has_margin(group_scores, topk_group)):
            break
    logits.requires_grad_(True)
    scores = torch.sigmoid(logits)
    with torch.no_grad():
        choice, _ = choice_of(scores, bias, n_group, topk_group)
        idx = torch.topk(choice, k=top_k, dim=-1, sorted=True)[1]
    weights = scores.gather(1, idx)
    if renorm:
        weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
    weights = weights * scale
    dweights = torch.randn(tokens, top_k, generator=gen).float()
    (weights * dweights).sum().backward()
    return {
        "name": name, "tokens": tokens, "experts": experts, "n_group": n_group,
        "topk_group": topk_group, "top_k": top_k,
        "scoring": "sigmoid_group_topk_renorm" if renorm else "sigmoid_group_topk",
        "routed_scaling_factor": scale,
        "logits": logits.detach().flatten().tolist(), "bias": bias.tolist(),
        "ids": idx.flatten().tolist(), "gates": weights.detach().flatten().tolist(),
        "dgates": dweights.flatten().tolist(), "dlogits": logits.grad.flatten().tolist(),
    }


def main():
    gen = torch.Generator().manual_seed(20261204)
    out = {"source": "tests/unit/runtime/oracle/make_sigmoid_router.py, torch " + torch.__version__,
           "cases": [case(*c, gen) for c in CASES]}
    path = os.path.join(HERE, "sigmoid_router.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    print("wrote", path)


if __name__ == "__main__":
    main()
