"""Checks route-stats outputs against their definitions (docs/observatory.md); prints one line.
  check_outputs.py OUT_DIR TOKENS EP_LIST GBS_LIST"""
import csv
import json
import os
import sys

import numpy as np


def expert_rank(e, experts, ep):
    return e * ep // experts


def main(out, tokens, eps, gbss):
    doc = json.load(open(os.path.join(out, "route-stats.json")))
    assert doc["format"] == "disagmoe-route-stats" and doc["version"] == 1
    E, k, L = doc["experts"], doc["top_k"], doc["layers"]
    assert doc["ep"] == eps and doc["gbs"] == gbss, (doc["ep"], doc["gbs"])
    seq = doc["seq_len"]
    by_name = {}
    for c in doc["conditions"]:
        by_name[c["name"]] = c
        assert c["tokens"] == tokens and c["sequences"] == tokens // seq
        assert len(c["layers"]) == L
        for lay in c["layers"]:
            loads = np.array(lay["expert_loads"])
            assert loads.shape == (E,) and loads.sum() == tokens * k, (c["name"], lay["layer"], loads.sum())
            mm = loads.max() / loads.mean()
            assert abs(lay["max_over_mean"] - mm) < 1e-9
            for ep in eps:
                S = np.array(lay["send_matrix"][str(ep)])
                assert S.shape == (ep, ep)
                grouped = np.zeros(ep, dtype=np.int64)
                for e in range(E):
                    grouped[expert_rank(e, E, ep)] += loads[e]
                assert (S.sum(axis=0) == grouped).all(), (c["name"], ep)
                # rows: tokens of the sequences on each source rank (sequence s on rank s mod ep) times k
                per_rank = np.bincount(np.arange(c["sequences"]) % ep, minlength=ep) * seq * k
                assert (S.sum(axis=1) == per_rank).all()
                if ep == E:
                    assert (S.sum(axis=0) == loads).all()
            for g in lay["by_gbs"]:
                assert g["batches"] == c["sequences"] // g["gbs"]
                for ep, st in g["gini"].items():
                    assert 0 <= st["mean"] <= 1 - 1 / int(ep) + 1e-12
                assert g["max_over_mean"]["mean"] >= 1 - 1e-12
    # shuffled keeps the text's unigram counts: the same multiset of tokens, so the per-condition
    # token total matches; (the routing differs, the tokens do not)
    names = [c["name"] for c in doc["conditions"]]
    rows = list(csv.DictReader(open(os.path.join(out, "route-stats.csv"))))
    assert len(rows) == len(names) * L * len(gbss) * len(eps), len(rows)
    prof = json.load(open(os.path.join(out, "routing-profile.json")))
    assert prof["format"] == "disagmoe-routing-profile" and prof["version"] == 1
    assert prof["top_k"] == k and prof["tokens"] == tokens
    first_text = next(n for n in names if n.startswith("text:"))
    assert prof["data"].startswith("text:")
    for lay, ref in zip(prof["layers"], by_name[first_text]["layers"]):
        assert lay["expert_loads"] == ref["expert_loads"] and sum(lay["expert_loads"]) == tokens * k
    cl = doc["classification"]
    assert cl["class"] in ("data-resilient", "intermediate", "persistently concentrated")
    print(f"outputs: OK ({len(names)} conditions, {L} layers)")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")],
         [int(x) for x in sys.argv[4].split(",")])
