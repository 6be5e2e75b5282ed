#!/usr/bin/env bash
# End-to-end timing of `sdc pram` of two variables (marstat, education; reference construction) on about
# 5 million records: a household sample (10%) of a synthetic census of 17 million households, unstratified
# and stratified by nuts2 (9 strata). Prints wall times, the step's phases and the peak memory of every
# rank. Usage: bench/scripts/pram_end_to_end.sh [BUILD_DIR] [HOUSEHOLDS]
set -euo pipefail
build=${1:-build/release}
households=${2:-17000000}
sdc=$(realpath "$build/engine/sdc")
work=$(mktemp -d /tmp/sdc-pram-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive SDC_SEED=2026

"$sdc" generate census --households "$households" --sample-fraction 0.1 --output "$work/sample.h5" 2>/dev/null
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$sdc" info "$work/sample.h5" | sed -n 's/^rows *//p' | xargs echo "records:"
for strata in "" "nuts2"; do
  for config in "1 2" "1 1" "2 1"; do
    set -- $config
    for run in 1 2; do
      rm -f "$work/out.h5"
      start=$(date +%s.%N)
      launcher=()  # one rank runs as users run it: without mpirun
      [ "$1" -gt 1 ] && launcher=(mpirun -n "$1" --bind-to none)
      "${launcher[@]}" "$sdc" --threads "$2" --log-level debug pram -i "$work/sample.h5" -o "$work/out.h5" \
        --variables marstat,education ${strata:+--strata "$strata"} --report "$work/report.json" 2> "$work/log.txt"
      end=$(date +%s.%N)
      phases=$(grep -o 'pram: [a-z :,]* took [0-9.]* s' "$work/log.txt" | sed 's/pram: //' | paste -sd';' -)
      peaks=$(/usr/bin/python3 -c "import json; print([round(x/2**20) for x in json.load(open('$work/report.json'))['peak_memory_bytes']])")
      printf 'strata [%s] ranks %s threads %s run %s: wall %.2f s; %s; peak MiB per rank %s\n' "$strata" "$1" "$2" "$run" \
        "$(echo "$end - $start" | bc)" "$phases" "$peaks"
    done
  done
done
