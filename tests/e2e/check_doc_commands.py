"""Every command line of README.md and docs/*.md goes through the real parsers (issue 17).

  check_doc_commands.py BIN_DIR SOURCE_DIR

A command line is a line (or a span) that starts with disagmoe, disagmoe-run or disagmoe-opt,
possibly after a path (build/bin/), a launcher (mpirun ..., srun ...) or environment assignments:
- in fenced code blocks, with "\\"-continued lines joined; a usage synopsis (optional [groups],
  A|B alternatives, indented continuation lines) is checked as its base alone and its base with each
  optional group, each alternative in turn (nested groups with their parent), "..." dropped and
  trailing (prose) or # comments ignored; a config block's first line "# run.yaml: COMMAND" is
  checked as COMMAND;
- in inline code spans; a span that names flags without the command's positional or required
  arguments ("`disagmoe-run --train`") is completed with placeholders and checked again.
Upper-case placeholders (N, DIR, PLAN_DIR) become "2" and shell variables ("$PLAN") a word. Each
line runs with DISAGMOE_PARSE_ONLY=1 (runtime/tools/ParseOnly.h: parse, check, open nothing) in an
empty temporary directory; a disagmoe-run --config FILE is given the doc's fenced block that starts
with "# FILE:" when there is one, else an empty config. The check fails listing FILE:LINE, the
command and its error for every line that does not parse, and prints how many lines it checked per
file. It first checks itself: a misspelt flag in a small document must fail.
"""
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

BINARIES = ("disagmoe", "disagmoe-run", "disagmoe-opt")
LAUNCHERS = ("mpirun", "mpiexec", "srun", "env", "time")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*$")
# A placeholder stands for "2" unless its flag's range excludes 2 (plan and simulate check their
# values under DISAGMOE_PARSE_ONLY too).
PLACEHOLDER_VALUE = {"--compute-efficiency": "0.5"}


class Command:
    def __init__(self, path, line, text, kind, argv):
        self.path, self.line, self.text, self.kind, self.argv = path, line, text, kind, argv


# ----------------------------------------------------------------------------- extraction

def binary_index(words):
    """Index of the project binary in `words` when only a launcher or assignments precede it."""
    for i, w in enumerate(words):
        name = os.path.basename(w.strip("\"'"))
        if name in BINARIES:
            if name == "disagmoe" and i + 1 < len(words) and not re.match(r"^(-|[a-z][a-z-]*$)", words[i + 1]):
                return None  # "disagmoe 0.6.0 (commit ...)": a version line, not a command
            return i
        if i == 0 and not (w in LAUNCHERS or re.match(r"^[A-Za-z_]+=", w)):
            return None
    return None


def is_synopsis(text):
    return bool(re.search(r"(^|\s)\[|\w\|[\w.-]|\.\.\.|\w/--", text))


def drop_comment(text):
    return re.split(r"(?:^|\s)#\s", text, maxsplit=1)[0]


def parse_groups(text):
    """Synopsis text -> a sequence: str tokens, '|' separators, and ('group', sequence)."""
    pos = 0

    def skip_balanced(opening, closing):
        """Moves pos past the bracketed run that starts at it (nested brackets included)."""
        nonlocal pos
        depth = 0
        while pos < len(text):
            depth += {opening: 1, closing: -1}.get(text[pos], 0)
            pos += 1
            if depth == 0:
                break

    def seq(closing):
        nonlocal pos
        items, token = [], ""
        quote = None
        while pos < len(text):
            c = text[pos]
            if quote:
                token += c
                quote = None if c == quote else quote
                pos += 1
                continue
            if c in "\"'":
                quote = c
                token += c
                pos += 1
            elif c == "[" and not token:
                pos += 1
                items.append(("group", seq("]")))
            elif c == "[":  # STAGE[,STAGE...]: an optional part inside a word is left out
                skip_balanced("[", "]")
            elif c == "(" and not token:  # "(one CUDA device per rank)": prose
                skip_balanced("(", ")")
            elif c == closing:
                pos += 1
                break
            elif c.isspace():
                if token:
                    items.append(token)
                token = ""
                pos += 1
            else:
                token += c
                pos += 1
        if token:
            items.append(token)
        return [i for i in items if i != "..."]

    return seq(None)


