#!/usr/bin/env bash
#===- scripts/test.sh - install, configure, build and run every test -----===#
#
# The one command that checks amp on a fresh Debian machine:
#   scripts/test.sh              # build in ./build, run all tests through ctest
#   scripts/test.sh --sanitize   # clang-22 with AddressSanitizer and
#                                # UndefinedBehaviorSanitizer in ./build-asan,
#                                # every test under them
# Environment: AMP_BUILD_DIR (default ./build or ./build-asan), AMP_JOBS
# (default: nproc).
#
#===----------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${AMP_JOBS:-$(nproc)}"

if [ "${1:-}" = "--sanitize" ]; then
  build="${AMP_BUILD_DIR:-$root/build-asan}"
  bash "$root/scripts/setup.sh" --sanitize
  if [ ! -f "$build/build.ninja" ]; then
    flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    CC=clang-22 CXX=clang++-22 bash "$root/scripts/configure.sh" "$build" \
      "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags" \
      "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
      "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined"
  fi
  # allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons its slabs when the
  # code that inlines it is built with ASan; ours is, Debian's libMLIR is not,
  # so slabs our code created and libMLIR then allocates from (uniqued
  # attributes, locations) would report use-after-poison on valid memory.
  # Debian's libMLIR/libLLVM are not instrumented and keep process-lifetime
  # allocations (pass registries, the JIT); leaks are checked separately
  # (valgrind, docs/robustness.md). Everything else ASan/UBSan find fails.
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allow_user_poisoning=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
else
  build="${AMP_BUILD_DIR:-$root/build}"
  bash "$root/scripts/setup.sh"
  bash "$root/scripts/configure.sh" "$build"
fi
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs"
