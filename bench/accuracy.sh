#!/usr/bin/env bash
# Fashion-MNIST accuracy of an example trained by amp-run at several opt
# levels with the same seed, Adam 1e-3 and cosine decay: the CPU backend
# issue's acceptance runs (not a CI test).
#
#   bench/accuracy.sh MODEL [EPOCHS] [JOBS] [CONFIG...]
#     MODEL    mlp or cnn (examples/MODEL.mlir)
#     EPOCHS   default 10
#     JOBS     runs in parallel, default 2 (each then uses one thread)
#     CONFIG   "LEVEL DTYPE" pairs; default "O0 f16" "O1 f16" "O2 f16" "O1 bf16"
#
# Writes bench/results/MODEL_accuracy.md (a table; the first config is the
# baseline of the "vs" column) and one metrics JSON and log per config;
# docs/benchmarks.md quotes the tables.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
model="${1:?usage: bench/accuracy.sh MODEL [EPOCHS] [JOBS] [CONFIG...]}"
epochs="${2:-10}"
jobs="${3:-2}"
shift $(( $# < 3 ? $# : 3 ))
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=("O0 f16" "O1 f16" "O2 f16" "O1 bf16")
run="$root/build/bin/amp-run"
out="$root/bench/results"
mkdir -p "$out"
[ -x "$run" ] || { echo "build first: scripts/test.sh or ninja -C build" >&2; exit 1; }
[ -f "$root/examples/$model.mlir" ] || { echo "no examples/$model.mlir" >&2; exit 1; }
# Parallel runs share the cores: one thread each (the step's loops and
# BLAS), no spinning workers; one run at a time takes every core.
threads=0
if [ "$jobs" -gt 1 ]; then export OPENBLAS_NUM_THREADS=1; threads=1; fi

for c in "${configs[@]}"; do echo "$c"; done | xargs -P "$jobs" -L 1 bash -c '
  level=$0; dtype=$1
  "'"$run"'" "'"$root"'/examples/'"$model"'.mlir" --opt-level=$level --dtype=$dtype \
    --epochs='"$epochs"' --lr=1e-3 --lr-schedule=cosine --seed=1 --log-every=0 \
    --threads='"$threads"' \
    --metrics="'"$out"'/'"$model"'-$level-$dtype.json" \
    > "'"$out"'/'"$model"'-$level-$dtype.log" 2>&1
  echo "done: $level $dtype"'

python3 - "$out" "$model" "$epochs" "$jobs" "${configs[@]}" <<'PY'
import json, sys, os
out, model, epochs, jobs, configs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
rows, base = [], None
for c in configs:
    level, dtype = c.split()
    m = json.load(open(os.path.join(out, f"{model}-{level}-{dtype}.json")))
    acc = m["test_accuracy_percent"]
    base = acc if base is None else base
    rows.append((level, "f32" if level == "O0" else dtype, acc, m["skipped_steps"],
                 m["final_scale"], m["step_time_ms_median"], m["compile_time_s"]))
path = os.path.join(out, f"{model}_accuracy.md")
with open(path, "w") as f:
    f.write(f"examples/{model}.mlir, Fashion-MNIST, {epochs} epochs, Adam 1e-3 cosine, "
            f"seed 1, batch 128, {jobs} run(s) at a time"
            f"{' (one thread each)' if int(jobs) > 1 else ''}\n\n")
    f.write("| level | dtype | test accuracy (final epoch) | vs first | skipped steps | "
            "final scale | median step (ms) | compile (s) |\n")
    f.write("|---|---|---|---|---|---|---|---|\n")
    for level, dtype, acc, skipped, scale, ms, cs in rows:
        f.write(f"| {level} | {dtype} | {acc:.2f}% | {acc - base:+.2f} | {skipped} | "
                f"{'-' if scale is None else f'{scale:g}'} | {ms:.1f} | {cs:.1f} |\n")
print(open(path).read())
PY
