#!/usr/bin/env bash
#===- bench/gpu/bundle.sh - the GPU benchmark's artifacts, built here ----===#
#
#   bench/gpu/bundle.sh [DIR]            (default DIR: bench-bundle/, ignored)
#   AMP_BENCH_SMOKE=1 bench/gpu/bundle.sh DIR
#
# The GPU machine has no MLIR: amp's side of bench/gpu/run.sh runs from
# ahead-of-time artifacts built here (needs a build: scripts/test.sh or
# ninja -C build). DIR receives bin/amp-train, models/*.mlir and
# artifacts/MODEL-OPT-DTYPE.so.xz (xz-compressed: PTX text shrinks ~17x, so
# the bundle stays small enough to carry), for the models of
# docs/benchmarks.md's GPU table:
#   mlp           3 linear layers 4096x4096, batch 512
#   transformer   one pre-LN block d=1024, 16 heads, seq 1024, batch 8
#   vgg16-bB      VGG16-CIFAR at batch B = 128, 256, 512, 1024, 2048
# each at O0 (f32), O1-f16, O2-f16 and O1-bf16, Adam lr 1e-3 (the
# PyTorch side's optimizer). $AMP_BENCH_MODELS picks models (default all;
# e.g. "mlp transformer vgg16-b128").
# AMP_BENCH_SMOKE=1 builds tiny models for the CPU backend instead, so that
# run.sh can be tried end to end on a machine without a GPU.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${AMP_BUILD_DIR:-$root/build}"
out="${1:-$root/bench-bundle}"
smoke="${AMP_BENCH_SMOKE:-0}"
compile="$build/bin/amp-compile"
for tool in "$compile" "$build/bin/amp-train"; do
  [ -x "$tool" ] || { echo "bench/gpu/bundle.sh: build first (no $tool)" >&2; exit 1; }
done
gen=(python3 "$root/bench/gen_model.py")

# NAME -> generator arguments.
declare -A models
if [ "$smoke" = 1 ]; then
  backend=cpu
  models[mlp]="mlp --layers 3 --width 64 --inputs 64 --classes 64 --batch 8"
  models[transformer]="transformer --blocks 1 --d 64 --heads 4 --seq 16 --batch 2 --vocab 128"
  models[vgg16-b2]="vgg16 --batch 2"
  default_models="mlp transformer vgg16-b2"
else
  backend=cuda
  models[mlp]="mlp --layers 3 --width 4096 --inputs 4096 --classes 4096 --batch 512"
  models[transformer]="transformer --blocks 1 --d 1024 --heads 16 --seq 1024 --batch 8 --vocab 1024"
  default_models="mlp transformer"
  for b in 128 256 512 1024 2048; do
    models[vgg16-b$b]="vgg16 --batch $b"
    default_models="$default_models vgg16-b$b"
  done
fi
selected="${AMP_BENCH_MODELS:-$default_models}"

rm -rf "$out"
mkdir -p "$out/bin" "$out/artifacts" "$out/models"
cp "$build/bin/amp-train" "$out/bin/"
echo "$backend" > "$out/backend"
[ "$smoke" = 1 ] && touch "$out/smoke"
for name in $selected; do
  [ -n "${models[$name]:-}" ] || { echo "bench/gpu/bundle.sh: unknown model $name" >&2; exit 1; }
  "${gen[@]}" ${models[$name]} > "$out/models/$name.mlir"
  for cfg in "O0 f16" "O1 f16" "O2 f16" "O1 bf16"; do
    set -- $cfg
    tag="$1-$2"; [ "$1" = O0 ] && tag=O0-f32
    echo "bench/gpu/bundle.sh: $name $tag"
    "$compile" "$out/models/$name.mlir" --backend="$backend" --opt-level="$1" \
      --dtype="$2" --optimizer=adam -o "$out/artifacts/$name-$tag.so"
    xz -T1 -6 "$out/artifacts/$name-$tag.so"
  done
done
du -sh "$out"
