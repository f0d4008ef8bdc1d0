#!/usr/bin/env bash
#===- scripts/setup.sh - install the Debian packages amp needs -----------===#
#
# Idempotent: when everything is present it only checks and exits (< 1 s).
# Runs apt-get as root, or through sudo when available.
#   scripts/setup.sh              # what building and testing needs
#   scripts/setup.sh --print-python   # the Python interpreter amp uses
#
# Python (the PyTorch frontend, python/amp): a virtual environment at
# $AMP_VENV (default ~/.cache/amp/venv) with the pinned packages below from
# PyPI, made once per machine. PyPI's torch wheel is the CUDA build: about
# 3 GB with its nvidia-* wheels, 5.5 GB installed, about 10 minutes on a
# fresh machine; it runs without a GPU. CMake and the scripts name this
# interpreter ($AMP_VENV/bin/python), never the `python3` on PATH.
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
  libgtest-dev libopenblas-dev libopenblas0-openmp zlib1g-dev python3
  # The compilers' allocator (amp-compile, amp-opt: 15-30% faster compiles).
  libjemalloc-dev
  # oneDNN: the CPU runtime's convolutions (lib/Runtime/CPU/Dnnl.cpp).
  libdnnl-dev
  # OpenMPI: data-parallel training between processes (lib/Runtime/MPI,
  # mpirun).
  libopenmpi-dev openmpi-bin
  # A virtual environment for the PyTorch frontend (python/amp), and the
  # headers its extension builds against when python3 is Debian's.
  python3-venv python3-dev
  # Real data for amp-run: images, and text for --dataset=text (2.5 MB of
  # fortunes in /usr/share/games/fortunes).
  dataset-fashion-mnist fortunes
)
if [ "${1:-}" = "--sanitize" ]; then
  PACKAGES+=(clang-22 libclang-rt-22-dev valgrind)
fi

VENV="${AMP_VENV:-$HOME/.cache/amp/venv}"
if [ "${1:-}" = "--print-python" ]; then
  echo "$VENV/bin/python"
  exit 0
fi
# Pinned: the versions every test of python/amp runs against.
PYTHON_PACKAGES=(torch==2.15.0 torchvision==0.29.2 numpy==2.4.6 pytest==9.2.0 safetensors==0.8.0
  nanobind==3.1.0 transformers==5.23.0 timm==1.0.31)

# Whether the virtual environment has every pinned package (its dist-info
# directories: no import, so the check stays fast).
python_ready() {
  [ -x "$VENV/bin/python" ] || return 1
  local site
  site=$(echo "$VENV"/lib/python3*/site-packages)
  for spec in "${PYTHON_PACKAGES[@]}"; do
    [ -d "$site/${spec%%==*}-${spec##*==}.dist-info" ] || return 1
  done
}

setup_python() {
  if python_ready; then
    echo "setup: python packages present ($VENV)"
    return 0
  fi
  echo "setup: installing ${PYTHON_PACKAGES[*]} into $VENV (once per machine)"
  if [ ! -x "$VENV/bin/python" ]; then
    mkdir -p "$(dirname "$VENV")"
    python3 -m venv "$VENV"
  fi
  "$VENV/bin/python" -m pip install -q "${PYTHON_PACKAGES[@]}"
  python_ready || { echo "setup: error: $VENV lacks a pinned package" >&2; exit 1; }
  echo "setup: python packages installed"
}

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  setup_python
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
setup_python
echo "setup: done"
