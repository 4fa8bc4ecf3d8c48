#!/usr/bin/python3
"""Export the tiny DeepSeek-MoE decoder through DeepSeek's `moe_infer` path: a silently wrong export.

    /usr/bin/python3 samples/models/deepseek_moe_tiny/export_moe_infer.py [--out DIR]
    /usr/bin/python3 samples/models/deepseek_moe_tiny/export_moe_infer.py --check [DIR]

The same model as export.py (2 layers here: layer 0 dense, layer 1 MoE with 16 experts top-6 and
shared experts), except that the routed experts run DeepSeek-V2's inference path
(`DeepseekV2MoE.moe_infer` of modeling_deepseek.py, deepseek-ai/DeepSeek-V2-Lite):

    cnts = topk_ids.new_zeros((tokens, experts)); cnts.scatter_(1, topk_ids, 1)
    tokens_per_expert = cnts.sum(dim=0)
    idxs = topk_ids.view(-1).argsort()                      # token-expert pairs sorted by expert
    sorted_tokens = x[idxs // topk_ids.shape[1]]
    tokens_per_expert = tokens_per_expert.cpu().numpy()     # leaves the graph: Python ints
    for i, num_tokens in enumerate(tokens_per_expert):
        end_idx = start_idx + num_tokens
        if num_tokens == 0: continue                        # experts without tokens vanish
        outputs.append(expert_i(sorted_tokens[start_idx:end_idx])); start_idx = end_idx
    new_x[idxs] = cat(outputs); y = (new_x.view(tokens, k, -1) * topk_weight[..., None]).sum(1)

moe_infer_v1/ is DeepSeek-MoE 16B's V1 form (bincount -> cumsum, slices of the sorted token
indices), moe_infer_split/ cuts the sorted tokens with torch.split(sorted_tokens, counts).

torch.onnx.export traces them: `.cpu().numpy()` turns the per-expert counts of the traced batch into
Python ints, so every `sorted_tokens[start:end]` becomes a Slice with constant bounds (one Split
with constant sizes for torch.split), and experts that got no token in the traced batch have no
nodes at all. The export therefore routes every batch like the traced one. The compiler must refuse it (tests/lit/raise/refuse-moe-infer.test);
the script prints the constant slice bounds it baked, which the test's expectations come from.

golden/: the eager model's logits on the traced ids and on another batch of the same shape
(tests/e2e/check_moe_infer.py runs the export in onnxruntime on both). `--check` re-exports and
compares the model bytes.
"""

import copy
import hashlib
import importlib.util
import os
import sys
import tempfile
import warnings

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "family_common"))
import family_export as fx  # noqa: E402

_spec = importlib.util.spec_from_file_location("deepseek_export", os.path.join(HERE, "export.py"))
ds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ds)

CONFIG = dict(copy.deepcopy(ds.CONFIG), num_layers=2)


