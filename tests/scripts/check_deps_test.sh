#!/usr/bin/env bash
# scripts/check-deps.sh on a one-file Ninja build: it passes when every header comes from a listed
# package, and fails naming the file, its package and what to add when the package is left out of the
# list, or when a header belongs to no package at all.
set -euo pipefail
repository=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/project/build" "$work/by-hand/include"
echo '#define BY_HAND 1' > "$work/by-hand/include/by_hand.h"
cat > "$work/project/probe.cpp" <<'CPP'
#include <Random123/philox.h>
#include <cstdio>
#ifdef WITH_BY_HAND
#include <by_hand.h>
#endif
int main() {
  r123::Philox4x64 philox;
  r123::Philox4x64::ctr_type counter{{1, 2, 3, 4}};
  r123::Philox4x64::key_type key{{5, 6}};
  std::printf("%llu\n", static_cast<unsigned long long>(philox(counter, key)[0]));
}
CPP
write_build() {
  cat > "$work/project/build/build.ninja" <<NINJA
rule cxx
  command = g++ $1 -MD -MF \$out.d -c \$in -o \$out
  depfile = \$out.d
  deps = gcc
rule link
  command = g++ \$in -o \$out
build probe.o: cxx ../probe.cpp
build probe: link probe.o
NINJA
  ninja -C "$work/project/build" -t clean >/dev/null
  ninja -C "$work/project/build" >/dev/null
}
audit() { "$repository/scripts/check-deps.sh" --source-dir "$work/project" --build-dir "$work/project/build" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

write_build ""
audit > "$work/out" 2>&1 || { cat "$work/out"; fail "the audit rejects a build whose headers all come from listed packages"; }
grep -q "all installed by scripts/install-deps.sh" "$work/out" || fail "no success line: $(cat "$work/out")"

status=0; audit --without librandom123-dev > "$work/out" 2>&1 || status=$?
cat "$work/out"
[ "$status" -eq 1 ] || fail "expected exit 1 without librandom123-dev, got $status"
grep -q "/usr/include/Random123/philox.h" "$work/out" || fail "the unlisted header is not named"
grep -q "from package librandom123-dev" "$work/out" || fail "its package is not named"
grep -q "add librandom123-dev to scripts/install-deps.sh" "$work/out" || fail "what to add is not said"

write_build "-DWITH_BY_HAND -I$work/by-hand/include"
status=0; audit > "$work/out" 2>&1 || status=$?
cat "$work/out"
[ "$status" -eq 1 ] || fail "expected exit 1 for a header installed by hand, got $status"
grep -q "header $work/by-hand/include/by_hand.h belongs to no Debian package" "$work/out" \
  || fail "the hand-installed header is not named"
echo "check-deps test passed"
