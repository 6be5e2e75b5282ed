#!/usr/bin/env bash
# The fresh-machine test: runs one of the README's two commands on a fresh Debian 12 root, as a new
# user would, to prove that the project installs everything it needs.
#
#   scripts/fresh-machine-test.sh [test|demo|root]   (default: test; needs root and the network)
#
# It builds a minimal Debian 12 root with debootstrap from this machine's configured Debian mirror
# (cached between runs), adds only git, clones the current commit (HEAD: uncommitted changes are not
# part of it) with ../shared beside it, and runs `scripts/test.sh` or `scripts/demo.sh` inside it,
# in a chroot with /proc, /sys and /dev bound. The last line says PASSED or FAILED, the wall time
# and the log. `root` only builds the cached root.
#
# Environment: SDC_FRESH_CACHE (default ~/.cache/sdc-engine/fresh-machine) holds the cached root and
# the logs; SDC_FRESH_MIRROR overrides the mirror; SDC_FRESH_KEEP=1 keeps the root after the run.
set -euo pipefail

mode=${1:-test}
case "$mode" in
  test) command_line=scripts/test.sh ;;
  demo) command_line=scripts/demo.sh ;;
  root) command_line="" ;;
  *) echo "usage: scripts/fresh-machine-test.sh [test|demo|root]" >&2; exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || { echo "fresh-machine-test: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }

repository=$(cd "$(dirname "$0")/.." && pwd)
shared=$(cd "$repository/.." && pwd)/shared
suite=bookworm
cache=${SDC_FRESH_CACHE:-$HOME/.cache/sdc-engine/fresh-machine}
mkdir -p "$cache/logs"
say() { echo "fresh-machine-test: $*"; }

configured_mirror() {
  local uri=""
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri=$(awk '$1 == "deb" && $0 !~ /security/ {print ($2 ~ /^\[/ ? $3 : $2); exit}' /etc/apt/sources.list)
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}
mirror=${SDC_FRESH_MIRROR:-$(configured_mirror)}

if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap (the test's own tool, not a project dependency)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
fi

commit=$(git -C "$repository" rev-parse HEAD)
if [ -n "$(git -C "$repository" status --porcelain --untracked-files=no)" ]; then
  say "the working tree has uncommitted changes; this tests commit ${commit:0:12} without them"
fi

work=$(mktemp -d /var/tmp/sdc-fresh-machine.XXXXXX)
root=$work/root
unmount_all() {
  # Deepest mounts first; --lazy only if a process still holds one.
  { findmnt -rn -o TARGET | grep -F "$root/" || true; } | sort -r | while read -r target; do
    umount "$target" 2>/dev/null || umount --lazy "$target"
  done
}
cleanup() {
  unmount_all
  if findmnt -rn -o TARGET | grep -qF "$root/"; then
    say "mounts remain under $root; not removing it"
  elif [ "${SDC_FRESH_KEEP:-0}" = 1 ]; then
    say "kept the root at $root"
  else
    rm -rf --one-file-system "$work"
  fi
}
trap cleanup EXIT

in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}
mount_system() {
  mount -t proc proc "$root/proc"
  mount -t sysfs sysfs "$root/sys"
  mount --rbind /dev "$root/dev"
  mount --make-rslave "$root/dev"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
}

# ---- the cached root: minbase Debian 12 plus git, nothing else ----------------------------------
base=$cache/debian-$suite-minbase-git.tar.gz
if [ ! -f "$base" ]; then
  say "building a minimal Debian 12 root from $mirror (cached as $base)"
  mkdir -p "$root"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" > "$cache/logs/debootstrap.log" 2>&1 \
    || { tail -20 "$cache/logs/debootstrap.log"; say "FAILED: debootstrap (log $cache/logs/debootstrap.log)"; exit 1; }
  # The same package sources as this machine (updates and security included), so the root sees the
  # versions this machine's CI sees.
  rm -f "$root/etc/apt/sources.list"
  [ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$root/etc/apt/sources.list"
  [ -d /etc/apt/sources.list.d ] && cp -r /etc/apt/sources.list.d/. "$root/etc/apt/sources.list.d/"
  mount_system
  in_root apt-get update -qq
  in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends git \
    > "$cache/logs/git-install.log" 2>&1
  # A fresh machine has no package lists and no downloaded packages.
  in_root apt-get clean
  rm -rf "$root"/var/lib/apt/lists/*
  unmount_all
  tar -C "$root" -czf "$base.partial" . && mv "$base.partial" "$base"
  rm -rf --one-file-system "$root"
fi
if [ "$mode" = root ]; then
  say "the cached root is $base ($(du -h "$base" | cut -f1))"
  exit 0
fi

# ---- this run: a new root from the cache, the clone, the README's command ---------------------
mkdir -p "$root"
tar -C "$root" -xzf "$base"
mount_system
mkdir -p "$root/mnt/origin" "$root/srv/sdc"
mount --bind "$repository" "$root/mnt/origin"
mount -o remount,bind,ro "$root/mnt/origin"
if [ -d "$shared" ]; then
  mkdir -p "$root/srv/sdc/shared"
  mount --bind "$shared" "$root/srv/sdc/shared"
  mount -o remount,bind,ro "$root/srv/sdc/shared"
else
  say "no $shared beside the repository: tests that need it will skip"
fi
in_root git -c safe.directory='*' clone -q /mnt/origin /srv/sdc/sdc-engine
in_root git -C /srv/sdc/sdc-engine -c advice.detachedHead=false checkout -q "$commit"
umount "$root/mnt/origin"

log=$cache/logs/$mode-$(date -u +%Y%m%dT%H%M%SZ)-${commit:0:12}.log
say "running '$command_line' for commit ${commit:0:12} in a fresh Debian 12 root ($(nproc) cores); log $log"
start=$(date +%s)
status=0
in_root bash -c "cd /srv/sdc/sdc-engine && $command_line" > "$log" 2>&1 || status=$?
elapsed=$(( $(date +%s) - start ))
wall="$((elapsed / 60)) min $((elapsed % 60)) s"
tail -15 "$log"
if [ "$status" -eq 0 ]; then
  say "$mode PASSED on a fresh Debian 12 root in $wall ($(nproc) cores, commit ${commit:0:12}, log $log)"
else
  say "$mode FAILED with exit $status on a fresh Debian 12 root after $wall ($(nproc) cores, commit ${commit:0:12}, log $log)"
fi
exit "$status"
