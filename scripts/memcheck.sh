#!/usr/bin/env bash
#===- scripts/memcheck.sh - amp-run and the runtime under valgrind -------===#
#
#   scripts/memcheck.sh [BUILD_DIR]
#
# A short training run (examples/mlp.mlir, O1 f16 with dynamic loss scaling,
# 3 synthetic steps, a checkpoint save) under valgrind memcheck: any invalid
# access, use of uninitialised memory or definitely/indirectly lost block
# fails (exit 3). Memory still reachable at exit (LLVM's and MLIR's
# process-lifetime registries) is reported, not failed. Takes ~5 minutes.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
bash "$root/scripts/setup.sh" --sanitize
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
valgrind --error-exitcode=3 --leak-check=full \
  --errors-for-leak-kinds=definite,indirect \
  --suppressions="$root/scripts/valgrind.supp" \
  "$build/bin/amp-run" "$root/examples/mlp.mlir" --dataset=synthetic --steps=3 \
  --log-every=0 --save="$tmp/ck.safetensors" 2>&1 | tee "$tmp/log" |
  grep -E "ERROR SUMMARY|definitely lost|indirectly lost|still reachable|summary:"
exit "${PIPESTATUS[0]}"
