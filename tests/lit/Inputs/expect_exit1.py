"""%expect-exit1 CMD [ARGS...]: runs CMD and passes its stdout and stderr through unchanged, then
fails (exit 2, with a line saying why on stderr) unless CMD exited with code 1 and wrote exactly one
non-empty line on stderr: the CLIs' contract for a refused input ("<tool>: <message>", exit code 1).
Use it instead of lit's `not`, which accepts any non-zero code (a crash or an abort included); keep
the redirections the test had (`2>&1 | FileCheck`, `> out 2> err`). lit runs RUN pipelines with
pipefail, so a failed expectation fails the line even when FileCheck matches the text.
"""
import subprocess
import sys


def main(argv):
    if not argv:
        sys.stderr.write("expect-exit1: no command given\n")
        return 2
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        sys.stderr.write(f"expect-exit1: cannot run {argv[0]}: {e}\n")
        return 2
    sys.stdout.buffer.write(r.stdout)
    sys.stdout.flush()
    sys.stderr.buffer.write(r.stderr)
    sys.stderr.flush()
    problems = []
    if r.returncode != 1:
        problems.append(f"exit code {r.returncode}, expected 1")
    err = r.stderr.decode("utf-8", "replace")
    lines = err.splitlines()
    if len(lines) != 1 or not lines[0].strip() or not err.endswith("\n"):
        problems.append(f"stderr has {len(lines)} line(s), expected exactly one non-empty line ending in a newline")
    if problems:
        sys.stderr.write(f"expect-exit1: {' '.join(argv)}: {'; '.join(problems)}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
