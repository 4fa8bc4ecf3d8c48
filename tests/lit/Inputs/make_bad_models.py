"""Writes the ill-suited ONNX inputs of tests/lit/cli/bad-input.test into a directory.

- dense.onnx: a real torch.onnx.export of the sample decoder with every MoE block replaced by a
  dense SwiGLU MLP: valid ONNX, no MoE layer.
- unsupported-op.onnx: the committed Mixtral sample with one expert's Sigmoid turned into
  HardSigmoid (valid ONNX, an op outside the supported set).
Run with Debian's /usr/bin/python3 (torch, onnx).
"""
import os
import sys

import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "..", "..", "..", "samples", "models", "mixtral_tiny")
sys.path.insert(0, SAMPLE)
import export as sample  # noqa: E402


class DenseMLP(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.expert = sample.Expert(cfg)

    def forward(self, x):
        return self.expert(x)


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    model = sample.MixtralTiny(sample.CONFIG)
    for layer in model.layers:
        layer.block_sparse_moe = DenseMLP(sample.CONFIG)
    model.eval()
    ids = torch.zeros((2, 8), dtype=torch.int64)
    torch.onnx.export(model, ids, os.path.join(out_dir, "dense.onnx"), opset_version=17,
                      input_names=["input_ids"], output_names=["logits"],
                      dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                                    "logits": {0: "batch", 1: "seq"}})

    m = onnx.load(os.path.join(SAMPLE, "model.onnx"))
    node = next(n for n in m.graph.node if n.op_type == "Sigmoid" and "experts.3" in n.name)
    node.op_type = "HardSigmoid"
    onnx.save(m, os.path.join(out_dir, "unsupported-op.onnx"))


if __name__ == "__main__":
    main(sys.argv[1])
