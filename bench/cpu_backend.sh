#!/usr/bin/env bash
# Step time of the CPU backend with GEMMs and convolutions on CBLAS
# (--backend=cpu) against the same step with them as generated loops
# (--backend=cpu-loops), side by side in one run: examples/mlp.mlir and
# examples/cnn.mlir at O0 and O1-f16, Fashion-MNIST batches, one run at a time.
#
#   bench/cpu_backend.sh [STEPS]       (default 20; the median of the steps)
#
# Writes bench/results/cpu_backend.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
steps="${1:-20}"
run="$root/build/bin/amp-run"
out="$root/bench/results"
mkdir -p "$out"
[ -x "$run" ] || { echo "build first: scripts/test.sh or ninja -C build" >&2; exit 1; }
for model in mlp cnn; do
  for level in O0 O1; do
    for backend in cpu cpu-loops; do
      "$run" "$root/examples/$model.mlir" --opt-level=$level --backend=$backend \
        --steps="$steps" --test-examples=128 --log-every=0 \
        --metrics="$out/cpu-$model-$level-$backend.json" > /dev/null 2>&1
    done
  done
done
python3 - "$out" "$steps" <<'PY'
import json, os, sys
out, steps = sys.argv[1], sys.argv[2]
path = os.path.join(out, "cpu_backend.md")
with open(path, "w") as f:
    f.write(f"Median step time over {steps} steps, batch 128, one run at a time\n\n")
    f.write("| model | level | CBLAS (ms) | loops (ms) | speed-up |\n|---|---|---|---|---|\n")
    for model in ("mlp", "cnn"):
        for level in ("O0", "O1"):
            t = {b: json.load(open(os.path.join(out, f"cpu-{model}-{level}-{b}.json")))["step_time_ms_median"]
                 for b in ("cpu", "cpu-loops")}
            f.write(f"| {model} | {level} | {t['cpu']:.1f} | {t['cpu-loops']:.1f} | {t['cpu-loops'] / t['cpu']:.1f}x |\n")
print(open(path).read())
PY
