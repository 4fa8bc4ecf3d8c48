"""Hugging Face weights in and out (disagmoe-run --init-weights / --export-hf), per family sample.

For each sample the test builds the exporter's own torch module (the sample's export.py, which
mirrors transformers' module and parameter names), perturbs every parameter (so the weights differ
from the ONNX file the plan points at), and writes its state_dict() under Hugging Face names
("model." + name, lm_head.weight as is) with this file's own safetensors writer (8-byte
little-endian header length, JSON header, raw bytes; our C++ writer is never used). Then:
  - disagmoe-run PLAN --init-weights FILE: logits within the fp32 error model's bound of torch's
    forward on the perturbed module (tests/numerics/error_model.py logits_bound), on token ids
    drawn with a router margin for the perturbed weights (family_export.draw_ids);
  - the same from BF16 and F16 tensors (torch's .to(bfloat16) / .to(float16)) against torch's
    forward on the module with those rounded weights, and from shards + model.safetensors.index.json (bit-identical to
    the one-file run);
  - --init-weights X --export-hf D: every tensor of D, read with this file's reader, bit-for-bit
    what torch holds (name, shape, F32 bytes); config.json's fields equal the module's config;
    a sharded export (--export-shard-bytes) with an index as transformers writes it, reloaded equal;
    --export-dtype bf16 equal bit-for-bit to torch's .to(torch.bfloat16);
  - --train --steps 1 --export-hf: the exported tensors equal --save-weights' (the trained weights,
    [in, out]) transposed to [out, in];
  - refusals, each one line naming the tensor and the file, exit 1, no export directory left:
    a missing tensor, an extra tensor, a wrong shape.
With --mpirun MPIRUN, instead: --train --comm mpi --export-hf (rank 0 writes the weights gathered
from every process) byte-identical to the same run's export under --comm local.
  check_hf_weights.py BIN_DIR SAMPLES_DIR WORK_DIR [SAMPLE ...] [--mpirun MPIRUN]
"""
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import torch

from checks import Checks

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "numerics"))
import error_model  # noqa: E402

sys.dont_write_bytecode = True  # keep the sample folders clean

# sample -> (model_type, architecture, experts key, expert-width key)
FAMILIES = {
    "mixtral_tiny": ("mixtral", "MixtralForCausalLM", "num_local_experts", "intermediate_size"),
    "qwen3_moe_tiny": ("qwen3_moe", "Qwen3MoeForCausalLM", "num_experts", "moe_intermediate_size"),
    "deepseek_moe_tiny": ("deepseek", "DeepseekForCausalLM", "n_routed_experts", "moe_intermediate_size"),
    "deepseek_v2_lite_tiny": ("deepseek_v2", "DeepseekV2ForCausalLM", "n_routed_experts",
                              "moe_intermediate_size"),
    "gpt_oss_tiny": ("gpt_oss", "GptOssForCausalLM", "num_local_experts", "intermediate_size"),
}


