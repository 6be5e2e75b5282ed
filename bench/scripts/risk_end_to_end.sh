#!/usr/bin/env bash
# End-to-end timing of `sdc risk` on about 5 million records with 8 keys and design weights: a
# household sample (10%) of a synthetic census of 17 million households. Prints wall times, the
# step's phases and the peak memory of every rank. Usage: bench/scripts/risk_end_to_end.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build/release}
sdc=$(realpath "$build/engine/sdc")
work=$(mktemp -d /tmp/sdc-risk-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive SDC_SEED=2026
keys=sex,age,marstat,citizenship,lau2,education,occupation,htype

"$sdc" generate census --households 17000000 --sample-fraction 0.1 --output "$work/sample.h5" 2>/dev/null
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$sdc" info "$work/sample.h5" | sed -n 's/^rows *//p' | xargs echo "records:"
for config in "1 2" "1 1" "2 1"; do
  set -- $config
  for run in 1 2 3; do
    rm -f "$work/out.h5"
    start=$(date +%s.%N)
    launcher=()  # one rank runs as users run it: without mpirun
    [ "$1" -gt 1 ] && launcher=(mpirun -n "$1" --bind-to none)
    "${launcher[@]}" "$sdc" --threads "$2" --log-level debug risk -i "$work/sample.h5" -o "$work/out.h5" \
      --keys "$keys" --weight weight --household hid --report "$work/report.json" 2> "$work/log.txt"
    end=$(date +%s.%N)
    phases=$(grep -o 'risk: [a-z ]* took [0-9.]* s' "$work/log.txt" | sed 's/risk: //' | paste -sd';' -)
    peaks=$(/usr/bin/python3 -c "import json; print([round(x/2**20) for x in json.load(open('$work/report.json'))['peak_memory_bytes']])")
    printf 'ranks %s threads %s run %s: wall %.2f s; %s; peak MiB per rank %s\n' "$1" "$2" "$run" "$(echo "$end - $start" | bc)" "$phases" "$peaks"
  done
done
