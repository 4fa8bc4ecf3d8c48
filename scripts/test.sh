#!/usr/bin/env bash
# Installs, builds, checks the C++ formatting (scripts/check_format.sh) and runs every test
# (GoogleTest units, lit/FileCheck, end-to-end) through CTest,
# on several OpenBLAS kernels, since the numerical claims must hold on any correct one
# (docs/training.md, "Numerics"):
#   1. the whole suite under OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512 (what some machines set);
#   2. the whole suite with both unset (OpenBLAS picks the CPU's own kernel: SkylakeX, Zen, ...);
#   3. the numerics-sensitive tests (end-to-end, executor, kernels, training) under
#      OPENBLAS_CORETYPE=Prescott, the generic kernel.
# Extra arguments go to every ctest run (e.g. -R NAME). Exits non-zero if any run failed.
set -euo pipefail
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  echo "A -R of yours replaces the numerics filter of run 3 (ctest keeps the last -R); use -E to narrow."
  exit 0
fi
cd "$(dirname "$0")/.."
scripts/setup.sh build
cd build

NUMERICS='^(e2e\.|Executor|Train|Kernels|Backward|FamilyKernels|Optimizer|LrSchedule)'
status=0
run() {  # run LABEL ENV... -- CTEST_ARGS...
  local label=$1 envs=()
  shift
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  echo "=== ctest: $label"
  env "${envs[@]}" ctest --output-on-failure -j "$(nproc)" "$@" || status=1
}
echo "=== format: .clang-format over every tracked C++/CUDA source"
../scripts/check_format.sh || status=1
run "OpenBLAS Haswell kernel (OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512)" \
  OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512 -- "$@"
run "OpenBLAS's own kernel choice (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset)" \
  -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE -- "$@"
run "OpenBLAS generic kernel (OPENBLAS_CORETYPE=Prescott), numerics-sensitive tests" \
  -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE=Prescott -- -R "$NUMERICS" "$@"
exit $status
