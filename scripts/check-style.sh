#!/usr/bin/env bash
# The style check of the test command: every C++ file is formatted as .clang-format says, and every
# identifier is named as .clang-tidy says (types CamelCase, functions and variables lower_case,
# members with a trailing underscore, constants kCamelCase). Needs a configured build directory for
# its compile commands. Prints each offence; exits 1 when there is one.
#   scripts/check-style.sh [--build-dir build/ci] [--fix-format]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=build/ci
fix_format=false
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --fix-format) fix_format=true; shift ;;
    *) echo "usage: scripts/check-style.sh [--build-dir DIR] [--fix-format]" >&2; exit 2 ;;
  esac
done
[ -f "$build_dir/compile_commands.json" ] || { echo "check-style: no $build_dir/compile_commands.json: configure first" >&2; exit 2; }

mapfile -t sources < <(git ls-files '*.cpp' '*.h')
if $fix_format; then
  clang-format -i "${sources[@]}"
fi
status=0
if ! clang-format --dry-run --Werror "${sources[@]}" 2> /tmp/check-style-format.$$; then
  grep -E "error:" /tmp/check-style-format.$$ | sed 's/: error: code should be clang-formatted.*//' | sort -u \
    | sed 's/^/check-style: not formatted as .clang-format says (run scripts\/check-style.sh --fix-format): /'
  status=1
fi
rm -f /tmp/check-style-format.$$

mapfile -t units < <(git ls-files '*.cpp')
# GCC's own warning flags in the compile commands mean nothing to clang.
if ! run-clang-tidy -p "$build_dir" -j "$(nproc)" -quiet -extra-arg=-Wno-unknown-warning-option "${units[@]}" \
     > /tmp/check-style-tidy.$$ 2>&1; then
  sed 's/\x1b\[[0-9;]*m//g' /tmp/check-style-tidy.$$ | grep -E "error: .*\[readability-identifier-naming" | sort -u \
    | sed 's/^/check-style: /'
  status=1
fi
rm -f /tmp/check-style-tidy.$$
if [ "$status" -eq 0 ]; then
  echo "check-style: ${#sources[@]} files formatted as .clang-format says; identifiers of ${#units[@]} translation units named as .clang-tidy says"
fi
exit "$status"
