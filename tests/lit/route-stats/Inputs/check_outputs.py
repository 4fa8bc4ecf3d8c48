"""Checks route-stats outputs against their definitions (docs/observatory.md); prints one line.
  check_outputs.py OUT_DIR TOKENS EP_LIST GBS_LIST [STDOUT]
Gini, max/mean and the classification are recomputed here from the written counts (the Gini from its
pairwise definition); with STDOUT (route-stats' printed summary) the printed figures are compared
with them too. The token streams are checked through each condition's `token_counts` against the
FILE's bytes: text keeps them, shuffled keeps the same multiset, remapped permutes the ids."""
import csv
import json
import os
import re
import sys

import numpy as np


# docs/observatory.md, "Classification": real-text Gini < 0.16 data-resilient, >= 0.24 persistently
# concentrated, intermediate between.
RESILIENT_BELOW, CONCENTRATED_AT = 0.16, 0.24


def expert_rank(e, experts, ep):
    return e * ep // experts


def gini(x):
    """sum_i sum_j |x_i - x_j| / (2 n^2 mean(x)), 0 when everything is 0 (docs/observatory.md)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0 or x.sum() == 0:
        return 0.0
    return float(np.abs(x[:, None] - x[None, :]).sum() / (2 * x.size ** 2 * x.mean()))


def rank_loads(loads, ep):
    out = np.zeros(ep)
    for e, c in enumerate(loads):
        out[expert_rank(e, len(loads), ep)] += c
    return out


def classify(real):
    if real is None:
        return "unclassified"
    if real < RESILIENT_BELOW:
        return "data-resilient"
    return "persistently concentrated" if real >= CONCENTRATED_AT else "intermediate"


def unigrams(pairs, vocab):
    h = np.zeros(vocab, dtype=np.int64)
    for token, count in pairs:
        assert 0 <= token < vocab and count > 0, (token, count)
        h[token] += count
    return h


def check_streams(doc, tokens):
    """Each condition's token_counts against its FILE's bytes (tokens are bytes, DataConditions.h)."""
    vocab = doc["vocab"]
    text_counts = {}
    conds = doc["conditions"]
    for c in conds:
        h = unigrams(c["token_counts"], vocab)
        assert h.sum() == c["tokens"], (c["name"], h.sum(), c["tokens"])
        if c["kind"] == "mock":
            continue
        data = np.frombuffer(open(c["file"], "rb").read(), dtype=np.uint8)
        stream = data[:min(len(data), tokens)]  # the condition's stream before the shuffle or the remap
        file_h = np.bincount(stream, minlength=vocab)
        run_h = np.bincount(stream[:c["tokens"]], minlength=vocab)  # the tokens that were run, in order
        if c["kind"] == "text":
            assert (h == run_h).all(), f"{c['name']}: token_counts differ from the file's first {c['tokens']} bytes"
            text_counts[c["file"]] = h
        elif c["kind"] == "shuffled":
            # A permutation of the whole stream, of which the first `tokens` were run: the same
            # multiset when they are the whole stream, a sub-multiset otherwise.
            if c["tokens"] == len(stream):
                assert (h == file_h).all(), f"{c['name']}: the shuffled stream's unigram counts differ from the file's"
            else:
                assert (h <= file_h).all(), f"{c['name']}: a token occurs more often than in the file"
        elif c["kind"] == "remapped":
            # The text's tokens in order through a permutation of the vocabulary: the same counts on
            # other ids.
            assert sorted(h[h > 0].tolist()) == sorted(run_h[run_h > 0].tolist()), \
                f"{c['name']}: the remapped counts are not a relabelling of the file's"
    for c in conds:
        if c["kind"] == "shuffled" and c["file"] in text_counts and c["tokens"] == sum(text_counts[c["file"]]):
            assert (unigrams(c["token_counts"], vocab) == text_counts[c["file"]]).all(), \
                f"{c['name']}: shuffled does not keep the text's unigram counts"
    return sum(c["kind"] == "shuffled" for c in conds)


def check_summary(path, per_condition, real, mock, klass):
    """route-stats' printed lines against the figures recomputed from route-stats.json."""
    text = open(path).read()
    for name, (mean, by_layer) in per_condition.items():
        m = re.search(rf"^  {re.escape(name)}: Gini ([0-9.]+) by layer \[([0-9. ]+)\]", text, re.M)
        assert m, f"no summary line for {name}"
        assert m.group(1) == f"{mean:.4f}", (name, m.group(1), mean)
        assert m.group(2).split() == [f"{g:.3f}" for g in by_layer], (name, m.group(2), by_layer)
    m = re.search(r"^classification: .*: ([a-z -]+?) \((.*)\)$", text, re.M)
    assert m and m.group(1) == klass, (m and m.group(1), klass)
    if real is not None:
        want = f"real-text Gini {real:.3f}"
        if mock is not None:
            want += f", mock {mock:.3f}, mock/real {(mock / real if real > 0 else 0):.2f}"
        assert m.group(2) == want, (m.group(2), want)


