"""Shared loading and writing helpers of the scripts in scripts/plots/ (Debian's /usr/bin/python3 with
python3-matplotlib and python3-numpy).

Every script reads the JSON / JSON-lines files the binaries already write and fails with one line,
`NAME: FILE: FIELD: what is wrong`, and exit code 1 on a missing or malformed input (InputError,
caught by main()). Pictures are written atomically: a temporary file in the destination's folder, then
os.replace(), so a reader never sees half a PNG and a failed render leaves nothing behind.
"""
import json
import math
import os
import re
import stat
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402,F401  (re-exported for the scripts)

DPI = 100


class InputError(Exception):
    """A missing or malformed input: str() is 'FILE: FIELD: what' (FIELD may be empty)."""

    def __init__(self, path, field, what):
        super().__init__(f"{path}: {field}: {what}" if field else f"{path}: {what}")


def _open_text(path):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(path, "", "no such file")
    except OSError as e:
        raise InputError(path, "", f"cannot stat ({e.strerror})")
    if stat.S_ISDIR(st.st_mode):
        raise InputError(path, "", "is a directory, expected a file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(path, "", "is not a regular file")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(path, "", f"cannot read ({e})")


def _no_constants(name):
    raise ValueError(f"non-standard JSON constant {name}")


def load_json(path):
    """One JSON document (NaN/Infinity refused: the binaries never write them)."""
    text = _open_text(path)
    try:
        return json.loads(text, parse_constant=_no_constants)
    except ValueError as e:
        hint = ""
        if isinstance(e, json.JSONDecodeError) and e.msg == "Extra data":
            hint = " (several JSON documents: is this a JSON-lines file?)"
        raise InputError(path, "", f"not JSON: {e}{hint}")


def load_jsonl(path):
    """JSON lines: a list of (line number, object); blank lines are skipped, an empty file refused."""
    text = _open_text(path)
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, parse_constant=_no_constants)
        except ValueError as e:
            raise InputError(path, f"line {n}", f"not JSON: {e}")
        if not isinstance(obj, dict):
            raise InputError(path, f"line {n}", "expected a JSON object")
        rows.append((n, obj))
    if not rows:
        raise InputError(path, "", "no JSON lines (empty file)")
    return rows


def field(obj, key, path, where="", kind="number", allow_none=False):
    """obj[key] checked for kind ('number', 'int', 'str', 'list', 'dict', 'bool', 'any');
    where prefixes the field's name in the message (e.g. 'line 3' or 'traceEvents[5]')."""
    name = f"{where}.{key}" if where else key
    if not isinstance(obj, dict):
        raise InputError(path, where or key, "expected a JSON object")
    if key not in obj:
        raise InputError(path, name, "missing")
    v = obj[key]
    if v is None and allow_none:
        return v
    ok = {
        "number": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x),
        "int": lambda x: isinstance(x, int) and not isinstance(x, bool),
        "str": lambda x: isinstance(x, str),
        "list": lambda x: isinstance(x, list),
        "dict": lambda x: isinstance(x, dict),
        "bool": lambda x: isinstance(x, bool),
        "any": lambda x: True,
    }[kind](v)
    if not ok:
        raise InputError(path, name, f"expected {'a finite number' if kind == 'number' else 'a ' + kind}, "
                                     f"got {json.dumps(v)[:40]}")
    return v


def number_list(v, path, name, integer=False):
    if not isinstance(v, list) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
            and (not integer or float(x).is_integer()) for x in v):
        raise InputError(path, name, f"expected a list of {'integers' if integer else 'numbers'}")
    return v


# --- output ---------------------------------------------------------------------------------------

def check_output(out):
    """Refuses an -o path whose folder is missing or that exists as anything but a regular file."""
    d = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(d):
        raise InputError(out, "-o", f"folder {d} does not exist")
    if os.path.lexists(out) and not stat.S_ISREG(os.lstat(out).st_mode):
        raise InputError(out, "-o", "exists and is not a regular file: refusing to replace it")


