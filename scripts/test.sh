#!/usr/bin/env bash
# Builds ollie and runs every test: GoogleTest unit and end-to-end tests (CTest), a
# bounded run of the spec fuzzer, the numpy cross-checks and the Python package's tests
# (pytest; the main build also builds the package's extension module).
# Run scripts/setup.sh first (the README's test command does both).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${OLLIE_BUILD_DIR:-build}
FUZZ_SECONDS=${OLLIE_FUZZ_SECONDS:-40}
JOBS=${OLLIE_JOBS:-$(nproc)}

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOLLIE_WERROR=ON
cmake --build "$BUILD_DIR" -j "$JOBS"

echo "== unit and end-to-end tests (ctest)"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS"

echo "== spec front end and reference fuzzing (${FUZZ_SECONDS}s)"
scripts/fuzz.sh "$FUZZ_SECONDS"

echo "== numpy cross-checks and the Python package (pytest)"
OLLIE_BIN="$PWD/$BUILD_DIR/ollie" OLLIE_BUILD_DIR="$BUILD_DIR" .venv/bin/python -m pytest \
  tests/numpy tests/python -q -n "$JOBS"
