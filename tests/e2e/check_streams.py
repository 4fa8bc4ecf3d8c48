"""Concurrent streams (issue 7): a training step's trace shows each rank's forward, backward and comm
streams on their own tracks, running at the same time.

  check_streams.py BIN_DIR SAMPLE_DIR

Compiles the sample for 2 A-ranks + 2 F-ranks with 4 micro-batches, runs one training step with
--trace, and checks the trace's structure (no timing thresholds; runtime/train/TrainStep.h):
1. one process per rank (pid = rank, named "rank R (...)"), tracks tid = stream (forward 0,
   backward 1, comm 2); every rank has a forward track, every rank a comm track, and the backward
   track holds exactly the backward events (phase "backward"), the forward track the forward ones;
   every event says step 1; every comm event carries its message's bytes, and every send has one
   flow arrow ("s") whose id one receive ends ("f") on the peer rank;
2. each track runs one thing at a time (its events do not overlap);
3. every micro-batch 0..3 has forward and backward events on every rank;
4. on some rank a comm-stream span (a send or a receive in flight) overlaps a compute span of that
   rank, and on some rank a forward span of micro-batch i overlaps a backward span of micro-batch
   j != i (the backward of one micro-batch beside the forward of another).
Also the same step with the same seed twice gives byte-identical --save-grads output (the fixed
gradient accumulation order does not depend on how the streams interleave).
"""
import filecmp
import json
import os
import subprocess
import sys
import tempfile

from checks import Checks


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        raise SystemExit(f"FAILED ({r.returncode}): {' '.join(cmd)}")
    return r


def overlaps(a, b):
    return a["ts"] < b["ts"] + b["dur"] and b["ts"] < a["ts"] + a["dur"]


def main():
    bin_dir, sample = sys.argv[1], sys.argv[2]
    tally = Checks()

    def check(what, ok, detail=""):
        return tally(ok, what if ok or detail == "" else f"{what}: {detail}")
    with tempfile.TemporaryDirectory() as work:
        plan = os.path.join(work, "plan")
        run([f"{bin_dir}/disagmoe", "compile", f"{sample}/model.onnx", "-o", plan, "--attn-ranks", "2",
             "--ffn-ranks", "2", "--micro-batches", "4"])
        pj = json.load(open(os.path.join(plan, "plan.json")))
        B, S, world = pj["model"]["batch"], pj["model"]["seq_len"], pj["placement"]["world_size"]
        tr = os.path.join(work, "trace.json")
        step = ["--train", "--batch", str(4 * B), "--seq-len", str(S), "--seed", "7", "--micro-batches", "4",
                "--steps", "1"]
        run([f"{bin_dir}/disagmoe-run", plan] + step + ["--trace", tr, "--save-grads", os.path.join(work, "g1")])
        run([f"{bin_dir}/disagmoe-run", plan] + step + ["--save-grads", os.path.join(work, "g2")])

        events = json.load(open(tr))["traceEvents"]
        procs = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        xs = [e for e in events if e["ph"] == "X"]
        check("a process per rank", sorted(procs) == list(range(world)) and
              all(procs[r].startswith(f"rank {r} (") for r in procs), procs)
        check("forward and comm tracks on every rank",
              all((r, 0) in names and (r, 2) in names for r in range(world)), sorted(names))
        check("track names", all(n == ("forward", "backward", "comm")[t] for (_, t), n in names.items()), names)
        check("every event on a named track", all((e["pid"], e["tid"]) in names for e in xs))
        check("every event of step 1", all(e["args"]["step"] == 1 for e in xs))
        fwd = [e for e in xs if e["tid"] == 0]
        bwd = [e for e in xs if e["tid"] == 1]
        comm = [e for e in xs if e["tid"] == 2]
        check("backward track holds the backward events", bwd and all(e["args"]["phase"] == "backward" for e in bwd))
        check("forward track holds no backward event", all(e["args"]["phase"] != "backward" for e in fwd))
        check("comm track holds sends and receives",
                comm and all(e["name"].startswith(("send to ", "recv from ")) for e in comm))
        check("every message's bytes", all(e["args"]["bytes"] > 0 for e in comm))
        starts = {e["id"]: e for e in events if e["ph"] == "s"}
        ends = {e["id"]: e for e in events if e["ph"] == "f"}
        sends = [e for e in comm if e["name"].startswith("send to ")]
        recvs = [e for e in comm if e["name"].startswith("recv from ")]
        inside = lambda f, spans: any(x["pid"] == f["pid"] and x["ts"] <= f["ts"] <= x["ts"] + x["dur"]
                                      for x in spans)  # noqa: E731
        check(f"a flow arrow from each of the {len(sends)} sends to its receive",
              len(starts) == len(sends) == len(ends) and set(starts) == set(ends) and
              all(inside(f, sends) for f in starts.values()) and all(inside(f, recvs) for f in ends.values()))
        for t in names:
            mine = sorted((e for e in xs if (e["pid"], e["tid"]) == t), key=lambda e: e["ts"])
            check(f"track {t} runs one thing at a time",
                    all(a["ts"] + a["dur"] <= b["ts"] + 1e-3 for a, b in zip(mine, mine[1:])))
        for r in range(world):
            mbs_f = {e["args"]["mb"] for e in fwd if e["pid"] == r and e["args"]["phase"] == "forward"}
            mbs_b = {e["args"]["mb"] for e in bwd if e["pid"] == r}
            check(f"rank {r}: forward and backward of micro-batches 0..3", mbs_f == mbs_b == {0, 1, 2, 3},
                    (mbs_f, mbs_b))

        compute = [e for e in fwd + bwd if e["cat"] == "compute"]
        comm_beside_compute = [r for r in range(world)
                               if any(overlaps(a, b) for a in comm if a["pid"] == r
                                      for b in compute if b["pid"] == r)]
        check("a comm span overlaps a compute span on some rank", comm_beside_compute)
        fb = [r for r in range(world)
              if any(overlaps(a, b) and a["args"]["mb"] != b["args"]["mb"]
                     for a in fwd if a["pid"] == r and a["args"]["phase"] == "forward"
                     for b in bwd if b["pid"] == r)]
        check("forward and backward of different micro-batches overlap on some rank", fb)
        print(f"comm beside compute on ranks {comm_beside_compute}; forward beside backward on ranks {fb}")

        g1, g2 = os.path.join(work, "g1"), os.path.join(work, "g2")
        files = sorted(os.listdir(g1))
        same = files == sorted(os.listdir(g2)) and all(
            filecmp.cmp(os.path.join(g1, f), os.path.join(g2, f), shallow=False) for f in files)
        check(f"two runs give byte-identical gradients ({len(files)} files)", files and same)
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
