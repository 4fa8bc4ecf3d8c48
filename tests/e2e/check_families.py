"""End-to-end over the MoE family samples (Qwen3-MoE, DeepSeek-MoE, GPT-OSS, DeepSeek-V2-Lite MLA):
each committed export
compiles, its plan reports the exporter's hyper-parameters, and disagmoe-run on 2 A-ranks + 2
F-ranks (p = 1 and, where the layer count allows, p = 2 groups) reproduces PyTorch's logits.

Oracles: golden/config.json (the exporter's hyper-parameters: every one the plan carries is compared,
the norms' epsilons on every component) and golden/logits_b{B}_s{S}.npy (PyTorch eager, fp32), within
the fp32 error model's bound for the sample's chain at that sequence length
(tests/numerics/error_model.py logits_bound: normwise 2 sqrt(2D/3) u, per element 6 sqrt(2D/3) u of
max|logit|); tests/e2e/check_mutations.py shows that bound catches a wrong epsilon, RoPE base, router
scale or expert weight.
  check_families.py BIN_DIR SAMPLES_DIR WORK_DIR [SAMPLE ...]
"""
import glob
import json
import math
import os
import subprocess
import sys

import numpy as np
from checks import Checks

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "numerics"))
import error_model  # noqa: E402

SAMPLES = ["qwen3_moe_tiny", "qwen3_moe_tiny/norm_topk_false", "deepseek_moe_tiny", "gpt_oss_tiny",
           "deepseek_v2_lite_tiny", "gpt_oss_tiny/dense_masked", "gpt_oss_tiny/einsum",
           "qwen3_moe_tiny/dense_masked", "ms_moe_tiny/silu_fc3", "ms_moe_tiny/swiglu_interleaved",
           "ms_moe_tiny/swiglu_concat", "ms_moe_tiny/swiglu_oai_bias", "ms_moe_tiny/silu_fc3_bias",
           "ms_moe_tiny/swiglu_concat_oai_bias", "ms_moe_tiny/relu_default", "ms_moe_tiny/gelu_bias",
           "ms_moe_tiny/silu_plain", "ms_moe_tiny/identity_bias", "qwen3_moe_tiny/hf_forms",
           "gpt_oss_tiny/hf_dense", "gpt_oss_tiny/hf_loop", "gpt_oss_tiny/hf_yarn"]
# com.microsoft.MoE's non-gated activation_type (default relu) -> the plan's expert_activation
# (onnxruntime's gelu is the tanh approximation).
PLAIN_ACTIVATION = {"relu": "relu", "gelu": "gelu_tanh", "silu": "silu", "identity": "identity"}
# Keys every family reports, equal to the exporter's.
COMMON = ["family", "vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim",
          "num_experts", "top_k", "expert_hidden", "num_shared_experts", "dense_layers", "router_scoring",
          "norm_topk_prob"]
# Family-specific keys: plan key -> (config key or function of the config).
SPECIFIC = {
    "qwen3_moe": {"qk_norm": "qk_norm"},
    "deepseek_moe": {"dense_hidden": "dense_hidden", "shared_expert_hidden": "shared_expert_hidden",
                     "routed_scaling_factor": "routed_scaling_factor"},
    "deepseek_v2": {"attention_type": "attention_type", "kv_lora_rank": "kv_lora_rank",
                    "qk_nope_head_dim": "qk_nope_head_dim", "qk_rope_head_dim": "qk_rope_head_dim",
                    "v_head_dim": "v_head_dim", "dense_hidden": "dense_hidden",
                    "shared_expert_hidden": "shared_expert_hidden",
                    "routed_scaling_factor": "routed_scaling_factor"},
    "gpt_oss": {"attention_sinks": "attention_sinks", "attention_bias": "attention_bias",
                "sliding_window": "sliding_window", "router_bias": "router_bias", "expert_bias": "expert_bias",
                "swiglu_limit": "swiglu_limit", "swiglu_alpha": "swiglu_alpha",
                "sliding_window_layers": lambda c: [i for i, t in enumerate(c["layer_types"])
                                                    if t == "sliding_attention"]},
}