def split_alternatives(items):
    out = [[]]
    for i in items:
        if i == "|":
            out.append([])
        else:
            out[-1].append(i)
    return out


def word_variants(tokens):
    """A|B|C words -> one token list per alternative index (the others keep their last)."""
    # "64,...,2048" -> "64,2048"; "--json/--trace" names two flags: alternatives.
    tokens = [re.sub(r"/--", "|--", re.sub(r",\.\.\.", "", t)) for t in tokens]
    n = max([len(t.split("|")) for t in tokens if not t.startswith(('"', "'"))] + [1])
    variants = []
    for k in range(n):
        v = []
        for t in tokens:
            parts = t.split("|") if not t.startswith(('"', "'")) else [t]
            v.append(parts[min(k, len(parts) - 1)])
        variants.append(v)
    return variants


def expand_sequence(items):
    words = [i for i in items if isinstance(i, str)]
    groups = [i[1] for i in items if not isinstance(i, str)]
    bases = word_variants(words)
    out = list(bases)
    for g in groups:
        for alt in split_alternatives(g):
            if not any(isinstance(i, str) and i.startswith("-") for i in alt):
                continue  # "[plan's placement options]": prose, no flag
            out.extend(bases[0] + v for v in expand_sequence(alt))
    return out


def unquote(word):
    try:
        parts = shlex.split(word)
    except ValueError:
        return word
    return parts[0] if len(parts) == 1 else word


def synopsis_commands(text):
    """Every argv a synopsis stands for (see the module docstring)."""
    result = []
    for alt in split_alternatives(parse_groups(drop_comment(text))):
        words = [i for i in alt if isinstance(i, str)]
        at = binary_index(words)
        if at is None:
            continue
        start = alt.index(words[at])
        for v in expand_sequence(alt[start:]):
            result.append([unquote(t) for t in v])
    return result


def shell_command(text):
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return None
    for k, w in enumerate(words):
        if re.match(r"^[|&;<>()]+$", w):
            words = words[:k - 1] if k and words[k - 1].isdigit() and w.startswith(">") else words[:k]
            break
    at = binary_index(words)
    return words[at:] if at is not None else None


def normalise(argv):
    out = []
    for w in argv:
        w = re.sub(r"\s*\.\.\.", "", re.sub(r"\$\{?\w+\}?", "x", w))
        # A pass's option string: --place-groups="attn-ranks=N ffn-ranks=M".
        w = re.sub(r"(?<=[\w-]=)[A-Z][A-Z0-9_]*(?=\s|$)", "2", w) if " " in w else w
        out.append(PLACEHOLDER_VALUE.get(out[-1] if out else "", "2") if PLACEHOLDER.match(w) else w)
    out[0] = os.path.basename(out[0])
    return out


