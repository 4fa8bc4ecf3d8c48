#!/usr/bin/env bash
# The one prepared GPU run of issue 14, on one GPU (< 9 minutes on an H200: each step has a
# timeout, 90 s per test binary, 150 s for the family runs, 200 s for the bench: 8.8 minutes):
#   1. the CUDA tests (RuntimeCudaKernelsTest, RuntimeCudaRmsNormTest): every kernel and GEMM
#      against the CPU kernels on random data;
#   2. bench/gpu/check_cuda_families.py: the forward and one training step of every family sample
#      on 2 A-ranks + 2 F-ranks (threads on the one device, --comm local), --backend cuda
#      --precision fp32 against --backend cpu, within twice the fp32 error model's bounds;
#   3. disagmoe-bench-cuda: bf16 GEMM TFLOP/s against the GPU's dense bf16 peak, the grouped expert
#      GEMM, attention time against its roofline bound, medians of several runs; the peak and HBM
#      bandwidth are the GPU's row of runtime/cost/data/hardware.json (copied from
#      docs/reference/hardware.json), matched by name (override: PEAK_TFLOPS=... HBM_TBPS=...).
# Builds nothing: configure where nvcc is (cmake says "building the cuda backend for sm_90") and
#   ninja -C BUILD_DIR disagmoe disagmoe-run RuntimeCudaKernelsTest RuntimeCudaRmsNormTest \
#     disagmoe-bench-cuda
# Usage: bench/gpu/run.sh [BUILD_DIR]   (default: build). Without a GPU it prints one line,
# "bench/gpu: no CUDA device (...); nothing run", and exits 0. Exit 1 when a step fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
tests=("$build/bin/RuntimeCudaKernelsTest" "$build/tests/unit/runtime/RuntimeCudaRmsNormTest")
bench="$build/bin/disagmoe-bench-cuda"
for exe in "${tests[@]}" "$bench" "$build/bin/disagmoe" "$build/bin/disagmoe-run"; do
  if [ ! -x "$exe" ]; then
    echo "bench/gpu: $exe is not built (needs nvcc at configure time; build disagmoe disagmoe-run" \
         "RuntimeCudaKernelsTest RuntimeCudaRmsNormTest disagmoe-bench-cuda)" >&2
    exit 1
  fi
done

set +e
probe=$("$bench" --probe 2>&1)
rc=$?
set -e
if [ "$rc" -eq 3 ]; then # the bench's "no CUDA device (<reason>); nothing to measure"
  reason=$(printf '%s\n' "$probe" | sed -n 's/.*no CUDA device (\(.*\)).*/\1/p' | head -n 1)
  echo "bench/gpu: no CUDA device (${reason:-disagmoe-bench-cuda --probe exited 3}); nothing run"
  exit 0
elif [ "$rc" -ne 0 ]; then
  echo "bench/gpu: disagmoe-bench-cuda --probe failed (exit $rc): $probe" >&2
  exit "$rc"
fi
echo "$probe"

# The device's dense bf16 peak and HBM bandwidth from the repository's hardware table.
device=$(printf '%s\n' "$probe" | sed -n 's/^device 0: \(.*\) (sm_.*/\1/p')
read -r peak hbm < <(/usr/bin/python3 - "$root/runtime/cost/data/hardware.json" "$device" <<'PY'
import json, sys
table, device = json.load(open(sys.argv[1])), sys.argv[2]
rows = [g for g in table["gpus"] if g["name"] in device.split()]
print(f'{rows[0]["bf16_dense_tflops"]} {rows[0]["hbm_bw_tbps"]}' if rows else "0 0")
PY
)
peak=${PEAK_TFLOPS:-$peak}
hbm=${HBM_TBPS:-$hbm}
if [ "$peak" = 0 ]; then
  echo "bench/gpu: '$device' has no row in runtime/cost/data/hardware.json (set PEAK_TFLOPS and HBM_TBPS); ratios omitted"
fi

start=$SECONDS
status=0
for exe in "${tests[@]}"; do
  echo "== $(basename "$exe")"
  timeout 90 "$exe" --gtest_brief=1 || status=1
done
echo "== check_cuda_families.py (2 A-ranks + 2 F-ranks on one GPU, cuda vs cpu)"
work=$(mktemp -d)
timeout 150 /usr/bin/python3 "$root/bench/gpu/check_cuda_families.py" "$build/bin" "$root/samples/models" \
  "$work" || status=1
echo "== disagmoe-bench-cuda"
timeout 200 "$bench" --peak-tflops "$peak" --hbm-tbps "$hbm" --runs 11 || status=1
echo "bench/gpu: done in $((SECONDS - start)) s ($([ $status -eq 0 ] && echo "every step passed" || echo "a step FAILED"))"
exit $status