def has_fc3(model):
    """True when a com.microsoft.MoE node of the file has fc3_experts_weights (input 6): gated experts."""
    import onnx
    m = onnx.load(model, load_external_data=False)
    return any(n.op_type == "MoE" and len(n.input) > 6 and n.input[6] for n in m.graph.node)


def logits_bound(sdir, shape):
    """The forward check's bound for the sample's logits at golden shape 'b{B}_s{S}'."""
    cfg = json.load(open(os.path.join(sdir, "golden", "config.json")))
    return error_model.logits_bound(cfg, int(shape.split("_s")[1]))


def note_worst(worst, name, bound, got, want):
    share = bound.share(got, want)
    if share >= worst.get(name, (-1.0, ""))[0]:
        worst[name] = (share, bound.check(got, want)[1])


def check_component_hyperparameters(check, name, model, cfg):
    """Every hyper-parameter the plan carries per component equals the exporter's: each RMSNorm's
    epsilon (the layers' and the final norm), the q/k norms' and MLA's kv norm's, the routers' routed
    scaling factor (the family's, 1 where it has none), the experts' SwiGLU clamp and alpha, each
    attention layer's sliding window (GPT-OSS's layer_types) and MLA's softmax scale."""
    eps = cfg["rms_norm_eps"]
    wrong = []
    for c in model["components"]:
        where = f"{c['kind']} layer {c.get('layer', -1)}"
        if c["kind"] == "rms_norm" and not same(float(c["eps"]), eps):
            wrong.append(f"{where} {c.get('role')} eps {c['eps']}")
        for key in ("qk_norm_eps", "kv_norm_eps"):
            if key in c and not same(float(c[key]), eps):
                wrong.append(f"{where} {key} {c[key]}")
        if c["kind"] == "router" and "routed_scaling_factor" in c and not same(
                float(c["routed_scaling_factor"]), float(cfg.get("routed_scaling_factor") or 1.0)):
            wrong.append(f"{where} routed_scaling_factor {c['routed_scaling_factor']}")
        if c["kind"] == "experts":
            # GPT-OSS's config names them; com.microsoft.MoE carries activation_alpha and swiglu_limit.
            attrs = cfg.get("moe_attributes") or {}
            want = {"swiglu_alpha": cfg.get("swiglu_alpha", attrs.get("activation_alpha")),
                    "swiglu_limit": cfg.get("swiglu_limit", attrs.get("swiglu_limit"))}
            for key, value in want.items():
                if (key in c or value is not None) and not same(c.get(key), value):
                    wrong.append(f"{where} {key} {c.get(key)} (exporter {value})")
        if c["kind"] == "attention" and "layer_types" in cfg:
            window = cfg["sliding_window"] if cfg["layer_types"][c["layer"]] == "sliding_attention" else None
            if c.get("sliding_window") != window:
                wrong.append(f"{where} sliding_window {c.get('sliding_window')}")
        if c["kind"] == "mla_attention":
            # DeepSeek-V2 (no rope_scaling): softmax_scale = q_head_dim^-0.5, q_head_dim = nope + rope.
            want = (cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]) ** -0.5
            if not same(float(c["softmax_scale"]), want):
                wrong.append(f"{where} softmax_scale {c['softmax_scale']}")
    norms = sum(c["kind"] == "rms_norm" for c in model["components"])
    check(not wrong and norms == 2 * cfg["num_layers"] + 1 and same(float(model["rms_norm_eps"]), eps),
          f"{name}: {norms} RMSNorms (2 per layer and the final one), every epsilon equal to the exporter's "
          f"rms_norm_eps {eps}, and the per-layer SwiGLU, window, scale and routed-scaling fields "
          f"{wrong if wrong else ''}")


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print(r.stdout)
        raise SystemExit(f"FAILED ({r.returncode}): {' '.join(cmd)}")
    return r.stdout


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=2.0 ** -23)
    return a == b


