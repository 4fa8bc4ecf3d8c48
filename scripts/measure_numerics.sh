#!/usr/bin/env bash
# Measures the numerical checks against their fp32 error-model bounds (tests/numerics/error_model.py)
# under the three OpenBLAS kernels the suite runs on, and prints, per kernel, each check's measured
# error as a share of its bound: the figures of docs/training.md, "Numerics: error model".
#   scripts/measure_numerics.sh [BUILD_DIR]    (default: build; run scripts/setup.sh first)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build}/bin
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
PY=/usr/bin/python3
for kernel in "Haswell (OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512)" "own choice (both unset)" "Prescott (generic)"; do
  case $kernel in
    Haswell*) envs=(OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512) ;;
    own*) envs=(-u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE) ;;
    Prescott*) envs=(-u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE=Prescott) ;;
  esac
  echo "=== kernel: $kernel"
  echo "--- forward logits vs PyTorch (e2e.families_logits, e2e.mixtral_tiny_logits)"
  env "${envs[@]}" $PY tests/e2e/check_families.py "$BIN" samples/models "$WORK/fam" | grep "closest"
  env "${envs[@]}" $PY tests/e2e/check_sample_logits.py "$BIN" samples/models/mixtral_tiny "$WORK/sl" | grep "closest"
  echo "--- one training step vs PyTorch (e2e.training_families, e2e.training_step)"
  env "${envs[@]}" $PY tests/e2e/check_training_families.py "$BIN" samples/models "$WORK/tf" \
    qwen3_moe_tiny qwen3_moe_tiny/norm_topk_false deepseek_moe_tiny gpt_oss_tiny deepseek_v2_lite_tiny |
    grep "(m=1)" | sed 's/; [0-9]* weights after SGD.*//'
  env "${envs[@]}" $PY tests/e2e/check_training.py "$BIN" samples/models/mixtral_tiny "$WORK/tr" |
    grep "micro-batches=1: gradients\|micro-batches=1: loss" | head -2
  echo "--- mutations (e2e.mutations_caught): control shares, and the smallest share a mutant reaches"
  env "${envs[@]}" $PY tests/e2e/check_mutations.py "$BIN" samples/models "$WORK/mut" > "$WORK/mut.log" || true
  grep "unmutated" "$WORK/mut.log" | sed 's/^ok   //'
  $PY - "$WORK/mut.log" <<'PY'
import re, sys
worst = {}
for line in open(sys.argv[1]):
    m = re.match(r"(ok  |FAIL) (\S+): mutant (.+?) (\(.*\) )?caught by .*?: (.*)", line)
    if m:
        fails = [float(x) for x in re.findall(r"FAILS \(([0-9.]+) of bound\)", m.group(5))]
        print(f"{m.group(2)}: {m.group(3)}: largest share {max(fails) if fails else 0:.2f}x of its bound "
              f"({'caught' if fails else 'NOT caught'})")
PY
  echo "--- regenerated goldens vs committed (e2e.*_regenerates)"
  for f in mixtral_tiny/export.py mixtral_tiny/export_grads.py qwen3_moe_tiny/export.py deepseek_moe_tiny/export.py \
           gpt_oss_tiny/export.py deepseek_v2_lite_tiny/export.py; do
    echo "$f: $(env "${envs[@]}" $PY samples/models/$f --check 2>/dev/null | grep -E 'closest|check:' | tr '\n' ' ')"
  done
  for v in qwen3_moe_tiny qwen3_moe_tiny/norm_topk_false deepseek_moe_tiny gpt_oss_tiny deepseek_v2_lite_tiny; do
    echo "$v train goldens: $(env "${envs[@]}" $PY samples/models/family_common/export_train_goldens.py \
      samples/models/${v%%/*} --variant "$v" --check 2>/dev/null | grep -E 'closest|check:' | tr '\n' ' ')"
  done
done
