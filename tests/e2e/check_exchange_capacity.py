"""Exchange capacity bounds (issue 7, "Data-dependent sizes"): counts travel before payloads, and a batch
whose routing exceeds a compiled bound stops naming the exchange, the rank and the count.

  check_exchange_capacity.py BIN_DIR SAMPLE_DIR [--mpirun MPIRUN]

The oracle is PyTorch's layer-0 routing of the golden batch (golden/l0_topk_ids.npy, written by the
sample's export.py from the eager model) and the compiled plan's placement: A-rank a (sequence s on
A-rank s mod D_A) sends F-rank f one M2N token per token with at least one top-k expert on f. With
--capacity-tokens C one below the largest such count, the A-rank whose count exceeds C at its first
F-rank (ascending) must fail at layer 0's m2n_send with
  "exchange m2n.0 (m2n layer 0): rank A would send N tokens to rank F, above its capacity bound C";
every other rank stops through the abort path: exit code 1 well before the receive deadline
(--timeout 60), forward and --train, and with --mpirun under `mpirun -np 4 ... --comm mpi`. With
C = the largest count layer 0 passes; the default (dropless) plan runs the batch. The compile
flag's bounds are checked too: m2n/n2m capacity_tokens = C in plan.json, residual keeps batch x seq;
0, above batch x seq, and below what the plan's AF-Pipe schedule needs are refused with exit 1.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from checks import Checks

DEADLINE_S = 20  # a refusal must end the run this fast; the receive deadline is 60 s


def run(cmd, timeout=120):
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    return r, time.monotonic() - t0


def m2n_counts(plan, topk, batch, seq):
    """counts[(a, f)]: tokens A-rank a sends F-rank f in layer 0's M2N, from PyTorch's top-k ids."""
    groups = plan["placement"]["groups"]
    aranks = [g for g in groups if g["role"] == "attention" and 0 in g["layers"]][0]["ranks"]
    franks = [g for g in groups if g["role"] == "ffn" and 0 in g["layers"]][0]["ranks"]
    owner = plan["placement"]["expert_to_rank"][0]
    counts = {(a, f): 0 for a in aranks for f in franks}
    for s in range(batch):
        a = aranks[s % len(aranks)]
        for p in range(seq):
            for f in {owner[e] for e in topk[s * seq + p]}:
                counts[(a, f)] += 1
    return aranks, franks, counts


def expected_failures(aranks, franks, counts, cap):
    """Each A-rank over the bound fails at its first F-rank (ascending) above it."""
    out = []
    for a in aranks:
        over = [f for f in franks if counts[(a, f)] > cap]
        if over:
            out.append(f"exchange m2n.0 (m2n layer 0): rank {a} would send {counts[(a, over[0])]} tokens to rank "
                       f"{over[0]}, above its capacity bound {cap}")
    return out


def main():
    bin_dir, sample = sys.argv[1], sys.argv[2]
    mpirun = sys.argv[sys.argv.index("--mpirun") + 1] if "--mpirun" in sys.argv else None
    check = Checks()
    ids = os.path.join(sample, "golden", "ids_b2_s8.npy")
    batch, seq = np.load(ids).shape
    topk = np.load(os.path.join(sample, "golden", "l0_topk_ids.npy"))
    compile_cmd = [os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sample, "model.onnx")]
    run_bin = os.path.join(bin_dir, "disagmoe-run")
    with tempfile.TemporaryDirectory(prefix="disagmoe-capacity-") as work:
        default_plan = os.path.join(work, "default")
        r, _ = run(compile_cmd + ["-o", default_plan])
        assert r.returncode == 0, r.stderr
        with open(os.path.join(default_plan, "plan.json")) as f:
            plan = json.load(f)
        aranks, franks, counts = m2n_counts(plan, topk, batch, seq)
        most = max(counts.values())
        cap = most - 1
        want = expected_failures(aranks, franks, counts, cap)
        print(f"layer-0 M2N counts (PyTorch routing): {counts}; bound {cap}; expected: {want}")
        check(len(want) >= 1, f"the golden batch sends {most} tokens to one F-rank: a bound of {cap} is exceeded")

        bounded = os.path.join(work, "bounded")
        r, _ = run(compile_cmd + ["-o", bounded, "--capacity-tokens", str(cap)])
        check(r.returncode == 0, f"compile --capacity-tokens {cap}: {r.stderr.strip()}")
        with open(os.path.join(bounded, "plan.json")) as f:
            caps = {e["id"]: e["capacity_tokens"] for e in json.load(f)["exchanges"]}
        check(all(v == (cap if k.split(".")[0] in ("m2n", "n2m") else batch * seq) for k, v in caps.items()),
              f"plan.json: m2n/n2m capacity_tokens {cap}, residual {batch * seq} (batch x seq): {caps}")

        modes = {"forward": [], "--train": ["--train"]}
        launchers = {"local": []}
        if mpirun:
            launcher = [mpirun, "--oversubscribe", "-np", str(plan["placement"]["world_size"])]
            if os.geteuid() == 0:
                launcher.insert(1, "--allow-run-as-root")
            launchers = {"mpi": launcher}
        for comm, prefix in launchers.items():
            extra_comm = ["--comm", "mpi"] if comm == "mpi" else []
            for mode, extra in modes.items():
                r, dt = run(prefix + [run_bin, bounded, "--input", ids, "--timeout", "60"] + extra_comm + extra,
                            timeout=DEADLINE_S + 60)
                out = r.stdout + r.stderr
                named = [w for w in want if w in out]
                check(r.returncode != 0 and dt < DEADLINE_S and named,
                      f"{comm} {mode}: exit {r.returncode} in {dt:.1f} s (deadline {DEADLINE_S} s) naming "
                      f"{named[0] if named else 'nothing expected: ' + r.stderr.strip()[-400:]}")
                if comm == "local":
                    check(r.stderr.count("\n") == 1 and r.stderr.startswith("disagmoe-run: rank "),
                          f"{comm} {mode}: one error line, naming the failing rank first")
                r, _ = run(prefix + [run_bin, default_plan, "--input", ids, "--timeout", "60"] + extra_comm + extra)
                check(r.returncode == 0, f"{comm} {mode}: the default (dropless) plan runs the same batch")

        at_most = os.path.join(work, "at_most")
        r, _ = run(compile_cmd + ["-o", at_most, "--capacity-tokens", str(most)])
        r, _ = run([run_bin, at_most, "--input", ids, "--timeout", "60"])
        check("exchange m2n.0 (m2n layer 0)" not in r.stderr,
              f"--capacity-tokens {most} (the largest layer-0 count): layer 0 passes ({r.stderr.strip() or 'ok'})")

        for bad in ("0", str(batch * seq + 1)):
            r, _ = run(compile_cmd + ["-o", os.path.join(work, "bad"), "--capacity-tokens", bad])
            check(r.returncode == 1 and f"--capacity-tokens {bad}: expected an integer" in r.stderr
                  and not os.path.exists(os.path.join(work, "bad")),
                  f"compile --capacity-tokens {bad} refused, no plan written: {r.stderr.strip()}")
        r, _ = run(compile_cmd + ["-o", os.path.join(work, "bad"), "--capacity-tokens", "1"])
        hint = r.stderr.split("use at least --capacity-tokens ")[-1].rstrip(")\n")
        ok = r.returncode == 1 and "AF-Pipe schedule" in r.stderr and hint.isdigit()
        if ok:  # the smallest bound it names compiles; one less does not
            r1, _ = run(compile_cmd + ["-o", os.path.join(work, "min"), "--capacity-tokens", hint])
            r2, _ = run(compile_cmd + ["-o", os.path.join(work, "min1"), "--capacity-tokens", str(int(hint) - 1)])
            ok = r1.returncode == 0 and (int(hint) == 1 or r2.returncode == 1)
        check(ok, f"compile --capacity-tokens 1: below the schedule's messages, refused with the smallest bound "
                  f"that fits ({hint}): {r.stderr.strip()}")
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
