#!/usr/bin/env bash
# Block-angular reordering against Zoltan PHG, METIS and Scotch (bench/tables/reordering_comparison.cpp):
# linking size, 100·l/n, imbalance and seconds of every tool at the same k (2, 4, 8) and imbalance (0.05)
# on the generated instances 16x16x16x16, 13x13x13x13, 13x13x7x7, two bts4-sized random hierarchies and
# the small 13x13x13, 16x16x16, 13x13x7, dual form (primal too for ours and Zoltan), median of 3 runs on
# one thread. Builds the executable when it is missing or out of date. Prints the table; with RESULTS_DIR
# also writes it there as reordering_comparison-<date>.txt and .json.
# Usage: bench/scripts/reordering_comparison.sh [BUILD_DIR] [RESULTS_DIR] [FLAGS...]
#   FLAGS go to the executable, e.g. --blocks 2 --forms dual --instances 13x13x7 --repeat 1
set -euo pipefail
build=${1:-build/release}
results=${2:-}
shift $(( $# < 2 ? $# : 2 ))
cmake --build "$build" --target sdc_reordering_comparison >/dev/null
comparison=$(realpath "$build/bench/sdc_reordering_comparison")
export OMP_WAIT_POLICY=passive

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -z "$results" ]; then
  "$comparison" "$@"
  exit 0
fi
mkdir -p "$results"
stem="$results/reordering_comparison-$(date +%Y%m%d-%H%M%S)"
"$comparison" --json "$stem.json" "$@" | tee "$stem.txt"
echo "written: $stem.txt, $stem.json"
