"""torchrun-style launch (issue 17): `RANK=r WORLD_SIZE=W MASTER_ADDR=.. MASTER_PORT=.. disagmoe-run PLAN
--comm mpi`, W processes started by this script as torchrun --nproc-per-node W would, no mpirun.

For the sample compiled on 2 ranks (1 + 1) and on 4 ranks (2 + 2):
  - forward logits bit-identical to --comm local;
  - training (SGD one step; AdamW two steps of two micro-batches): losses printed, --save-grads and
    --save-weights files bit-identical to --comm local;
and, on the 2-rank plan, Slurm's SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID with MASTER_ADDR alike; a
rendezvous nobody answers ends within its --timeout naming MASTER_ADDR:MASTER_PORT; a rank that fails
(--fail-rank 1) ends every process naming it; bad launch variables are refused in one line naming the
variable, before any other output.
  check_torchrun.py BIN_DIR SAMPLE_DIR WORK_DIR
"""
import os
import socket
import subprocess
import sys
import time

import numpy as np
from checks import Checks

# torch's own launcher (what torchrun --nproc-per-node W --no-python runs), called as an API: Debian's
# torch 1.13 torchrun CLI fails on this Python before it starts a worker (its --redirects parsing).
TORCH_LAUNCH = """
import sys
from torch.distributed.launcher.api import LaunchConfig, elastic_launch
from torch.distributed.elastic.multiprocessing import Std
world, backend, port = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cfg = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=world, run_id="disagmoe", rdzv_backend=backend,
                   rdzv_endpoint="127.0.0.1:" + port, rdzv_configs={"rank": 0} if backend == "static" else {},
                   max_restarts=0, redirects=Std.NONE, tee=Std.NONE, monitor_interval=1)
elastic_launch(cfg, sys.argv[4])(*sys.argv[5:])
"""

LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
               "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_pair():
    """A port p with p + 1 free too (torch's static rendezvous: its store on p, the ranks on p + 1)."""
    for _ in range(50):
        with socket.socket() as a, socket.socket() as b:
            a.bind(("", 0))
            p = a.getsockname()[1]
            try:
                b.bind(("", p + 1))
            except OSError:
                continue
            return p
    raise SystemExit("no two consecutive free ports")


def base_env():
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS and not k.startswith(("OMPI_", "PMIX_"))}
    return env


def run(cmd, expect_ok=True, timeout=120, env=None):
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                            env=env if env is not None else base_env())
    if expect_ok and result.returncode != 0:
        print(result.stdout)
        raise SystemExit(f"FAILED ({result.returncode}): {' '.join(cmd)}")
    return result


def launch(cmd, world, slurm=False, timeout=120, kill=None):
    """Starts `world` processes with torchrun's (or srun's) variables; returns [(rc, output)] by rank.
    kill = (rank, seconds): SIGKILLs that rank's process after that many seconds."""
    port = free_port()
    procs = []
    for r in range(world):
        env = base_env()
        if slurm:
            env.update(SLURM_PROCID=str(r), SLURM_NTASKS=str(world), SLURM_LOCALID=str(r))
        else:
            env.update(RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(world))
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
    if kill:
        time.sleep(kill[1])
        procs[kill[0]].kill()
    out = []
    for p in procs:
        try:
            text, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            text, _ = p.communicate()
        out.append((p.returncode, text))
    return out


def launched_ok(results, what):
    if any(rc != 0 for rc, _ in results):
        for r, (rc, text) in enumerate(results):
            print(f"--- rank {r} (exit {rc}):\n{text}")
        raise SystemExit(f"FAILED: {what}")
    return results[0][1]


def same_files(a, b):
    names = sorted(os.listdir(a))
    if not names or names != sorted(os.listdir(b)):
        return False, "different file lists"
    for n in names:
        with open(os.path.join(a, n), "rb") as fa, open(os.path.join(b, n), "rb") as fb:
            if fa.read() != fb.read():
                return False, n
    return True, f"{len(names)} files"


def step_lines(text):
    return [line.split(" (")[0] for line in text.splitlines() if line.startswith("step")]


