#!/usr/bin/env bash
#===- scripts/gpu-bundle.sh - what the GPU checks need, built here -------===#
#
#   scripts/gpu-bundle.sh [DIR]          (default DIR: gpu-bundle/, ignored)
#
# The GPU test machine has CUDA, cuBLASLt and PyTorch but no MLIR, so the
# CUDA backend's checks run there from ahead-of-time artifacts built here
# (needs a build: scripts/test.sh or ninja -C build). DIR receives:
#   bin/amp-train              the loader (no MLIR, no libLLVM)
#   artifacts/NAME.so          CUDA training steps (amp-compile), data-
#                              parallel ones among them
#   lib/                       OpenBLAS and the MPI plugin (libamp-mpi.so)
#   reference/step-NAME.*      one SGD step (lr 0.1, loss scale 1024) on
#                              synthetic data on the CPU backend, and the
#                              initial state, to compare every tensor of the
#                              GPU's step with
#   reference/*.json           the CPU backend's Fashion-MNIST runs
#                              (bench/accuracy.sh), when they exist here
#   data/                      Fashion-MNIST (the machine has no dataset)
# Then, on the GPU machine: scripts/gpu-checks.sh DIR OUT (one device call;
# carry DIR). About 35 MB.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${AMP_BUILD_DIR:-$root/build}"
out="${1:-$root/gpu-bundle}"
compile="$build/bin/amp-compile"
run="$build/bin/amp-run"
for tool in "$compile" "$run" "$build/bin/amp-train"; do
  [ -x "$tool" ] || { echo "gpu-bundle: build first (no $tool)" >&2; exit 1; }
done
data=/usr/share/datasets/fashion-mnist
[ -d "$data" ] || { echo "gpu-bundle: no $data (scripts/setup.sh installs it)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/artifacts" "$out/reference" "$out/data"
cp "$build/bin/amp-train" "$out/bin/"
# The runtime's device tests and the OpenBLAS their CPU reference loads
# (with dlopen, from the library path; xz-compressed: 40 -> 5 MB, the device
# tool carries at most 64 MiB).
device_tests="$build/test/Integration/CUDA/AMPCudaDeviceTests"
[ -x "$device_tests" ] || { echo "gpu-bundle: build first (no $device_tests)" >&2; exit 1; }
cp "$device_tests" "$out/bin/"
openblas=$(ldconfig -p | awk '/libopenblas\.so\.0 / {print $NF; exit}')
[ -n "$openblas" ] || { echo "gpu-bundle: no libopenblas.so.0 (scripts/setup.sh installs it)" >&2; exit 1; }
cp -L "$openblas" "$out/lib/libopenblas.so.0"
ldd "$openblas" | awk '/libgfortran|libquadmath/ {print $3}' |
  xargs -r cp -L -t "$out/lib/"
xz -T0 -6 "$out"/lib/*
cp "$data"/*.gz "$out/data/"

# Training artifacts: the configurations of bench/accuracy.sh.
for cfg in "mlp O1 f16" "mlp O2 f16" "mlp O1 bf16" "cnn O1 f16"; do
  set -- $cfg
  echo "gpu-bundle: $1 $2 $3"
  "$compile" "$root/examples/$1.mlir" --backend=cuda --opt-level="$2" \
    --dtype="$3" -o "$out/artifacts/$1-$2-$3.so"
done

# Step references: with SGD each parameter's change is its gradient (times
# the rate), so every op's gradients are compared, not only the loss. One
# step: over more, ReLU masks flip where rounding differs and the runs drift
# apart (the CPU's own BLAS and loop paths: 1e-4 after one step, 1e-2 after
# three). Scale 1024, so that O2's first f16 step is not skipped.
for cfg in "mlp O0 f16" "mlp O1 f16" "mlp O2 f16" "mlp O1 bf16" "cnn O1 f16"; do
  set -- $cfg
  name="step-$1-$2-$3"
  echo "gpu-bundle: $name"
  "$compile" "$root/examples/$1.mlir" --backend=cuda --opt-level="$2" \
    --dtype="$3" --optimizer=sgd --init-scale=1024 -o "$out/artifacts/$name.so"
  common=(--opt-level="$2" --dtype="$3" --optimizer=sgd --init-scale=1024 --lr=0.1
          --dataset=synthetic --shuffle=false --seed=7 --log-every=0)
  "$run" "$root/examples/$1.mlir" "${common[@]}" --steps=1 --stop-at=0 \
    --save="$out/reference/$name.init.safetensors" > /dev/null
  "$run" "$root/examples/$1.mlir" "${common[@]}" --steps=1 \
    --save="$out/reference/$name.cpu.safetensors" \
    --metrics="$out/reference/$name.cpu.json" > /dev/null
done

# Data parallelism on NCCL (gpu-checks.sh's dp phase, on 2 GPUs): the MLP
# at O0 for 2 ranks, and for one process accumulating the two shards; the
# MPI plugin beside amp-train (the machine brings OpenMPI).
"$compile" "$root/examples/mlp.mlir" --backend=cuda --opt-level=O0 --ranks=2 \
  -o "$out/artifacts/dp2-mlp-O0.so"
"$compile" "$root/examples/mlp.mlir" --backend=cuda --opt-level=O0 \
  --accumulate=2 -o "$out/artifacts/acc2-mlp-O0.so"
cp "$build/lib/libamp-mpi.so" "$out/lib/"

# The CPU backend's accuracy runs, if bench/accuracy.sh made them here.
for m in mlp-O1-f16 mlp-O2-f16 mlp-O1-bf16 cnn-O1-f16; do
  if [ -f "$root/bench/results/$m.json" ]; then
    cp "$root/bench/results/$m.json" "$out/reference/$m.json"
  else
    echo "gpu-bundle: no bench/results/$m.json (run bench/accuracy.sh): " \
         "its accuracy check will be skipped" >&2
  fi
done
du -sh "$out"
