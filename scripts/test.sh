#!/usr/bin/env bash
# The test command: install what is missing, build (warnings are errors), audit the build's
# dependencies against scripts/install-deps.sh, check formatting and naming, run every test but `slow`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset ci
cmake --build --preset ci
scripts/check-deps.sh --build-dir build/ci
scripts/check-style.sh --build-dir build/ci
ctest --preset ci --parallel "$(nproc)" "$@"
