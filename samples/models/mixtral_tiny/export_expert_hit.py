#!/usr/bin/python3
"""mixtral_tiny with transformers' current expert loop: over the experts the batch hits, traced.

transformers >= 4.48 (modeling_mixtral.py MixtralSparseMoeBlock.forward, and the Qwen2/3-MoE
blocks written the same way) no longer loops over every expert:
    expert_mask = one_hot(selected_experts, num_classes=num_experts).permute(2, 1, 0)
    expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
    for expert_idx in expert_hit:
        expert_layer = self.experts[expert_idx]
        idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
        ...
torch.onnx.export traces that loop: the file holds one loop body per expert the example input
routed to, in ascending order, indexed by the rows of NonZero(...) at run time. With an example
input that hits every expert of every layer (golden/ids_b3_s12 of ../mixtral_tiny does), the file
computes mixtral_tiny on every input that also hits every expert (onnxruntime fails in the Split
on any other); with one that misses experts, their weights are not in the file at all.

Writes, from mixtral_tiny's weights (export.build_model) with this forward on each block:
  expert_hit/model.onnx             traced on golden/ids_b3_s12.npy (every expert of every layer hit)
  expert_hit/golden/                config.json (mixtral_tiny's, with "expert_form": "hit_loop" and
                                    "base"), ids_b3_s12.npy and logits_b3_s12.npy copied from
                                    ../mixtral_tiny/golden (this forward computes them within the
                                    fp32 error model's bound, checked here: the same model, the same
                                    arithmetic per expert; the other golden shapes miss experts, so
                                    onnxruntime cannot run this file on them)
With --trace-ids IDS.npy --out DIR it writes DIR/model.onnx traced on those ids instead (the
tests' partial file: tests/e2e/check_expert_hit_loop.py).

  /usr/bin/python3 export_expert_hit.py [--out DIR] [--trace-ids IDS.npy] [--check]
--check writes into a temporary directory and compares model.onnx byte for byte and the goldens.
"""
import argparse
import filecmp
import json
import os
import shutil
import sys
import tempfile
import types

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "numerics"))
import error_model  # noqa: E402
import export as mt  # noqa: E402

TRACE_SHAPE = "b3_s12"


def forward_expert_hit(self, x):
    """MixtralSparseMoeBlock.forward of transformers >= 4.48, on mixtral_tiny's modules."""
    bsz, seq, hidden = x.shape
    x = x.view(-1, hidden)
    _, _, w, ids = self.route(x)
    final = torch.zeros((bsz * seq, hidden), dtype=x.dtype, device=x.device)
    expert_mask = F.one_hot(ids, num_classes=self.num_experts).permute(2, 1, 0)
    expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
    for expert_idx in expert_hit:
        expert_layer = self.experts[expert_idx]
        idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
        cur = x[None, top_x].reshape(-1, hidden)
        out = expert_layer(cur) * w[top_x, idx, None]
        final.index_add_(0, top_x, out.to(x.dtype))
    return final.reshape(bsz, seq, hidden)


def build():
    model = mt.build_model().eval()
    for layer in model.layers:
        block = layer.block_sparse_moe
        block.forward = types.MethodType(forward_expert_hit, block)
    return model


def export(model, ids, path):
    with torch.no_grad():
        torch.onnx.export(model, (torch.from_numpy(ids),), path, input_names=["input_ids"],
                          output_names=["logits"], opset_version=17,
                          dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}})


def write(out):
    model = build()
    base = os.path.join(HERE, "golden")
    ids = np.load(os.path.join(base, f"ids_{TRACE_SHAPE}.npy"))
    with torch.no_grad():
        logits = model(torch.from_numpy(ids)).numpy()
    ref = np.load(os.path.join(base, f"logits_{TRACE_SHAPE}.npy"))
    cfg = json.load(open(os.path.join(base, "config.json")))
    ok, text = error_model.logits_bound(cfg, ids.shape[1]).check(logits, ref)
    if not ok:
        raise SystemExit(f"the expert-hit forward differs from mixtral_tiny's golden logits_{TRACE_SHAPE} "
                         f"({text}): it must compute the same model")
    form = os.path.join(out, "expert_hit")
    gdir = os.path.join(form, "golden")
    os.makedirs(gdir, exist_ok=True)
    export(model, ids, os.path.join(form, "model.onnx"))
    cfg.update(expert_form="hit_loop", base="mixtral_tiny", trace_shape=TRACE_SHAPE)
    with open(os.path.join(gdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1, sort_keys=True)
        f.write("\n")
    for kind in ("ids", "logits"):
        shutil.copyfile(os.path.join(base, f"{kind}_{TRACE_SHAPE}.npy"), os.path.join(gdir, f"{kind}_{TRACE_SHAPE}.npy"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--trace-ids")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if args.trace_ids:
        os.makedirs(args.out, exist_ok=True)
        export(build(), np.load(args.trace_ids), os.path.join(args.out, "model.onnx"))
        return 0
    if not args.check:
        write(args.out)
        return 0
    tmp = tempfile.mkdtemp()
    try:
        write(tmp)
        bad = []
        for root, _, files in os.walk(os.path.join(tmp, "expert_hit")):
            for fn in files:
                new = os.path.join(root, fn)
                ref = os.path.join(HERE, os.path.relpath(new, tmp))
                if not os.path.exists(ref) or not filecmp.cmp(new, ref, shallow=False):
                    bad.append(os.path.relpath(ref, HERE))
        for b in bad:
            print(f"differs: {b}")
        print("expert_hit regenerated: " + ("identical" if not bad else f"{len(bad)} files differ"))
        return 1 if bad else 0
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())
