#!/usr/bin/env bash
# CPU training step time, amp against PyTorch on the same machine in one run:
# examples/mlp.mlir and examples/cnn.mlir (batch 128, Adam 1e-3, synthetic
# data) at O0 (f32), O1-f16 and O1-bf16 through amp-run, and the same
# models in PyTorch (Debian's python3-torch, installed if missing) eager fp32
# and autocast bf16. Medians over all timed steps.
#
#   bench/cpu_vs_torch.sh [STEPS] [THREADS]      (defaults 50, the core count)
#
# Writes bench/results/cpu_vs_torch.{md,json}; docs/benchmarks.md quotes it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
steps="${1:-50}"
threads="${2:-$(nproc)}"
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
for model in mlp cnn; do
  n="$steps"; [ "$model" = cnn ] && n=$(( steps / 2 > 10 ? steps / 2 : 10 ))
  for cfg in "O0 f16" "O1 f16" "O1 bf16"; do
    set -- $cfg
    "$run" "$root/examples/$model.mlir" --opt-level="$1" --dtype="$2" \
      --dataset=synthetic --steps=$((n + 10)) --log-every=0 \
      --metrics="$out/cpu_vs_torch-$model-$1-$2.json" > /dev/null
    /usr/bin/python3 - "$out/cpu_vs_torch-$model-$1-$2.json" "$model" "$1" "$2" "$threads" >> "$results" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
level, dtype = sys.argv[3], sys.argv[4]
print(json.dumps({"framework": "amp", "model": sys.argv[2],
                  "mode": "O0 f32" if level == "O0" else f"{level} {dtype}",
                  "threads": int(sys.argv[5]),
                  "median_step_ms": m["step_time_ms_median"],
                  "final_loss": m["steps"][-1]["loss"]}))
PY
  done
  /usr/bin/python3 "$root/bench/torch_cpu.py" "$model" "$n" "$threads" >> "$results"
done
/usr/bin/python3 - "$results" "$out" <<'PY'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
base = {r["model"]: r["median_step_ms"] for r in rows
        if r["framework"].startswith("pytorch") and r["mode"] == "fp32"}
lines = ["| model | framework | mode | median step (ms) | vs PyTorch fp32 |", "|---|---|---|---:|---:|"]
for r in rows:
    ratio = base[r["model"]] / r["median_step_ms"]
    lines.append(f"| {r['model']} | {r['framework']} | {r['mode']} | {r['median_step_ms']:.2f} | {ratio:.2f}x |")
open(os.path.join(sys.argv[2], "cpu_vs_torch.md"), "w").write("\n".join(lines) + "\n")
json.dump(rows, open(os.path.join(sys.argv[2], "cpu_vs_torch.json"), "w"), indent=2)
print("\n".join(lines))
PY
