#!/usr/bin/env bash
#===- scripts/setup.sh - install the Debian packages amp needs -----------===#
#
# Idempotent: when every package is present it only checks and exits (< 1 s).
# Runs apt-get as root, or through sudo when available.
#   scripts/setup.sh              # what building and testing needs
#   scripts/setup.sh --sanitize   # plus clang-22, its sanitizer/libFuzzer
#                                 # runtimes and valgrind (test.sh --sanitize,
#                                 # fuzz.sh, memcheck.sh)
#
#===----------------------------------------------------------------------===#
set -euo pipefail

PACKAGES=(
  # LLVM/MLIR 22 (see shared/TOOLCHAIN.md: all four are needed by find_package(MLIR)).
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # Build tools.
  cmake ninja-build ccache g++ pkg-config
  # Tests and runtime libraries.
  libgtest-dev libopenblas-dev zlib1g-dev python3
  # Real data for amp-run.
  dataset-fashion-mnist
)
if [ "${1:-}" = "--sanitize" ]; then
  PACKAGES+=(clang-22 libclang-rt-22-dev valgrind)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "setup: error: missing packages (${missing[*]}) and not root (no sudo)" >&2
    exit 1
  fi
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
