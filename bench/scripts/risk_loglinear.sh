#!/usr/bin/env bash
# End-to-end timing of `sdc risk --loglinear` on about 1 million records (a 50% household sample of a
# synthetic census of 800 000 households) with census keys: the independence model on eight keys, a
# two-way (decomposable) model on six keys and all two-way interactions of four keys; then the
# parametric bootstrap of tau (B = 200) on grids of about 5 600 and 230 000 cells. Prints wall times
# and the step's phases. Usage: [BOOTSTRAP_ONLY=1] bench/scripts/risk_loglinear.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build/release}
sdc=$(realpath "$build/engine/sdc")
work=$(mktemp -d /tmp/sdc-loglinear-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive SDC_SEED=2026

"$sdc" generate census --households 800000 --sample-fraction 0.5 --output "$work/sample.h5" 2>/dev/null
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$sdc" info "$work/sample.h5" | sed -n 's/^rows *//p' | xargs echo "records:"

run() {  # label, then the flags of sdc risk
  local label=$1
  shift
  rm -f "$work/out.h5"
  start=$(date +%s.%N)
  "$sdc" --log-level debug risk -i "$work/sample.h5" -o "$work/out.h5" --weight weight --household hid \
    --report "$work/report.json" "$@" 2> "$work/log.txt"
  end=$(date +%s.%N)
  phases=$(grep -o 'risk: [a-z ]* took [0-9.]* s' "$work/log.txt" | sed 's/risk: //' | paste -sd';' -)
  summary=$(/usr/bin/python3 -c "
import json; r = json.load(open('$work/report.json'))['steps'][0]['results']['loglinear']
print('grid %d, sweeps %d, uniques %d, tau1 %.2f, tau2 %.2f' % (r['grid_cells'], r['sweeps'], r['sample_uniques'], r['tau1'], r['tau2']))")
  printf '%s: wall %.2f s; %s; %s\n' "$label" "$(echo "$end - $start" | bc)" "$summary" "$phases"
}

keys8=sex,age,marstat,citizenship,lau2,education,occupation,htype
[ "${BOOTSTRAP_ONLY:-0}" = 1 ] || run "independence, 8 keys" --keys "$keys8" --loglinear independence
[ "${BOOTSTRAP_ONLY:-0}" = 1 ] || run "two-way chain, 6 keys" --keys sex,age,marstat,citizenship,education,occupation \
  --loglinear "sex*age+age*marstat+age*citizenship+age*education+education*occupation"
[ "${BOOTSTRAP_ONLY:-0}" = 1 ] || run "all two-way, 4 keys" --keys sex,age,marstat,education --loglinear two-way
run "bootstrap B=200, all two-way, 4 keys" --keys sex,age,marstat,education --loglinear two-way \
  --loglinear-sampling-fraction 0.5 --loglinear-bootstrap 200
run "bootstrap B=200, independence, 5 keys" --keys sex,age,marstat,citizenship,education --loglinear independence \
  --loglinear-sampling-fraction 0.5 --loglinear-bootstrap 200
