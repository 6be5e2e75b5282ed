#!/usr/bin/env bash
# The test command: install what is missing, build (warnings are errors), audit the build's
# dependencies against scripts/install-deps.sh, check formatting and naming, run every test but `slow`.
# Each phase prints its duration, so that the CI budget (docs/development.md) can be watched.
set -euo pipefail
cd "$(dirname "$0")/.."

phase() {
  local name=$1
  shift
  local start=$SECONDS
  "$@"
  echo "test.sh: ${name} took $((SECONDS - start)) s"
}

phase install scripts/install-deps.sh
phase configure cmake --preset ci
phase build cmake --build --preset ci
phase check-deps scripts/check-deps.sh --build-dir build/ci
phase check-style scripts/check-style.sh --build-dir build/ci
phase ctest ctest --preset ci --parallel "$(nproc)" "$@"
echo "test.sh: all phases took ${SECONDS} s"
