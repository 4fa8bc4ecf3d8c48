"""The training loop on token files (issue 7): formats, resume, checkpoints, refusals.

  check_training_loop.py BIN_DIR SAMPLE_DIR DATA_FILE WORK_DIR

1. Token formats: the same tokens (the first bytes of DATA_FILE) as a byte file, raw uint16, raw
   uint32 and a Megatron indexed dataset (.bin/.idx written here following Megatron-LM's
   _IndexWriter: "MMIDIDX\\0\\0", version 1, dtype code 8, counts, int32 lengths, int64 pointers,
   int64 document indices; several sequences and documents) give bit-identical step losses.
2. Resume: N steps in one run against N/2 steps + --resume + N/2 steps (AdamW, clipping, warm-up +
   cosine): the weights (--save-weights .npy files), the final checkpoints and the loss-log lines of
   the resumed steps are byte-identical. With --checkpoint-dir (every 2 steps, keep 2): the step
   files, `latest` and the pruning after 6 steps and after 3 + --resume DIR + 3, whose step 4 and 6
   files are byte-identical to the uninterrupted run's. A run config (--config RUN.yaml, RUN.json
   with a flag overriding it) gives the same bits as the flags; the checkpoint records the options
   (__metadata__.config, against those asked for: the plan's CRC-32 by zlib, the token count);
   --resume refuses a changed plan (same model, another group count), batch, micro-batching,
   schedule or data naming both values and warns
   on a changed lr.
3. The checkpoint read by an independent safetensors parser (8-byte little-endian header length,
   JSON header, raw data; written here from the spec): every weight equals the --save-weights .npy,
   AdamW moments present, metadata step/data_position right.
   Every tensor's __metadata__ crc32.<name> equals Python's zlib.crc32 of its bytes.
4. Refusals (exit 1, message naming the file and the field): truncated file, header length past
   the end, invalid JSON, a missing tensor, a wrong dtype, a wrong shape, another optimizer, one
   flipped data byte (the CRC-32 names the tensor); a token file of odd size (uint16), a token
   outside the vocabulary, a corrupt Megatron index.
6. The router selection bias (--router-bias-update-rate) in checkpoints: 4 steps against 2 + resume
   + 2 byte-identical (weights, the l*_router_selection_bias.npy files, checkpoints); the bias in
   the checkpoint is non-zero and equals the .npy; resuming it without the rate is refused.
5. A NaN/Inf loss stops the run naming the step and the first forward output (instruction, layer,
   rank) that held a NaN/Inf, exit 1, no checkpoint written.
7. --loss-log does not change the step lines on stdout (with one fixed batch and with a token file).
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

import numpy as np
from checks import Checks

B, S = 4, 16


def run(cmd, ok=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if ok and r.returncode != 0:
        print(r.stdout)
        raise SystemExit(f"FAILED ({r.returncode}): {' '.join(cmd)}")
    return r


def read_safetensors(path):
    """Independent reader from the spec: u64 LE header size, JSON header, data buffer."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    buf = raw[8 + n:]
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, e in header.items():
        assert e["dtype"] == "F32", name
        b, end = e["data_offsets"]
        tensors[name] = np.frombuffer(buf[b:end], dtype="<f4").reshape(e["shape"])
    return tensors, meta


def write_megatron(prefix, tokens, seq_lens, docs):
    with open(prefix + ".bin", "wb") as f:
        f.write(tokens.astype("<u2").tobytes())
    ptrs = np.concatenate([[0], np.cumsum(seq_lens)[:-1]]).astype("<i8") * 2
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00")
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", 8))  # uint16
        f.write(struct.pack("<Q", len(seq_lens)))
        f.write(struct.pack("<Q", len(docs)))
        f.write(np.asarray(seq_lens, dtype="<i4").tobytes())
        f.write(ptrs.tobytes())
        f.write(np.asarray(docs, dtype="<i8").tobytes())


