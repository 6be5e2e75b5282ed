#!/usr/bin/env bash
# Where the time of a whole `sdc risk` goes: the same command on generated censuses of about 1.19 and
# 5.95 million persons (400 000 and 2 000 000 households), keys sex, age, marstat, citizenship, lau2,
# design weights; plain, with household risk (--household hid) and with l-diversity of one sensitive
# variable (--sensitive occupation); one process with 2 threads (1x2) and 2 ranks with one thread each
# (2x1). For every run: the wall time of the whole command, from process start to exit, and the step's
# phases from --log-level debug (read, input digest, frequency counts, individual risk, global risk and
# threshold, household risk, l-diversity, write); per configuration the median of RUNS runs.
# The frequency-count phase of the 1x2 runs is the kernel the issue's targets compare with: on one rank
# it is frequency_count_local and _assign on the rows read, nothing else.
# Usage: bench/scripts/risk_breakdown.sh [BUILD_DIR] [RUNS] [SIZES]   (SIZES: households, default "400000 2000000")
set -euo pipefail
build=${1:-build/release}
runs=${2:-3}
sizes=${3:-400000 2000000}
sdc=$(realpath "$build/engine/sdc")
work=$(mktemp -d /tmp/sdc-risk-breakdown-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive SDC_SEED=2026
keys=sex,age,marstat,citizenship,lau2

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "build: $build ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt"))"
for households in $sizes; do
  census="$work/census-$households.h5"
  "$sdc" generate census --households "$households" --output "$census" 2>/dev/null
  records=$("$sdc" info "$census" | sed -n 's/^rows *//p')
  for variant in plain household l-diversity; do
    extra=()
    [ "$variant" = household ] && extra=(--household hid)
    [ "$variant" = l-diversity ] && extra=(--sensitive occupation)
    for config in "1 2" "2 1"; do
      set -- $config
      launcher=()  # one rank runs as users run it: without mpirun
      [ "$1" -gt 1 ] && launcher=(mpirun -n "$1" --bind-to none)
      : > "$work/runs.txt"
      for run in $(seq "$runs"); do
        rm -f "$work/out.h5"
        start=$(date +%s.%N)
        "${launcher[@]}" "$sdc" --threads "$2" --log-level debug risk -i "$census" -o "$work/out.h5" \
          --keys "$keys" --weight weight "${extra[@]}" 2> "$work/log.txt" >/dev/null
        end=$(date +%s.%N)
        phases=$(grep -o 'risk: [a-z -]* took [0-9.]* s' "$work/log.txt" | sed 's/risk: //; s/ took / /; s/ s$//' |
          paste -sd';' -)
        echo "$(echo "$end - $start" | bc);$phases" >> "$work/runs.txt"
      done
      /usr/bin/python3 - "$work/runs.txt" "$records" "$variant" "$1x$2" <<'EOF'
import statistics, sys
path, records, variant, config = sys.argv[1:]
walls, phases = [], {}
for line in open(path):
    fields = line.strip().split(";")
    walls.append(float(fields[0]))
    for field in fields[1:]:
        name, _, seconds = field.rpartition(" ")
        phases.setdefault(name, []).append(float(seconds))
median = statistics.median
shown = "; ".join(f"{name} {median(values):.3f}" for name, values in phases.items())
print(f"{records} records, {variant:11s} {config}: wall {median(walls):.2f} s "
      f"(runs {', '.join(f'{w:.2f}' for w in walls)}); phases (median s): {shown}")
EOF
    done
  done
done