def save_png(fig, out, dpi=DPI):
    """Atomic write: temporary file in the destination folder, then rename. Returns (width, height)."""
    check_output(out)
    # Whole pixels: savefig truncates width x dpi, so 13.16 in at 100 dpi (13.159999...) would be 1315.
    w_px, h_px = (int(round(x * dpi)) for x in fig.get_size_inches())
    fig.set_size_inches((w_px + 0.01) / dpi, (h_px + 0.01) / dpi)
    d = os.path.dirname(os.path.abspath(out))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(out) + ".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format="png", dpi=dpi)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    plt.close(fig)
    return w_px, h_px


def main(name, run):
    """Runs run() and turns an InputError into one line on stderr and exit code 1."""
    try:
        run()
    except InputError as e:
        print(f"{name}: {e}", file=sys.stderr)
        sys.exit(1)


def gb(x):
    return x / 1e9


# --- Chrome traces (disagmoe-run --backend sim --trace, disagmoe-run --train --trace) ---------------

class Span:
    __slots__ = ("row", "name", "cat", "t0", "t1", "mb", "layer", "phase")

    def __init__(self, row, name, cat, t0, t1, mb, layer, phase):
        self.row, self.name, self.cat, self.t0, self.t1 = row, name, cat, t0, t1
        self.mb, self.layer, self.phase = mb, layer, phase


class Row:
    """One track: a (group or rank, stream) pair. kind is 'forward', 'backward' or 'comm'."""

    def __init__(self, key, owner, owner_label, kind, label, role, group, ranks=1):
        self.key, self.owner, self.owner_label, self.kind, self.label, self.role = \
            key, owner, owner_label, kind, label, role
        self.group = group  # the schedule group's index within its role
        self.ranks = ranks  # ranks this track stands for (a simulator group: its size)
        self.spans = []


def load_trace(path):
    """Reads a trace of either source into (format, rows, spans) with times in microseconds.

    Both write one layout (runtime/executor/OpProfile.h writeExecutionTrace, runtime/sim/Simulator.h
    writeChromeTrace): a process per rank, pid = rank, process_name 'rank R (ROLE group G)' (the
    simulator's process stands for its group's ranks: 'rank R (ROLE group G, N ranks)', R its first
    rank); tid 0 'forward', 1 'backward', 2.. 'comm' (the simulator's extra lanes 'comm K'); X events
    with args mb, layer, phase and step; comm events with their bytes; flow events 's'/'f' from a
    send to its receive. The format returned is 'sim' for the simulator's, 'runtime' otherwise."""
    doc = load_json(path)
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise InputError(path, "traceEvents", "missing (not a Chrome trace)")
    procs, threads = {}, {}
    for i, e in enumerate(events):
        if not isinstance(e, dict) or "ph" not in e:
            raise InputError(path, f"traceEvents[{i}]", "expected an object with 'ph'")
        if e["ph"] == "M" and e.get("name") in ("process_name", "thread_name"):
            args = field(e, "args", path, f"traceEvents[{i}]", "dict")
            nm = field(args, "name", path, f"traceEvents[{i}].args", "any")
            if e.get("name") == "process_name":
                procs[field(e, "pid", path, f"traceEvents[{i}]", "int")] = str(nm)
            elif e.get("name") == "thread_name":
                threads[(field(e, "pid", path, f"traceEvents[{i}]", "int"),
                         field(e, "tid", path, f"traceEvents[{i}]", "int"))] = str(nm)
    fmt = "sim" if procs and all(re.search(r", \d+ ranks?\)$", n) for n in procs.values()) else "runtime"
    rows = {}
    for (pid, tid), nm in threads.items():
        pl = procs.get(pid)
        if pl is None:
            raise InputError(path, f"process_name of pid {pid}", "missing")
        m = re.match(r"rank (\d+) \((\w+) group (\d+)(?:, (\d+) ranks?)?\)$", pl)
        if not m:
            raise InputError(path, f"process_name of pid {pid}", f"unexpected name {pl!r}")
        first, role, group = int(m.group(1)), m.group(2), int(m.group(3))
        size = int(m.group(4) or 1)
        kind = "forward" if tid == 0 else "backward" if tid == 1 else "comm"
        if fmt == "sim":
            # The simulator names a group by its first rank; the plan numbers a group's ranks
            # consecutively (placement.groups), so the group is ranks first..first+size-1.
            owner_label = f"{role} {group} (" + (f"ranks {first}-{first + size - 1})" if size > 1
                                                 else f"rank {first})")
            rows[(pid, tid)] = Row((pid, tid), pid, owner_label, kind, nm, role, group, size)
        else:
            rows[(pid, tid)] = Row((pid, tid), first, f"rank {first} ({role} {group})", kind, kind, role, group)
    if not rows:
        raise InputError(path, "traceEvents", "no thread_name metadata (no tracks)")
    spans = []
    for i, e in enumerate(events):
        if e["ph"] != "X":
            continue
        w = f"traceEvents[{i}]"
        key = (field(e, "pid", path, w, "int"), field(e, "tid", path, w, "int"))
        if key not in rows:
            raise InputError(path, f"{w}.tid", f"track {key} has no thread_name")
        t0 = field(e, "ts", path, w)
        dur = field(e, "dur", path, w)
        name = field(e, "name", path, w, "str")
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        mb, layer, phase = args.get("mb", -1), args.get("layer", -1), args.get("phase", "")
        s = Span(rows[key], name, e.get("cat", ""), t0, t0 + dur, mb, layer, phase)
        rows[key].spans.append(s)
        spans.append(s)
    if not spans:
        raise InputError(path, "traceEvents", "no complete ('X') events")
    return fmt, rows, spans


