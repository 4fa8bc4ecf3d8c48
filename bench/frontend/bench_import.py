"""Scale benchmark of the ONNX frontend (issue 3): import + raise of a 48-layer x 128-expert export.

Builds (once, cached) the scale export of build_scale_model.py and its 2-, 4- and 8-layer cuts, then
times, as the median of --runs runs each (wall time and peak RSS of the process):
  - ours: `disagmoe inspect MODEL` (load with checks, static shapes, import, verify, raise; the
    hyper-parameter report on top), on the cuts and the full file;
  - Python's `onnx.load` of the same file (load_external_data=False: the protobuf-parse floor),
    timed inside the process;
  - onnxruntime-node's session creation (`InferenceSession.create`, default options: graph
    optimisations on), timed inside the process, on the cuts only (it did not finish within 20
    minutes on the full file); --ort-no-opt adds a series with graph optimisations disabled.
It prints ours against each as ratios of the same run, how each grows with layers (per added layer,
and the exponent of a power-law fit over the cuts), and writes RESULTS.md beside this script.

  /usr/bin/python3 bench/frontend/bench_import.py [--disagmoe build-scale/bin/disagmoe]
      [--cache /tmp/disagmoe-scale-bench] [--runs 3] [--cuts 2,4,8] [--layers 48] [--no-ort]
      [--ort-timeout 900] [--ort-no-opt] [--results bench/frontend/RESULTS.md]

Run manually (not part of ctest): the 48-layer file takes minutes to build the first time (one
torch.onnx.export of a 128-expert layer, then graph surgery).
"""
import argparse
import datetime
import math
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PYTHON = "/usr/bin/python3"  # Debian's, with torch and onnx

ONNX_LOAD = r"""
import sys, time
import onnx
start = time.perf_counter()
m = onnx.load(sys.argv[1], load_external_data=False)
print(time.perf_counter() - start, len(m.graph.node))
"""

ORT_CREATE = r"""
'use strict';
const ort = require(process.argv[2]);
(async () => {
  const opts = process.argv[4] === 'disabled' ? { graphOptimizationLevel: 'disabled' } : {};
  const start = process.hrtime.bigint();
  await ort.InferenceSession.create(process.argv[3], opts);
  console.log(Number(process.hrtime.bigint() - start) / 1e9);
})().catch(e => { console.error(String(e)); process.exit(1); });
"""


def run(cmd, timeout=None):
    """Runs cmd; returns (wall seconds, stdout, stderr, returncode), or None on timeout."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None
    return time.perf_counter() - start, out.decode(), err.decode(), proc.returncode


def run_measured(cmd, timeout=None):
    """(wall seconds, peak RSS MiB, stdout) of one run, via GNU time's %e/%M, or None on timeout."""
    tfile = "/tmp/.bench_import_time"
    timed = ["/usr/bin/time", "-f", "%e %M", "-o", tfile] + cmd
    r = run(timed, timeout)
    if r is None:
        return None
    wall, out, err, rc = r
    if rc != 0:
        raise SystemExit(f"failed ({rc}): {' '.join(cmd)}\n{err[-2000:]}")
    with open(tfile) as f:
        fields = f.read().split()
    return wall, int(fields[-1]) / 1024.0, out


