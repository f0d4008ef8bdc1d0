#!/usr/bin/env bash
# CPU training step time and memory, amp against PyTorch on the same machine
# in one run, at each thread count asked for. Models: examples/mlp.mlir and
# examples/cnn.mlir (batch 128), examples/transformer_block.mlir (8 x 128
# tokens) and VGG16-CIFAR at batch 32 (bench/gen_model.py vgg16); Adam 1e-3,
# one fixed random batch. amp: O0 (f32), O1-f16 and O1-bf16 through amp-run
# --bench-steps --threads=T. PyTorch: the pinned PyPI build scripts/setup.sh
# installs, torch.set_num_threads(T), eager fp32, autocast-bf16,
# autocast-f16 (MLP and transformer only: PyTorch 2.15's CPU f16
# convolutions took over 25 s a VGG16 step here, 70x its bf16 step) and
# torch.compile (Inductor) of the whole step in fp32 (bench/torch_cpu.py has
# the same models). Memory: amp's peak step memory
# (its buffers and the runtime's scratch) against PyTorch's peak RSS growth
# less Adam's state (bench/torch_cpu.py says what that holds). Roofline:
# the step's GEMM and convolution FLOPs (PyTorch's FlopCounterMode) at the
# best f32 GEMM rate measured at that thread count in the same run is the
# floor; amp's O0 step as a fraction of it.
#
#   bench/cpu_vs_torch.sh [THREADS] [REPEATS] [MODELS]
#       THREADS: thread counts, e.g. "1 2" (default "1 <core count>")
#       REPEATS: processes per configuration (default 3)
#       MODELS:  a subset of "mlp cnn transformer vgg16" (default all four)
#
# Each configuration runs in REPEATS separate processes, interleaved (one
# round of every configuration, then the next), so the machine's drift
# spreads over all of them; each process times its steps after warm-up
# steps on one fixed batch, and the table gives the median of the
# per-process medians. Writes bench/results/cpu_vs_torch.{md,json};
# docs/benchmarks.md quotes it.
set -euo pipefail
threads_list="${1:-1 $(nproc)}"
repeats="${2:-3}"
models="${3:-mlp cnn transformer vgg16}"
source "$(dirname "$0")/common.sh"
"$python" "$root/bench/gen_model.py" vgg16 --batch 32 > "$work/vgg16.mlir"

mlir_of() {
  case "$1" in
    mlp|cnn) echo "$root/examples/$1.mlir" ;;
    transformer) echo "$root/examples/transformer_block.mlir" ;;
    vgg16) echo "$work/vgg16.mlir" ;;
  esac
}
steps_of() {
  case "$1" in mlp) echo 50 ;; cnn) echo 20 ;; transformer) echo 10 ;; vgg16) echo 6 ;; esac
}

results="$out/cpu_vs_torch.jsonl"
: > "$results"
: > "$out/roofline.jsonl"
for rep in $(seq 1 "$repeats"); do
  for t in $threads_list; do
    for model in $models; do
      n=$(steps_of "$model")
      for cfg in "O0 f16" "O1 f16" "O1 bf16"; do
        set -- $cfg
        metrics="$work/amp.json"
        "$run" "$(mlir_of "$model")" --opt-level="$1" --dtype="$2" --threads="$t" \
          --bench-steps="$n" --bench-warmup=3 --metrics="$metrics" > /dev/null
        "$python" - "$metrics" "$model" "$1" "$2" "$t" "$rep" >> "$results" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
level, dtype = sys.argv[3], sys.argv[4]
print(json.dumps({"framework": "amp", "model": sys.argv[2],
                  "mode": "O0 f32" if level == "O0" else f"{level} {dtype}",
                  "threads": int(sys.argv[5]), "repeat": int(sys.argv[6]),
                  "median_step_ms": m["step_ms_median"], "final_loss": m["last_loss"],
                  "memory_mib": m["peak_step_bytes"] / 2**20}))
PY
      done
      # The roofline's inputs: the step's FLOPs and this thread count's
      # peak f32 GEMM rate, measured next to the step times.
      "$python" "$root/bench/torch_cpu.py" "$model" roofline 10 "$t" >> "$out/roofline.jsonl"
      modes="fp32 autocast-bf16 compile-fp32"
      case "$model" in mlp|transformer) modes="$modes autocast-f16" ;; esac
      for mode in $modes; do
        "$python" "$root/bench/torch_cpu.py" "$model" "$mode" "$n" "$t" \
          | "$python" -c 'import json, sys
for line in sys.stdin:
    r = json.loads(line); r["repeat"] = int(sys.argv[1])
    g = r.pop("peak_rss_growth_kib")
    r["memory_mib"] = None if g is None else g / 1024
    print(json.dumps(r))' "$rep" >> "$results"
      done
    done
  done
done

"$python" - "$results" "$out" "$repeats" <<'PY'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
groups = {}
for r in rows:
    groups.setdefault((r["model"], r["threads"], r["framework"], r["mode"]), []).append(r)
