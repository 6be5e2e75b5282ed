#!/usr/bin/env bash
# End-to-end timing of `sdc risk --suda2` on about 1 million persons (a synthetic census of 340 000
# households) with 8 keys and maximum MSU size 4 — the issue's target is under 2 minutes. Prints the
# wall time, the step's phases (the suda2 phase is the measure) and the peak memory of every rank.
# Usage: bench/scripts/risk_suda2.sh [BUILD_DIR] [CONFIGS]   e.g. CONFIGS="1 2;2 1" (ranks threads)
set -euo pipefail
build=${1:-build/release}
configs=${2:-"1 2;1 1;2 1"}
sdc=$(realpath "$build/engine/sdc")
work=$(mktemp -d /tmp/sdc-suda2-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive SDC_SEED=2026
keys=sex,age,marstat,citizenship,lau2,education,occupation,htype

"$sdc" generate census --households 340000 --output "$work/census.h5" 2>/dev/null
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$sdc" info "$work/census.h5" | sed -n 's/^rows *//p' | xargs echo "records:"
IFS=';' read -ra list <<< "$configs"
for config in "${list[@]}"; do
  set -- $config
  rm -f "$work/out.h5"
  start=$(date +%s.%N)
  launcher=()  # one rank runs as users run it: without mpirun
  [ "$1" -gt 1 ] && launcher=(mpirun -n "$1" --bind-to none)
  "${launcher[@]}" "$sdc" --threads "$2" --log-level debug risk -i "$work/census.h5" -o "$work/out.h5" \
    --keys "$keys" --household hid --suda2 --suda2-max-size 4 --report "$work/report.json" 2> "$work/log.txt"
  end=$(date +%s.%N)
  phases=$(grep -o 'risk: [a-z0-9 ]* took [0-9.]* s' "$work/log.txt" | sed 's/risk: //' | paste -sd';' -)
  summary=$(/usr/bin/python3 -c "
import json; r = json.load(open('$work/report.json')); s = r['steps'][0]['results']['suda2']
print('U', s['U'], 'D', s['D'], 'records_with_msu', s['records_with_msu'], 'msus', s['msus'],
      'peak MiB per rank', [round(x / 2**20) for x in r['peak_memory_bytes']])")
  printf 'ranks %s threads %s: wall %.2f s; %s; %s\n' "$1" "$2" "$(echo "$end - $start" | bc)" "$phases" "$summary"
done