def median_of(samples, key):
    return statistics.median(s[key] for s in samples)


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / 1024 / 1024:.0f} GiB"
    except OSError:
        pass
    distro = "?"
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    distro = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    load = os.getloadavg()
    return (f"{distro}, {platform.machine()}, {os.cpu_count()} cores ({cpu}), {mem} RAM; "
            f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the start (shared machine)")


def power_fit(xs, ys):
    """Exponent b of y = a * x^b (least squares in log-log)."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((x - mx) ** 2 for x in lx)
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / den if den else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--disagmoe", default=os.path.join(ROOT, "build-scale", "bin", "disagmoe"))
    ap.add_argument("--cache", default="/tmp/disagmoe-scale-bench")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cuts", default="2,4,8")
    ap.add_argument("--layers", type=int, default=48)
    ap.add_argument("--no-ort", action="store_true", help="skip onnxruntime-node")
    ap.add_argument("--ort-timeout", type=float, default=900)
    ap.add_argument("--ort-no-opt", action="store_true",
                    help="also time onnxruntime-node with graph optimisations disabled")
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"))
    args = ap.parse_args()
    if not os.access(args.disagmoe, os.X_OK):
        raise SystemExit(f"{args.disagmoe}: not built (ninja -C build-scale)")
    if not os.access("/usr/bin/time", os.X_OK):
        raise SystemExit("/usr/bin/time (GNU time) is needed for peak RSS: apt-get install time")
    ort_module = os.path.join(ROOT, "tests", "oracle", "node_modules", "onnxruntime-node")
    use_ort = not args.no_ort and os.path.isdir(ort_module)
    if not args.no_ort and not use_ort:
        print(f"note: {ort_module} missing (scripts/setup installs it); onnxruntime-node skipped")

    cuts = [int(c) for c in args.cuts.split(",") if c]
    layer_counts = sorted(set(cuts + [args.layers]))
    os.makedirs(args.cache, exist_ok=True)
    one_layer = os.path.join(args.cache, "one_layer_e128_k8.onnx")
    models = {}
    for n in layer_counts:
        path = os.path.join(args.cache, f"layers{n}.onnx")
        subprocess.run([PYTHON, os.path.join(HERE, "build_scale_model.py"), path, "--layers", str(n),
                        "--one-layer", one_layer], check=True)
        models[n] = path
    script_dir = os.path.join(args.cache, "scripts")
    os.makedirs(script_dir, exist_ok=True)
    onnx_script = os.path.join(script_dir, "onnx_load.py")
    ort_script = os.path.join(script_dir, "ort_create.js")
    with open(onnx_script, "w") as f:
        f.write(ONNX_LOAD)
    with open(ort_script, "w") as f:
        f.write(ORT_CREATE)

    started = datetime.datetime.now(datetime.timezone.utc)
    mach = machine()
    rows = {}  # n -> dict
    for n in layer_counts:
        path = models[n]
        row = {"nodes": None, "mb": (os.path.getsize(path)) / 1e6,
               "data_mb": os.path.getsize(path + ".data") / 1e6}
        ours, onnx_runs = [], []
        for _ in range(args.runs):
            wall, rss, _ = run_measured([args.disagmoe, "inspect", path])
            ours.append({"wall": wall, "rss": rss})
            wall, rss, out = run_measured([PYTHON, onnx_script, path])
            secs, nodes = out.split()
            row["nodes"] = int(nodes)
            onnx_runs.append({"wall": float(secs), "process": wall, "rss": rss})
        row["ours"] = median_of(ours, "wall")
        row["ours_rss"] = median_of(ours, "rss")
        row["ours_all"] = [s["wall"] for s in ours]
        row["onnx"] = median_of(onnx_runs, "wall")
        row["onnx_rss"] = median_of(onnx_runs, "rss")
        print(f"{n:3d} layers, {row['nodes']} nodes: ours {row['ours']:.2f} s ({row['ours_rss']:.0f} MiB), "
              f"onnx.load {row['onnx']:.2f} s", flush=True)
        if use_ort and n in cuts:
            for level in ("default", "disabled") if args.ort_no_opt else ("default",):
                samples = []
                for _ in range(args.runs):
                    r = run_measured(["node", ort_script, ort_module, path, level], timeout=args.ort_timeout)
                    if r is None:
                        samples = None
                        break
                    wall, rss, out = r
                    samples.append({"wall": float(out.split()[-1]), "rss": rss})
                key = "ort" if level == "default" else "ort_noopt"
                row[key] = median_of(samples, "wall") if samples else None
                row[key + "_rss"] = median_of(samples, "rss") if samples else None
                shown = f"{row[key]:.2f} s" if row[key] is not None else f"> {args.ort_timeout:.0f} s"
                print(f"    onnxruntime-node session ({level} optimisations): {shown}", flush=True)
        rows[n] = row
    # One timed run of the full file for the phase breakdown.
    phases = subprocess.run([args.disagmoe, "inspect", models[args.layers], "--timing"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True).stderr

    full = rows[args.layers]
    lines = []
    lines.append(f"# Frontend scale benchmark (issue 3)\n")
    lines.append(f"Generated by `bench/frontend/bench_import.py` on {started:%Y-%m-%d %H:%M} UTC.\n")
    lines.append(f"- Command: `/usr/bin/python3 bench/frontend/bench_import.py "
                 f"--disagmoe {os.path.relpath(args.disagmoe, ROOT)} --runs {args.runs} --cuts {args.cuts}"
                 f"{' --no-ort' if args.no_ort else ''}{' --ort-no-opt' if args.ort_no_opt else ''}`")
    lines.append(f"- Machine: {mach}.")
    lines.append(f"- Models: `bench/frontend/build_scale_model.py` (one torch.onnx.export layer with "
                 f"128 experts, top-8, hidden 16, replicated by graph surgery), cached in `{args.cache}`.")
    lines.append(f"- Each figure is the median of {args.runs} runs; wall time of the whole process for ours "
                 f"(`disagmoe inspect`: load with the onnx checker, static shapes, import, verify, raise), "
                 f"the call alone for `onnx.load` (load_external_data=False) and for onnxruntime-node's "
                 f"`InferenceSession.create`; peak RSS of the process (GNU time).\n")
    lines.append("## The full file\n")
    lines.append(f"{args.layers} layers x 128 experts: {full['nodes']} nodes, {full['mb']:.1f} MB graph + "
                 f"{full['data_mb']:.1f} MB external weights.\n")
    lines.append("| | wall (s) | peak RSS (MiB) |")
    lines.append("|---|---:|---:|")
    lines.append(f"| ours: import + raise (`disagmoe inspect`) | {full['ours']:.2f} | {full['ours_rss']:.0f} |")
    lines.append(f"| Python `onnx.load` | {full['onnx']:.2f} | {full['onnx_rss']:.0f} |")
    lines.append(f"| onnxruntime-node session creation | not run (did not finish within 20 minutes) | |")
    lines.append("")
    lines.append(f"Ours / `onnx.load`: **{full['ours'] / full['onnx']:.1f}x** "
                 f"(runs: {', '.join(f'{w:.2f}' for w in full['ours_all'])} s). "
                 f"Target: <= 10 s and <= 2 GiB.\n")
    lines.append("Phases of one run (`disagmoe inspect --timing`):\n")
    lines.append("```")
    lines.extend(l for l in phases.rstrip().splitlines())
    lines.append("```\n")
    lines.append("## Growth with layers\n")
    header = "| layers | nodes | ours (s) | ours RSS (MiB) | onnx.load (s) | ours / onnx.load |"
    sep = "|---:|---:|---:|---:|---:|---:|"
    if use_ort:
        header += " ORT session (s) | ORT RSS (MiB) | ours / ORT |"
        sep += "---:|---:|---:|"
        if args.ort_no_opt:
            header += " ORT, no graph opt. (s) | ours / ORT no opt. |"
            sep += "---:|---:|"
    lines.append(header)
    lines.append(sep)
    for n in layer_counts:
        r = rows[n]
        line = (f"| {n} | {r['nodes']} | {r['ours']:.2f} | {r['ours_rss']:.0f} | {r['onnx']:.2f} | "
                f"{r['ours'] / r['onnx']:.1f}x |")
        if use_ort:
            if n in cuts:
                fmt = lambda v: f"{v:.2f}" if v is not None else f"> {args.ort_timeout:.0f}"
                ratio = lambda v: f"{r['ours'] / v:.3f}x" if v else "-"
                line += f" {fmt(r.get('ort'))} | {r.get('ort_rss') or 0:.0f} | {ratio(r.get('ort'))} |"
                if args.ort_no_opt:
                    line += f" {fmt(r.get('ort_noopt'))} | {ratio(r.get('ort_noopt'))} |"
            else:
                line += " not run | | |" + (" not run | |" if args.ort_no_opt else "")
        lines.append(line)
    lines.append("")
    xs = [n for n in cuts]

    def growth(key, label):
        ys = [rows[n].get(key) for n in xs]
        if any(y is None or y <= 0 for y in ys) or len(xs) < 2:
            return
        per_layer = (ys[-1] - ys[0]) / (xs[-1] - xs[0])
        lines.append(f"- {label}: {per_layer:.3f} s per added layer from {xs[0]} to {xs[-1]} layers; "
                     f"time ~ layers^{power_fit(xs, ys):.2f} over the cuts "
                     f"({' -> '.join(f'{y:.2f}' for y in ys)} s).")
    growth("ours", "ours")
    growth("onnx", "onnx.load")
    if use_ort:
        growth("ort", "onnxruntime-node session creation")
        growth("ort_noopt", "onnxruntime-node session creation without graph optimisations")
    ys = [rows[n]["ours"] for n in layer_counts]
    lines.append(f"- ours over all sizes including {args.layers} layers: time ~ layers^"
                 f"{power_fit(layer_counts, ys):.2f}.")
    # Hand-written notes below the marker in an existing RESULTS.md are kept.
    marker = "<!-- notes: kept when the benchmark rewrites this file -->"
    notes = ""
    if os.path.exists(args.results):
        with open(args.results) as f:
            text = f.read()
        if marker in text:
            notes = text[text.index(marker):]
    with open(args.results, "w") as f:
        f.write("\n".join(lines) + "\n")
        if notes:
            f.write("\n" + notes)
    print("\n".join(lines))
    print(f"\nwrote {args.results}")


if __name__ == "__main__":
    sys.exit(main())
