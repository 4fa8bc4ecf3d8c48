#!/usr/bin/env bash
# Runs `disagmoe route-stats` on every sample model under every data condition and draws the plots:
#   bench/observatory/run_all.sh [OUT_DIR] [MODEL_DIR...]     (default OUT_DIR: bench/observatory/results)
# Conditions: mock, the three real texts of samples/data (kjv_ot: the trained sample's training text;
# kjv_nt: held-out verses; licenses: an unseen genre), shuffled and remapped kjv_nt. 1M tokens per
# condition (fewer for files that are shorter), sequences of 64 tokens, EP 4,8,16,32 (up to the
# expert count), GBS 64..2048 sequences. Needs build/bin/disagmoe and Debian's python3-matplotlib.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-bench/observatory/results}
shift || true
MODELS=("$@")
[ ${#MODELS[@]} -gt 0 ] || MODELS=(samples/models/mixtral_tiny samples/models/mixtral_tiny_trained
                                   samples/models/mixtral_e32 samples/models/mixtral_e64)
D=samples/data
mkdir -p "$OUT"
for m in "${MODELS[@]}"; do
  name=$(basename "$m")
  echo "== $name"
  build/bin/disagmoe route-stats "$m/model.onnx" -o "$OUT/$name" \
    --data mock,text:$D/kjv_ot.txt,text:$D/kjv_nt.txt,text:$D/licenses.txt \
    --data shuffled:$D/kjv_nt.txt,remapped:$D/kjv_nt.txt \
    --profile-data text:kjv_ot --tokens 1048576 --seq-len 64 | tee "$OUT/$name.log"
  rm -rf "$OUT/$name/plan"
  /usr/bin/python3 scripts/plot_route_stats.py "$OUT/$name/route-stats.json" -o "$OUT/$name"
done
