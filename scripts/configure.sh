#!/usr/bin/env bash
#===- scripts/configure.sh - configure a build directory -----------------===#
#
# Configures amp with ninja against Debian's LLVM/MLIR 22 (shared/TOOLCHAIN.md):
#   scripts/configure.sh [BUILD_DIR] [extra cmake args...]
# Fast when the directory is already configured.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
shift || true

if [ -f "$build/build.ninja" ] && [ $# -eq 0 ]; then
  exit 0
fi
cmake -G Ninja -S "$root" -B "$build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  "$@"