def main(out, tokens, eps, gbss, stdout=None):
    doc = json.load(open(os.path.join(out, "route-stats.json")))
    one_batch = 0
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
            assert abs(lay["gini_experts"] - gini(loads)) < 1e-12, (c["name"], lay["layer"])
            for g in lay["by_gbs"]:
                assert g["batches"] == c["sequences"] // g["gbs"]
                for ep, st in g["gini"].items():
                    assert 0 <= st["mean"] <= 1 - 1 / int(ep) + 1e-12
                    if g["batches"] == 1:  # one batch: the whole stream's loads, no spread
                        whole = gini(rank_loads(loads, int(ep)))
                        assert abs(st["mean"] - whole) < 1e-12 and st["sd"] == 0, (c["name"], ep, st, whole)
                        one_batch += 1
                assert g["max_over_mean"]["mean"] >= 1 - 1e-12
                if g["batches"] == 1:
                    assert abs(g["max_over_mean"]["mean"] - mm) < 1e-12
    # A GBS of the whole stream (one batch) makes the Gini at every EP a function of the written
    # expert loads: recomputed above from the pairwise definition.
    assert one_batch, "no GBS equal to the whole stream: the Gini cannot be recomputed from the loads"
    shuffled = check_streams(doc, tokens)
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
    # The classification (docs/observatory.md): the mean over text: conditions of the mean over layers
    # of the Gini at the classification EP and GBS; mock's the same way.
    cl = doc["classification"]
    assert cl["thresholds"] == {"data_resilient_below": RESILIENT_BELOW, "concentrated_at_or_above": CONCENTRATED_AT}
    per_condition = {}
    for c in doc["conditions"]:
        by_layer = []
        for lay in c["layers"]:
            g = next(g for g in lay["by_gbs"] if g["gbs"] == cl["gbs"])
            by_layer.append(g["gini"][str(cl["ep"])]["mean"] if g["batches"] else -1.0)  # -1: no batch
        known = [v for v in by_layer if v >= 0]
        per_condition[c["name"]] = (sum(known) / len(known) if known else -1.0, by_layer)
    texts = [per_condition[c["name"]][0] for c in doc["conditions"] if c["kind"] == "text"]
    texts = [v for v in texts if v >= 0]
    mocks = [per_condition[c["name"]][0] for c in doc["conditions"] if c["kind"] == "mock"]
    mocks = [v for v in mocks if v >= 0]
    real = sum(texts) / len(texts) if texts else None
    mock = mocks[0] if mocks else None
    klass = classify(real)
    assert cl["class"] == klass, (cl["class"], klass, real)
    assert (cl["real_text_gini"] is None) == (real is None) and (real is None or abs(cl["real_text_gini"] - real) < 1e-12)
    assert (cl["mock_gini"] is None) == (mock is None) and (mock is None or abs(cl["mock_gini"] - mock) < 1e-12)
    if real and mock is not None:
        assert abs(cl["mock_over_real"] - mock / real) < 1e-12
    if stdout:
        check_summary(stdout, per_condition, real, mock, klass)
    print(f"outputs: OK ({len(names)} conditions, {L} layers, {shuffled} shuffled; class {klass}, "
          f"recomputed{' and printed' if stdout else ''})")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")],
         [int(x) for x in sys.argv[4].split(",")], sys.argv[5] if len(sys.argv) > 5 else None)