# ---------------------------------------------------------------- safetensors, written here
def write_safetensors(path, tensors, dtype="F32"):
    """tensors: [(name, torch tensor)] in order; F32, F16 or BF16 (torch's rounding)."""
    header, blobs, at = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors:
        t = t.detach().contiguous()
        if dtype == "F32":
            raw = t.to(torch.float32).numpy().astype("<f4").tobytes()
        elif dtype == "F16":
            raw = t.to(torch.float16).numpy().astype("<f2").tobytes()
        else:
            raw = t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """{name: (dtype, shape, raw bytes)} and the metadata, checking the spec's tiling."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    buf = data[8 + n:]
    out, ranges = {}, []
    for name, e in header.items():
        b, end = e["data_offsets"]
        out[name] = (e["dtype"], tuple(e["shape"]), buf[b:end])
        ranges.append((b, end))
    ranges.sort()
    at = 0
    for b, end in ranges:
        assert b == at, f"{path}: hole or overlap at {b}"
        at = end
    assert at == len(buf), f"{path}: {len(buf) - at} uncovered bytes"
    return out, meta


def read_export(d):
    """Every tensor of an export directory (one file, or the shards its index names)."""
    index = os.path.join(d, "model.safetensors.index.json")
    if not os.path.exists(index):
        return read_safetensors(os.path.join(d, "model.safetensors"))[0], None
    idx = json.load(open(index))
    tensors = {}
    for shard in sorted(set(idx["weight_map"].values())):
        got, _ = read_safetensors(os.path.join(d, shard))
        for name in got:
            assert idx["weight_map"].get(name) == shard, f"{name} in {shard}, index says {idx['weight_map'].get(name)}"
        tensors.update(got)
    return tensors, idx


def f32_bytes(t):
    return t.detach().contiguous().to(torch.float32).numpy().astype("<f4").tobytes()


def bf16_bytes(t):
    return t.detach().contiguous().to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()


# ---------------------------------------------------------------- the samples' own modules
def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build(samples, sample):
    """(module, config dict, draw(model) -> ids) for the sample's exporter."""
    mod = load_module(os.path.join(samples, sample, "export.py"), f"export_{sample}")
    if sample == "mixtral_tiny":
        model = mod.build_model()
        return model, mod.CONFIG, lambda m: mod.draw_ids(m, 2, 8)[0]
    variant = mod.VARIANTS[0]
    torch.manual_seed(variant["weight_seed"])
    model = variant["build"]()
    fx = sys.modules["family_export"]
    return model, model.cfg, lambda m: fx.draw_ids(m, 2, 8, 7000)[0]


def hf_state(model):
    """The module's parameters under Hugging Face names (state_dict minus non-persistent buffers)."""
    params = dict(model.named_parameters())
    state = model.state_dict()
    extra = sorted(set(state) - set(params))
    assert not extra, f"state_dict has buffers that are not parameters: {extra}"
    return [(k if k == "lm_head.weight" else "model." + k, v) for k, v in state.items()]


def perturb(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in model.named_parameters():
            p.add_(0.1 * float(p.std()) * torch.randn(p.shape, generator=g))


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def must(cmd):
    r = run(cmd)
    if r.returncode != 0:
        print(r.stdout + r.stderr)
        raise SystemExit(f"FAILED ({r.returncode}): {' '.join(cmd)}")
    return r.stdout


def check_config(check, name, cfg_path, cfg, sample):
    model_type, arch, experts_key, width_key = FAMILIES[sample]
    got = json.load(open(cfg_path))
    want = {"model_type": model_type, "architectures": [arch], "hidden_size": cfg["hidden_size"],
            "num_attention_heads": cfg["num_heads"], "num_key_value_heads": cfg["num_kv_heads"],
            "num_hidden_layers": cfg["num_layers"], "vocab_size": cfg["vocab_size"],
            experts_key: cfg["num_experts"], "num_experts_per_tok": cfg["top_k"],
            width_key: cfg["expert_hidden"], "rms_norm_eps": cfg["rms_norm_eps"],
            "rope_theta": cfg["rope_theta"], "tie_word_embeddings": False}
    if sample != "deepseek_v2_lite_tiny":
        want["head_dim"] = cfg["head_dim"]
    else:
        want.update({k: cfg[k] for k in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                          "v_head_dim", "q_lora_rank")})
    if "norm_topk_prob" in cfg and cfg["norm_topk_prob"] is not None:
        want["norm_topk_prob"] = cfg["norm_topk_prob"]
    if sample.startswith("deepseek"):
        want["first_k_dense_replace"] = cfg["first_k_dense_replace"]
        want["intermediate_size"] = cfg["dense_hidden"]
        want["n_shared_experts"] = cfg["num_shared_experts"]
        want["routed_scaling_factor"] = cfg["routed_scaling_factor"]
    if sample == "gpt_oss_tiny":
        want.update({k: cfg[k] for k in ("sliding_window", "layer_types", "swiglu_limit", "attention_bias")})
    wrong = {k: (got.get(k, "absent"), v) for k, v in want.items() if got.get(k, "absent") != v}
    check(not wrong, f"{name}: config.json has the module's {len(want)} fields {wrong if wrong else ''}")


