#!/usr/bin/env bash
# The dependency audit: every system header the build compiled against and every shared library its
# executables load must come from a Debian package that scripts/install-deps.sh lists or pulls in.
# Fails naming the file, its package and what to add. No network; seconds.
#   scripts/check-deps.sh [--build-dir build/ci] [--without PACKAGE]...
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/dependency_audit.py" "$@"