def union_length(intervals):
    """Total length covered by a list of (t0, t1)."""
    total, end = 0.0, -math.inf
    start = None
    for a, b in sorted(intervals):
        if a > end:
            if start is not None:
                total += end - start
            start, end = a, b
        else:
            end = max(end, b)
    if start is not None:
        total += end - start
    return total


def compute_spans(spans):
    """Spans that occupy a compute stream: sim: every span on the forward/backward tracks; runtime:
    category 'compute' (its forward/backward tracks also hold the send/recv instructions)."""
    return [s for s in spans if s.row.kind != "comm" and s.cat in ("compute", "")]


# --- the training loss log -------------------------------------------------------------------------

# The loss log of `disagmoe-run PLAN --train ... --loss-log FILE` (runtime/train/TrainingLoop.cpp):
# one JSON object per step with step, loss, lr, grad_norm, clip_coef, target_tokens, tokens_per_s,
# seconds, data_position, aux_loss, expert_load ([[c_0, ...], ...] per MoE layer) and dropped (per
# layer). A resumed run appends to the file, so a step may appear twice: the later line wins (it is
# what the resumed run computed), and the steps are returned in ascending order.

SCALARS = ("loss", "lr", "grad_norm", "clip_coef", "target_tokens", "tokens_per_s", "seconds")


def load_loss_log(path, need_loads=False):
    by_step = {}
    for n, obj in load_jsonl(path):
        where = f"line {n}"
        step = field(obj, "step", path, where, "int")
        rec = {"step": step, "line": n}
        for k in SCALARS:
            rec[k] = float(field(obj, k, path, where))
        rec["aux_loss"] = float(field(obj, "aux_loss", path, where)) if "aux_loss" in obj else 0.0
        if "expert_load" in obj:
            loads = field(obj, "expert_load", path, where, "list")
            rec["expert_load"] = [number_list(l, path, f"{where}.expert_load[{i}]", integer=True)
                                  for i, l in enumerate(loads)]
        elif need_loads:
            raise InputError(path, f"{where}.expert_load", "missing (written by disagmoe-run 0.6.0 and later)")
        if "dropped" in obj:
            rec["dropped"] = number_list(field(obj, "dropped", path, where, "list"), path, f"{where}.dropped",
                                         integer=True)
        by_step[step] = rec
    steps = [by_step[s] for s in sorted(by_step)]
    if need_loads:
        shape = [len(l) for l in steps[0]["expert_load"]]
        for r in steps:
            if [len(l) for l in r["expert_load"]] != shape:
                raise InputError(path, f"line {r['line']}.expert_load",
                                 f"shape {[len(l) for l in r['expert_load']]} differs from step "
                                 f"{steps[0]['step']}'s {shape}")
    return steps