def check_sample(check, bindir, samples, work, sample):
    disagmoe, runner = os.path.join(bindir, "disagmoe"), os.path.join(bindir, "disagmoe-run")
    wdir = os.path.join(work, sample)
    shutil.rmtree(wdir, ignore_errors=True)
    os.makedirs(wdir)
    plan = os.path.join(wdir, "plan")
    must([disagmoe, "compile", os.path.join(samples, sample, "model.onnx"), "-o", plan])

    model, cfg, draw = build(samples, sample)
    perturb(model, 4242)
    ids = draw(model)
    ids_path = os.path.join(wdir, "ids.npy")
    np.save(ids_path, ids.numpy())
    with torch.no_grad():
        want = model(ids).numpy()
    bound = error_model.logits_bound(cfg, ids.shape[1])
    state = hf_state(model)
    hf = os.path.join(wdir, "hf.safetensors")
    write_safetensors(hf, state)

    # Forward from the HF file, against torch on the perturbed module; the ONNX weights differ.
    out = os.path.join(wdir, "logits.npy")
    export = os.path.join(wdir, "export")
    text = must([runner, plan, "--input", ids_path, "--output", out, "--init-weights", hf,
                 "--export-hf", export])
    got = np.load(out)
    ok, what = bound.check(got, want)
    check(ok and "initial weights: " + hf in text, f"{sample}: --init-weights logits vs torch (perturbed) {what}")
    base = os.path.join(wdir, "onnx_logits.npy")
    must([runner, plan, "--input", ids_path, "--output", base])
    check(not bound.check(np.load(base), want)[0],
          f"{sample}: the plan's own ONNX weights miss torch's perturbed logits (the perturbation matters)")

    # The round trip --init-weights X --export-hf D: bit-identical to what torch holds.
    tensors, idx = read_export(export)
    names = [n for n, _ in state]
    bad = [n for n, t in state if n not in tensors or tensors[n][0] != "F32" or tensors[n][1] != tuple(t.shape)
           or tensors[n][2] != f32_bytes(t)]
    check(idx is None and not bad and sorted(tensors) == sorted(names),
          f"{sample}: --export-hf wrote {len(tensors)} tensors in one model.safetensors, each bit-identical "
          f"to torch's {len(names)} {bad[:3] if bad else ''}")
    _, meta = read_safetensors(os.path.join(export, "model.safetensors"))
    check(meta == {"format": "pt"}, f"{sample}: safetensors metadata {meta} (from_pretrained checks format pt)")
    check_config(check, sample, os.path.join(export, "config.json"), cfg, sample)

    # Sharded export: about three shards; each at most the limit unless one tensor alone.
    total = sum(t.numel() * 4 for _, t in state)
    limit = total // 3 + 1
    sharded = os.path.join(wdir, "export_sharded")
    must([runner, plan, "--input", ids_path, "--init-weights", hf, "--export-hf", sharded,
          "--export-shard-bytes", str(limit)])
    tensors, idx = read_export(sharded)
    shard_files = sorted(f for f in os.listdir(sharded) if f.endswith(".safetensors"))
    sizes_ok = all(sum(len(v[2]) for v in read_safetensors(os.path.join(sharded, f))[0].values()) <= limit
                   or len(read_safetensors(os.path.join(sharded, f))[0]) == 1 for f in shard_files)
    n = len(shard_files)
    bad = [nm for nm, t in state if nm not in tensors or tensors[nm][2] != f32_bytes(t)]
    check(idx is not None and n >= 3 and shard_files == [f"model-{i:05d}-of-{n:05d}.safetensors" for i in range(1, n + 1)]
          and idx["metadata"]["total_size"] == total and sorted(idx["weight_map"]) == sorted(names)
          and sizes_ok and not bad and not os.path.exists(os.path.join(sharded, "model.safetensors")),
          f"{sample}: --export-shard-bytes {limit}: {n} shards and an index (total_size {total}), "
          f"reloaded bit-identical {bad[:3] if bad else ''}")

    # Shards in: the index this test writes, the same logits bit for bit.
    shards_in = os.path.join(wdir, "hf_shards")
    os.makedirs(shards_in)
    half = len(state) // 2
    weight_map = {}
    for i, part in enumerate([state[:half], state[half:]]):
        fname = f"model-{i + 1:05d}-of-00002.safetensors"
        write_safetensors(os.path.join(shards_in, fname), part)
        weight_map.update({nm: fname for nm, _ in part})
    json.dump({"metadata": {"total_size": total}, "weight_map": weight_map},
              open(os.path.join(shards_in, "model.safetensors.index.json"), "w"), indent=2, sort_keys=True)
    out2 = os.path.join(wdir, "logits_shards.npy")
    must([runner, plan, "--input", ids_path, "--output", out2, "--init-weights", shards_in])
    check(np.array_equal(np.load(out2), got), f"{sample}: --init-weights DIR (2 shards + index): logits "
          f"bit-identical to the one-file run")

    # BF16 in: torch's forward on the bf16-rounded weights; BF16 out: torch's rounding, bit for bit.
    hf16 = os.path.join(wdir, "hf_bf16.safetensors")
    write_safetensors(hf16, state, "BF16")
    out3 = os.path.join(wdir, "logits_bf16.npy")
    must([runner, plan, "--input", ids_path, "--output", out3, "--init-weights", hf16])
    rounded = {k: v.to(torch.bfloat16).to(torch.float32) for k, v in model.state_dict().items()}
    model16, _, _ = build(samples, sample)
    model16.load_state_dict(rounded)
    with torch.no_grad():
        want16 = model16(ids).numpy()
    ok, what = bound.check(np.load(out3), want16)
    check(ok, f"{sample}: --init-weights from BF16 tensors vs torch on the bf16-rounded weights {what}")
    # F16 likewise (IEEE binary16; every sample weight is within its range).
    hfh = os.path.join(wdir, "hf_f16.safetensors")
    write_safetensors(hfh, state, "F16")
    out4 = os.path.join(wdir, "logits_f16.npy")
    must([runner, plan, "--input", ids_path, "--output", out4, "--init-weights", hfh])
    model16.load_state_dict({k: v.to(torch.float16).to(torch.float32) for k, v in model.state_dict().items()})
    with torch.no_grad():
        wanth = model16(ids).numpy()
    ok, what = bound.check(np.load(out4), wanth)
    check(ok, f"{sample}: --init-weights from F16 tensors vs torch on the fp16-rounded weights {what}")
    export16 = os.path.join(wdir, "export_bf16")
    must([runner, plan, "--input", ids_path, "--init-weights", hf, "--export-hf", export16,
          "--export-dtype", "bf16"])
    tensors, _ = read_export(export16)
    bad = [nm for nm, t in state if tensors.get(nm, ("",))[0] != "BF16" or tensors[nm][2] != bf16_bytes(t)]
    cfg16 = json.load(open(os.path.join(export16, "config.json")))
    check(not bad and cfg16.get("torch_dtype") == "bfloat16",
          f"{sample}: --export-dtype bf16: every tensor torch's .to(bfloat16) bit for bit, torch_dtype "
          f"{cfg16.get('torch_dtype')} {bad[:3] if bad else ''}")

    # Training: the trained weights exported equal --save-weights' [in, out] files transposed.
    trained, saved = os.path.join(wdir, "export_trained"), os.path.join(wdir, "saved")
    must([runner, plan, "--train", "--steps", "1", "--lr", "0.01", "--input", ids_path,
          "--init-weights", hf, "--export-hf", trained, "--save-weights", saved])
    tensors, _ = read_export(trained)
    hf_lin = tensors["model.layers.0.self_attn.o_proj.weight"]
    o = np.load(os.path.join(saved, "l0_o.npy"))
    exported = np.frombuffer(hf_lin[2], dtype="<f4").reshape(hf_lin[1])
    emb = np.frombuffer(tensors["model.embed_tokens.weight"][2], dtype="<f4")
    check(np.array_equal(exported, o.T) and not np.array_equal(exported, model.layers[0].self_attn.o_proj.weight.detach().numpy())
          and np.array_equal(emb, np.load(os.path.join(saved, "embed.npy")).reshape(-1)),
          f"{sample}: --train --export-hf: the trained o_proj [out, in] = --save-weights l0_o [in, out] "
          f"transposed (and it moved), embed_tokens equal")

    if sample == "mixtral_tiny":
        check_resumed_export(check, runner, plan, hf, wdir, samples)

    # Refusals: one line naming the tensor and the file, exit 1, nothing written, and nothing on
    # stdout before it (no header, no "no --input" note): a forward run with --input, one on
    # random ids, and a --train run.
    def refused(label, tensors_, tensor):
        path = os.path.join(wdir, f"bad_{label}.safetensors")
        write_safetensors(path, tensors_)
        target = os.path.join(wdir, f"export_{label}")
        for kind, extra in (("forward", ["--input", ids_path]), ("random ids", []),
                            ("--train", ["--train", "--input", ids_path])):
            r = run([runner, plan, *extra, "--init-weights", path, "--export-hf", target])
            lines = r.stderr.strip().splitlines()
            check(r.returncode == 1 and len(lines) == 1 and tensor in lines[0] and path in lines[0]
                  and not os.path.exists(target) and r.stdout == "",
                  f"{sample}: {label} tensor refused ({kind}), stdout empty: "
                  f"{lines[0] if lines else r.stderr!r} / stdout {r.stdout[:80]!r}")
    missing = state[1][0]
    refused("missing", [x for x in state if x[0] != missing], missing)
    refused("extra", state + [("model.layers.0.mlp.bogus.weight", torch.zeros(3))], "model.layers.0.mlp.bogus.weight")
    head = "lm_head.weight"
    refused("misshaped", [(nm, t.t() if nm == head else t) for nm, t in state], head)
    # --targets of another shape than the ids: refused naming the file, before any header line.
    ids = np.load(ids_path)
    bad_targets = os.path.join(wdir, "targets_bad.npy")
    np.save(bad_targets, np.zeros((ids.shape[0], ids.shape[1] - 1), dtype=np.int64))
    r = run([runner, plan, "--train", "--input", ids_path, "--targets", bad_targets])
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 1 and len(lines) == 1 and bad_targets in lines[0] and r.stdout == "",
          f"{sample}: --targets of shape {[ids.shape[0], ids.shape[1] - 1]} refused before any output: "
          f"{lines[0] if lines else r.stderr!r}")