summary = []
for (model, threads, framework, mode), rs in groups.items():
    t = [r["median_step_ms"] for r in rs]
    mem = [r["memory_mib"] for r in rs if r.get("memory_mib") is not None]
    summary.append({"model": model, "threads": threads, "framework": framework, "mode": mode,
                    "runs": len(t), "median_step_ms": statistics.median(t), "min_ms": min(t),
                    "max_ms": max(t), "memory_mib": statistics.median(mem) if mem else None})
def ms(model, threads, framework_prefix, mode):
    for s in summary:
        if (s["model"], s["threads"], s["mode"]) == (model, threads, mode) and \
                s["framework"].startswith(framework_prefix):
            return s["median_step_ms"]
    return None
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
flags = next((l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
shown = [f for f in ("avx2", "fma", "f16c", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile") if f in flags]
lines = [f"{cpu} ({' '.join(shown)}). Median over {sys.argv[3]} processes of each process's median "
         "step (min - max over the processes); speed = PyTorch eager fp32's step time / this "
         "one's at the same thread count. Memory: amp's peak step memory; PyTorch's peak RSS "
         "growth less Adam's state (an upper bound; none for torch.compile).", "",
         "| model | threads | framework | mode | median step (ms) | min - max (ms) | speed vs eager fp32 | memory (MiB) |",
         "|---|---:|---|---|---:|---:|---:|---:|"]
order = {"amp": 0}
summary.sort(key=lambda s: (["mlp", "cnn", "transformer", "vgg16"].index(s["model"]), s["threads"],
                            order.get(s["framework"], 1), s["mode"]))
for s in summary:
    base = ms(s["model"], s["threads"], "pytorch", "fp32")
    ratio = f"{base / s['median_step_ms']:.2f}x" if base else "-"
    mem = "-" if s["memory_mib"] is None else f"{s['memory_mib']:.1f}"
    lines.append(f"| {s['model']} | {s['threads']} | {s['framework']} | {s['mode']} | "
                 f"{s['median_step_ms']:.2f} | {s['min_ms']:.2f} - {s['max_ms']:.2f} | {ratio} | {mem} |")
# The issue's ratios: amp O0 against eager fp32 and torch.compile fp32; amp's
# fastest AMP mode against PyTorch's fastest mode.
lines += ["", "| model | threads | O0 / eager fp32 | O0 / compile fp32 | best amp AMP / best PyTorch |",
          "|---|---:|---:|---:|---:|"]
for model in ["mlp", "cnn", "transformer", "vgg16"]:
    for threads in sorted({s["threads"] for s in summary if s["model"] == model}):
        o0 = ms(model, threads, "amp", "O0 f32")
        eager = ms(model, threads, "pytorch", "fp32")
        comp = ms(model, threads, "pytorch", "compile-fp32")
        amp_best = min(filter(None, [ms(model, threads, "amp", m) for m in ("O1 f16", "O1 bf16")]), default=None)
        torch_best = min(filter(None, [ms(model, threads, "pytorch", m) for m in
                                       ("fp32", "autocast-bf16", "autocast-f16", "compile-fp32")]), default=None)
        f = lambda a, b: f"{b / a:.2f}x" if a and b else "-"
        lines.append(f"| {model} | {threads} | {f(o0, eager)} | {f(o0, comp)} | {f(amp_best, torch_best)} |")
# The roofline: the step's GEMM and convolution FLOPs (forward and backward)
# at the best f32 GEMM rate measured at that thread count is the floor; amp's
# O0 (f32) step as a fraction of it.
roof = [json.loads(l) for l in open(os.path.join(sys.argv[2], "roofline.jsonl"))]
lines += ["", "| model | threads | GEMM + conv GFLOP per step | peak f32 GEMM (GFLOP/s) | floor (ms) | amp O0 f32 (ms) | fraction of the floor |",
          "|---|---:|---:|---:|---:|---:|---:|"]
for model in ["mlp", "cnn", "transformer", "vgg16"]:
    for threads in sorted({r["threads"] for r in roof if r["model"] == model}):
        rs = [r for r in roof if (r["model"], r["threads"]) == (model, threads)]
        gflop = rs[0]["step_gflop"]
        peak = max(r["peak_f32_gemm_gflops"] for r in rs)
        floor = gflop / peak * 1e3
        o0 = ms(model, threads, "amp", "O0 f32")
        lines.append(f"| {model} | {threads} | {gflop:.2f} | {peak:.0f} | {floor:.2f} | "
                     f"{o0:.2f} | {floor / o0:.0%} |" if o0 else f"| {model} | {threads} | - |")
open(os.path.join(sys.argv[2], "cpu_vs_torch.md"), "w").write("\n".join(lines) + "\n")
json.dump({"cpu": cpu, "flags": shown, "runs": rows, "summary": summary},
          open(os.path.join(sys.argv[2], "cpu_vs_torch.json"), "w"), indent=2)
print("\n".join(lines))
PY
