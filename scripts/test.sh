#!/usr/bin/env bash
#===- scripts/test.sh - install, configure, build and run every test -----===#
#
# The one command that checks amp on a fresh Debian machine:
#   scripts/test.sh            # build in ./build, run all tests through ctest
# Environment: AMP_BUILD_DIR (default ./build), AMP_JOBS (default: nproc).
#
#===----------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${AMP_BUILD_DIR:-$root/build}"
jobs="${AMP_JOBS:-$(nproc)}"

bash "$root/scripts/setup.sh"
bash "$root/scripts/configure.sh" "$build"
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs"