def check_resumed_export(check, runner, plan, hf, wdir, samples):
    """Issue 17's workflow, small: a run config starts from the HF file and trains on the KJV text
    with step-numbered checkpoints (keeping 2); a resumed run finishes and exports; its export is
    bit-identical to one uninterrupted run's (resuming restores every bit, docs/training.md)."""
    kjv = os.path.join(samples, "..", "data", "kjv_ot.txt")
    ckpt = os.path.join(wdir, "ckpt")
    config = os.path.join(wdir, "run.json")
    json.dump({"plan": plan, "train": True, "data": kjv, "data-format": "bytes", "steps": 4,
               "optimizer": "adamw", "lr": 0.003, "init-weights": hf, "checkpoint-dir": ckpt,
               "checkpoint-every": 1, "keep-checkpoints": 2}, open(config, "w"))
    must([runner, "--config", config])
    kept = sorted(f for f in os.listdir(ckpt) if f.endswith(".safetensors"))
    resumed = os.path.join(wdir, "export_resumed")
    must([runner, plan, "--train", "--data", kjv, "--data-format", "bytes", "--steps", "6",
          "--optimizer", "adamw", "--lr", "0.003", "--resume", ckpt, "--export-hf", resumed])
    straight = os.path.join(wdir, "export_straight")
    must([runner, plan, "--train", "--data", kjv, "--data-format", "bytes", "--steps", "6",
          "--optimizer", "adamw", "--lr", "0.003", "--init-weights", hf, "--export-hf", straight])
    a, _ = read_export(resumed)
    b, _ = read_export(straight)
    first, _ = read_safetensors(hf)
    moved = a["lm_head.weight"][2] != first["lm_head.weight"][2]
    check(kept == ["step-00000003.safetensors", "step-00000004.safetensors"] and a == b and moved,
          f"mixtral_tiny: --config run (--init-weights, KJV, 4 steps, checkpoints kept {kept}), resumed to "
          f"step 6 and --export-hf: {len(a)} tensors bit-identical to an uninterrupted 6-step run's "
          f"(and trained away from the HF file)")