def fenced_blocks(lines):
    """(first line number, language, [(line number, text)]) of every fenced block."""
    blocks, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)(```+|~~~+)\s*(\S*)", lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.groups()
        body, i = [], i + 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append((i + 1, lines[i][len(indent):] if lines[i].startswith(indent) else lines[i]))
            i += 1
        blocks.append((body[0][0] if body else i, lang, body))
        i += 1
    return blocks


def logical_lines(body):
    out, k = [], 0
    while k < len(body):
        number, text = body[k]
        while text.rstrip().endswith("\\") and k + 1 < len(body):
            k += 1
            text = text.rstrip()[:-1] + " " + body[k][1].strip()
        # A synopsis continues on indented lines that start with an option, a group or a "|".
        while (is_synopsis(text) and k + 1 < len(body) and re.match(r"^\s+[\[|-]", body[k + 1][1])):
            k += 1
            text += " " + body[k][1].strip()
        out.append((number, text))
        k += 1
    return out


def extract(path, text):
    lines = text.split("\n")
    commands, fenced_lines = [], set()
    for _, _, body in fenced_blocks(lines):
        fenced_lines.update(n for n, _ in body)
        for number, line in logical_lines(body):
            # "# run.yaml: disagmoe-run --config run.yaml ...": the command a config block is for.
            header = re.match(r"^\s*#\s*[\w.-]+\.(?:ya?ml|json):\s*(.*)$", line)
            if header and number == body[0][0]:
                line = header.group(1)
            if is_synopsis(line):
                for argv in synopsis_commands(line):
                    commands.append(Command(path, number, line.strip(), "synopsis", normalise(argv)))
            else:
                argv = shell_command(line)
                if argv:
                    commands.append(Command(path, number, line.strip(), "fenced", normalise(argv)))
    # Inline spans: outside fences, a span may continue on the next line of its paragraph.
    prose = "\n".join("" if (n + 1) in fenced_lines or re.match(r"^\s*(```|~~~)", l) else l
                      for n, l in enumerate(lines))
    for m in re.finditer(r"(?<!`)`([^`]+?)`(?!`)", prose):
        span = m.group(1)
        if "\n\n" in span:
            continue
        span = " ".join(span.split())
        words = span.split()
        at = binary_index(words)
        # "`disagmoe-run`", "`disagmoe plan`": the tool named, not a command line.
        if at is None or len(words) - at <= (2 if os.path.basename(words[at]) == "disagmoe" and
                                              len(words) > at + 1 and not words[at + 1].startswith("-") else 1):
            continue
        number = prose.count("\n", 0, m.start()) + 1
        if is_synopsis(span):
            for argv in synopsis_commands(span):
                commands.append(Command(path, number, span, "inline", normalise(argv)))
        else:
            argv = shell_command(span)
            if argv:
                commands.append(Command(path, number, span, "inline", normalise(argv)))
    return commands


# ----------------------------------------------------------------------------- running

def config_blocks(text):
    """'# NAME:' first lines of fenced blocks -> the block (a run config the doc shows)."""
    out = {}
    for _, _, body in fenced_blocks(text.split("\n")):
        if body:
            m = re.match(r"^\s*#\s*([\w.-]+\.(?:ya?ml|json)):", body[0][1])
            if m:
                out[m.group(1)] = "\n".join(t for _, t in body) + "\n"
    return out


def with_configs(argv, configs, work):
    """disagmoe-run's --config FILE -> a file in `work` (the doc's block for it, else empty)."""
    if argv[0] != "disagmoe-run":
        return argv
    out, k = [], 0
    while k < len(argv):
        w = argv[k]
        value = None
        if w == "--config" and k + 1 < len(argv):
            value, k = argv[k + 1], k + 1
        elif w.startswith("--config="):
            value = w[len("--config="):]
        if value is None:
            out.append(w)
        else:
            name = os.path.basename(value)
            ext = os.path.splitext(name)[1] or ".yaml"
            body = configs.get(name, "{}\n")
            path = os.path.join(work, "config-%d%s" % (len(os.listdir(work)), ext))
            with open(path, "w") as f:
                f.write(body)
            out += ["--config", path]
        k += 1
    return out


