#!/usr/bin/env bash
#===- bench/check_numerics.sh - Step time with and without check-numerics ===#
#
# What --check-numerics (amp.compile's check_numerics=True) costs: the CPU
# training step of examples/cnn.mlir (batch 128) and
# examples/transformer_block.mlir (8 x 128 tokens) at O1 f16, Adam, with
# and without the option, side by side in one run at each thread count, as
# bench/cpu_vs_torch.sh times amp (amp-run --bench-steps, warm-up steps on
# one fixed batch).
#
#   bench/check_numerics.sh [THREADS] [REPEATS]
#       THREADS: thread counts, e.g. "1 2" (default "1 <core count>")
#       REPEATS: processes per configuration (default 5)
#
# The configurations run interleaved, REPEATS rounds, so the machine's drift
# spreads over both; the table gives the median of the per-process medians
# and the cost (with / without - 1). Writes bench/results/check_numerics.md;
# docs/Numerics.md quotes it.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
threads_list="${1:-1 $(nproc)}"
repeats="${2:-5}"
source "$(dirname "$0")/common.sh"

results="$work/runs.jsonl"
: > "$results"
for rep in $(seq 1 "$repeats"); do
  for t in $threads_list; do
    for model in cnn transformer_block; do
      steps=20
      [ "$model" = transformer_block ] && steps=10
      for check in false true; do
        flag=""
        [ "$check" = true ] && flag="--check-numerics"
        "$run" "$root/examples/$model.mlir" --opt-level=O1 --dtype=f16 --threads="$t" \
          --bench-steps="$steps" --bench-warmup=3 --metrics="$work/m.json" $flag > /dev/null
        "$python" -c 'import json, sys
m = json.load(open(sys.argv[1]))
print(json.dumps({"model": sys.argv[2], "threads": int(sys.argv[3]), "check": sys.argv[4] == "true",
                  "ms": m["step_ms_median"]}))' "$work/m.json" "$model" "$t" "$check" >> "$results"
      done
    done
  done
done

"$python" - "$results" "$out/check_numerics.md" "$repeats" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
flags = next((l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
shown = [f for f in ("avx2", "f16c", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16") if f in flags]
lines = [f"{cpu} ({' '.join(shown)}). O1 f16, Adam; median over {sys.argv[3]} processes of each "
         "process's median step (min - max over the processes), the two configurations interleaved.",
         "", "| model | threads | without (ms) | with --check-numerics (ms) | cost |",
         "|---|---:|---:|---:|---:|"]
for model in ("cnn", "transformer_block"):
    for threads in sorted({r["threads"] for r in rows}):
        def stat(check):
            t = [r["ms"] for r in rows if (r["model"], r["threads"], r["check"]) == (model, threads, check)]
            return statistics.median(t), min(t), max(t)
        off, on = stat(False), stat(True)
        lines.append(f"| {model} | {threads} | {off[0]:.2f} ({off[1]:.2f} - {off[2]:.2f}) | "
                     f"{on[0]:.2f} ({on[1]:.2f} - {on[2]:.2f}) | {100 * (on[0] / off[0] - 1):+.1f}% |")
text = "\n".join(lines) + "\n"
open(sys.argv[2], "w").write(text)
print(text)
PY
