#!/usr/bin/env bash
#===- scripts/demo.sh - install, build and run amp's main job ------------===#
#
#   scripts/demo.sh
# Installs what is missing, builds amp-opt and amp-run, and runs amp's pipeline on the
# Fashion-MNIST MLP (examples/mlp.mlir): autocast to f16 with the precision
# report, then the whole training step (autodiff + AdamW) and its CPU code;
# then a PyTorch-defined CNN trained through amp.compile (python/amp) and
# evaluated by PyTorch after copy_to.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${AMP_BUILD_DIR:-$root/build}"

bash "$root/scripts/setup.sh"
bash "$root/scripts/configure.sh" "$build"
cmake --build "$build" --target amp-opt amp-run amp-compile amp-python -j "${AMP_JOBS:-$(nproc)}"

model="$root/examples/mlp.mlir"
opt="$build/bin/amp-opt"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

echo
echo "== 1. autocast (O1, f16): each op's precision and why"
"$opt" "$model" --amp-pipeline="opt-level=O1 dtype=f16 optimizer=none" \
  --amp-precision-report -o "$out/mlp-f16.mlir"

echo
echo "== 2. the mixed-precision forward graph"
sed 's/ {train[^}]*}//g' "$out/mlp-f16.mlir"

echo
echo "== 3. the training step: autocast + autodiff + AdamW (lr is a step input)"
"$opt" "$model" --amp-pipeline="opt-level=O1 dtype=f16 optimizer=adamw weight-decay=0.01" \
  -o "$out/mlp-step.mlir" --mlir-timing
grep -o 'train\.[a-z_0-9]*' "$out/mlp-step.mlir" | grep -v 'train\.\(param\|init\|lr\|opt_state\|scaler_state\)' \
  | sort | uniq -c | sort -rn

echo
echo "== 4. lowered for the CPU (LLVM dialect)"
"$opt" "$out/mlp-step.mlir" --amp-lower-cpu -o "$out/mlp-step.ll.mlir"
echo "   $(grep -c 'llvm\.' "$out/mlp-step.ll.mlir") LLVM-dialect ops in $(grep -c 'llvm.func @' "$out/mlp-step.ll.mlir") functions"
echo
echo "== 5. training on Fashion-MNIST at O1 f16 with amp-run (dynamic loss scaling)"
run="$(dirname "$opt")/amp-run"
"$run" "$model" --opt-level=O1 --dtype=f16 --epochs="${AMP_DEMO_EPOCHS:-1}" \
  --log-every=100 --metrics="$out/mlp-metrics.json"
echo "   metrics: $out/mlp-metrics.json"

echo
echo "== 6. a PyTorch model: amp.compile(model, loss, example_inputs, optimizer=...)"
python="$(bash "$root/scripts/setup.sh" --print-python)"
if [ "$build" = "$root/build" ]; then
  # The package installed as users install it (pip install ., reusing build/).
  echo "   pip install . (the amp package into $(dirname "$(dirname "$python")"))"
  "$python" -m pip install -q "$root"
  (cd "$out" && env -u PYTHONPATH "$python" "$root/examples/python/fashion_mnist.py" \
    --epochs="${AMP_DEMO_EPOCHS:-1}")
else
  # Another build directory (AMP_BUILD_DIR): its package, uninstalled.
  PYTHONPATH="$build/python" "$python" \
    "$root/examples/python/fashion_mnist.py" --epochs="${AMP_DEMO_EPOCHS:-1}"
fi
