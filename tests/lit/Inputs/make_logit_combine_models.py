"""Writes Mixtral-style exports whose experts' combine does not read the router's top-k weights,
which the raise pass must refuse naming the node that reads the wrong value and what it expected
(tests/lit/raise/refuse-logit-combine.test):

- logit_combine.onnx: the combine weights are read from the router logits,
  router_logits[top_x, idx] where Hugging Face's loop reads routing_weights[top_x, idx];
- probs_combine.onnx: they are read from the softmax over every expert, probs[top_x, idx]
  (the full router distribution, not the top-k weights renormalised).
Both from samples/models/mixtral_variants/export_variants.py's modules (the sample's loop over
experts), exported at opset 17 with constant folding. Run with Debian's /usr/bin/python3.
"""
import os
import sys

import torch
import torch.nn.functional as F

# No __pycache__ beside export_variants.py (tests glob that folder's subfolders as variants).
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "samples", "models", "mixtral_variants"))
import export_variants as variants  # noqa: E402


class ForeignCombine(variants.Router):
    form = "logit_combine"

    def route(self, x):
        logits = self.gate(x)
        probs = F.softmax(logits, dim=-1, dtype=torch.float)
        _, ids = torch.topk(probs, self.top_k, dim=-1)
        # The loop reads w[top_x, idx]: a logit or a probability, not a top-k weight.
        w = logits if self.form == "logit_combine" else probs
        return logits, probs, w.to(x.dtype), ids


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for form in ["logit_combine", "probs_combine"]:
        model = variants.build("softmax_topk_renorm", "triu")
        for layer in model.layers:
            block = ForeignCombine(variants.CONFIG)
            block.form = form
            block.load_state_dict(layer.block_sparse_moe.state_dict())
            layer.block_sparse_moe = block
        model.eval()
        ids = torch.zeros((2, 8), dtype=torch.int64)
        torch.onnx.export(model, ids, os.path.join(out_dir, form + ".onnx"), opset_version=17,
                          input_names=["input_ids"], output_names=["logits"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                                        "logits": {0: "batch", 1: "seq"}})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