def world_checks(check, run_bin, plan, ids, work, world):
    local_logits, tr_logits = os.path.join(work, f"w{world}_local.npy"), os.path.join(work, f"w{world}_tr.npy")
    run([run_bin, plan, "--input", ids, "--output", local_logits])
    launched_ok(launch([run_bin, plan, "--comm", "mpi", "--input", ids, "--output", tr_logits], world),
                f"forward on {world} torchrun-launched ranks")
    a, b = np.load(local_logits), np.load(tr_logits)
    check(a.shape == b.shape and a.tobytes() == b.tobytes(),
          f"{world} ranks: forward logits {list(a.shape)} bit-identical to --comm local")
    for name, extra in (("sgd", ["--optimizer", "sgd"]),
                        ("adamw", ["--optimizer", "adamw", "--micro-batches", "2", "--steps", "2"])):
        dirs = {c: os.path.join(work, f"w{world}_{name}_{c}") for c in ("local", "torchrun")}

        def cmd(comm):
            return [run_bin, plan, "--train", "--comm", comm, "--input", ids, "--save-grads",
                    dirs[comm if comm == "local" else "torchrun"] + "_grads", "--save-weights",
                    dirs[comm if comm == "local" else "torchrun"] + "_weights"] + extra
        local_text = run(cmd("local")).stdout
        tr_text = launched_ok(launch(cmd("mpi"), world), f"{name} training on {world} torchrun-launched ranks")
        check(bool(step_lines(tr_text)) and step_lines(tr_text) == step_lines(local_text),
              f"{world} ranks, {name}: losses printed agree with --comm local: {step_lines(tr_text)}")
        for kind in ("grads", "weights"):
            ok, what = same_files(dirs["local"] + "_" + kind, dirs["torchrun"] + "_" + kind)
            check(ok, f"{world} ranks, {name}: {kind} bit-identical to --comm local ({what})")


def refusal_checks(check, run_bin, plan4):
    def refused(extra_env, expected, what, args=()):
        env = base_env()
        env.update(extra_env)
        # --timeout 3: a refused rank 0 waits that long (at most 10 s) to tell ranks never started
        r = run([run_bin, plan4, "--comm", "mpi", "--timeout", "3", *args], expect_ok=False, env=env, timeout=30)
        lines = r.stdout.strip().splitlines()
        check(r.returncode != 0 and len(lines) == 1 and expected in lines[0],
              f"{what}: refused in one line: {lines}")
    tr = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    refused(dict(tr, RANK="4", WORLD_SIZE="4"), "RANK=4 is not below WORLD_SIZE=4", "RANK >= WORLD_SIZE")
    refused(dict(tr, RANK="0", WORLD_SIZE="3"), "WORLD_SIZE=3 but the plan has 4 ranks",
            "WORLD_SIZE not the plan's rank count")
    refused({"RANK": "1", "WORLD_SIZE": "4"}, "RANK is set but MASTER_ADDR is not", "RANK without MASTER_ADDR")
    refused(dict(tr, RANK="one", WORLD_SIZE="4"), 'RANK="one" is not a rank', "a non-numeric RANK")
    refused(dict(tr, RANK="1", WORLD_SIZE="4", MASTER_PORT="port"), 'MASTER_PORT="port" is not a TCP port',
            "a non-numeric MASTER_PORT")
    refused(dict(tr, RANK="1", WORLD_SIZE="4", LOCAL_RANK="x"), 'LOCAL_RANK="x" is not a local rank',
            "a non-numeric LOCAL_RANK")
    # As in a single process (disagmoe-run PLAN --steps 3): not a forward run with --steps ignored.
    refused(dict(tr, RANK="0", WORLD_SIZE="4"), "disagmoe-run: --steps needs --train (see --help)",
            "--steps without --train", args=("--steps", "3"))