def run(bin_dir, argv, work):
    env = dict(os.environ, DISAGMOE_PARSE_ONLY="1")
    try:
        p = subprocess.run([os.path.join(bin_dir, argv[0])] + argv[1:], cwd=work, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return 124, "timed out after 60 s"
    return p.returncode, p.stderr.strip()


def completed(argv, error):
    """A flag fragment ("disagmoe-run --train") with the positional and required options added."""
    argv = list(argv)
    # disagmoe's one-line forms of llvm::cl's errors (compiler/tools/CommandLine.h), disagmoe-run's own.
    m = re.search(r"^disagmoe [\w-]+: -+([\w-]+): requires a value|^disagmoe-run: (--[\w-]+) needs a value", error,
                  re.M)
    if m:  # "`disagmoe compile --routing-profile`": the flag named without its value
        flag = m.group(1) or m.group(2).lstrip("-")
        for k, w in enumerate(argv):
            if w.lstrip("-") == flag:
                return argv[:k + 1] + ["2"] + argv[k + 1:]
    if argv[0] == "disagmoe-run" and "missing the plan" in error:
        return argv[:1] + ["PLAN"] + argv[1:]
    if argv[0] == "disagmoe" and len(argv) > 1:
        changed = False
        if re.search(r": missing <", error):
            argv.insert(2, "MODEL.onnx")
            changed = True
        for flag, value in (("o", "OUT"), ("config", "MODEL.json"), ("cluster", "CLUSTER.yaml"),
                            ("seq-len", "2")):
            if re.search(r": missing -+%s, which is required" % re.escape(flag), error):
                argv += ["-" + flag if len(flag) == 1 else "--" + flag, value]
                changed = True
        return argv if changed else None
    return None


def check(bin_dir, commands, configs, work):
    """The failures: (command, argv, error)."""
    failures = []
    for c in commands:
        argv = with_configs(c.argv, configs.get(c.path, {}), work)
        rc, error = run(bin_dir, argv, work)
        for _ in range(4):  # a fragment may lack a value, the positional and required options
            if rc == 0 or c.kind != "inline":
                break
            fixed = completed(argv, error)
            if not fixed:
                break
            argv = fixed
            rc, error = run(bin_dir, argv, work)
        if rc != 0:
            failures.append((c, argv, error or "exit code %d" % rc))
    return failures


def self_check(bin_dir, work):
    doc = ("Fine: `disagmoe compile MODEL.onnx -o PLAN --attn-ranks 2`.\n\n"
           "```\n"
           "disagmoe compile MODEL.onnx -o PLAN [--atn-ranks N]\n"
           "build/bin/disagmoe-run /tmp/p --train --lr-mn 3e-4 \\\n"
           "    --steps 2\n"
           "```\n"
           "and `disagmoe-opt --partition-componets x.mlir` in prose.\n")
    commands = extract("selfcheck.md", doc)
    failures = check(bin_dir, commands, {}, work)
    lines = sorted(c.line for c, _, _ in failures)
    if lines != [4, 5, 8]:
        print("FAIL self-check: misspelt flags on lines 4, 5, 8 of a test document, failures on %s "
              "(%d commands extracted)" % (lines, len(commands)))
        for c, argv, error in failures:
            print("  %d: %s: %s" % (c.line, " ".join(argv), error))
        return False
    print("ok self-check: the 3 misspelt flags of a test document fail, the correct line passes")
    return True


def main(bin_dir, source_dir):
    bin_dir = os.path.abspath(bin_dir)
    docs = [os.path.join(source_dir, "README.md")] + sorted(glob.glob(os.path.join(source_dir, "docs", "*.md")))
    with tempfile.TemporaryDirectory(prefix="doc-commands-") as work:
        if not self_check(bin_dir, work):
            return 1
        total, failures = 0, []
        for path in docs:
            rel = os.path.relpath(path, source_dir)
            text = open(path, encoding="utf-8").read()
            commands = extract(rel, text)
            lines = {c.line for c in commands}
            failed = check(bin_dir, commands, {rel: config_blocks(text)}, work)
            failures += failed
            total += len(commands)
            print("%s: %d command lines, %d invocations, %d failed" % (rel, len(lines), len(commands), len(failed)))
    for c, argv, error in failures:
        print("FAIL %s:%d: %s\n    ran: %s\n    error: %s" % (c.path, c.line, c.text, " ".join(shlex.quote(a) for a in argv),
                                                            error.replace("\n", "\n           ")))
    print("%d invocations, %d failed" % (total, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
