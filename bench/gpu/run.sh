#!/usr/bin/env bash
#===- bench/gpu/run.sh - GPU training benchmark: amp vs PyTorch ----------===#
#
#   bench/gpu/run.sh BUNDLE OUT [PHASE...]
#
# On the GPU machine (CUDA driver, cuBLASLt, PyTorch; no MLIR), from a
# bundle bench/gpu/bundle.sh built elsewhere; through the device tool: carry
# bench-bundle, run  bash bench/gpu/run.sh bench-bundle $OUT ...
# Phases (default: env ours torch roofline report):
#   env       the GPU, driver, PyTorch and CUDA versions (OUT/env.json)
#   ours      each artifact: amp-train --bench-steps (OUT/ours/NAME.json),
#             then a short run of each O1-f16 artifact under
#             AMP_CUDA_GEMM_PROFILE (OUT/gemm/MODEL.jsonl)
#   torch     the same models in PyTorch: eager fp32, eager autocast f16 +
#             GradScaler, eager autocast bf16, torch.compile + autocast f16
#             + GradScaler (OUT/torch.jsonl)
#   roofline  peak f16 GEMM and copy bandwidth measured now, each model's
#             GEMM FLOPs and minimum bytes, and cuBLASLt called directly
#             (through torch) on the GEMM shapes ours ran (OUT/roofline.json)
#   report    OUT/report.md and OUT/vgg16.svg from all of the above
# Models: $AMP_BENCH_MODELS (default: every one in the bundle). Steps: the
# median of $AMP_BENCH_STEPS (default 50; VGG16 $AMP_BENCH_VGG_STEPS,
# default 20) timed steps after $AMP_BENCH_WARMUP (default 10) untimed ones.
# $AMP_BENCH_PYTHON: the Python with PyTorch (default python3).
# A device call runs at most 10 minutes: split by models, e.g.
#   AMP_BENCH_MODELS="mlp transformer" ... env ours torch roofline
#   AMP_BENCH_MODELS="vgg16-b128 vgg16-b256 vgg16-b512" ... ours torch roofline
#   AMP_BENCH_MODELS="vgg16-b1024 vgg16-b2048" ... ours torch roofline
# and the report phase anywhere afterwards (it reads only OUT).
#
#===----------------------------------------------------------------------===#
set -uo pipefail

usage="usage: bench/gpu/run.sh BUNDLE OUT [env|ours|torch|roofline|report...]"
bundle="$(cd "${1:?$usage}" && pwd)"
out="${2:?$usage}"
shift 2
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(env ours torch roofline report)
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$out/ours" "$out/gemm"
out="$(cd "$out" && pwd)"
backend="$(cat "$bundle/backend")"
smoke=0; [ -f "$bundle/smoke" ] && smoke=1
steps="${AMP_BENCH_STEPS:-50}"
vgg_steps="${AMP_BENCH_VGG_STEPS:-20}"
warmup="${AMP_BENCH_WARMUP:-10}"
models="${AMP_BENCH_MODELS:-$(cd "$bundle/models" && ls *.mlir | sed 's/\.mlir$//' | tr '\n' ' ')}"
failures="$out/failures.txt"
: > "$failures"
fail() { echo "$*" | tee -a "$failures"; }
py="${AMP_BENCH_PYTHON:-python3}"  # the Python with torch
device=cuda; tiny=(); [ "$smoke" = 1 ] && { device=cpu; tiny=(--tiny); }

# cuBLASLt: the toolkit's, or the one PyTorch's wheels bring.
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib \
         $(python3 -c 'import nvidia.cublas, os; print(os.path.join(nvidia.cublas.__path__[0], "lib"))' 2>/dev/null); do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done

stepsOf() { case "$1" in vgg16*) echo "$vgg_steps" ;; *) echo "$steps" ;; esac; }
# The PyTorch model and batch of a bundle model name.
torchArgs() {
  case "$1" in
    vgg16-b*) echo "vgg16 --batch ${1#vgg16-b}" ;;
    mlp) [ "$smoke" = 1 ] && echo "mlp --batch 8" || echo "mlp" ;;
    transformer) [ "$smoke" = 1 ] && echo "transformer --batch 2" || echo "transformer" ;;
  esac
}
unpack() { # NAME -> path of the artifact, decompressed into OUT/tmp
  mkdir -p "$out/tmp"
  python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as f, open(sys.argv[2], "wb") as g: shutil.copyfileobj(f, g)' \
    "$bundle/artifacts/$1.so.xz" "$out/tmp/$1.so" && echo "$out/tmp/$1.so"
}

phase_env() {
  "$py" - "$out/env.json" <<'PY'
import json, platform, subprocess, sys
env = {"machine": platform.node(), "cpu": platform.processor(), "python": platform.python_version()}
try:
    import torch
    env.update(torch=torch.__version__, torch_cuda=torch.version.cuda,
               cudnn=torch.backends.cudnn.version())
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        env.update(gpu=p.name, gpu_memory_bytes=p.total_memory, sm=f"{p.major}.{p.minor}")
except ImportError:
    env["torch"] = None
try:
    env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,clocks.max.mem,power.limit",
                                    "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
except FileNotFoundError:
    env["driver"] = None
json.dump(env, open(sys.argv[1], "w"), indent=2)
print(json.dumps(env))
PY
}

phase_ours() {
  for m in $models; do
    for art in "$bundle/artifacts/$m"-*.so.xz; do
      name="$(basename "$art" .so.xz)"
      so="$(unpack "$name")" || { fail "ours: cannot unpack $name"; continue; }
      echo "== ours: $name"
      timeout 300 "$bundle/bin/amp-train" "$so" --bench-steps="$(stepsOf "$m")" \
        --bench-warmup="$warmup" --metrics="$out/ours/$name.json" \
        || fail "ours: $name failed"
      if [ "$backend" = cuda ] && [[ "$name" == *-O1-f16 ]]; then
        AMP_CUDA_GEMM_PROFILE="$out/gemm/$m.jsonl" timeout 120 "$bundle/bin/amp-train" \
          "$so" --bench-steps=3 --bench-warmup=1 > /dev/null || fail "ours: $name GEMM profile failed"
      fi
      rm -f "$so"
    done
  done
}

phase_torch() {
  for m in $models; do
    echo "== torch: $m"
    timeout 500 "$py" "$here/torch_models.py" $(torchArgs "$m") --steps "$(stepsOf "$m")" \
      --warmup "$warmup" --device "$device" "${tiny[@]}" --out "$out/torch.jsonl" \
      || fail "torch: $m failed"
  done
}

phase_roofline() {
  timeout 300 "$py" "$here/roofline.py" --device "$device" "${tiny[@]}" \
    --models $models --gemm "$out/gemm" --out "$out/roofline.json" \
    || fail "roofline failed"
}

phase_report() {
  python3 "$here/report.py" "$out" || fail "report failed"
}

for p in "${phases[@]}"; do
  case "$p" in
    env|ours|torch|roofline|report) "phase_$p" 2>&1 | tee -a "$out/$p.log" ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
rm -rf "$out/tmp"
if [ -s "$failures" ]; then
  echo "bench/gpu/run.sh: $(wc -l < "$failures") failures:"; cat "$failures"; exit 1
fi
echo "bench/gpu/run.sh: done"
