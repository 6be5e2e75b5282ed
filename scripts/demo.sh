#!/usr/bin/env bash
# The demo: install what is missing, build, and run sdc-engine on the embedded example
# (examples/households.csv, a small made-up household file): import it to the HDF5 format, show
# what was stored and its content digest, export it back, and print where outputs and reports are.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release
cmake --build --preset release --target sdc

sdc=build/release/engine/sdc
out=${SDC_DEMO_OUT:-out/demo}
mkdir -p "$out"

"$sdc" generate seed --output "$out/seed"
"$sdc" import examples/households.csv --output "$out/households.h5" \
  --role geography=nuts1,nuts2,nuts3 --role household=hid --role weight=weight \
  --role key=sex,age,marstat,education --role continuous=income \
  --save-schema "$out/households.schema.yaml" --report "$out/import-report.json"
"$sdc" info "$out/households.h5" --digest
"$sdc" export "$out/households.h5" --output "$out/households.csv" --report "$out/export-report.json"

echo
echo "outputs:  $out/households.h5, $out/households.csv, $out/households.schema.yaml, $out/seed"
echo "reports:  $out/import-report.json, $out/export-report.json"
