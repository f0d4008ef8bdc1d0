#!/usr/bin/env bash
#===- scripts/demo.sh - install, build and run amp's main job ------------===#
#
#   scripts/demo.sh
# Installs what is missing, builds amp-opt, and runs it on the Fashion-MNIST
# MLP (examples/mlp.mlir): parse, verify, canonicalize, and print the graph.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${AMP_BUILD_DIR:-$root/build}"

bash "$root/scripts/setup.sh"
bash "$root/scripts/configure.sh" "$build"
cmake --build "$build" --target amp-opt -j "${AMP_JOBS:-$(nproc)}"

model="$root/examples/mlp.mlir"
echo
echo "== amp-opt $(basename "$model") --canonicalize --mlir-timing"
"$build/bin/amp-opt" "$model" --canonicalize --mlir-timing
echo
echo "== op counts"
"$build/bin/amp-opt" "$model" | grep -o 'train\.[a-z_0-9]*' | grep -v 'train\.\(param\|init\)' \
  | sort | uniq -c
