#!/usr/bin/env bash
# Run `check` on many random inputs (seeds 1000, 1001, ...: the same ones
# each run, so a failure can be repeated): a criterion that passes on one
# seed can still fail on 1 in 20 (the backward's did, on small problems,
# until its reference followed the kernels' specification).
#
# usage: scripts/seed-sweep.sh RUNNER BUNDLES_DIR SEEDS BUNDLE...
#   checks each bundle with seeds 1000 .. 1000 + SEEDS - 1, prints each
#   failure's FAIL notes and one line per bundle; exit 1 if any failed.
set -uo pipefail
if (($# < 4)); then
  echo "usage: $0 RUNNER BUNDLES_DIR SEEDS BUNDLE..." >&2
  exit 2
fi
runner=$1 bundles=$2 seeds=$3
shift 3
if ! [[ $seeds =~ ^[1-9][0-9]*$ ]]; then
  echo "error: SEEDS must be a positive integer, not '$seeds'" >&2
  exit 2
fi
failed=0
for bundle in "$@"; do
  failures=0
  for ((seed = 1000; seed < 1000 + seeds; ++seed)); do
    if ! output=$("$runner" check --bundle "$bundles/$bundle" --seed "$seed" 2>&1); then
      failures=$((failures + 1))
      echo "-- $bundle seed $seed"
      # The FAIL notes, else (element mismatches, a crash) the last lines.
      reasons=$(grep -E "FAIL|error|^  rel-L2" <<<"$output" | grep -v "^  FAIL (")
      [[ -n $reasons ]] || reasons=$(tail -5 <<<"$output")
      cut -c1-300 <<<"$reasons"
    fi
  done
  echo "seed sweep $bundle: $failures of $seeds failed"
  ((failures == 0)) || failed=1
done
exit $failed
