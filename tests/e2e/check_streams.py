"""Concurrent streams (issue 7): a training step's trace shows each rank's forward, backward and comm
streams on their own tracks, running at the same time.

  check_streams.py BIN_DIR SAMPLE_DIR

Compiles the sample for 2 A-ranks + 2 F-ranks with 4 micro-batches, runs one training step with
--trace, and checks the trace's structure (no timing thresholds; runtime/train/TrainStep.h):
1. tracks are tid = stream * world + rank (forward 0, backward 1, comm 2), named "rank R (...)";
   every rank has a forward track, every rank a comm track, and the backward track holds exactly
   the backward events (phase "backward"), the forward track the forward ones;
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
        names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
        xs = [e for e in events if e["ph"] == "X"]
        check("track names", all(names[t].startswith(f"rank {t % world} (") for t in names), names)
        check("forward and comm tracks on every rank",
                all(r in names and 2 * world + r in names for r in range(world)), sorted(names))
        check("every event on a named track", all(e["tid"] in names for e in xs))
        fwd = [e for e in xs if e["tid"] < world]
        bwd = [e for e in xs if world <= e["tid"] < 2 * world]
        comm = [e for e in xs if e["tid"] >= 2 * world]
        check("backward track holds the backward events", bwd and all(e["args"]["phase"] == "backward" for e in bwd))
        check("forward track holds no backward event", all(e["args"]["phase"] != "backward" for e in fwd))
        check("comm track holds sends and receives",
                comm and all(e["name"].startswith(("send to ", "recv from ")) for e in comm))
        for t in names:
            mine = sorted((e for e in xs if e["tid"] == t), key=lambda e: e["ts"])
            check(f"track {t} runs one thing at a time",
                    all(a["ts"] + a["dur"] <= b["ts"] + 1e-3 for a, b in zip(mine, mine[1:])))
        for r in range(world):
            mbs_f = {e["args"]["micro_batch"] for e in fwd if e["tid"] == r and e["args"]["phase"] == "forward"}
            mbs_b = {e["args"]["micro_batch"] for e in bwd if e["tid"] == world + r}
            check(f"rank {r}: forward and backward of micro-batches 0..3", mbs_f == mbs_b == {0, 1, 2, 3},
                    (mbs_f, mbs_b))

        compute = [e for e in fwd + bwd if e["cat"] == "compute"]
        comm_beside_compute = [r for r in range(world)
                               if any(overlaps(a, b) for a in comm if a["tid"] % world == r
                                      for b in compute if b["tid"] % world == r)]
        check("a comm span overlaps a compute span on some rank", comm_beside_compute)
        fb = [r for r in range(world)
              if any(overlaps(a, b) and a["args"]["micro_batch"] != b["args"]["micro_batch"]
                     for a in fwd if a["tid"] == r and a["args"]["phase"] == "forward"
                     for b in bwd if b["tid"] == world + r)]
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
