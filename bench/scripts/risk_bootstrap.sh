#!/usr/bin/env bash
# End-to-end timing of `sdc risk --bootstrap` (the issue's target: the cluster bootstrap, B = 1000, of the
# global risk on 1 million records in under 15 s). A synthetic census of 340 000 households (about
# 1 million persons), five keys, households as resampling units. Prints the wall time of the whole step,
# the bootstrap phase alone (from the debug log) and the peak memory of every rank.
# Usage: bench/scripts/risk_bootstrap.sh [BUILD_DIR] [REPLICATES]
set -euo pipefail
build=${1:-build/release}
replicates=${2:-1000}
sdc=$(realpath "$build/engine/sdc")
work=$(mktemp -d /tmp/sdc-bootstrap-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive SDC_SEED=2026
keys=sex,age,marstat,citizenship,lau2

"$sdc" generate census --households 340000 --output "$work/census.h5" 2>/dev/null
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$sdc" info "$work/census.h5" | sed -n 's/^rows *//p' | xargs echo "records:"
for config in "1 2" "1 1" "2 1"; do
  set -- $config
  rm -f "$work/out.h5"
  launcher=()  # one rank runs as users run it: without mpirun
  [ "$1" -gt 1 ] && launcher=(mpirun -n "$1" --bind-to none)
  start=$(date +%s.%N)
  "${launcher[@]}" "$sdc" --threads "$2" --log-level debug risk -i "$work/census.h5" -o "$work/out.h5" \
    --keys "$keys" --household hid --bootstrap "$replicates" --bootstrap-design cluster \
    --report "$work/report.json" 2> "$work/log.txt"
  end=$(date +%s.%N)
  boot=$(grep -o 'risk: bootstrap took [0-9.]* s' "$work/log.txt" | sed 's/risk: //')
  summary=$(/usr/bin/python3 -c "
import json; r = json.load(open('$work/report.json'))
b = r['steps'][0]['results']['bootstrap']['statistics']['global_risk']
print('global risk %.6g, se %.3g, 95%% percentile [%.6g, %.6g]; peak MiB per rank %s' % (b['estimate'], b['standard_error'],
      b['percentile']['lower'], b['percentile']['upper'], [round(x / 2**20) for x in r['peak_memory_bytes']]))")
  printf 'ranks %s threads %s B %s: wall %.2f s (%s); %s\n' "$1" "$2" "$replicates" "$(echo "$end - $start" | bc)" "$boot" "$summary"
done
