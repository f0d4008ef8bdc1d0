#!/usr/bin/env bash
# Fashion-MNIST accuracy of examples/mlp.mlir (and optionally cnn.mlir)
# trained by amp-run at O0, O1-f16, O2-f16 and O1-bf16 with the same seed,
# Adam 1e-3 and cosine decay: the issue's acceptance runs (not a CI test).
#
#   bench/mlp_accuracy.sh [EPOCHS] [JOBS]      (defaults: 10 epochs, 2 jobs)
#
# Writes bench/results/mlp_accuracy.md (a table) and one metrics JSON per
# configuration; docs/benchmarks.md quotes the table.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
epochs="${1:-10}"
jobs="${2:-2}"
run="$root/build/bin/amp-run"
out="$root/bench/results"
mkdir -p "$out"
[ -x "$run" ] || { echo "build first: scripts/test.sh or ninja -C build" >&2; exit 1; }

configs=("O0 f16" "O1 f16" "O2 f16" "O1 bf16")
for c in "${configs[@]}"; do
  set -- $c
  echo "$1 $2"
done | xargs -P "$jobs" -L 1 bash -c '
  level=$0; dtype=$1
  "'"$run"'" "'"$root"'/examples/mlp.mlir" --opt-level=$level --dtype=$dtype \
    --epochs='"$epochs"' --lr=1e-3 --lr-schedule=cosine --seed=1 --log-every=0 \
    --metrics="'"$out"'/mlp-$level-$dtype.json" > "'"$out"'/mlp-$level-$dtype.log" 2>&1
  echo "done: $level $dtype"'

python3 - "$out" "$epochs" <<'PY'
import json, sys, os
out, epochs = sys.argv[1], sys.argv[2]
rows = []
base = None
for level, dtype in [("O0", "f16"), ("O1", "f16"), ("O2", "f16"), ("O1", "bf16")]:
    m = json.load(open(os.path.join(out, f"mlp-{level}-{dtype}.json")))
    acc = 100 * m["test_accuracy"]
    if level == "O0":
        base = acc
    rows.append((level, dtype if level != "O0" else "f32", acc, m["skipped_steps"],
                 m["final_scale"], m["step_time_ms_median"], m["compile_time_s"]))
with open(os.path.join(out, "mlp_accuracy.md"), "w") as f:
    f.write(f"examples/mlp.mlir, Fashion-MNIST, {epochs} epochs, Adam 1e-3 cosine, seed 1, batch 128\n\n")
    f.write("| level | dtype | test accuracy (final epoch) | vs O0 | skipped steps | final scale | median step (ms) | compile (s) |\n")
    f.write("|---|---|---|---|---|---|---|---|\n")
    for level, dtype, acc, skipped, scale, ms, cs in rows:
        f.write(f"| {level} | {dtype} | {acc:.2f}% | {acc - base:+.2f} | {skipped} | {scale:g} | {ms:.1f} | {cs:.1f} |\n")
print(open(os.path.join(out, "mlp_accuracy.md")).read())
PY
