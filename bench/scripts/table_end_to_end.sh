#!/usr/bin/env bash
# End-to-end timing of the census tables on a generated census (default 16 820 000 households, about 50
# million persons): record keys, the 5-dimensional hypercube nuts1 > nuts2 > nuts3 x sex x agegroup x
# marstat x citizenship with its cell keys, and the cell key method on its cells (D 3, V 2, js 2).
# Prints each command's wall time, phases and peak memory (/usr/bin/time -v).
# Usage: bench/scripts/table_end_to_end.sh [BUILD_DIR] [HOUSEHOLDS] [THREADS]
set -euo pipefail
build=${1:-build/release}
households=${2:-16820000}
threads=${3:-2}
sdc=$(realpath "$build/engine/sdc")
work=$(mktemp -d /var/tmp/sdc-table-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMP_WAIT_POLICY=passive SDC_SEED=2026

timed() {
  local name=$1
  shift
  /usr/bin/time -v "$@" --log-level debug 2> "$work/$name.log" >/dev/null || { cat "$work/$name.log"; exit 1; }
  local wall peak phases
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/$name.log")
  peak=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/$name.log")
  phases=$(grep -o '[a-z -]*: [a-z ]* took [0-9.]* s' "$work/$name.log" | sed 's/^ *//' | paste -sd';' -)
  printf '%s: wall %s, peak RSS %s kB; %s\n' "$name" "$wall" "$peak" "$phases"
}

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$sdc" generate census --households "$households" --output "$work/census.h5" 2>/dev/null
"$sdc" info "$work/census.h5" | sed -n 's/^rows *//p' | xargs echo "records:"
timed keys "$sdc" --threads "$threads" perturb-table keys -i "$work/census.h5" -o "$work/keyed.h5"
for run in 1 2 3; do
  rm -f "$work/cells.h5"
  timed "tabulate (run $run)" "$sdc" --threads "$threads" table tabulate -i "$work/keyed.h5" -o "$work/cells.h5" \
    --geography nuts1,nuts2,nuts3 --dimensions sex,agegroup,marstat,citizenship --record-key record_key \
    --min-frequency 3 --report "$work/tabulate.json"
done
/usr/bin/python3 -c "import json; r=json.load(open('$work/tabulate.json'))['steps'][0]['results']; print('cells', r['cells'], 'of', r['cell_space'])"
for run in 1 2 3; do
  rm -f "$work/protected.h5"
  timed "ckm (run $run)" "$sdc" --threads "$threads" perturb-table ckm -i "$work/cells.h5" -o "$work/protected.h5" \
    --max-noise 3 --variance 2 --js 2 --report "$work/ckm.json"
done
