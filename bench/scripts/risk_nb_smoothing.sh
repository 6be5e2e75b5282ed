#!/usr/bin/env bash
# End-to-end timing of `sdc risk --nb-smoothing` (docs/risk.md "NB smoothing") on a household sample
# of a synthetic census, at the issue's targets: about 100 000 sample uniques with |M| = 125 (three
# ordinal keys, c = 2; target 30 s) and |M| = 2 197 (three ordinal keys, c = 6; target 10 minutes),
# plus |M| = 343 (c = 3) for the growth in |M|. Prints wall times, the step's phases, the NB results and
# the peak memory of every rank.
# Usage: bench/scripts/risk_nb_smoothing.sh [BUILD_DIR] [HOUSEHOLDS] [RADII] [CONFIGS]
#   CONFIGS: "ranks threads" pairs, comma-separated (default "1 2,2 1").
set -euo pipefail
build=${1:-build/release}
households=${2:-1300000}
radii=${3:-"2 3 6"}
configs=${4:-"1 2,2 1"}
sdc=$(realpath "$build/engine/sdc")
work=$(mktemp -d /tmp/sdc-nb-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive SDC_SEED=2026
# Fixed keys: sex, marital status and the 27 nuts3 areas; ordinal keys: age (0..100), education (its
# levels are in their natural order) and household size.
keys=sex,marstat,nuts3,age,education,hsize
ordinal=age,education,hsize

"$sdc" generate census --households "$households" --sample-fraction 0.1 --output "$work/sample.h5" 2>/dev/null
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$sdc" info "$work/sample.h5" | sed -n 's/^rows *//p' | xargs echo "records:"
for c in $radii; do
  IFS=, read -ra config_list <<< "$configs"
  for config in "${config_list[@]}"; do
    set -- $config
    rm -f "$work/out.h5"
    start=$(date +%s.%N)
    launcher=()  # one rank runs as users run it: without mpirun
    [ "$1" -gt 1 ] && launcher=(mpirun -n "$1" --bind-to none)
    "${launcher[@]}" "$sdc" --threads "$2" --log-level debug risk -i "$work/sample.h5" -o "$work/out.h5" \
      --keys "$keys" --weight weight --household hid --nb-smoothing --ordinal-keys "$ordinal" --nb-radius "$c" \
      --report "$work/report.json" 2> "$work/log.txt"
    end=$(date +%s.%N)
    phases=$(grep -o 'risk: [a-z_ ]* took [0-9.]* s' "$work/log.txt" | sed 's/risk: //' | paste -sd';' -)
    summary=$(/usr/bin/python3 -c "
import json
r = json.load(open('$work/report.json'))
nb = r['steps'][0]['results']['nb_smoothing']
print('|M| %d, uniques %d, tau1 %.1f, tau2 %.1f, not converged %d, mean iterations %.2f; peak MiB per rank %s' % (
    nb['neighbourhood_size'], nb['sample_uniques'], nb['tau1'], nb['tau2'], nb['fits_not_converged'],
    nb['mean_iterations'], [round(x / 2**20) for x in r['peak_memory_bytes']]))")
    printf 'c %s ranks %s threads %s: wall %.2f s; %s; %s\n' "$c" "$1" "$2" "$(echo "$end - $start" | bc)" "$phases" "$summary"
  done
done
