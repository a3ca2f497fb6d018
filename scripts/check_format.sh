#!/usr/bin/env bash
# The formatting check: every C++ file of ollie's own code is as clang-format leaves it
# (the rule is .clang-format at the repository root). `--fix` rewrites them instead.
# Left out, on purpose: files whose bytes are data, not code we format —
#   src/emit/kernel_math.h and src/measure/peak_kernels.cc are pasted verbatim into
#   emitted kernels and calibration programs (their text is part of the output), and the
#   kernels under tests/ (red team, blue team, e2e) are candidate kernels as written.
set -euo pipefail
cd "$(dirname "$0")/.."

CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
if ! command -v "$CLANG_FORMAT" >/dev/null; then
  echo "check_format: $CLANG_FORMAT not found; scripts/setup.sh installs it (Debian package clang-format)" >&2
  exit 1
fi

mapfile -t files < <(git ls-files -- '*.cpp' '*.h' '*.cc' \
  | grep -v -e '^src/emit/kernel_math\.h$' -e '^src/measure/peak_kernels\.cc$' \
            -e '^tests/redteam/' -e '^tests/blueteam/' -e '/kernels/')
if [ ${#files[@]} -eq 0 ]; then
  echo "check_format: no C++ files found (is this a git checkout?)" >&2
  exit 1
fi

if [ "${1:-}" = "--fix" ]; then
  "$CLANG_FORMAT" -i --style=file "${files[@]}"
  exit 0
fi
if ! "$CLANG_FORMAT" --dry-run --Werror --style=file "${files[@]}"; then
  echo "check_format: the files above are not formatted; run scripts/check_format.sh --fix" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted as .clang-format says"
