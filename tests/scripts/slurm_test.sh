#!/usr/bin/env bash
# The census job through Slurm (label `slurm`): a private single-node Slurm
# (scripts/slurm/local-slurm.sh, on its own ports), a census of 2 000 generated households, the job
# submitted with `sbatch --wait` as scripts/slurm/census.sbatch runs it (2 ranks x 1 thread), and the
# same job run directly by one process with 2 threads. Passes when the batch job exits 0 and every
# data output of the two runs has the same content digest. Skips (exit 77) only with
# SDC_SKIP_SLURM=1, which CI never sets; needs root and the packages of scripts/install-deps.sh.
#   tests/scripts/slurm_test.sh SOURCE_DIR SDC_BINARY
set -euo pipefail
if [ "${SDC_SKIP_SLURM:-0}" = 1 ]; then
  echo "slurm test: skipped (SDC_SKIP_SLURM=1)"
  exit 77
fi
source_dir=$(realpath "$1")
sdc=$(realpath "$2")
work=$(mktemp -d /var/tmp/sdc-slurm-test-XXXXXX)
chmod 755 "$work"
export SDC_SLURM_PORT=${SDC_SLURM_PORT:-16837}
cleanup() {
  "$source_dir/scripts/slurm/local-slurm.sh" stop "$work/slurm" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

"$source_dir/scripts/slurm/local-slurm.sh" start "$work/slurm"
export SLURM_CONF=$work/slurm/slurm.conf

"$sdc" generate seed --output "$work/seed"
"$sdc" generate census --households 2000 --seed-file "$work/seed" --output "$work/census.h5" 2>/dev/null
"$sdc" --threads 2 run "$source_dir/jobs/census.yaml" --input "$work/census.h5" --output-dir "$work/direct" \
  --seed-file "$work/seed" --report "$work/direct/report.json" 2>"$work/direct.log" ||
  { cat "$work/direct.log" >&2; echo "slurm test: the direct run failed" >&2; exit 1; }

status=0
SDC_INPUT=$work/census.h5 SDC_SEED_FILE=$work/seed SDC_OUTPUT_DIR=$work/batch SDC_BINARY=$sdc \
  SDC_JOB=$source_dir/jobs/census.yaml \
  sbatch --wait --quiet --ntasks 2 --cpus-per-task 1 --mem-per-cpu 2G --time 15 --chdir "$work" \
  --output "$work/batch-%j.out" "$source_dir/scripts/slurm/census.sbatch" || status=$?
if [ "$status" -ne 0 ]; then
  cat "$work"/batch-*.out >&2 || true
  echo "slurm test: the batch job exited $status" >&2
  exit 1
fi

compared=0
while IFS= read -r -d '' file; do
  name=${file#"$work/direct/"}
  [ -f "$work/batch/$name" ] || { echo "slurm test: the batch job wrote no $name" >&2; exit 1; }
  direct=$("$sdc" info --digest "$file" | sed -n 's/^content digest *//p')
  batch=$("$sdc" info --digest "$work/batch/$name" | sed -n 's/^content digest *//p')
  [ -n "$direct" ] || { echo "slurm test: no content digest for $name" >&2; exit 1; }
  if [ "$direct" != "$batch" ]; then
    echo "slurm test: $name differs: $direct (direct, 1x2) against $batch (Slurm, 2x1)" >&2
    exit 1
  fi
  compared=$((compared + 1))
done < <(find "$work/direct" -name '*.h5' -print0 | sort -z)
[ "$compared" -gt 0 ] || { echo "slurm test: the direct run wrote no data output" >&2; exit 1; }
echo "slurm test: batch job exit 0; $compared data outputs with the same content digests as the direct run"