def check_mpi_export(check, bindir, samples, work, sample, mpirun):
    """--export-hf under --comm mpi (one process per rank): rank 0 writes the export from every
    rank's weights gathered to it. The peer is the same run under --comm local (whose exports the
    checks above hold against torch): the two must be byte-identical files, since the mpi training
    step is bit-identical to the local one (e2e.training_families_mpi)."""
    wdir = os.path.join(work, sample + "_mpi")
    shutil.rmtree(wdir, ignore_errors=True)
    os.makedirs(wdir)
    model = build(samples, sample)[0]
    perturb(model, 3)
    hf = os.path.join(wdir, "hf.safetensors")
    write_safetensors(hf, hf_state(model))
    plan = os.path.join(wdir, "plan")
    must([os.path.join(bindir, "disagmoe"), "compile", os.path.join(samples, sample, "model.onnx"), "-o", plan])
    world = json.load(open(os.path.join(plan, "plan.json")))["placement"]["world_size"]
    runner = os.path.join(bindir, "disagmoe-run")
    launcher = [mpirun, "--oversubscribe", "-np", str(world)]
    if os.geteuid() == 0:
        launcher.insert(1, "--allow-run-as-root")
    common = ["--train", "--steps", "2", "--optimizer", "adamw", "--lr", "0.003", "--seed", "5",
              "--init-weights", hf]
    local, mpi = os.path.join(wdir, "export_local"), os.path.join(wdir, "export_mpi")
    must([runner, plan, *common, "--export-hf", local])
    must([*launcher, runner, plan, *common, "--comm", "mpi", "--export-hf", mpi])
    names = sorted(os.listdir(local))
    same = names == sorted(os.listdir(mpi)) and all(
        open(os.path.join(local, f), "rb").read() == open(os.path.join(mpi, f), "rb").read() for f in names)
    a, _ = read_export(mpi)
    first, _ = read_safetensors(hf)
    moved = a["lm_head.weight"][2] != first["lm_head.weight"][2]
    check(same and moved, f"{sample}: --train --comm mpi ({world} processes) --export-hf: {names} byte-identical "
          f"to the --comm local run's export (and trained away from the HF file)")
    r = run([runner, plan, "--comm", "mpi", "--export-hf", os.path.join(wdir, "forward_export")])
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 1 and len(lines) == 1 and "needs --train" in lines[0],
          f"{sample}: a forward run under --comm mpi with --export-hf is refused in one line: "
          f"{lines[0] if lines else r.stderr!r}")


def main():
    args = sys.argv[1:]
    mpirun = None
    if "--mpirun" in args:
        at = args.index("--mpirun")
        mpirun = args[at + 1]
        del args[at:at + 2]
    bindir, samples, work = args[:3]
    chosen = args[3:] or list(FAMILIES)
    torch.set_num_threads(1)
    check = Checks()
    os.makedirs(work, exist_ok=True)
    for sample in chosen:
        if mpirun:
            check_mpi_export(check, bindir, samples, work, sample, mpirun)
        else:
            check_sample(check, bindir, samples, work, sample)
    sys.exit(check.summary())


if __name__ == "__main__":
    main()
