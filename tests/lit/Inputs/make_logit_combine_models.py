"""Writes Mixtral-style exports whose experts' combine does not read the router's top-k weights,
which the raise pass must refuse naming the node that reads the wrong value and what it expected
(tests/lit/raise/refuse-logit-combine.test):

- rerun_router.onnx: the MoE block runs its router a second time (a second MatMul(x, Wg) and
  Softmax) and gathers the combine weights from that, torch.gather(softmax(gate(x)), 1, ids),
  instead of using the TopK's values (numerically the unrenormalised top-k probabilities, but not
  the router the plan runs);
- logit_combine.onnx: the combine weights are the router logits of the chosen experts,
  torch.gather(logits, 1, ids), not the softmax-top-k weights.
Both from samples/models/mixtral_variants/export_variants.py's modules (the sample's loop over
experts), exported at opset 17 with constant folding. Run with Debian's /usr/bin/python3.
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "samples", "models", "mixtral_variants"))
import export_variants as variants  # noqa: E402


class RerunRouter(variants.Router):
    form = "rerun_router"

    def route(self, x):
        logits = self.gate(x)
        probs = F.softmax(logits, dim=-1, dtype=torch.float)
        _, ids = torch.topk(probs, self.top_k, dim=-1)
        if self.form == "rerun_router":
            w = torch.gather(F.softmax(self.gate(x), dim=-1, dtype=torch.float), 1, ids)
        else:
            w = torch.gather(logits, 1, ids)
        return logits, probs, w.to(x.dtype), ids


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for form in ["rerun_router", "logit_combine"]:
        model = variants.build("softmax_topk", "triu")
        for layer in model.layers:
            block = RerunRouter(variants.CONFIG)
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
