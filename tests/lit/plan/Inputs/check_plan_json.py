"""Checks `disagmoe plan --json` against the text report of the same run and the planner's closed
forms (docs/placement.md): step = K x max(U_a, U_f) + D, GPUs = r x p x ranks per group, memory
total = the sum of its terms, and the compile flags printed in the text.
Usage: check_plan_json.py PLAN.json REPORT.txt"""
import json
import math
import re
import sys

doc = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def check_config(c, where):
    assert close(c["step_s"], c["bubble_factor"] * max(c["attn_busy_s"], c["ffn_busy_s"]) +
                 c["grad_sync_s"]), where + ": step != K max(U_a, U_f) + D"
    assert c["attn_gpus"] == c["replicas"] * c["groups"] * c["attn_ranks_per_group"], where
    assert c["ffn_gpus"] == c["replicas"] * c["groups"] * c["ffn_ranks_per_group"], where
    for side in ("attention", "ffn"):
        m = c["memory_bytes"][side]
        assert close(m["total"], m["weights"] + m["gradients"] + m["optimizer"] +
                     m["activations"]), where + ": memory terms"


z3 = doc["z3"]
check_config(z3, "z3")
for i, alt in enumerate(doc["alternatives"]):
    check_config(alt, "alternatives[%d]" % i)
m = re.search(r"attention : FFN GPUs\s+(\d+) : (\d+)", text)
assert (int(m.group(1)), int(m.group(2))) == (z3["attn_gpus"], z3["ffn_gpus"]), "GPU split"
m = re.search(r"step time ([0-9.]+) s", text)
assert abs(float(m.group(1)) - z3["step_s"]) < 1e-4, "step time"
assert len(doc["alternatives"]) == int(re.search(r"(\d+) attention GPU counts fit", text).group(1))
if "search" in doc:
    s = doc["search"]
    assert s["ok"]
    check_config(s["chosen"]["config"], "search.chosen")
    realise = re.search(r"realise one replica with: disagmoe compile MODEL.onnx (.*);", text)
    if realise is None:  # p does not divide the layers: no compile line, no compile_args
        assert "not realisable by disagmoe compile yet" in text and s["compile_args"] == []
    else:
        assert realise.group(1).split() == s["compile_args"], (realise.group(1), s["compile_args"])
        assert len(re.findall(r"\S+", " ".join(s["compile_args"]))) == 12
    m = re.search(r"^chosen: .*\n  roofline [0-9.]+ s, simulated ([0-9.]+) s, (\d+) micro-batches in flight",
                  text, re.M)
    assert abs(float(m.group(1)) - s["chosen"]["simulated_step_s"]) < 1e-4, "simulated step"
    assert int(m.group(2)) == s["chosen"]["inflight_microbatches"]
print("plan json ok: %d alternatives%s" % (len(doc["alternatives"]),
                                           ", search" if "search" in doc else ""))
