"""Faults with the local comm (issue 7): a rank that dies or goes silent never leaves the others hanging.

  check_faults.py BIN_DIR SAMPLE_DIR

Compiles the sample (2+2 ranks, p = 2: 8 ranks) and, for the forward run and a training step, makes
one rank fail through the test hook DISAGMOE_FAULT_INJECT="R:die|silent:K" (runtime/executor/
Heartbeat.h) at its K-th message operation, A-ranks and F-ranks, early and late. Each run must exit
with code 1 (the process ends only after every rank thread has returned), its one-line error must
name the failed rank ("rank R: injected failure" for a death, "rank R is silent: no heartbeat" for
a silent rank, caught by the heartbeat before any receive deadline, which names a peer instead),
and it must end within its deadline: a death at once (< 5 s), a silent rank within the heartbeat
deadline (--timeout / 2) + 10% + 2 s of slack for this loaded machine, well before --timeout.
A malformed hook value is refused naming the variable; without the hook the same runs succeed.

  check_faults.py BIN_DIR SAMPLE_DIR --mpirun MPIRUN

The same under `mpirun -np 8 disagmoe-run --comm mpi` (one process per rank; stderr only is read):
a silent rank (its process's own watchdog names it), a frozen process ("freeze": SIGSTOP, caught by
the heartbeat notes of the mpi comm: rank 0 watches every rank, the others rank 0), a killed
process ("kill": SIGKILL, mpirun names the rank) and a rank that dies. The job must end with a
non-zero exit code within the heartbeat deadline + 10% + 5 s of start-up slack (before the receive
deadline --timeout of the waiting peers: no "timed out" message); one error line must be the
detection naming the failed rank, and every error line must name it (order across processes is
not checked).
"""
import os
import re
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 4  # --timeout: receive deadline; the heartbeat deadline is half of it


def run(cmd, env_fault=None):
    env = dict(os.environ)
    env.pop("DISAGMOE_FAULT_INJECT", None)
    if env_fault is not None:
        env["DISAGMOE_FAULT_INJECT"] = env_fault
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=60)
    return r, time.monotonic() - t0


def error_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("disagmoe-run:") or "mpirun noticed" in line]


def main_mpi(bin_dir, sample, mpirun):
    timeout_s = 8  # heartbeat deadline 4 s; a loaded machine needs a start-up slack on top
    failures = []
    mpi = [mpirun, "--oversubscribe", "-np", "8", "-x", "DISAGMOE_FAULT_INJECT"]
    if os.geteuid() == 0:
        mpi.insert(1, "--allow-run-as-root")
    with tempfile.TemporaryDirectory(prefix="disagmoe-faults-mpi-") as work:
        plan = os.path.join(work, "plan")
        r, _ = run([f"{bin_dir}/disagmoe", "compile", f"{sample}/model.onnx", "-o", plan, "--attn-ranks", "2",
                    "--ffn-ranks", "2", "--groups", "2"])
        assert r.returncode == 0, r.stderr
        base = mpi + [f"{bin_dir}/disagmoe-run", plan, "--comm", "mpi", "--timeout", str(timeout_s), "--train"]
        r, dt = run(base, "")
        print(f"no fault: exit {r.returncode} in {dt:.2f} s")
        if r.returncode != 0:
            failures.append("no fault: " + r.stderr)
        # Ranks 0-3: attention groups, 4-7: FFN groups.
        cases = [(5, "silent", 3, r"rank 5 is silent: no heartbeat for \d+ ms"),
                 (0, "freeze", 1, r"rank 0 is silent: no heartbeat note from its process for \d+ ms"),
                 (5, "freeze", 3, r"rank 5 is silent: no heartbeat note from its process for \d+ ms .*noticed by rank 0"),
                 (5, "kill", 3, r"process rank 5 .*signal 9"),
                 (1, "die", 4, r"rank 1 .*injected failure")]
        for rank, mode, at, want in cases:
            r, dt = run(base, f"{rank}:{mode}:{at}")
            # Processes print in any order: one line must be the detection, and every line must name
            # the failed rank (the peers' aborted receives quote the reason); none a receive deadline.
            lines = error_lines(r.stderr)
            found = [line for line in lines if re.search(want, line)]
            err = found[0] if found else (lines[0] if lines else "")
            bound = timeout_s / 2 * 1.1 + 5.0
            ok = (r.returncode != 0 and found and dt < bound and all(f"rank {rank}" in line for line in lines)
                  and "timed out" not in r.stderr)
            print(f"mpi {rank}:{mode}:{at}: exit {r.returncode} in {dt:.2f} s (bound {bound:.1f} s): {err}")
            if not ok:
                failures.append(f"mpi {rank}:{mode}:{at}")
                print(r.stderr)
    if failures:
        raise SystemExit("FAILED: " + ", ".join(failures))
    print("faults under mpi: OK")


def main():
    bin_dir, sample = sys.argv[1], sys.argv[2]
    if len(sys.argv) == 5 and sys.argv[3] == "--mpirun":
        return main_mpi(bin_dir, sample, sys.argv[4])
    failures = []
    with tempfile.TemporaryDirectory(prefix="disagmoe-faults-") as work:
        plan = os.path.join(work, "plan")
        r, _ = run([f"{bin_dir}/disagmoe", "compile", f"{sample}/model.onnx", "-o", plan, "--attn-ranks", "2",
                    "--ffn-ranks", "2", "--groups", "2"])
        assert r.returncode == 0, r.stderr
        modes = {"forward": [], "train": ["--train"]}
        for name, extra in modes.items():
            base = [f"{bin_dir}/disagmoe-run", plan, "--timeout", str(TIMEOUT_S)] + extra
            r, _ = run(base)
            assert r.returncode == 0, (name, r.stderr)
            # Ranks 0-1: attention group 0, 2-3: attention group 1, 4-7: ffn groups (the plan's placement).
            for rank, mode, at in [(5, "die", 0), (1, "die", 7), (4, "silent", 3), (0, "silent", 0),
                                   (3, "silent", 5)]:
                r, dt = run(base, f"{rank}:{mode}:{at}")
                err = r.stderr.strip()
                want = f"rank {rank}: injected failure" if mode == "die" else f"rank {rank} is silent: no heartbeat"
                bound = 5.0 if mode == "die" else TIMEOUT_S / 2 * 1.1 + 2.0
                ok = r.returncode == 1 and want in err and err.count("\n") == 0 and dt < bound
                print(f"{name} {rank}:{mode}:{at}: exit {r.returncode} in {dt:.2f} s (bound {bound:.1f} s): {err}")
                if not ok:
                    failures.append(f"{name} {rank}:{mode}:{at}")
            r, _ = run(base, "3:sleep:1")
            if r.returncode != 1 or "DISAGMOE_FAULT_INJECT" not in r.stderr:
                failures.append(f"{name}: malformed hook accepted: {r.stderr}")
    if failures:
        raise SystemExit("FAILED: " + ", ".join(failures))
    print("faults: OK")


if __name__ == "__main__":
    main()
