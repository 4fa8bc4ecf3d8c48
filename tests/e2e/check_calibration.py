"""Calibration and execution trace (issue 7): the executor's measured op times feed the sim backend.

  check_calibration.py BIN_DIR SAMPLE_DIR

Compiles the sample with a schedule (2+2 ranks, p = 2, 4 micro-batches), runs one training step of
the same micro-batch shape with --op-times-out and --trace, then checks:
1. The op-times file is the "disagmoe-op-times" version-1 format with a layer -1 entry for every
   compute op of the schedule (attention, experts, head forward and backward, optimizer per role)
   and per-layer entries, seconds > 0, and each entry equals the median recomputed here from the
   trace's events (sum per rank over (group, layer, micro-batch), busiest rank of the group, median
   per layer and over all; embedding counted as layer 0's attention, final norm as the head): an
   independent aggregation of the same events.
2. `disagmoe-run --backend sim --op-times` accepts the file, and each group's busy time equals the
   closed form sum over the group's compute instructions in plan.json's schedule of the file's
   seconds for (role, op, phase, layer), the exact layer's entry before the any-layer one (the
   simulator's processor sharing conserves work).
3. The trace is Trace Event Format JSON: "traceEvents", "X" events with name/ph/ts/dur/pid/tid, a
   process per rank (pid = rank) and a thread_name per stream of it (tid 0 forward, 1 backward,
   2 comm), compute,
   send and recv events on every rank that exchanges, and events of one stream's track never
   overlap (each stream runs its work in order).
4. Refusals: --op-times-out with --comm mpi or --backend sim, an unwritable path (exit 1, the
   path named, no file left behind).
5. The forward run (no --train) writes forward entries and a trace, which the sim accepts.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from statistics import median


def run(cmd, ok=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if ok and r.returncode != 0:
        print(r.stdout)
        raise SystemExit(f"FAILED ({r.returncode}): {' '.join(cmd)}")
    return r


def sim_op_of(name, role):
    """The schedule op an executed instruction counts toward (runtime/executor/OpProfile.h)."""
    if name == "rms_norm final_norm" or name == "head":
        return "head"
    if name == "experts":
        return "experts"
    if name == "dense_ffn":
        return "attention" if role == "attention" else "dense_ffn"
    if name in ("embed", "attention", "residual_add", "router") or name.startswith("rms_norm"):
        return "attention"
    if name == "all_reduce + optimizer":
        return "optimizer"
    return ""


def main():
    bin_dir, sample = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="disagmoe-calib-") as work:
        plan = os.path.join(work, "plan")
        run([f"{bin_dir}/disagmoe", "compile", f"{sample}/model.onnx", "-o", plan, "--attn-ranks", "2",
             "--ffn-ranks", "2", "--groups", "2"])
        pj = json.load(open(os.path.join(plan, "plan.json")))
        sched = pj["schedule"]
        mbs = sched["micro_batches"]
        B, S = pj["model"]["batch"], pj["model"]["seq_len"]
        ot, tr = os.path.join(work, "ops.json"), os.path.join(work, "trace.json")
        out = run([f"{bin_dir}/disagmoe-run", plan, "--train", "--batch", str(B * mbs), "--seq-len", str(S),
                   "--micro-batches", str(mbs), "--steps", "1", "--op-times-out", ot, "--trace", tr]).stdout
        assert "written to " + ot in out, out

        # 3. The trace.
        trace = json.load(open(tr))
        events = trace["traceEvents"]
        xs = [e for e in events if e["ph"] == "X"]
        for e in xs:
            for f in ("name", "ph", "ts", "dur", "pid", "tid", "cat"):
                assert f in e, (f, e)
            assert e["dur"] >= 0
        world = pj["placement"]["world_size"]
        procs = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        # A process per rank, a track per stream of it (tid 0 forward, 1 backward, 2 comm).
        assert sorted(procs) == list(range(world)) and all(procs[r].startswith(f"rank {r} ") for r in procs), procs
        assert {(r, 0) for r in range(world)} <= set(names) <= {(r, t) for r in range(world) for t in range(3)}, names
        assert all(n == ("forward", "backward", "comm")[t] for (_, t), n in names.items()), names
        role_of = {}
        for g in pj["placement"]["groups"]:
            for r in g["ranks"]:
                role_of[r] = (g["role"], g["index"])
        for r in range(world):
            cats = {e["cat"] for e in xs if e["pid"] == r}
            assert {"compute", "send", "recv"} <= cats, (r, cats)
        for t in names:  # each stream runs one thing at a time
            mine = sorted((e for e in xs if (e["pid"], e["tid"]) == t), key=lambda e: e["ts"])
            for a, b in zip(mine, mine[1:]):
                assert a["ts"] + a["dur"] <= b["ts"] + 1e-3, ("overlap on track", t, a, b)
        # 1. Medians recomputed from the trace.
        sums = defaultdict(lambda: defaultdict(float))  # (role, op, phase) -> (group, layer, mb, rank) -> us
        for e in xs:
            role, group = role_of[e["pid"]]
            name = e["name"].removesuffix(" (bwd)")
            op = sim_op_of(name, role)
            if not op:
                continue
            layer = e["args"]["layer"]
            if op == "attention":
                layer = max(layer, 0)
            sums[(role, op, e["args"]["phase"])][(group, layer, e["args"]["mb"], e["pid"])] += e["dur"]
        expect = {}
        for key, by in sums.items():
            busiest = defaultdict(float)
            for (group, layer, mb, rank), us in by.items():
                busiest[(group, layer, mb)] = max(busiest[(group, layer, mb)], us)
            expect[key + (-1,)] = median(busiest.values()) * 1e-6
            for layer in {l for (_, l, _) in busiest if l >= 0}:
                expect[key + (layer,)] = median(v for (g, l, m), v in busiest.items() if l == layer) * 1e-6
        doc = json.load(open(ot))
        assert doc["format"] == "disagmoe-op-times" and doc["version"] == 1, doc
        got = {(e["role"], e["op"], e["phase"], e["layer"]): e["seconds"] for e in doc["entries"]}

        def seconds(role, op, phase, layer):
            """The simulator's lookup (OpTimes::find): the exact layer, else any layer."""
            return got.get((role, op, phase, layer), got.get((role, op, phase, -1)))

        need = {(p_role, i["op"], i["phase"], -1) for p_role, prog in sched["programs"].items() for i in prog
                if i["kind"] == "compute"}
        assert need <= set(got), ("missing entries", need - set(got))
        L = pj["model"]["num_layers"]
        assert all((r, "attention", ph, l) in got for r in ["attention"] for ph in ["forward", "backward"]
                   for l in range(L)), "per-layer attention entries missing"
        assert set(got) == set(expect), (set(got) ^ set(expect))
        for k, v in got.items():
            assert v > 0, (k, v)
            # The trace rounds to the JSON's double of microseconds: 1e-9 s relative slack.
            assert abs(v - expect[k]) <= 1e-9 + 1e-9 * v, (k, v, expect[k])
        print(f"op-times: {len(got)} entries, each the median recomputed from the trace")

        # 2. The sim accepts it; busy = closed-form sum.
        sim = run([f"{bin_dir}/disagmoe-run", plan, "--backend", "sim", "--op-times", ot]).stdout
        assert "times: measured, " + ot in sim, sim
        busy = {}
        for m in re.finditer(r"^(attention|ffn) (\d+)\s+\S+\s+([0-9.]+)\s+([0-9.]+)", sim, re.M):
            busy[(m.group(1), int(m.group(2)))] = float(m.group(3)) * 1e-3
        groups = sched["groups"]
        assert len(busy) == len(groups), sim
        for gi, g in enumerate(groups):
            total = sum(seconds(role, i["op"], i["phase"], i.get("layer", -1))
                        for role, prog in sched["programs"].items() for i in prog
                        if i["kind"] == "compute" and i["group"] == gi)
            b = busy[(g["role"], g["index"])]
            assert abs(b - total) <= 2e-9 + 1e-9 * total, (g["role"], g["index"], b, total)
            print(f"sim busy {g['role']} {g['index']}: {b * 1e3:.6f} ms = closed form {total * 1e3:.6f} ms")

        # 5. The forward run (--backend cpu without --train) writes forward entries and a trace too.
        fot, ftr = os.path.join(work, "fwd_ops.json"), os.path.join(work, "fwd_trace.json")
        run([f"{bin_dir}/disagmoe-run", plan, "--op-times-out", fot, "--trace", ftr])
        fwd = json.load(open(fot))["entries"]
        assert {(e["role"], e["op"], e["phase"]) for e in fwd if e["layer"] == -1} == {
            ("attention", "attention", "forward"), ("attention", "head", "forward"), ("ffn", "experts", "forward")}, fwd
        fx = [e for e in json.load(open(ftr))["traceEvents"] if e["ph"] == "X"]
        assert {e["pid"] for e in fx if e["cat"] != "comm"} == set(range(world)) and all(e["dur"] >= 0 for e in fx)
        assert {e["tid"] for e in fx if e["cat"] != "comm"} == {0}, "a forward run uses the forward stream only"
        run([f"{bin_dir}/disagmoe-run", plan, "--backend", "sim", "--op-times", fot])

        # 4. Refusals.
        r = run([f"{bin_dir}/disagmoe-run", plan, "--comm", "mpi", "--train", "--op-times-out", ot], ok=False)
        assert r.returncode == 1 and "--op-times-out" in r.stdout, r.stdout
        r = run([f"{bin_dir}/disagmoe-run", plan, "--backend", "sim", "--op-times-out", ot], ok=False)
        assert r.returncode == 1 and "--op-times-out" in r.stdout, r.stdout
        bad = os.path.join(work, "no-such-dir", "ops.json")
        r = run([f"{bin_dir}/disagmoe-run", plan, "--train", "--op-times-out", bad], ok=False)
        assert r.returncode == 1 and bad in r.stdout, r.stdout
        assert not os.path.exists(os.path.dirname(bad))
        leftovers = [f for f in os.listdir(work) if f.endswith(".tmp")]
        assert not leftovers, leftovers
    print("calibration: OK")


if __name__ == "__main__":
    main()
