#!/usr/bin/env bash
# Fuzzes the spec front end (tests/fuzz/spec_fuzzer.cpp) under ASan+UBSan for a bounded
# time. Usage: scripts/fuzz.sh [SECONDS, default 60]. Exits non-zero on any finding;
# the crashing input is left in the build directory as crash-* / timeout-* / oom-*.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
build="${OLLIE_FUZZ_BUILD_DIR:-$PWD/build-fuzz}"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
CXX=clang++ cmake -S . -B "$build" "${generator[@]}" -DOLLIE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined" >/dev/null
cmake --build "$build" --target spec_fuzzer -j "${OLLIE_FUZZ_JOBS:-2}"

# The libraries carry coverage instrumentation (fuzzer-no-link) so libFuzzer can steer into
# the parser, elaborator and interpreter, not just this file.
# libFuzzer adds new inputs to its corpus directory: work on a copy, keep the seeds clean.
corpus="$build/corpus"
mkdir -p "$corpus"
cp tests/fuzz/corpus/* "$corpus/"

cd "$build"
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
ASAN_OPTIONS=detect_leaks=1 \
  ./spec_fuzzer "$corpus" -dict="$OLDPWD/tests/fuzz/spec.dict" -max_total_time="$seconds" \
  -timeout=5 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 -artifact_prefix="$build/"