def main(bin_dir, sample, work):
    run_bin = os.path.join(bin_dir, "disagmoe-run")
    ids = os.path.join(sample, "golden", "ids_b2_s8.npy")
    check = Checks()
    plans = {}
    for world, (a, f) in ((2, (1, 1)), (4, (2, 2))):
        plans[world] = os.path.join(work, f"plan{world}")
        run([os.path.join(bin_dir, "disagmoe"), "compile", os.path.join(sample, "model.onnx"), "-o", plans[world],
             "--attn-ranks", str(a), "--ffn-ranks", str(f)])
        world_checks(check, run_bin, plans[world], ids, work, world)

    try:
        import torch.distributed.launcher.api  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
        print("skip torch's elastic launcher checks: torch.distributed is not importable")
    for backend in ("static", "c10d") if have_torch else ():
        # static: the agent's TCPStore holds MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True), the
        # ranks meet on MASTER_PORT + 1; c10d: MASTER_PORT is a free port the agent chose.
        out = os.path.join(work, f"w4_torch_{backend}.npy")
        r = run([sys.executable, "-c", TORCH_LAUNCH, "4", backend, str(free_port_pair()), run_bin, plans[4], "--comm",
                 "mpi", "--timeout", "30", "--input", ids, "--output", out], expect_ok=False, timeout=180)
        ok = r.returncode == 0 and os.path.exists(out) and \
            np.load(out).tobytes() == np.load(os.path.join(work, "w4_local.npy")).tobytes()
        check(ok, f"torch's elastic launcher ({backend} rendezvous), 4 workers: logits bit-identical to --comm local")
        if not ok:
            print(r.stdout[-3000:])

    slurm_logits = os.path.join(work, "w2_slurm.npy")
    launched_ok(launch([run_bin, plans[2], "--comm", "mpi", "--input", ids, "--output", slurm_logits], 2, slurm=True),
                "forward on 2 ranks with Slurm's variables and MASTER_ADDR")
    check(np.load(slurm_logits).tobytes() == np.load(os.path.join(work, "w2_local.npy")).tobytes(),
          "2 ranks with SLURM_PROCID/SLURM_NTASKS + MASTER_ADDR: logits bit-identical to --comm local")

    # Rank 1 of 2 alone: rank 0 never listens; --timeout 3 bounds the rendezvous.
    port = free_port()
    env = base_env()
    env.update(RANK="1", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    start = time.time()
    r = run([run_bin, plans[2], "--comm", "mpi", "--timeout", "3"], expect_ok=False, env=env, timeout=60)
    took = time.time() - start
    lines = r.stdout.strip().splitlines()
    check(r.returncode != 0 and took < 15 and len(lines) == 1 and
          f"MASTER_ADDR:MASTER_PORT = 127.0.0.1:{port}" in lines[0] and "timed out" in lines[0],
          f"unreachable rendezvous: one line naming MASTER_ADDR:MASTER_PORT after {took:.1f} s: {lines}")
    # Rank 0 of 2 alone: names the missing rank.
    env.update(RANK="0")
    r = run([run_bin, plans[2], "--comm", "mpi", "--timeout", "2"], expect_ok=False, env=env, timeout=60)
    check(r.returncode != 0 and "1 of 2 ranks arrived" in r.stdout and "missing rank 1" in r.stdout,
          f"rank 0 alone: names the missing rank: {r.stdout.strip()}")

    start = time.time()
    results = launch([run_bin, plans[4], "--comm", "mpi", "--train", "--input", ids, "--fail-rank", "1"], 4,
                     timeout=60)
    took = time.time() - start
    check(all(rc != 0 for rc, _ in results) and took < 30,
          f"--fail-rank 1: every process ended with an error, in {took:.1f} s: {[rc for rc, _ in results]}")
    check("rank 1: injected failure" in results[1][1] and all("rank 1" in t for _, t in results),
          "--fail-rank 1: every process names rank 1")
    # A process killed mid-run (no note from it): its peers see its connection close and end, naming it.
    start = time.time()
    results = launch([run_bin, plans[4], "--comm", "mpi", "--train", "--input", ids, "--steps", "1000000",
                      "--quiet"], 4, timeout=60, kill=(2, 2.0))
    took = time.time() - start
    others = [results[r] for r in (0, 1, 3)]
    check(all(rc not in (0, None) for rc, _ in others) and took < 30 and
          # "closed" (EOF) or "failed (Connection reset by peer)", as the kernel reports the kill
          all("rank 2's connection " in t and "before it finished (its process ended)" in t for _, t in others),
          f"rank 2 killed after 2 s: ranks 0, 1, 3 ended in {took:.1f} s naming rank 2: "
          f"{[t.strip().splitlines()[-1:] for _, t in others]}")
    # A rank that fails before the rendezvous (another plan path, a refused option) is named with its
    # reason by every other process, at once: not "N of 4 ranks arrived" at the deadline.
    for bad, extra, reason in ((1, ["--plan-override"], None), (2, None, "cannot open"), (0, None, "cannot open")):
        procs = []
        port = free_port()
        for r in range(4):
            env = base_env()
            env.update(RANK=str(r), WORLD_SIZE="4", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
            plan = plans[4] if r != bad or extra else os.path.join(work, "no_such_plan")
            cmd = [run_bin, plan, "--comm", "mpi", "--train", "--timeout", "30"] + (extra if r == bad and extra else [])
            procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
        start = time.time()
        outs = [p.communicate(timeout=60)[0] for p in procs]
        took = time.time() - start
        own = outs[bad].strip().splitlines()
        why = own[-1].removeprefix("disagmoe-run: ") if own else "(nothing)"
        named = all(f"rank {bad} failed: {why}" in outs[r] and len(outs[r].strip().splitlines()) == 1
                    for r in range(4) if r != bad)
        check(all(p.returncode != 0 for p in procs) and took < 10 and named and (reason is None or reason in why),
              f"rank {bad} fails before the rendezvous ({why[:70]}): the 3 others end in {took:.1f} s, "
              f"each in one line naming rank {bad} and its reason")
    refusal_checks(check, run_bin, plans[4])
    return check.summary()


if __name__ == "__main__":
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(*sys.argv[1:4]))