# Where DeepSeek-MoE's dense layer 0, shared experts, embedding and head run (--dense-side,
# --shared-experts-side, --embedding-side, --head-side); the first is the default placement.
A, F = "attention", "ffn"
SIDES = [(A, A, A, A), (F, A, A, A), (A, F, A, A), (F, F, A, A), (A, A, F, A), (A, A, A, F), (F, F, F, F)]
# The side choices compute the same sums grouped differently ((h + y) + sum_f N2M_f against
# h + (y + routed) on the home F-rank): two fp32 evaluations, held to the same bound.


def check_scaled_rope(check, name, model, cfg):
    """A YaRN export (rope_scaling in the exporter's config): the plan's rope_inv_freq and
    rope_attention_factor equal transformers' _compute_yarn_parameters as the family exporter
    writes it (the module the goldens come from), to fp32 rounding."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples",
                                    "models", "gpt_oss_tiny"))
    sys.dont_write_bytecode = True  # no __pycache__ in samples/
    import export as gpt_oss_export  # noqa: E402  (the exporter's YaRN, torch)
    inv, factor = gpt_oss_export.yarn_parameters(cfg["head_dim"], cfg["rope_theta"], cfg["rope_scaling"])
    got = np.array(model.get("rope_inv_freq", []), dtype=np.float64)
    want = inv.double().numpy()
    check(got.shape == want.shape and np.allclose(got, want, rtol=2 ** -23, atol=0),
          f"{name}: rope_inv_freq {got.tolist()} (exporter's YaRN {want.tolist()})")
    check(abs(model.get("rope_attention_factor", 1.0) - factor) <= 2 ** -23 * factor,
          f"{name}: rope_attention_factor {model.get('rope_attention_factor')} (exporter's {factor})")


def check_sides(disagmoe, runner, sdir, work, check, worst):
    """Each side choice, p = 1 and 2, 2 A-ranks and 2 or 3 F-ranks: logits within the fp32 bound of
    PyTorch and of the attention-side plan; the plan puts each FFN's weights only
    on the chosen side's ranks and its instruction only in that side's program; --train refuses."""
    name = "deepseek_moe_tiny sides"
    for shape in ["b2_s8", "b1_s5"]:
        ids = os.path.join(sdir, "golden", f"ids_{shape}.npy")
        golden = np.load(os.path.join(sdir, "golden", f"logits_{shape}.npy"))
        for p, franks in [(1, 2), (2, 3)]:
            baseline = None
            for dense, shared, embedding, head in SIDES:
                choice = f"dense={dense} shared={shared} embedding={embedding} head={head}"
                plan = os.path.join(work, f"sides_{shape}_p{p}_f{franks}_{dense}_{shared}_{embedding}_{head}")
                run([disagmoe, "compile", os.path.join(sdir, "model.onnx"), "-o", plan, "--groups", str(p),
                     "--attn-ranks", "2", "--ffn-ranks", str(franks), "--dense-side", dense,
                     "--shared-experts-side", shared, "--embedding-side", embedding, "--head-side", head])
                doc = json.load(open(os.path.join(plan, "plan.json")))
                weights = {w["name"]: w["ranks"] for w in doc["model"]["weights"]}
                # Embedding, final norm and head: weights only on the chosen side's group 0, instructions
                # only in that side's program.
                pl = doc["placement"]
                for kind, side, ops in [("embedding", embedding, ["embed"]), ("head", head, ["head", "rms_norm"])]:
                    group = next(g for g in pl["groups"] if g["role"] == side and g["index"] == 0)
                    comps = [c for c in doc["model"]["components"]
                             if c["kind"] == kind or (kind == "head" and c.get("role") == "final_norm")]
                    held = sorted(set(weights[c["weight"]][i] for c in comps for i in range(len(weights[c["weight"]]))))
                    where = sorted(set(r for r, prog in doc["programs"].items() for i in prog
                                       if i["op"] in ops and i.get("layer", -1) == -1))
                    check(pl[f"{kind}_side"] == side and held == group["ranks"] and where == [side],
                          f"{name} {shape} p={p}: {kind} on {side}: weights on ranks {held} ({side} group 0: "
                          f"{group['ranks']}), instructions in {where}")
                for c in doc["model"]["components"]:
                    if c["kind"] != "dense_ffn":
                        continue
                    side = dense if c["role"] == "dense" else shared
                    role = "ffn" if side == "ffn" else "attention"
                    group = next(g for g in doc["placement"]["groups"]
                                 if g["role"] == role and c["layer"] in g["layers"])
                    held = sorted(set(r for k in ("w1", "w2", "w3") for r in weights[c[k]]))
                    where = [r for r, prog in doc["programs"].items()
                             if any(i["op"] == "dense_ffn" and i.get("layer") == c["layer"] for i in prog)]
                    check(c.get("side", "attention") == side and held == group["ranks"] and where == [role],
                          f"{name} {shape} p={p}: layer {c['layer']} {c['role']} FFN on {side}: weights on "
                          f"ranks {held} ({role} group {group['index']}: {group['ranks']}), "
                          f"instruction in {where}")
                out = plan + "_logits.npy"
                run([runner, plan, "--input", ids, "--output", out])
                logits = np.load(out)
                bound = logits_bound(sdir, shape)
                ok, text = bound.check(logits, golden)
                note_worst(worst, name, bound, logits, golden)
                check(ok, f"{name} {shape} p={p} 2A+{franks}F {choice}: vs PyTorch {text}")
                if baseline is None:
                    baseline = logits
                else:
                    ok, text = bound.check(logits, baseline)
                    check(ok, f"{name} {shape} p={p}: {choice} vs the default placement: {text}")
    # Broken FFN-side plans are refused naming the field (plan = the last one: all on the FFN side).
    def refused(edit, expect):
        doc = json.load(open(os.path.join(plan, "plan.json")))
        edit(doc)
        bad = plan + "_bad"
        os.makedirs(bad, exist_ok=True)
        json.dump(doc, open(os.path.join(bad, "plan.json"), "w"))
        r = subprocess.run([runner, bad, "--input", ids], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        check(r.returncode != 0 and expect in r.stdout, f"{name}: broken plan refused ({r.stdout.strip()})")

    def component(doc, role, layer):
        return next(c for c in doc["model"]["components"]
                    if c["kind"] == "dense_ffn" and c["role"] == role and c["layer"] == layer)

    def bad_side(doc):
        component(doc, "dense", 0)["side"] = "gpu"

    def attention_side(doc):  # side says attention: the A-ranks would need the weights
        del component(doc, "shared", 1)["side"]

    def instruction_on_attention(doc):  # side says ffn, the instruction moves to the attention program
        ffn = doc["programs"]["ffn"]
        i = next(i for i, x in enumerate(ffn) if x["op"] == "dense_ffn" and x["layer"] == 1)
        doc["programs"]["attention"].insert(0, ffn.pop(i))

    def no_dense_m2n(doc):
        doc["exchanges"] = [e for e in doc["exchanges"] if not (e["layer"] == 0 and e["kind"] == "m2n")]

    def dense_router(doc):
        doc["programs"]["attention"].insert(0, {"op": "router", "layer": 0, "stream": "forward"})

    refused(bad_side, 'side: "gpu" is not one of')
    refused(attention_side, "runs layer 1 shared FFN but does not hold weight")
    refused(instruction_on_attention, "runs on the ffn side (its component's side), not in the attention program")
    refused(no_dense_m2n, "exchanges: no m2n exchange for layer 0")
    refused(dense_router, '"router": layer 0 is dense (model.dense_layers)')

    def no_head_exchange(doc):
        doc["exchanges"] = [e for e in doc["exchanges"] if e["kind"] != "head"]

    def embed_on_attention(doc):  # the instruction moves back to the attention program
        doc["programs"]["ffn"] = [i for i in doc["programs"]["ffn"] if i["op"] != "embed"]
        doc["programs"]["attention"].insert(0, {"op": "embed", "stream": "forward"})

    refused(no_head_exchange, "exchanges: no head exchange (placement.head_side is ffn)")
    refused(embed_on_attention, 'programs.attention[0].op: "embed" is not an attention instruction')
    r = subprocess.run([disagmoe, "compile", os.path.join(sdir, "model.onnx"), "-o", plan + "_cli", "--dense-side", "gpu"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check(r.returncode == 1 and "--dense-side must be attention or ffn, got 'gpu'" in r.stdout
          and not os.path.exists(plan + "_cli"), f"{name}: compile --dense-side gpu refused ({r.stdout.strip()})")
    # Training has no dense-FFN backward yet: the FFN-side plan is refused, naming the component.
    r = subprocess.run([runner, plan, "--train", "--input", ids, "--steps", "1"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check(r.returncode != 0 and "training does not support dense_ffn components" in r.stdout,
          f"{name}: --train refuses the FFN-side plan ({r.stdout.strip()[-200:]})")
    # ... and a Mixtral plan (no dense FFN) with its embedding on the FFN side.
    mixtral = os.path.join(os.path.dirname(sdir), "mixtral_tiny")
    edge = os.path.join(work, "sides_mixtral_embedding_ffn")
    run([disagmoe, "compile", os.path.join(mixtral, "model.onnx"), "-o", edge, "--embedding-side", "ffn"])
    r = subprocess.run([runner, edge, "--train", "--input", os.path.join(mixtral, "golden", "ids_b2_s8.npy"),
                        "--steps", "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check(r.returncode != 0 and "training does not support the embedding or head on the ffn side" in r.stdout,
          f"{name}: --train refuses an FFN-side embedding ({r.stdout.strip()[-200:]})")


def main(bin_dir, samples_dir, work, names):
    disagmoe, runner = os.path.join(bin_dir, "disagmoe"), os.path.join(bin_dir, "disagmoe-run")
    check = Checks()
    worst = {}

    for name in names:
        sdir = os.path.join(samples_dir, name)
        cfg = json.load(open(os.path.join(sdir, "golden", "config.json")))
        tag = name.replace("/", "_")
        shapes = sorted(glob.glob(os.path.join(sdir, "golden", "ids_b*_s*.npy")))
        for i, ids_path in enumerate(shapes):
            shape = os.path.basename(ids_path)[len("ids_"):-len(".npy")]
            batch, seq = (int(x[1:]) for x in shape.split("_"))
            groups = [1, 2] if i == 0 and cfg["num_layers"] % 2 == 0 else [1]
            for p in groups:
                plan = os.path.join(work, f"{tag}_{shape}_p{p}")
                run([disagmoe, "compile", os.path.join(sdir, "model.onnx"), "-o", plan, "--batch", str(batch),
                     "--seq-len", str(seq), "--attn-ranks", "2", "--ffn-ranks", "2", "--groups", str(p)])
                model = json.load(open(os.path.join(plan, "plan.json")))["model"]
                if p == 1 and i == 0:
                    wrong = [k for k in COMMON if not same(model.get(k), cfg[k])]
                    for k, src in SPECIFIC.get(cfg["family"], {}).items():
                        want = src(cfg) if callable(src) else cfg[src]
                        if not same(model.get(k), want):
                            wrong.append(k)
                    check(not wrong, f"{name}: hyper-parameters equal the exporter's "
                                     f"{[(k, model.get(k)) for k in wrong] if wrong else ''}")
                    check(abs(model["rope_theta"] - cfg["rope_theta"]) <= 1e-6 * cfg["rope_theta"],
                          f"{name}: rope_theta {model['rope_theta']} (exporter {cfg['rope_theta']})")
                    check_component_hyperparameters(check, name, model, cfg)
                    if cfg.get("rope_scaling"):
                        check_scaled_rope(check, name, model, cfg)
                    attrs = cfg.get("moe_attributes")
                    if (attrs is not None and attrs.get("activation_type", "relu") in PLAIN_ACTIVATION
                            and not has_fc3(os.path.join(sdir, "model.onnx"))):
                        want = PLAIN_ACTIVATION[attrs.get("activation_type", "relu")]
                        check(model.get("expert_activation") == want,
                              f"{name}: non-gated experts, expert_activation {model.get('expert_activation')} "
                              f"(activation_type {attrs.get('activation_type', 'relu (default)')} -> {want})")
                out = plan + "_logits.npy"
                run([runner, plan, "--input", ids_path, "--output", out])
                got, want = np.load(out), np.load(os.path.join(sdir, "golden", f"logits_{shape}.npy"))
                bound = logits_bound(sdir, shape)
                ok, text = bound.check(got, want)
                note_worst(worst, name, bound, got, want)
                check(ok, f"{name} {shape} 2A+2F p={p}: vs PyTorch {text}")
    # Plan validation of the families' fields: a broken plan is refused naming the field.
    def refused(sample, edit, expect):
        plan = os.path.join(work, f"{sample}_b1_s5_p1")
        doc = json.load(open(os.path.join(plan, "plan.json")))
        edit(doc)
        bad = os.path.join(work, f"{sample}_bad")
        os.makedirs(bad, exist_ok=True)
        json.dump(doc, open(os.path.join(bad, "plan.json"), "w"))
        r = subprocess.run([runner, bad, "--input", os.path.join(samples_dir, sample, "golden", "ids_b1_s5.npy")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        check(r.returncode != 0 and expect in r.stdout, f"{sample}: broken plan refused ({r.stdout.strip()})")

    def undense(doc):
        doc["model"]["dense_layers"] = []

    def wrong_sinks(doc):
        attn = next(c for c in doc["model"]["components"] if c["kind"] == "attention")
        attn["sinks"] = attn["bq"]

    if "deepseek_moe_tiny" in names:
        refused("deepseek_moe_tiny", undense, "placement.expert_to_rank[0]: has 0 entries")
    if "gpt_oss_tiny" in names:
        refused("gpt_oss_tiny", wrong_sinks, "expected [4] (num_heads)")
    if "ms_moe_tiny/relu_default" in names:
        # Non-gated experts have no backward: --train refuses up front; a w3 on them is refused.
        plan = os.path.join(work, "ms_moe_tiny_relu_default_b1_s5_p1")
        ids = os.path.join(samples_dir, "ms_moe_tiny", "relu_default", "golden", "ids_b1_s5.npy")
        r = subprocess.run([runner, plan, "--train", "--input", ids, "--steps", "1"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        check(r.returncode != 0 and "training does not support non-gated experts" in r.stdout,
              f"ms_moe_tiny/relu_default: --train refuses non-gated experts ({r.stdout.strip()[-200:]})")
        doc = json.load(open(os.path.join(plan, "plan.json")))
        experts = next(c for c in doc["model"]["components"] if c["kind"] == "experts")
        experts["experts"][0]["w3"] = experts["experts"][0]["w1"]
        bad = plan + "_bad"
        os.makedirs(bad, exist_ok=True)
        json.dump(doc, open(os.path.join(bad, "plan.json"), "w"))
        r = subprocess.run([runner, bad, "--input", ids], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        check(r.returncode != 0 and "activation 'relu' is not gated: it has no w3" in r.stdout,
              f"ms_moe_tiny/relu_default: a w3 on non-gated experts is refused ({r.stdout.strip()[-200:]})")
    if "deepseek_moe_tiny" in names:
        check_sides(disagmoe, runner, os.path.join(samples_dir, "deepseek_moe_tiny"), work, check, worst)
    for name, (share, text) in worst.items():
        print(f"{name}: closest to the bound ({share:.0%} of it): {text}")
    return check.summary()


if __name__ == "__main__":
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:] or SAMPLES))
