#!/usr/bin/env bash
# CPU training step time, amp against PyTorch on the same machine in one run:
# examples/mlp.mlir and examples/cnn.mlir (batch 128, Adam 1e-3, synthetic
# data) at O0 (f32), O1-f16 and O1-bf16 through amp-run, and the same
# models in PyTorch (Debian's python3-torch, installed if missing) eager fp32
# and autocast bf16. The median of REPEATS processes' median steps.
#
#   bench/cpu_vs_torch.sh [STEPS] [THREADS] [REPEATS]
#                                  (defaults 50, the core count, 5)
#
# Writes bench/results/cpu_vs_torch.{md,json}; docs/benchmarks.md quotes it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
steps="${1:-50}"
threads="${2:-$(nproc)}"
repeats="${3:-5}"
run="$root/build/bin/amp-run"
out="$root/bench/results"
mkdir -p "$out"
[ -x "$run" ] || { echo "build first: scripts/test.sh or ninja -C build" >&2; exit 1; }
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-torch
fi
export OPENBLAS_NUM_THREADS="$threads"
results="$out/cpu_vs_torch.jsonl"
: > "$results"
# Each configuration runs in $repeats separate processes, interleaved (one
# round of every configuration, then the next round), so drift of the
# machine spreads over all of them; each process times its steps after 10
# warm-up steps on one fixed batch (amp-run --bench-steps; torch_cpu.py the
# same), and the table gives the median of the per-process medians.
for rep in $(seq 1 "$repeats"); do
  for model in mlp cnn; do
    n="$steps"; [ "$model" = cnn ] && n=$(( steps / 2 > 10 ? steps / 2 : 10 ))
    for cfg in "O0 f16" "O1 f16" "O1 bf16"; do
      set -- $cfg
      metrics="$out/cpu_vs_torch-$model-$1-$2.json"
      "$run" "$root/examples/$model.mlir" --opt-level="$1" --dtype="$2" \
        --bench-steps="$n" --bench-warmup=10 --metrics="$metrics" > /dev/null
      /usr/bin/python3 - "$metrics" "$model" "$1" "$2" "$threads" "$rep" >> "$results" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
level, dtype = sys.argv[3], sys.argv[4]
print(json.dumps({"framework": "amp", "model": sys.argv[2],
                  "mode": "O0 f32" if level == "O0" else f"{level} {dtype}",
                  "threads": int(sys.argv[5]), "repeat": int(sys.argv[6]),
                  "median_step_ms": m["step_ms_median"], "final_loss": m["last_loss"]}))
PY
    done
    /usr/bin/python3 "$root/bench/torch_cpu.py" "$model" "$n" "$threads" \
      | /usr/bin/python3 -c 'import json, sys
for line in sys.stdin:
    r = json.loads(line); r["repeat"] = int(sys.argv[1]); print(json.dumps(r))' "$rep" >> "$results"
  done
done
/usr/bin/python3 - "$results" "$out" "$repeats" <<'PY'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
groups = {}
for r in rows:
    groups.setdefault((r["model"], r["framework"], r["mode"]), []).append(r["median_step_ms"])
summary = [{"model": m, "framework": f, "mode": mode, "runs": len(t),
            "median_step_ms": statistics.median(t), "min_ms": min(t), "max_ms": max(t)}
           for (m, f, mode), t in groups.items()]
base = {s["model"]: s["median_step_ms"] for s in summary
        if s["framework"].startswith("pytorch") and s["mode"] == "fp32"}
lines = [f"Median over {sys.argv[3]} processes of each process's median step (min - max over the processes).", "",
         "| model | framework | mode | median step (ms) | min - max (ms) | vs PyTorch fp32 |",
         "|---|---|---|---:|---:|---:|"]
for s in summary:
    ratio = base[s["model"]] / s["median_step_ms"]
    lines.append(f"| {s['model']} | {s['framework']} | {s['mode']} | {s['median_step_ms']:.2f} | "
                 f"{s['min_ms']:.2f} - {s['max_ms']:.2f} | {ratio:.2f}x |")
open(os.path.join(sys.argv[2], "cpu_vs_torch.md"), "w").write("\n".join(lines) + "\n")
json.dump({"runs": rows, "summary": summary}, open(os.path.join(sys.argv[2], "cpu_vs_torch.json"), "w"), indent=2)
print("\n".join(lines))
PY