def moe_infer(self, hidden_states):
    """DeepseekV2MoE.forward in eval mode with moe_infer (ep_size 1), as in modeling_deepseek.py."""
    identity = hidden_states
    bsz, seq, hidden = hidden_states.shape
    topk_ids, topk_weight = self.gate(hidden_states)
    x = hidden_states.view(-1, hidden)
    cnts = topk_ids.new_zeros((topk_ids.shape[0], self.num_experts))
    cnts.scatter_(1, topk_ids, 1)
    tokens_per_expert = cnts.sum(dim=0)
    idxs = topk_ids.view(-1).argsort()
    sorted_tokens = x[idxs // topk_ids.shape[1]]
    tokens_per_expert = tokens_per_expert.cpu().numpy()
    outputs = []
    start_idx = 0
    for i, num_tokens in enumerate(tokens_per_expert):
        end_idx = start_idx + num_tokens
        if num_tokens == 0:
            continue
        outputs.append(self.experts[i](sorted_tokens[start_idx:end_idx]))
        start_idx = end_idx
    outs = torch.cat(outputs, dim=0)
    new_x = torch.empty_like(outs)
    new_x[idxs] = outs
    y = (new_x.view(*topk_ids.shape, -1).type(topk_weight.dtype)
         .mul_(topk_weight.unsqueeze(dim=-1)).sum(dim=1).type(new_x.dtype))
    return y.view(bsz, seq, hidden) + self.shared_experts(identity)


def moe_infer_v1(self, hidden_states):
    """DeepseekMoE.forward in eval mode with DeepSeek-MoE 16B's moe_infer (deepseek-ai/
    deepseek-moe-16b-base): bincount -> cumsum of the counts, slices of the sorted token indices;
    its scatter_reduce_(reduce='sum') does not export in PyTorch 1.13 and is written as the equal
    scatter_add_ (docs/architecture.md, "What real exports look like")."""
    identity = hidden_states
    bsz, seq, hidden = hidden_states.shape
    topk_idx, topk_weight = self.gate(hidden_states)
    x = hidden_states.view(-1, hidden)
    flat_expert_indices = topk_idx.view(-1)
    flat_expert_weights = topk_weight.view(-1, 1)
    expert_cache = torch.zeros_like(x)
    idxs = flat_expert_indices.argsort()
    tokens_per_expert = flat_expert_indices.bincount().cpu().numpy().cumsum(0)
    token_idxs = idxs // self.gate.top_k
    for i, end_idx in enumerate(tokens_per_expert):
        start_idx = 0 if i == 0 else tokens_per_expert[i - 1]
        if start_idx == end_idx:
            continue
        exp_token_idx = token_idxs[start_idx:end_idx]
        expert_out = self.experts[i](x[exp_token_idx])
        expert_out = expert_out * flat_expert_weights[idxs[start_idx:end_idx]]
        expert_cache.scatter_add_(0, exp_token_idx.view(-1, 1).repeat(1, x.shape[-1]), expert_out)
    return expert_cache.view(bsz, seq, hidden) + self.shared_experts(identity)


def moe_infer_split(self, hidden_states):
    """moe_infer with the per-expert chunks cut by torch.split(sorted_tokens, counts) instead of
    slices (as grouped-GEMM style MoE code does): exports one Split with the traced counts."""
    identity = hidden_states
    bsz, seq, hidden = hidden_states.shape
    topk_ids, topk_weight = self.gate(hidden_states)
    x = hidden_states.view(-1, hidden)
    idxs = topk_ids.view(-1).argsort()
    sorted_tokens = x[idxs // topk_ids.shape[1]]
    tokens_per_expert = topk_ids.view(-1).bincount(minlength=self.num_experts).cpu().numpy()
    chunks = torch.split(sorted_tokens, [int(n) for n in tokens_per_expert])
    outs = torch.cat([self.experts[i](c) for i, c in enumerate(chunks) if tokens_per_expert[i] > 0], dim=0)
    new_x = torch.empty_like(outs)
    new_x[idxs] = outs
    y = (new_x.view(*topk_ids.shape, -1) * topk_weight.unsqueeze(dim=-1)).sum(dim=1)
    return y.view(bsz, seq, hidden) + self.shared_experts(identity)


FORMS = {"moe_infer": moe_infer, "moe_infer_v1": moe_infer_v1, "moe_infer_split": moe_infer_split}


def export(out_dir, form):
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = ds.build(CONFIG)
    for layer in model.layers:
        if isinstance(layer.mlp, ds.DeepseekMoE):
            layer.mlp.forward = FORMS[form].__get__(layer.mlp)
    ids = torch.randint(0, CONFIG["vocab_size"], (1, 3),  # 18 token-expert pairs, 16 experts
                        generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        counts = []  # the traced batch's tokens per expert, recomputed eagerly
        cos, sin, mask = model.rope_and_mask(ids)
        x = model.embed_tokens(ids)
        for layer in model.layers:
            h = x + layer.self_attn(layer.input_layernorm(x), cos, sin, mask)
            if isinstance(layer.mlp, ds.DeepseekMoE):
                topk_ids, _ = layer.mlp.gate(layer.post_attention_layernorm(h))
                counts.append(torch.bincount(topk_ids.view(-1), minlength=CONFIG["num_experts"]))
            x = layer(x, cos, sin, mask)
    # Goldens for tests/e2e/check_moe_infer.py: the eager model's logits on the traced ids and on
    # another batch of the same shape, which the export (traced counts) gets wrong.
    other = torch.randint(0, CONFIG["vocab_size"], (1, 3), generator=torch.Generator().manual_seed(11))
    gdir = os.path.join(out_dir, "golden")
    os.makedirs(gdir, exist_ok=True)
    with torch.no_grad():
        for name, t in (("trace", ids), ("other", other)):
            np.save(os.path.join(gdir, f"ids_{name}.npy"), fx.i64(t), allow_pickle=False)
            np.save(os.path.join(gdir, f"logits_{name}.npy"), fx.f32(model(t)), allow_pickle=False)
    path = os.path.join(out_dir, "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = fx.export_onnx(model, ids, path)
    for c in counts:
        ends = c.cumsum(0)
        print("traced tokens per expert: " + " ".join(str(int(v)) for v in c))
        print("baked slice bounds [start, end) of the experts with tokens: " +
              " ".join(f"[{int(e - n)},{int(e)})" for n, e in zip(c, ends) if n > 0))
        print(f"experts without tokens (no nodes in the export): {[i for i, n in enumerate(c) if n == 0]}")
    print(f"model.onnx {os.path.getsize(path)} bytes, {len(m.graph.node)} nodes, "
          f"sha256 {hashlib.sha256(open(path, 'rb').read()).hexdigest()}")
    return path


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--check"]:
        ref = args[1] if len(args) > 1 else HERE
        same = True
        with tempfile.TemporaryDirectory(prefix="moe_infer_check_") as tmp:
            for form in FORMS:
                new = export(os.path.join(tmp, form), form)
                with open(new, "rb") as a, open(os.path.join(ref, form, "model.onnx"), "rb") as b:
                    if a.read() != b.read():
                        print(f"{form}/model.onnx differs")
                        same = False
        print("check: OK" if same else "check: FAILED")
        sys.exit(0 if same else 1)
    out = args[args.index("--out") + 1] if "--out" in args else HERE
    for form in FORMS:
        print(f"{form}:")
        export(os.path.join(out, form), form)
