#!/usr/bin/env bash
#===- scripts/gpu-checks.sh - the CUDA backend's checks on a GPU ---------===#
#
#   scripts/gpu-checks.sh BUNDLE OUT [PHASE...]
#
# Runs on the GPU machine (CUDA driver, cuBLASLt, compute-sanitizer, ncu and
# PyTorch; no MLIR) from a bundle scripts/gpu-bundle.sh built elsewhere, e.g.
# through the device tool: carry gpu-bundle, run
#   bash scripts/gpu-checks.sh gpu-bundle $OUT
# Phases (default: all, in this order; each is time-limited and the script
# goes on after a failure, ending with a PASS/FAIL line per check):
#   env        the GPU, and that amp-train and the artifacts load
#   gtests     the runtime's device tests (test/Integration/CUDA), and the
#              epilogue ones again with AMP_CUDA_EPILOGUE_FALLBACK=1
#   steps      one step of each configuration vs the CPU backend, every
#              tensor (scripts/gpu/compare_steps.py)
#   accuracy   Fashion-MNIST vs the CPU backend's runs in the bundle, within
#              0.5 points: the configurations in $AMP_GPU_ACCURACY (default
#              "mlp-O1-f16 cnn-O1-f16"; also mlp-O2-f16, mlp-O1-bf16), with
#              bench/accuracy.sh's settings (MLP 10 epochs, CNN 12)
#   sanitizer  compute-sanitizer memcheck and racecheck on 3 MLP steps
#   ncu        the GEMM kernels are Tensor Core ones (names and counters)
#   timing     median MLP step (amp-train --bench-steps), amp vs PyTorch
#              autocast+GradScaler
#   dp         data parallelism on NCCL: mpirun -np 2 amp-train
#              --data-parallel (one GPU per rank) against one process
#              accumulating the same two shards; needs 2 GPUs and OpenMPI
#              (NCCL refuses two ranks on one GPU), else it says SKIP
# OUT receives each phase's log and summary.txt. One device call runs at most
# 10 minutes: run "env gtests steps sanitizer ncu timing" in one call and each
# accuracy configuration in its own (AMP_GPU_ACCURACY=cnn-O1-f16 ... accuracy).
#
#===----------------------------------------------------------------------===#
set -uo pipefail

bundle="$(cd "${1:?usage: gpu-checks.sh BUNDLE OUT [PHASE...]}" && pwd)"
out="${2:?usage: gpu-checks.sh BUNDLE OUT [PHASE...]}"
shift 2
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(env gtests steps accuracy sanitizer ncu timing dp)
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$out"
summary="$out/summary.txt"
: > "$summary"
train="$bundle/bin/amp-train"
art="$bundle/artifacts"
ref="$bundle/reference"

# cuBLASLt: the toolkit's, or the one PyTorch's wheels bring.
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib \
         $(python3 -c 'import nvidia.cublas, os; print(os.path.join(nvidia.cublas.__path__[0], "lib"))' 2>/dev/null); do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done

result() { # NAME STATUS DETAIL
  printf '%-36s %s  %s\n' "$1" "$2" "$3" | tee -a "$summary"
}

phase_env() {
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  ldd "$train" "$art/mlp-O1-f16.so"
  if nvidia-smi -L && "$train" "$art/mlp-O1-f16.so" --describe; then
    result "env: artifact loads" PASS "$(nvidia-smi -L | head -1)"
  else
    result "env: artifact loads" FAIL "see env.log"
  fi
}

phase_steps() {
  for cfg in mlp-O0-f16 mlp-O1-f16 mlp-O2-f16 mlp-O1-bf16 cnn-O1-f16; do
    name="step-$cfg"
    tolerance=1e-2
    [ "$cfg" = mlp-O0-f16 ] && tolerance=1e-4
    if timeout 300 "$train" "$art/$name.so" --lr=0.1 --dataset=synthetic \
         --shuffle=false --seed=7 --log-every=0 --steps=1 \
         --save="$out/$name.gpu.safetensors" &&
       python3 "$here/gpu/compare_steps.py" "$ref/$name.init.safetensors" \
         "$ref/$name.cpu.safetensors" "$out/$name.gpu.safetensors" \
         --tolerance "$tolerance" | tee "$out/$name.compare.txt"; then
      result "steps: $cfg vs CPU" PASS "$(tail -1 "$out/$name.compare.txt")"
    else
      result "steps: $cfg vs CPU" FAIL "see steps.log"
    fi
  done
}

