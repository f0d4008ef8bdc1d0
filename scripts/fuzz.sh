#!/usr/bin/env bash
#===- scripts/fuzz.sh - build and run the amp-fuzz libFuzzer target ------===#
#
#   scripts/fuzz.sh [SECONDS] [JOBS]     (defaults: 600 s, 1 job)
#
# Installs clang-22 and its sanitizer runtimes (scripts/setup.sh --sanitize),
# builds tools/amp-fuzz with -fsanitize=fuzzer,address,undefined (all of
# amp's code with coverage instrumentation) in ./build-fuzz, seeds the corpus with every .mlir file of test/ and examples/,
# and runs libFuzzer for SECONDS. Crashes, leaks and timeouts are written to
# build-fuzz/findings/; the corpus grows in build-fuzz/corpus (kept between
# runs). The last lines report executions and findings.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-600}"
jobs="${2:-1}"
build="$root/build-fuzz"

bash "$root/scripts/setup.sh" --sanitize
if [ ! -f "$build/build.ninja" ]; then
  CC=clang-22 CXX=clang++-22 bash "$root/scripts/configure.sh" "$build" \
    -DAMP_ENABLE_FUZZER=ON \
    "-DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined"
fi
cmake --build "$build" --target amp-fuzz

mkdir -p "$build/corpus" "$build/findings"
find "$root/test" "$root/examples" -name '*.mlir' -size -64k \
  -exec cp -n {} "$build/corpus/" \; 2>/dev/null || true

cd "$build"
# allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons its slabs when the
# code that inlines it is built with ASan; ours is, Debian's libMLIR is not,
# so slabs our code created and libMLIR then allocates from (uniqued
# attributes, locations) would report use-after-poison on valid memory.
# MLIR and LLVM themselves are not instrumented; leaks in them at exit are
# not ours to fix here (the context lives for the whole process on purpose).
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:allow_user_poisoning=0"
set +e
./bin/amp-fuzz corpus -max_total_time="$seconds" -jobs="$jobs" -workers="$jobs" \
  -timeout=30 -rss_limit_mb=4096 -max_len=16384 \
  -artifact_prefix="$build/findings/" -print_final_stats=1 2>&1 | tee fuzz.log |
  grep -E "^#[0-9]+ +(INITED|DONE)|stat::|ERROR|SUMMARY|Test unit written" || true
status=${PIPESTATUS[0]}
set -e
echo "fuzz: corpus $(ls corpus | wc -l) inputs, findings: $(ls findings | wc -l)"
exit "$status"