def main(bin_dir, sample, data_file, work):
    os.makedirs(work, exist_ok=True)
    check = Checks()

    run_bin = os.path.join(bin_dir, "disagmoe-run")
    plan = os.path.join(work, "plan")
    run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sample, "model.onnx"), "-o", plan,
         "--attn-ranks", "2", "--ffn-ranks", "2", "--groups", "2", "--batch", str(B), "--seq-len", str(S)])
    train = [run_bin, plan, "--train", "--batch", str(B), "--seq-len", str(S)]
    losses = lambda text: re.findall(r"step \d+/\d+ \| loss ([0-9.eE+-]+|nan|inf)", text)  # noqa: E731

    # 1. Formats.
    tokens = np.frombuffer(open(data_file, "rb").read(4000), dtype=np.uint8).astype(np.int64)
    files = {"bytes": os.path.join(work, "tok.txt"), "uint16": os.path.join(work, "tok.u16"),
             "uint32": os.path.join(work, "tok.u32")}
    open(files["bytes"], "wb").write(tokens.astype(np.uint8).tobytes())
    tokens.astype("<u2").tofile(files["uint16"])
    tokens.astype("<u4").tofile(files["uint32"])
    seq_lens = [1000, 700, 1300, 1000]
    write_megatron(os.path.join(work, "mega"), tokens, seq_lens, [0, 2, 4])
    results = {}
    for fmt, path in files.items():
        results[fmt] = losses(run(train + ["--data", path, "--data-format", fmt, "--steps", "3"]).stdout)
    results["megatron"] = losses(run(train + ["--data", os.path.join(work, "mega.bin"), "--steps", "3"]).stdout)
    same = all(v == results["bytes"] and len(v) == 3 for v in results.values())
    check(same, f"bytes, uint16, uint32 and megatron (4 sequences, 2 documents) give the same losses {results['bytes']}")

    # 2. Resume.
    common = train + ["--data", files["bytes"], "--data-format", "bytes", "--optimizer", "adamw", "--lr", "3e-3",
                      "--clip-grad", "1", "--warmup-steps", "2", "--total-steps", "6", "--lr-min", "3e-4"]
    full_ck, half_ck, res_ck = (os.path.join(work, f) for f in ("full.safetensors", "half.safetensors",
                                                               "resumed.safetensors"))
    run(common + ["--steps", "6", "--save-checkpoint", full_ck, "--save-weights", os.path.join(work, "full_w"),
                  "--loss-log", os.path.join(work, "full.jsonl")])
    run(common + ["--steps", "3", "--save-checkpoint", half_ck, "--loss-log", os.path.join(work, "res.jsonl")])
    text = run(common + ["--steps", "6", "--resume", half_ck, "--save-checkpoint", res_ck, "--save-weights",
                         os.path.join(work, "res_w"), "--loss-log", os.path.join(work, "res.jsonl")]).stdout
    check("resumed from" in text and "step 4/6" in text and "step 3/6" not in text,
          "the resumed run starts at step 4")
    names = sorted(os.listdir(os.path.join(work, "full_w")))
    differ = [n for n in names if open(os.path.join(work, "full_w", n), "rb").read()
              != open(os.path.join(work, "res_w", n), "rb").read()]
    check(len(names) > 100 and not differ, f"6 steps vs 3 + resume + 3: {len(names)} weight files byte-identical"
                                           + (f" (differ: {differ[:3]})" if differ else ""))
    check(open(full_ck, "rb").read() == open(res_ck, "rb").read(), "final checkpoints byte-identical")

    def log(path):
        rows = [json.loads(line) for line in open(path)]
        for r in rows:
            r.pop("tokens_per_s")
            r.pop("seconds")
        return rows
    check(log(os.path.join(work, "full.jsonl")) == log(os.path.join(work, "res.jsonl")),
          "loss logs (JSON lines) of the two runs identical, steps 1-6")

    # 2b. Step-numbered checkpoints in a directory: 6 uninterrupted steps (every 2, keep 2) against 3 steps
    # (every 2, keep 2: step 2 and the final step 3), then --resume DIR (what its `latest` names) to 6 into the
    # same directory. The names, `latest` and the pruning follow from the steps alone; the files are compared
    # with the uninterrupted run's.
    step_file = lambda s: f"step-{s:08d}.safetensors"  # noqa: E731
    dir_a, dir_b = os.path.join(work, "ckdir_full"), os.path.join(work, "ckdir_res")
    for d in (dir_a, dir_b):
        shutil.rmtree(d, ignore_errors=True)  # a previous run's files would stay (later steps are never pruned)
    every = ["--checkpoint-every", "2", "--keep-checkpoints", "2"]
    text_a = run(common + ["--steps", "6", "--checkpoint-dir", dir_a] + every).stdout
    check(sorted(os.listdir(dir_a)) == ["latest", step_file(4), step_file(6)]
          and open(os.path.join(dir_a, "latest")).read() == step_file(6) + "\n",
          f"6 steps, every 2, keep 2: {sorted(os.listdir(dir_a))}, latest names {step_file(6)}")
    ck_lines = [line for line in text_a.splitlines() if line.startswith("checkpoint at step")]
    check(ck_lines == [f"checkpoint at step {s} written to {os.path.join(dir_a, step_file(s))}" for s in (2, 4)]
          + [f"checkpoint at step 6 written to {os.path.join(dir_a, step_file(6))}; removed {step_file(2)} "
             "(keeping the newest 2)"],
          "checkpoints at steps 2, 4, 6; step 2's file deleted once step 6's is complete")
    run(common + ["--steps", "3", "--checkpoint-dir", dir_b] + every)
    check(sorted(os.listdir(dir_b)) == ["latest", step_file(2), step_file(3)]
          and open(os.path.join(dir_b, "latest")).read() == step_file(3) + "\n",
          f"3 steps, every 2, keep 2: {sorted(os.listdir(dir_b))}")
    text_b = run(common + ["--steps", "6", "--resume", dir_b, "--checkpoint-dir", dir_b] + every).stdout
    check(f"resumed from {os.path.join(dir_b, step_file(3))} at step 3" in text_b and "step 4/6" in text_b
          and "step 3/6" not in text_b, "--resume DIR continues from the checkpoint DIR/latest names (step 3)")
    check(sorted(os.listdir(dir_b)) == ["latest", step_file(4), step_file(6)]
          and open(os.path.join(dir_b, "latest")).read() == step_file(6) + "\n",
          f"after the resumed run: {sorted(os.listdir(dir_b))}, latest names {step_file(6)}")
    same = [s for s in (4, 6) if open(os.path.join(dir_a, step_file(s)), "rb").read()
            == open(os.path.join(dir_b, step_file(s)), "rb").read()]
    check(same == [4, 6] and open(os.path.join(dir_a, step_file(6)), "rb").read() == open(full_ck, "rb").read(),
          "3 + resume DIR + 3: the step 4 and 6 checkpoints byte-identical to the uninterrupted run's "
          "(and step 6 to --save-checkpoint's file)")
    empty = os.path.join(work, "ckdir_empty")
    os.makedirs(empty, exist_ok=True)
    r = run(common + ["--steps", "6", "--resume", empty], ok=False)
    last = r.stdout.strip().splitlines()[-1]
    check(r.returncode == 1 and last == f"disagmoe-run: --resume: {os.path.join(empty, 'latest')}: missing "
          f"({empty} holds no complete checkpoint)", f"--resume of a directory without latest refused: {last}")

    # 2c. A run config (--config): the options of `common` in a YAML file, and in a JSON file with another lr that
    # the command line overrides, give the bits of the run given by flags (full_ck). The checkpoint records the
    # run's options (__metadata__.config), compared here with what was asked for; --resume refuses a changed
    # batch shape, data or schedule and warns on a changed learning rate.
    opts = {"plan": plan, "train": True, "batch": B, "seq-len": S, "data": files["bytes"], "data-format": "bytes",
            "optimizer": "adamw", "lr": "3e-3", "clip-grad": 1, "warmup-steps": 2, "total-steps": 6, "lr-min": 3e-4,
            "steps": 6}
    yaml_path, json_path = os.path.join(work, "run.yaml"), os.path.join(work, "run.json")
    with open(yaml_path, "w") as f:
        f.write("# the run of section 2\n" + "".join(f"{k}: {str(v).lower() if v is True else v}\n"
                                                   for k, v in opts.items()))
    json.dump(dict(opts, lr=1e-2), open(json_path, "w"))
    yaml_ck, json_ck = os.path.join(work, "yaml.safetensors"), os.path.join(work, "json.safetensors")
    run([run_bin, "--config", yaml_path, "--save-checkpoint", yaml_ck])
    run([run_bin, "--config=" + json_path, "--lr", "3e-3", "--save-checkpoint", json_ck])
    check(open(yaml_ck, "rb").read() == open(full_ck, "rb").read() == open(json_ck, "rb").read(),
          "--config RUN.yaml, and RUN.json with its lr overridden on the command line: checkpoints byte-identical "
          "to the run given by flags")
    config = json.loads(read_safetensors(full_ck)[1]["config"])
    plan_text = open(os.path.join(plan, "plan.json"), "rb").read()
    expected = {"plan": os.path.realpath(os.path.join(plan, "plan.json")),
                "plan-identity": "crc32 %08x, %d bytes" % (zlib.crc32(plan_text), len(plan_text)),
                "batch": B, "seq-len": S, "micro-batches": 1, "data": os.path.realpath(files["bytes"]),
                "data-format": "bytes", "data-tokens": len(tokens), "optimizer": "adamw", "lr": 3e-3,
                "weight-decay": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "clip-grad": 1, "warmup-steps": 2,
                "total-steps": 6, "lr-min": 3e-4, "aux-loss-coef": 0, "capacity-factor": 0,
                "router-bias-update-rate": 0}
    check(config == expected, f"__metadata__.config records the run's options: {config}")
    why = "(a resumed run keeps the checkpoint's plan, data, batch shape and schedule; start a new run to change them)"
    for extra, message in (
            (["--batch", "2"], f"--batch is 2 here, {B} in the checkpoint {why}"),
            (["--micro-batches", "2"], f"--micro-batches is 2 here, 1 in the checkpoint {why}"),
            (["--warmup-steps", "3"], f"--warmup-steps is 3 here, 2 in the checkpoint {why}"),
            (["--data", files["uint16"], "--data-format", "uint16"],
             f"--data is {os.path.realpath(files['uint16'])} here, {os.path.realpath(files['bytes'])} in the "
             f"checkpoint {why}")):
        r = run(common + ["--steps", "6", "--resume", half_ck] + extra, ok=False)
        last = r.stdout.strip().splitlines()[-1]
        check(r.returncode == 1 and last == f"disagmoe-run: --resume {half_ck}: {message}",
              f"--resume with {' '.join(extra)} refused: {last}")
    plan1 = os.path.join(work, "plan_p1")  # the same model and ranks, one group instead of two
    run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sample, "model.onnx"), "-o", plan1,
         "--attn-ranks", "2", "--ffn-ranks", "2", "--groups", "1", "--batch", str(B), "--seq-len", str(S)])
    p1_text = open(os.path.join(plan1, "plan.json"), "rb").read()
    r = run([run_bin, plan1] + common[2:] + ["--steps", "6", "--resume", half_ck], ok=False)
    last = r.stdout.strip().splitlines()[-1]
    check(r.returncode == 1 and last == f"disagmoe-run: --resume {half_ck}: the plan differs from the checkpoint's: "
          f"{os.path.realpath(os.path.join(plan1, 'plan.json'))} (plan.json crc32 {zlib.crc32(p1_text):08x}, "
          f"{len(p1_text)} bytes) here, {expected['plan']} (plan.json {expected['plan-identity']}) in the checkpoint "
          f"{why}", f"--resume with another plan of the same model refused: {last}")
    r = run(common + ["--steps", "4", "--resume", half_ck, "--lr", "1e-3"], ok=False)
    warning = f"disagmoe-run: warning: --resume {half_ck}: --lr is 0.001 here, 0.003 in the checkpoint; continuing " \
              "with 0.001"
    check(r.returncode == 0 and warning in r.stdout.splitlines() and "step 4/4" in r.stdout,
          f"--resume with another --lr warns in one line and trains on: {warning}")

    # 3. Independent reader.
    tensors, meta = read_safetensors(full_ck)
    mism = [n[:-4] for n in names if not np.array_equal(tensors[n[:-4]], np.load(os.path.join(work, "full_w", n)))]
    moments = sum(k.endswith(".exp_avg") for k in tensors) == len(names)
    raw_full = open(full_ck, "rb").read()
    n_full = struct.unpack("<Q", raw_full[:8])[0]
    entries = {k: v for k, v in json.loads(raw_full[8:8 + n_full]).items() if k != "__metadata__"}
    crc_bad = [k for k, e in entries.items()
               if meta.get("crc32." + k) != "%08x" % zlib.crc32(raw_full[8 + n_full + e["data_offsets"][0]:
                                                                     8 + n_full + e["data_offsets"][1]])]
    check(len(entries) > 100 and not crc_bad,
          f"__metadata__ crc32.<tensor> of all {len(entries)} tensors equal zlib.crc32 of their bytes"
          + (f" (differ: {crc_bad[:3]})" if crc_bad else ""))
    check(not mism and moments and meta.get("step") == "6" and meta.get("data_position") == str(6 * B * S),
          f"checkpoint by an independent parser: {len(tensors)} tensors, weights equal the .npy files, AdamW "
          f"moments present, metadata {dict((k, meta.get(k)) for k in ('step', 'data_position', 'optimizer'))}")

    # 4. Refusals.
    raw = open(half_ck, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])

    def rewrite(h):
        t = json.dumps(h).encode()
        return struct.pack("<Q", len(t)) + t + raw[8 + n:]
    bad = {}
    bad["truncated"] = (raw[:len(raw) // 2], "data buffer|bytes that no tensor covers|outside the data buffer")
    bad["header_length"] = (struct.pack("<Q", 1 << 40) + raw[8:], "header length")
    bad["json"] = (struct.pack("<Q", n) + b"#" + raw[9:8 + n] + raw[8 + n:], "not valid JSON")
    # Without l0_q (its bytes removed too, the other offsets shifted: a well-formed file).
    h, data, at = {"__metadata__": header["__metadata__"]}, b"", 0
    for name, e in sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                          key=lambda kv: kv[1]["data_offsets"][0]):
        if name == "l0_q":
            continue
        b0, e0 = e["data_offsets"]
        h[name] = dict(e, data_offsets=[at, at + e0 - b0])
        data += raw[8 + n + b0:8 + n + e0]
        at += e0 - b0
    t = json.dumps(h).encode()
    bad["missing"] = (struct.pack("<Q", len(t)) + t + data, 'tensor "l0_q" is missing')
    h = json.loads(json.dumps(header))
    h["l0_q"]["dtype"] = "F16"
    bad["dtype"] = (rewrite(h), 'tensor "l0_q": dtype F16')
    h = json.loads(json.dumps(header))
    h["head"]["shape"] = h["head"]["shape"][::-1] + [1]
    bad["shape"] = (rewrite(h), 'tensor "head"')
    h = json.loads(json.dumps(header))
    h["__metadata__"]["optimizer"] = "sgd"
    bad["optimizer"] = (rewrite(h), "__metadata__.optimizer")
    h = json.loads(json.dumps(header))
    h["__metadata__"]["step"] = "three"
    bad["step"] = (rewrite(h), "__metadata__.step")
    # One flipped byte inside l1_router's data (the header and every offset intact).
    b0, e0 = header["l1_router"]["data_offsets"]
    flipped = bytearray(raw)
    flipped[8 + n + (b0 + e0) // 2] ^= 0x10
    bad["flipped"] = (bytes(flipped), r'tensor "l1_router": CRC-32 of its bytes is [0-9a-f]{8}, '
                                      r'__metadata__\.crc32\.l1_router says [0-9a-f]{8} \(the file is corrupt\)')
    bad["truncated_tail"] = (raw[:-3], r"data_offsets|data buffer|outside")
    for what, (blob, pattern) in bad.items():
        path = os.path.join(work, f"bad_{what}.safetensors")
        open(path, "wb").write(blob)
        r = run(common + ["--steps", "6", "--resume", path], ok=False)
        last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        check(r.returncode == 1 and path in last and re.search(pattern, last) is not None,
              f"corrupt checkpoint ({what}) refused: {last[:160]}")
    odd = os.path.join(work, "odd.u16")
    open(odd, "wb").write(b"\x01\x00\x02")
    big = os.path.join(work, "big.u16")
    np.array([1] * 200 + [300] + [1] * 200, dtype="<u2").tofile(big)
    bad_idx = os.path.join(work, "badidx")
    write_megatron(bad_idx, tokens, [1000, 700, 1300, 1500], [0, 4])  # last sequence runs past .bin
    for path, fmt, pattern in ((odd, "uint16", "not a multiple of the token width 2"),
                               (big, "uint16", "token 200 is 300, outside the model's vocabulary"),
                               (bad_idx + ".bin", "megatron", r"sequence 3 .* lies outside")):
        r = run(train + ["--data", path, "--data-format", fmt, "--steps", "1"], ok=False)
        last = r.stdout.strip().splitlines()[-1]
        check(r.returncode == 1 and re.search(pattern, last) is not None, f"bad token file refused: {last[:160]}")

    # 5. Divergence: an absurd learning rate overflows the weights.
    ck = os.path.join(work, "diverged.safetensors")
    r = run(train + ["--data", files["bytes"], "--data-format", "bytes", "--lr", "1e30", "--steps", "5",
                     "--save-checkpoint", ck], ok=False)
    last = r.stdout.strip().splitlines()[-1]
    check(r.returncode == 1 and not os.path.exists(ck) and re.search(
        r"step \d: loss is (NaN|Inf) .*first non-finite value appeared in the output of \w.* of layer \d+ on rank \d",
        last) is not None,
          f"non-finite loss stops the run, no checkpoint: {last[:160]}")

    # 6. The router selection bias in checkpoints.
    rb = train + ["--data", files["bytes"], "--data-format", "bytes", "--optimizer", "adamw", "--lr", "3e-3",
                  "--router-bias-update-rate", "0.01"]
    rb_full, rb_half, rb_res = (os.path.join(work, f) for f in ("rb_full.safetensors", "rb_half.safetensors",
                                                               "rb_res.safetensors"))
    run(rb + ["--steps", "4", "--save-checkpoint", rb_full, "--save-weights", os.path.join(work, "rb_full_w")])
    run(rb + ["--steps", "2", "--save-checkpoint", rb_half])
    run(rb + ["--steps", "4", "--resume", rb_half, "--save-checkpoint", rb_res, "--save-weights",
              os.path.join(work, "rb_res_w")])
    names = sorted(os.listdir(os.path.join(work, "rb_full_w")))
    bias_files = [n for n in names if n.endswith("_router_selection_bias.npy")]
    differ = [n for n in names if open(os.path.join(work, "rb_full_w", n), "rb").read()
              != open(os.path.join(work, "rb_res_w", n), "rb").read()]
    check(len(bias_files) == 4 and not differ and open(rb_full, "rb").read() == open(rb_res, "rb").read(),
          f"router bias: 4 steps vs 2 + resume + 2: {len(names)} weight files ({len(bias_files)} selection biases) "
          f"and the checkpoints byte-identical" + (f" (differ: {differ[:3]})" if differ else ""))
    tensors, _ = read_safetensors(rb_half)
    half_bias = [tensors[f"l{l}_router_selection_bias"] for l in range(4)]
    full_tensors, _ = read_safetensors(rb_full)
    check(all(np.any(b != 0) for b in half_bias) and all(
        np.array_equal(full_tensors[f"l{l}_router_selection_bias"],
                       np.load(os.path.join(work, "rb_full_w", f"l{l}_router_selection_bias.npy"))) for l in range(4)),
          "the checkpoint's selection biases are non-zero after 2 steps and equal the --save-weights .npy after 4")
    r = run(train + ["--data", files["bytes"], "--data-format", "bytes", "--optimizer", "adamw", "--steps", "4",
                     "--resume", rb_half], ok=False)
    last = r.stdout.strip().splitlines()[-1]
    check(r.returncode == 1 and rb_half in last and "l0_router_selection_bias" in last
          and "--router-bias-update-rate" in last, f"a bias checkpoint resumed without the rate is refused: {last[:160]}")

    # 7. --loss-log only adds the file: the step lines on stdout are those of the same run without
    # it (one fixed batch, and a token file), apart from the measured seconds and tokens/s.
    timing = lambda text: [re.sub(r"\(\d+\.\d+ s\)|\d+ tokens/s", "T", line)  # noqa: E731
                           for line in text.splitlines() if re.match(r"step \d+[:/]", line)]
    for what, extra in (("one fixed batch", ["--seed", "3"]),
                        ("a token file", ["--data", files["bytes"], "--data-format", "bytes"])):
        plain = timing(run(train + extra + ["--steps", "3"]).stdout)
        logged = timing(run(train + extra + ["--steps", "3", "--loss-log", os.path.join(work, "ll.jsonl")]).stdout)
        check(len(plain) == 3 and plain == logged,
              f"{what}: --loss-log leaves the 3 step lines alone: {plain[:1]} / {logged[:1]}")
    return check.summary()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
