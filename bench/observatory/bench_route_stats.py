#!/usr/bin/python3
"""Benchmark: `disagmoe route-stats` over 1M tokens of the sample model, against PyTorch's forward of
the same model over the same tokens, measured in the same run. Target (issue 8): <= 60 s.

    /usr/bin/python3 bench/observatory/bench_route_stats.py [--tokens N] [--model samples/models/mixtral_tiny]

Tokens: the first N bytes of samples/data/kjv_ot.txt, sequences of 64, 64 sequences per forward run.
Peer: the exporter's PyTorch module (samples/models/mixtral_tiny/export.py, build_model(): the same
weights as model.onnx), eager fp32, no_grad, one thread (two spin badly on a loaded 2-core machine), the same 64 x 64 batches; its router top-k ids
are taken with a hook on each layer's gate. Also printed: how closely the per-expert loads of the two
agree (they differ only where fp32 rounding flips a near-tie).
"""
import argparse
import resource
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
import numpy as np  # noqa: E402
import torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEQ, BATCH = 64, 64


def pytorch_forward(model_dir, tokens):
    spec = importlib.util.spec_from_file_location("tiny", os.path.join(ROOT, "samples/models/mixtral_tiny/export.py"))
    tiny = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tiny)
    model = tiny.build_model()
    E, k = tiny.CONFIG["num_experts"], tiny.CONFIG["top_k"]
    loads = [np.zeros(E, dtype=np.int64) for _ in model.layers]

    def hook(layer):
        def fn(_mod, _inp, logits):
            probs = torch.softmax(logits.float(), dim=-1)
            ids = torch.topk(probs, k, dim=-1).indices
            loads[layer] += np.bincount(ids.reshape(-1).numpy(), minlength=E)
        return fn

    for i, layer in enumerate(model.layers):
        layer.block_sparse_moe.gate.register_forward_hook(hook(i))
    ids = torch.from_numpy(tokens.reshape(-1, SEQ))
    torch.set_num_threads(1)  # one thread: no OpenMP spinning on a shared machine; route-stats uses 2 ranks
    start = time.time()
    with torch.no_grad():
        for b in range(0, ids.shape[0], BATCH):
            model(ids[b:b + BATCH])
    return time.time() - start, loads


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=1 << 20)
    ap.add_argument("--model", default="samples/models/mixtral_tiny")
    args = ap.parse_args()
    os.chdir(ROOT)
    data = "samples/data/kjv_ot.txt"
    raw = np.frombuffer(open(data, "rb").read(), dtype=np.uint8)[: args.tokens // SEQ * SEQ].astype(np.int64)
    out = tempfile.mkdtemp(prefix="bench_route_stats_")
    cmd = ["build/bin/disagmoe", "route-stats", os.path.join(args.model, "model.onnx"), "--data", "text:" + data,
           "--tokens", str(len(raw)), "--seq-len", str(SEQ), "--run-batch", str(BATCH), "-o", out]
    load_before = os.getloadavg()[0]
    start = time.time()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    ours = time.time() - start
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    ours_cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    doc = json.load(open(os.path.join(out, "route-stats.json")))
    fwd = doc["timing"]["forward_seconds"]
    t0 = resource.getrusage(resource.RUSAGE_SELF)
    torch_s, torch_loads = pytorch_forward(args.model, raw)
    t1 = resource.getrusage(resource.RUSAGE_SELF)
    torch_cpu = (t1.ru_utime - t0.ru_utime) + (t1.ru_stime - t0.ru_stime)
    diffs = []
    for lay, ref in zip(doc["conditions"][0]["layers"], torch_loads):
        diffs.append(np.abs(np.array(lay["expert_loads"]) - ref).sum() / ref.sum())
    print(f"tokens: {len(raw)} ({len(raw) // SEQ} sequences of {SEQ}), model {args.model}, load average {load_before:.1f}")
    print(f"route-stats (whole command: compile, forward, metrics, outputs): {ours:.2f} s "
          f"({len(raw) / ours:.0f} tokens/s); forward {fwd:.2f} s; CPU time {ours_cpu:.2f} s")
    print(f"pytorch eager forward, same tokens and batches: {torch_s:.2f} s ({len(raw) / torch_s:.0f} tokens/s); "
          f"CPU time {torch_cpu:.2f} s")
    print(f"ratio route-stats / pytorch forward: wall {ours / torch_s:.2f}, CPU time {ours_cpu / torch_cpu:.2f}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    print(f"per-expert loads: largest share of assignments that differ, over layers: {max(diffs):.2e}")
    print(f"target <= 60 s: {'PASS' if ours <= 60 else 'FAIL'}")


if __name__ == "__main__":
    main()
