"""Checks the exchange-volume pass's exact byte counts against what `disagmoe-run` reports.

usage: check_volume_vs_run.py IR.txt RUN.txt EXPECT
  IR.txt   `disagmoe compile ... --print-ir-after=volume` output
  RUN.txt  `disagmoe-run PLAN` output for the plan of the same compile (its `exchange bytes` table)
  EXPECT   comma-separated subset of dense,shared,embedding,head: the FFN-side placements of the plan

Every moe.m2n without ids (a dense layer's FFN-side dense FFN) carries runtime_m2n_bytes and
runtime_n2m_bytes, which must equal the run's `m2n total` / `n2m total` bytes of that layer; every
moe.home_transfer's runtime_bytes must equal the run's embedding / head rows summed. The oracle is
the executor's own message accounting (the bytes it sent), independent of the pass's formula.
Routed layers' M2N (expected under uniform routing, no run can equal it) are checked against the
closed form from the IR's expert placement, by exact binomials: E[D] = sum_r 1 - C(E - E_r, k) / C(E, k)
destination F-ranks per token, plus, with FFN-side shared experts, the home F-rank when it holds
none of the token's experts: (1/R) sum_r C(E - E_r, k) / C(E, k).
"""
import math
import re
import sys

ir, run = open(sys.argv[1]).read(), open(sys.argv[2]).read()
expect = set(filter(None, sys.argv[3].split(",")))

table = {}
for line in run.splitlines():
    m = re.match(r"^(\d+)\s+(m2n|n2m)\s+total\s+(\d+)\s+(\d+)$", line.strip())
    if m:
        table[(int(m.group(1)), m.group(2))] = int(m.group(4))
edge = {"embedding": 0, "head": 0}
for line in run.splitlines():
    m = re.match(r"^-\s+(embedding|head)\s+\d+->\d+\s+\d+\s+(\d+)$", line.strip())
    if m:
        edge[m.group(1)] += int(m.group(2))

checked = set()
for m in re.finditer(r"moe\.m2n %[\w#]+ \{dst_group = \d+ : i64, layer = (\d+) : i64, src_group = \d+ : i64, "
                     r"volume = \{([^}]*)\}\}", ir):
    layer, vol = int(m.group(1)), m.group(2)
    got = {k: float(v) for k, v in re.findall(r"(runtime_\w+_bytes) = ([-0-9.e+]+) : f64", vol)}
    assert got["runtime_m2n_bytes"] == table[(layer, "m2n")], (layer, got, table[(layer, "m2n")])
    assert got["runtime_n2m_bytes"] == table[(layer, "n2m")], (layer, got, table[(layer, "n2m")])
    print(f"layer {layer} dense m2n {table[(layer, 'm2n')]} n2m {table[(layer, 'n2m')]} bytes: IR = run")
    checked.add("dense")
for m in re.finditer(r'moe\.home_transfer %\w+ \{dst_group = \d+ : i64, kind = "(\w+)", src_group = \d+ : i64, '
                     r"volume = \{bytes = [-0-9.e+]+ : f64, runtime_bytes = ([-0-9.e+]+) : f64\}\}", ir):
    kind, value = m.group(1), float(m.group(2))
    assert value == edge[kind] and value > 0, (kind, value, edge[kind])
    print(f"{kind} transfer {edge[kind]} bytes: IR = run")
    checked.add(kind)
placement = re.search(r"expert_to_rank = \[(.*?)\]\]", ir).group(1) + "]"
rows = [[int(v) for v in re.findall(r"\d+", row)] for row in re.findall(r"\[([^\]]*)\]", placement)]
for m in re.finditer(r"moe\.m2n %[\w#]+, %[\w#]+, %[\w#]+ \{dst_group = \d+ : i64, layer = (\d+) : i64, "
                     r"src_group = \d+ : i64, volume = \{([^}]*)\}\} : tensor<[0-9x]+xf32>, tensor<\d+x(\d+)xi64>", ir):
    layer, vol, k = int(m.group(1)), m.group(2), int(m.group(3))
    owners = rows[layer]
    E = len(owners)
    miss = [math.comb(E - owners.count(r), k) / math.comb(E, k) for r in sorted(set(owners))]
    d = sum(1 - q for q in miss) + (sum(miss) / len(miss) if "shared" in expect else 0.0)
    got = float(re.search(r"destinations_per_token = ([-0-9.e+]+)", vol).group(1))
    assert abs(got - d) < 1e-12, (layer, got, d)
    print(f"layer {layer} expected destinations per token {got:.6f} = closed form")
    checked.add("shared") if "shared" in expect else None
assert checked == expect, (checked, expect)
# Exchanges the plan does not have are absent from the run as well.
for kind in ("embedding", "head"):
    assert (edge[kind] > 0) == (kind in expect), (kind, edge[kind])
print("ok")
