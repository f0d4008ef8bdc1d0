#!/usr/bin/env bash
#===- scripts/ir-snapshot.sh - lowered IR of the examples, for refactorings ===#
#
# Writes the lowered CPU and CUDA IR of the four examples at O0, O1 f16 and
# O1 bf16 (the training step, as amp-run and amp-compile build it) into DIR:
#   scripts/ir-snapshot.sh DIR [BUILD_DIR]
# A refactoring that must not change behaviour compares two snapshots:
#   scripts/ir-snapshot.sh /tmp/before; (change, rebuild);
#   scripts/ir-snapshot.sh /tmp/after; diff -r /tmp/before /tmp/after
# Locations are dropped; the CUDA IR is taken before PTX generation
# (`format=isa` keeps the kernels' text in the module).
#
#===----------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:?usage: scripts/ir-snapshot.sh DIR [BUILD_DIR]}"
build="${2:-$root/build}"
opt="$build/bin/amp-opt"
mkdir -p "$out"

for model in mlp cnn transformer_block vgg16_cifar; do
  for config in "O0 f16" "O1 f16" "O1 bf16"; do
    set -- $config
    name="$model-$1-$2"
    "$opt" "$root/examples/$model.mlir" \
      --amp-pipeline="opt-level=$1 dtype=$2" -o "$out/$name.step.mlir"
    "$opt" "$out/$name.step.mlir" --amp-lower-cpu -o "$out/$name.cpu.mlir"
    # The time PTX generation took is the one thing that differs per run.
    "$opt" "$out/$name.step.mlir" --amp-lower-cuda="format=isa" |
      sed -E 's/LLVMIRToISATimeInMs = [0-9]+ : i64, //' > "$out/$name.cuda.mlir"
  done
done
echo "$(ls "$out" | wc -l) files in $out"
