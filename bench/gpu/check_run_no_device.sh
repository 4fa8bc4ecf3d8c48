#!/usr/bin/env bash
# ctest bench.gpu_run_no_device: where no GPU is visible, bench/gpu/run.sh BUILD_DIR prints exactly
# one line, "bench/gpu: no CUDA device (<reason>); nothing run", runs nothing and exits 0. Skipped
# (exit 77) where disagmoe-bench-cuda --probe finds a device: there run.sh is the GPU run itself.
# Usage: check_run_no_device.sh BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
if "$build/bin/disagmoe-bench-cuda" --probe > /dev/null 2>&1; then
  echo "SKIP a CUDA device is visible: run bench/gpu/run.sh itself"
  exit 77
fi
out=$(bash "$here/run.sh" "$build" 2>&1)
rc=$?
lines=$(printf '%s\n' "$out" | wc -l)
echo "$out"
if [ "$rc" -ne 0 ]; then
  echo "FAIL run.sh exited $rc without a device (expected 0)"
  exit 1
fi
if [ "$lines" -ne 1 ] || ! printf '%s\n' "$out" | grep -Eq '^bench/gpu: no CUDA device \(.+\); nothing run$'; then
  echo "FAIL run.sh printed $lines line(s), not the one no-device line"
  exit 1
fi
echo "ok   one line, exit 0"
