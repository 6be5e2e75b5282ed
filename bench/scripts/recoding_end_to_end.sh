#!/usr/bin/env bash
# End-to-end timing of the recoding family (docs/recoding.md):
# - `sdc anonymize` on the shared adult data replicated 100 times (3 016 200 records), its 8 keys with
#   their shared hierarchies: k = 5 (every tuple occurs 100 times: one node checked), k = 500 without and
#   with 2 % suppression (the lattice of adult at k = 5);
# - `sdc suppress` to k = 3 on a synthetic census of HOUSEHOLDS households (default 3 400 000: about 10.1
#   million persons) with 6 keys.
# Prints wall times, the steps' phases and the peak memory. Needs ../shared/data (adult) beside the
# checkout for the first part, which is skipped without it.
# Usage: bench/scripts/recoding_end_to_end.sh [BUILD_DIR] [HOUSEHOLDS]
set -euo pipefail
build=${1:-build/release}
households=${2:-3400000}
sdc=$(realpath "$build/engine/sdc")
shared=$(realpath "$(dirname "$0")/../../../shared/data" 2>/dev/null || true)
work=$(mktemp -d /tmp/sdc-recoding-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMP_WAIT_POLICY=passive SDC_SEED=20261127
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"

timed() {  # label, then the sdc arguments
  local label=$1
  shift
  rm -f "$work/out.h5"
  /usr/bin/time -f '%e %M' -o "$work/time.txt" "$sdc" --log-level debug "$@" -o "$work/out.h5" 2> "$work/log.txt"
  read -r wall peak < "$work/time.txt"
  phases=$(grep -o '[a-z]*: [a-z ]* took [0-9.]* s' "$work/log.txt" | sed 's/^[a-z]*: //' | paste -sd';' -)
  summary=$(grep -o '\] [a-z]*: [0-9].*' "$work/log.txt" | tail -1 | sed 's/^\] //')
  printf '%s: wall %s s, peak %d MiB; %s\n  %s\n' "$label" "$wall" "$((peak / 1024))" "$phases" "$summary"
}

if [ -f "$shared/adult.csv.gz" ]; then
  /usr/bin/python3 - "$shared/adult.csv.gz" "$work/adult100.csv" <<'PY'
import gzip, sys
lines = gzip.open(sys.argv[1], "rt").read().splitlines()
with open(sys.argv[2], "w") as out:
    out.write(lines[0] + "\n")
    body = "\n".join(lines[1:]) + "\n"
    for _ in range(100):
        out.write(body)
PY
  "$sdc" import "$work/adult100.csv" -o "$work/adult100.h5" 2>/dev/null
  rm "$work/adult100.csv"
  keys=sex,age,race,marital-status,education,native-country,workclass,occupation
  for run in 1 2 3; do
    timed "adult x100 k 5 run $run" anonymize -i "$work/adult100.h5" --keys "$keys" --hierarchies "$shared" \
      --k-anonymity 5
    timed "adult x100 k 500 run $run" anonymize -i "$work/adult100.h5" --keys "$keys" --hierarchies "$shared" \
      --k-anonymity 500
    timed "adult x100 k 500 2% run $run" anonymize -i "$work/adult100.h5" --keys "$keys" --hierarchies "$shared" \
      --k-anonymity 500 --max-suppression-percent 2
  done
else
  echo "adult: ../shared/data is absent, skipped"
fi

"$sdc" generate census --households "$households" --output "$work/census.h5" 2>/dev/null
"$sdc" info "$work/census.h5" | sed -n 's/^rows *//p' | xargs echo "census records:"
for run in 1 2 3; do
  timed "census k 3 run $run" suppress -i "$work/census.h5" --keys sex,agegroup,marstat,citizenship,education,nuts3 \
    --k-anonymity 3
done
