#!/usr/bin/env bash
# Data-parallel training on this machine's CPU cores: amp (mpirun amp-run
# --data-parallel) against PyTorch DistributedDataParallel (gloo, the pinned
# PyPI build scripts/setup.sh installs), on examples/cnn.mlir (batch 128 per
# rank), one thread per rank. Configurations: amp O0 (f32) and O1-bf16,
# PyTorch fp32 and autocast-bf16, each at 1 rank and at 2 ranks.
#
#   bench/dp_vs_torch.sh [REPEATS] [STEPS]
#       REPEATS: processes per configuration, interleaved (default 3)
#       STEPS:   timed steps per process (default 30)
#
# amp's step time is the median of its metrics' step times (a step
# includes copying the batch in and, with 2 ranks, the all-reduce); its
# data are synthetic (random images, seeded). PyTorch trains one fixed
# random batch per rank (bench/torch_ddp.py). samples/s = ranks x 128 /
# median step. The table gives the median over the processes. Writes
# bench/results/dp_vs_torch.{md,jsonl}; docs/benchmarks.md quotes it.
set -euo pipefail
repeats="${1:-3}"
steps="${2:-30}"
source "$(dirname "$0")/common.sh"
mpirun=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)

results="$out/dp_vs_torch.jsonl"
: > "$results"
amp() { # ranks opt-level dtype
  local ranks=$1 level=$2 dtype=$3 metrics="$work/m.json"
  local cmd=("$run" "$root/examples/cnn.mlir" --opt-level="$level" --dtype="$dtype"
             --threads=1 --dataset=synthetic --steps="$steps" --log-every=0
             --metrics="$metrics")
  if [ "$ranks" = 1 ]; then "${cmd[@]}" > /dev/null
  else "${mpirun[@]}" -np "$ranks" "${cmd[@]}" --data-parallel > /dev/null; fi
  "$python" - "$metrics" "$ranks" "$level $dtype" >> "$results" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
ranks = int(sys.argv[2])
ms = m["step_time_ms_median"]
print(json.dumps({"framework": "amp", "mode": sys.argv[3], "ranks": ranks,
                  "median_step_ms": ms, "samples_per_s": ranks * 128 * 1e3 / ms}))
PY
}
torch() { # ranks mode
  OMP_NUM_THREADS=1 "$python" -m torch.distributed.run --standalone \
    --nproc_per_node="$1" "$root/bench/torch_ddp.py" cnn "$2" "$steps" \
    2> /dev/null | grep '^{' >> "$results"
}
for rep in $(seq 1 "$repeats"); do
  for ranks in 1 2; do
    echo "round $rep, $ranks rank(s)" >&2
    amp "$ranks" O0 f16
    amp "$ranks" O1 bf16
    torch "$ranks" fp32
    torch "$ranks" autocast-bf16
  done
done

"$python" - "$results" "$out/dp_vs_torch.md" <<'PY'
import json, statistics, sys, subprocess
rows = [json.loads(l) for l in open(sys.argv[1])]
groups = {}
for r in rows:
    fw = "amp" if r["framework"] == "amp" else "pytorch DDP"
    mode = {"O0 f16": "O0 f32", "fp32": "fp32"}.get(r["mode"], r["mode"])
    groups.setdefault((fw, mode, r["ranks"]), []).append(r["samples_per_s"])
cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                     capture_output=True, text=True).stdout.strip()
med = {k: statistics.median(v) for k, v in groups.items()}
lines = [f"{cpu}, examples/cnn.mlir, batch 128 per rank, 1 thread per rank; "
         f"median over {len(next(iter(groups.values())))} processes.", "",
         "| framework | mode | ranks | samples/s | 2 ranks / 1 rank |",
         "|---|---|---:|---:|---:|"]
for (fw, mode, ranks), v in sorted(med.items()):
    scale = med.get((fw, mode, 2), 0) / med[(fw, mode, 1)] if ranks == 2 else None
    lines.append(f"| {fw} | {mode} | {ranks} | {v:.0f} | "
                 + (f"{scale:.2f}x" if scale else "") + " |")
pairs = [("O0 f32", "fp32"), ("O1 bf16", "autocast-bf16")]
lines += ["", "| amp / PyTorch DDP, samples/s | 1 rank | 2 ranks |", "|---|---:|---:|"]
for a, t in pairs:
    lines.append(f"| amp {a} / DDP {t} | " + " | ".join(
        f"{med[('amp', a, r)] / med[('pytorch DDP', t, r)]:.2f}x" for r in (1, 2)) + " |")
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
