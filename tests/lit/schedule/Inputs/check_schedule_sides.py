"""Checks that a plan's AF-Pipe schedule runs the always-on components on the side the plan does.

usage: check_schedule_sides.py PLAN.json BASELINE_PLAN.json CONFIG.json
  PLAN.json           compiled with some of --dense-side/--shared-experts-side/--embedding-side/
                      --head-side ffn
  BASELINE_PLAN.json  the same model and placement, every side at its default (attention)
  CONFIG.json         the sample's golden/config.json (the model's own hyper-parameters)

Oracle: the model config and closed forms, not the schedule code. A SwiGLU FFN of width I costs
6 T h I forward FLOPs for T tokens (three h x I matmuls); on the FFN side each token runs on its
home F-rank (sequence s mod D_F), so the busiest F-rank has ceil(B / D_F) sequences, while each
A-rank of the baseline had B / D_A. A dense layer placed on the FFN side gets an M2N and an N2M of
its own; an FFN-side embedding / head adds `embedding` / `head` messages both ways.
"""
import json
import math
import sys

plan, base, cfg = (json.load(open(p)) for p in sys.argv[1:4])
s, sb = plan["schedule"], base["schedule"]
m = s["micro_batches"]
L, h = cfg["num_layers"], cfg["hidden_size"]
B, S = plan["model"]["batch"], plan["model"]["seq_len"]
groups = plan["placement"]["groups"]
p = len([g for g in groups if g["role"] == "attention"])
DA = len(next(g for g in groups if g["role"] == "attention")["ranks"])
DF = len(next(g for g in groups if g["role"] == "ffn")["ranks"])
role = {i: g["role"] for i, g in enumerate(s["groups"])}
index = {i: g["index"] for i, g in enumerate(s["groups"])}
side = {c["layer"]: c.get("side", "attention") for c in plan["model"]["components"] if c["kind"] == "dense_ffn"}


def instrs(sched):
    return [i for prog in sched["programs"].values() for i in prog]


def computes(sched, op, layer, phase="forward"):
    return [i for i in instrs(sched) if i["kind"] == "compute" and i["op"] == op and i.get("layer") == layer
            and i["phase"] == phase]


def width(layer):
    return cfg["dense_hidden"] if layer in cfg["dense_layers"] else cfg["num_shared_experts"] * cfg["expert_hidden"]


for l in range(L):
    dense = l in cfg["dense_layers"]
    on_ffn = side.get(l) == "ffn"
    fwd, bwd = computes(s, "dense_ffn", l), computes(s, "dense_ffn", l, "backward")
    if not on_ffn:
        assert not fwd and not bwd, (l, "dense_ffn computed on the FFN side", fwd[:1])
        continue
    assert len(fwd) == m and len(bwd) == m, (l, len(fwd), len(bwd))
    assert all(role[i["group"]] == "ffn" and index[i["group"]] == l % p for i in fwd + bwd), (l, fwd[0])
    want = 6 * math.ceil(B / DF) * S * h * width(l)
    assert all(i["flops"] == want for i in fwd), (l, fwd[0]["flops"], want)
    assert all(i["flops"] == 2 * want for i in bwd), (l, bwd[0]["flops"], 2 * want)
    # The A-ranks no longer compute it: exactly 6 (B / D_A) S h I less than the baseline's attention.
    a, ab = computes(s, "attention", l)[0]["flops"], computes(sb, "attention", l)[0]["flops"]
    assert abs((ab - a) - 6 * (B / DA) * S * h * width(l)) < 1e-6 * ab, (l, ab - a)
    # Messages: a dense layer's own M2N / N2M, forward and backward, every micro-batch.
    for op in ("m2n", "n2m"):
        sends = [i for i in instrs(s) if i["kind"] == "send" and i["op"] == op and i.get("layer") == l]
        assert len(sends) == 2 * m, (l, op, len(sends))
    if dense:
        base_sends = [i for i in instrs(sb) if i["kind"] == "send" and i["op"] in ("m2n", "n2m") and i.get("layer") == l]
        assert not base_sends, (l, "baseline dense layer has M2N/N2M")

head = computes(s, "head", L) + computes(s, "head", L, "backward")
assert len(head) == 2 * m, len(head)
head_on_ffn = plan["placement"]["head_side"] == "ffn"
assert all(role[i["group"]] == ("ffn" if head_on_ffn else "attention") and index[i["group"]] == L % p for i in head), head[0]
if head_on_ffn:
    want = 2 * math.ceil(B / DF) * S * h * cfg["vocab_size"]
    assert head[0]["flops"] == want, (head[0]["flops"], want)
for op, on in (("embedding", plan["placement"]["embedding_side"] == "ffn"), ("head", head_on_ffn)):
    sends = [i for i in instrs(s) if i["kind"] == "send" and i["op"] == op]
    assert len(sends) == (2 * m if on else 0), (op, len(sends))
    # x_0 / x_L once per token: B / D_A sequences of each A-rank spread over D_F home F-ranks, bf16.
    assert all(i["bytes"] == (B / DA) * S * (8 + 2 * h) / DF for i in sends), (op, sends[:1])
print("ok")
