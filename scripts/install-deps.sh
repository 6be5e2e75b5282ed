#!/usr/bin/env bash
# Installs the Debian 12 packages sdc-engine builds, tests and runs with — exactly those, without
# recommends, and only the ones missing. Runs `apt-get update` only when a package must be installed
# and the package lists are empty or do not know it. Needs root (or sudo).
#
# This list is the only place a dependency is installed from: scripts/check-deps.sh (run by the test
# command) fails when the build compiles against a header or loads a library from a package that is
# neither listed here nor pulled in by one listed here. `install-deps.sh --list` prints the list.
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build pkg-config make git
  # MPI and parallel HDF5 (configure refuses a serial HDF5)
  openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools
  # libraries
  libtbb-dev libeigen3-dev libabsl-dev librandom123-dev libyaml-cpp-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev
  libssl-dev zlib1g-dev libdeflate-dev
  # sparse Cholesky (CHOLMOD), the direct solver that table adjustment is checked and timed against
  libsuitesparse-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev libbenchmark-tools
  # the partitioners block-angular reordering is compared with (benchmark only)
  libtrilinos-zoltan-dev libmetis-dev libscotch-dev
  # test helpers: report validation (JSON Schema) and independent HDF5 reads, with Debian's python
  python3 python3-jsonschema python3-h5py
  # style checks of the test command (scripts/check-style.sh)
  clang-format clang-tidy
  # the cluster test: a private single-node Slurm (scripts/slurm/)
  slurm-wlm munge
  # the report test: the HTML report rendered headless (its DOM dumped, a screenshot counted by PIL)
  chromium python3-pil
)

if [ "${1:-}" = "--list" ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages are installed"
  exit 0
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: needs root to install: ${missing[*]}" >&2; exit 1; }
  as_root=(sudo)
fi

lists_known() {
  for package in "${missing[@]}"; do
    apt-cache show "$package" >/dev/null 2>&1 || return 1
  done
}
if ! lists_known; then
  echo "install-deps: updating the package lists"
  "${as_root[@]}" apt-get update -qq
fi

echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
