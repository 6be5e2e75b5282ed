#!/usr/bin/env bash
# The demo: install what is missing, build sdc, generate a synthetic census of about a million
# persons, run the default census job (jobs/census.yaml) under `mpirun -n 2`, and print where the
# outputs and the report are. SDC_DEMO_HOUSEHOLDS and SDC_DEMO_OUT change the size and the folder.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release
cmake --build --preset release --target sdc

sdc=build/release/engine/sdc
out=${SDC_DEMO_OUT:-out/demo}
households=${SDC_DEMO_HOUSEHOLDS:-400000}
mkdir -p "$out"
# HWLOC_COMPONENTS=-gl: mpirun's node map would probe X displays, a 5 s DNS wait where /etc/hosts is missing.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive HWLOC_COMPONENTS=-gl
mpi=(mpirun -n 2 --oversubscribe --bind-to none)

[ -f "$out/seed" ] || "$sdc" generate seed --output "$out/seed"
"${mpi[@]}" "$sdc" generate census --households "$households" --seed-file "$out/seed" \
  --output "$out/census.h5" --report "$out/generate-report.json"
"$sdc" info "$out/census.h5"
"${mpi[@]}" "$sdc" run jobs/census.yaml --input "$out/census.h5" --output-dir "$out/census" --seed-file "$out/seed" \
  --report "$out/census/report.json"

echo
echo "census:  $out/census.h5 (generated; report $out/generate-report.json)"
echo "outputs: $out/census/"
echo "report:  $out/census/report.json"