phase_accuracy() {
  for cfg in ${AMP_GPU_ACCURACY:-mlp-O1-f16 cnn-O1-f16}; do
    epochs=10
    [ "${cfg%%-*}" = cnn ] && epochs=12
    if [ ! -f "$ref/$cfg.json" ]; then
      result "accuracy: $cfg" SKIP "no CPU reference in the bundle"
      continue
    fi
    timeout 560 "$train" "$art/$cfg.so" --data-dir="$bundle/data" \
      --epochs="$epochs" --lr=1e-3 --lr-schedule=cosine --seed=1 \
      --log-every=0 --metrics="$out/gpu-$cfg.json"
    python3 - "$ref/$cfg.json" "$out/gpu-$cfg.json" > "$out/$cfg.accuracy.txt" <<'PY'
import json, sys
cpu, gpu = (json.load(open(p)) for p in sys.argv[1:])
a, b = cpu["test_accuracy_percent"], gpu["test_accuracy_percent"]
ok = abs(a - b) <= 0.5
print(f"{'PASS' if ok else 'FAIL'} GPU {b:.2f}% vs CPU {a:.2f}% ({b - a:+.2f}), "
      f"{gpu['skipped_steps']} skipped, median step {gpu['step_time_ms_median']:.2f} ms "
      f"(CPU {cpu['step_time_ms_median']:.2f} ms)")
PY
    line="$(cat "$out/$cfg.accuracy.txt" 2>/dev/null)"
    result "accuracy: $cfg" "${line%% *}" "${line#* }"
  done
}

