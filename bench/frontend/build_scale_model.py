"""Builds the scale benchmark's export: Qwen3-30B-A3B's layer and expert counts (48 layers, 128
experts, top-8) with tiny dims, in the unrolled loop-over-experts form of the Mixtral sample.

Exporting 48 layers x 128 experts directly takes the PyTorch exporter well over 15 minutes, so this
exports ONE such layer with torch.onnx.export (the real exporter output: OneHot / NonZero / Gather /
ScatterElements per expert) and replicates that layer's nodes and initializers 48 times by graph
surgery, chaining each copy's output into the next copy's input. The result is cached: rerunning
with the same arguments and an existing output does nothing.
  /usr/bin/python3 build_scale_model.py OUT.onnx [--layers 48] [--experts 128] [--top-k 8]
                                       [--one-layer CACHE.onnx]
(--one-layer: where the single-layer export is cached, so that cuts with other layer counts reuse
it; default OUT.onnx.one_layer_e<experts>.onnx).
Writes OUT.onnx with its weights in OUT.onnx.data (external data: the file passes 2 GB otherwise
only in extreme settings, and a data file keeps protobuf parsing cost separate from weights).
"""
import argparse
import copy
import os
import sys
import time

import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "samples", "models", "mixtral_tiny"))
import export as sample  # noqa: E402


def export_one_layer(path, experts, top_k):
    cfg = dict(sample.CONFIG, hidden_size=16, num_heads=2, num_kv_heads=1, head_dim=8,
               expert_hidden=16, num_experts=experts, top_k=top_k, num_layers=1, vocab_size=256)
    torch.manual_seed(0)
    model = sample.MixtralTiny(cfg).eval()
    ids = torch.zeros((1, 8), dtype=torch.int64)
    torch.onnx.export(model, ids, path, opset_version=17, input_names=["input_ids"],
                      output_names=["logits"],
                      dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                                    "logits": {0: "batch", 1: "seq"}})


def topological(nodes, available):
    """Nodes reordered so that each comes after the producers of its inputs (stable)."""
    available = set(available) | {""}
    pending, ordered = list(nodes), []
    while pending:
        rest = []
        for n in pending:
            if all(i in available for i in n.input):
                ordered.append(n)
                available.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            raise SystemExit(f"cycle or undefined input at node {rest[0].name}")
        pending = rest
    return ordered


def replicate(one_layer, out_path, layers, data_name):
    m = onnx.load(one_layer)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    produced_by = {o: n for n in g.node for o in n.output}
    layer_nodes = [n for n in g.node if n.name.startswith("/layers.0/")]
    layer_set = {id(n) for n in layer_nodes}
    layer_values = {o for n in layer_nodes for o in n.output}
    # The layer's residual input (the embedding output) and its output (consumed outside).
    inputs = {i for n in layer_nodes for i in n.input
              if i and i not in layer_values and i not in inits and produced_by.get(i) is not None
              and produced_by[i].name.startswith("/embed_tokens/")}
    assert len(inputs) == 1, inputs
    layer_in = inputs.pop()
    outside_uses = {i for n in g.node if id(n) not in layer_set for i in n.input}
    outputs = [o for o in layer_values if o in outside_uses]
    assert len(outputs) == 1, outputs
    layer_out = outputs[0]
    layer_inits = sorted({i for n in layer_nodes for i in n.input if i in inits})

    new_nodes, new_inits = [], []
    prev = layer_in
    for l in range(layers):
        rename = {v: f"{v}__L{l}" for v in layer_values}
        rename.update({w: f"{w}__L{l}" for w in layer_inits})
        rename[layer_in] = prev
        for n in layer_nodes:
            c = copy.deepcopy(n)
            c.name = n.name.replace("/layers.0/", f"/layers.{l}/", 1)
            c.input[:] = [rename.get(i, i) for i in n.input]
            c.output[:] = [rename.get(o, o) for o in n.output]
            new_nodes.append(c)
        for w in layer_inits:
            c = copy.deepcopy(inits[w])
            c.name = rename[w]
            new_inits.append(c)
        prev = rename[layer_out]

    first = next(i for i, n in enumerate(g.node) if id(n) in layer_set)
    before = [n for n in g.node[:first] if id(n) not in layer_set]
    after = [n for n in g.node[first:] if id(n) not in layer_set]
    for n in after:
        n.input[:] = [prev if i == layer_out else i for i in n.input]
    used_outside = {i for n in before + after for i in n.input}
    kept_inits = [i for i in g.initializer if i.name not in layer_inits or i.name in used_outside]
    del g.node[:]
    g.node.extend(topological(before + new_nodes + after, {i.name for i in g.input} |
                              {i.name for i in kept_inits + new_inits}))
    del g.initializer[:]
    g.initializer.extend(kept_inits + new_inits)
    onnx.save_model(m, out_path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data_name, size_threshold=1024)
    return len(g.node)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--layers", type=int, default=48)
    parser.add_argument("--experts", type=int, default=128)
    parser.add_argument("--top-k", type=int, default=8)
    parser.add_argument("--one-layer", help="cache path of the single-layer export")
    args = parser.parse_args()
    if os.path.exists(args.out) and os.path.exists(args.out + ".data"):
        print(f"cached: {args.out}")
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    one = args.one_layer or args.out + f".one_layer_e{args.experts}.onnx"
    if not os.path.exists(one):
        start = time.time()
        export_one_layer(one, args.experts, args.top_k)
        print(f"exported one layer with {args.experts} experts in {time.time() - start:.1f} s")
    start = time.time()
    nodes = replicate(one, args.out + ".tmp", args.layers, os.path.basename(args.out) + ".data")
    os.replace(args.out + ".tmp", args.out)
    print(f"replicated to {args.layers} layers: {nodes} nodes, "
          f"{os.path.getsize(args.out) / 1e6:.1f} MB graph + "
          f"{os.path.getsize(args.out + '.data') / 1e6:.1f} MB weights in {time.time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
