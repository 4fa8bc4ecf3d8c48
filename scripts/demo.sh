#!/usr/bin/env bash
# The main job: install, build, compile the bundled Mixtral-style export into a disaggregated plan
# (2 attention ranks, 2 FFN ranks) and run it on CPU ranks, comparing logits with PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
SAMPLE=samples/models/mixtral_tiny
OUT=${DEMO_OUT:-build/demo}
mkdir -p "$OUT"
echo "== disagmoe compile: partition, exchanges and placement"
build/bin/disagmoe compile "$SAMPLE/model.onnx" -o "$OUT/plan" --attn-ranks 2 --ffn-ranks 2 \
  --batch 2 --seq-len 8 --print-ir-after=exchange > "$OUT/ir-after-exchange.mlir"
# One line per stage and exchange, without the tensor types.
grep -E 'moe\.(stage|m2n|n2m|residual)' "$OUT/ir-after-exchange.mlir" | sed -E 's/ : i64//g; s/ : (tensor|\().*$//; s/^ +/  /'
echo "   (full IR: $OUT/ir-after-exchange.mlir, plan: $OUT/plan/plan.json)"
echo "== disagmoe-run: forward on 2 A-ranks + 2 F-ranks (cpu backend, local comm)"
build/bin/disagmoe-run "$OUT/plan" --backend cpu --comm local \
  --input "$SAMPLE/golden/ids_b2_s8.npy" --output "$OUT/logits.npy"
echo "== logits against PyTorch"
/usr/bin/python3 - "$OUT/logits.npy" "$SAMPLE/golden/logits_b2_s8.npy" <<'PY'
import sys
import numpy as np
ours, ref = np.load(sys.argv[1]), np.load(sys.argv[2])
err = float(np.abs(ours - ref).max())
print(f"logits {ours.shape}: max abs error vs PyTorch = {err:.3e} (tolerance 1e-4)")
sys.exit(0 if err <= 1e-4 else 1)
PY