phase_gtests() {
  # The runtime's device tests (cuBLASLt GEMMs and their epilogues against
  # CPU and double references); their CPU reference needs OpenBLAS, which
  # the bundle brings (xz-compressed).
  mkdir -p "$out/lib"
  for f in "$bundle"/lib/*.xz; do
    python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as f, open(sys.argv[2], "wb") as g: shutil.copyfileobj(f, g)' \
      "$f" "$out/lib/$(basename "$f" .xz)"
  done
  if LD_LIBRARY_PATH="$out/lib:${LD_LIBRARY_PATH:-}" timeout 300 \
       "$bundle/bin/AMPCudaDeviceTests" | tee "$out/gtests.txt"; then
    result "gtests: CUDA device tests" PASS "$(grep -c '^\[       OK' "$out/gtests.txt") passed"
  else
    result "gtests: CUDA device tests" FAIL "see gtests.log"
  fi
  # The aux epilogues again through their fallback (a plain-epilogue GEMM and
  # an embedded kernel), which runs where cuBLASLt has no algorithm.
  if AMP_CUDA_EPILOGUE_FALLBACK=1 LD_LIBRARY_PATH="$out/lib:${LD_LIBRARY_PATH:-}" \
       timeout 120 "$bundle/bin/AMPCudaDeviceTests" --gtest_filter='*Epilogues*' \
       | tee "$out/gtests-fallback.txt"; then
    result "gtests: epilogue fallbacks" PASS "$(grep -c '^\[       OK' "$out/gtests-fallback.txt") passed"
  else
    result "gtests: epilogue fallbacks" FAIL "see gtests.log"
  fi
}

phase_sanitizer() {
  for tool in memcheck racecheck; do
    if timeout 540 compute-sanitizer --tool "$tool" --error-exitcode 3 \
         "$train" "$art/mlp-O1-f16.so" --dataset=synthetic --steps=3 \
         --log-every=0 > "$out/sanitizer-$tool.txt" 2>&1; then
      result "compute-sanitizer $tool" PASS "$(grep -m1 'ERROR SUMMARY' "$out/sanitizer-$tool.txt")"
    else
      result "compute-sanitizer $tool" FAIL "$(grep -m1 'ERROR SUMMARY' "$out/sanitizer-$tool.txt")"
    fi
  done
}

phase_ncu() {
  # The Tensor Core instruction counters this ncu knows (HMMA; GMMA is
  # Hopper's warpgroup MMA).
  metrics=gpu__time_duration.sum
  for m in $(ncu --query-metrics 2>/dev/null | awk '{print $1}' |
             grep -E '^sm__inst_executed_pipe_tensor_op_(hmma|gmma)$'); do
    metrics="$metrics,$m.sum"
  done
  echo "metrics: $metrics"
  timeout 540 ncu --clock-control none --metrics "$metrics" \
    --csv "$train" "$art/mlp-O1-f16.so" --dataset=synthetic --steps=2 \
    --log-every=0 > "$out/ncu.csv" 2> "$out/ncu.err"
  python3 - "$out/ncu.csv" > "$out/ncu.txt" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
head, rows = rows[0], rows[1:]
ki, mi, vi = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
tensor = {}
for r in rows:
    if "tensor_op" in r[mi]:
        try:
            v = float(r[vi].replace(",", ""))
        except ValueError:
            v = 0.0
        tensor[r[ki]] = tensor.get(r[ki], 0) + v
kernels = sorted({r[ki] for r in rows})
gemms = [k for k in kernels if "gemm" in k.lower() or "xmma" in k.lower() or "cutlass" in k.lower()]
tc = [k for k in gemms if tensor.get(k, 0) > 0]
for k in kernels:
    print(f"{tensor.get(k, 0):14.0f}  {k[:150]}")
ok = bool(gemms) and len(tc) == len(gemms)
print(f"{'PASS' if ok else 'FAIL'} {len(kernels)} kernels; {len(gemms)} cuBLASLt GEMM kernels, "
      f"{len(tc)} with Tensor Core (HMMA/GMMA) instructions")
PY
  line="$(tail -1 "$out/ncu.txt" 2>/dev/null)"
  result "ncu: Tensor Core GEMMs" "${line%% *}" "${line#* }"
}

phase_timing() {
  # One fixed batch on the device and 50 warm-up steps on both sides, as
  # torch_mlp.py does; each amp step ends with its one host sync.
  "$train" "$art/mlp-O1-f16.so" --bench-steps=300 --bench-warmup=50 \
    --metrics="$out/timing-amp.json" > /dev/null
  amp="$(python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["step_ms_median"])' "$out/timing-amp.json")"
  timeout 540 python3 "$here/gpu/torch_mlp.py" 300 | tee "$out/timing-torch.txt"
  result "timing: MLP O1 f16 step" INFO "amp ${amp} ms; $(tr '\n' ';' < "$out/timing-torch.txt")"
}

phase_dp() {
  local gpus
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  if [ "$gpus" -lt 2 ] || ! command -v mpirun > /dev/null; then
    result "dp: 2 ranks on NCCL" SKIP "needs 2 GPUs and mpirun: $gpus GPU(s), mpirun $(command -v mpirun || echo absent)"
    return 0
  fi
  local common=(--dataset=synthetic --shuffle=false --seed=7 --log-every=0)
  if timeout 300 mpirun --allow-run-as-root -np 2 "$train" "$art/dp2-mlp-O0.so" \
       --data-parallel --dp-check-replicas --dp-timeout=60 --steps=10 "${common[@]}" \
       --save="$out/dp2.safetensors" &&
     timeout 300 "$train" "$art/acc2-mlp-O0.so" --steps=20 "${common[@]}" \
       --save="$out/acc2.safetensors" &&
     python3 "$here/../test/Tools/amp-run/Inputs/close_checkpoints.py" \
       "$out/dp2.safetensors" "$out/acc2.safetensors" 1e-5 param. | tee "$out/dp.compare.txt"; then
    result "dp: 2 ranks on NCCL" PASS "vs accumulate=2: $(tail -1 "$out/dp.compare.txt")"
  else
    result "dp: 2 ranks on NCCL" FAIL "see dp.log"
  fi
}

for p in "${phases[@]}"; do
  echo "== $p"
  start=$(date +%s)
  "phase_$p" > "$out/$p.log" 2>&1
  echo "   $(( $(date +%s) - start )) s"
done
echo
cat "$summary"
! grep -q ' FAIL ' "$summary"
