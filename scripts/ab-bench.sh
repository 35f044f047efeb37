#!/usr/bin/env bash
# Same-run A/B of two bundle sets: for ROUNDS rounds, times every BUNDLE
# from DIR_A and then from DIR_B (`RUNNER bench --bundle DIR/BUNDLE`,
# alternating, so clock and thermal drift fall on both sides), then prints
# one line per bundle with every round's median (ms) on each side and the
# change of B against A (the median over rounds of B's time / A's time).
# This is how PERF.md's "old vs new" tables are measured.
#
# usage: scripts/ab-bench.sh RUNNER DIR_A DIR_B ROUNDS BUNDLE...
#   env: AB_ITERS (default 30), AB_WARMUP (default 5), AB_OUT (a directory
#   for the JSON of every run; default: a temporary one, removed),
#   AB_CHECKED=1 (the caller checked every bundle in this round; otherwise
#   each is checked with `RUNNER check` before anything is timed)
# Exit 1 if any check or bench fails (its output is shown), 2 on bad
# arguments.
set -uo pipefail
if (($# < 5)); then
  echo "usage: $0 RUNNER DIR_A DIR_B ROUNDS BUNDLE..." >&2
  exit 2
fi
runner=$1 dir_a=$2 dir_b=$3 rounds=$4
shift 4
if ! [[ $rounds =~ ^[1-9][0-9]*$ ]]; then
  echo "error: ROUNDS must be a positive integer, not '$rounds'" >&2
  exit 2
fi
for dir in "$dir_a" "$dir_b"; do
  [[ -d $dir ]] || { echo "error: no bundle directory '$dir'" >&2; exit 2; }
done
for bundle in "$@"; do
  for dir in "$dir_a" "$dir_b"; do
    [[ -f $dir/$bundle/manifest.json ]] ||
      { echo "error: no bundle '$bundle' in '$dir'" >&2; exit 2; }
  done
done
out=${AB_OUT:-}
if [[ -z $out ]]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
failed=0
# No timing of a kernel that computes the wrong answer.
if [[ ${AB_CHECKED:-0} != 1 ]]; then
  for bundle in "$@"; do
    for dir in "$dir_a" "$dir_b"; do
      if ! log=$("$runner" check --bundle "$dir/$bundle" 2>&1); then
        echo "error: check $dir/$bundle failed:" >&2
        echo "$log" >&2
        failed=1
      fi
    done
  done
  ((failed)) && exit 1
fi
for ((round = 1; round <= rounds; ++round)); do
  for bundle in "$@"; do
    for side in a b; do
      dir=$dir_a
      [[ $side == b ]] && dir=$dir_b
      json="$out/$bundle.$side.$round.json"
      if ! log=$("$runner" bench --bundle "$dir/$bundle" --iters "${AB_ITERS:-30}" \
                   --warmup "${AB_WARMUP:-5}" --json "$json" 2>&1); then
        echo "error: bench $dir/$bundle failed:" >&2
        echo "$log" >&2
        failed=1
      fi
    done
  done
done
((failed)) && exit 1
python3 - "$out" "$rounds" "$@" <<'PY'
import json, statistics, sys
out, rounds, bundles = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def median_ms(bundle, side, r):
    with open(f"{out}/{bundle}.{side}.{r}.json") as f:
        return json.load(f)["results"][0]["median_ms"]
width = max(len(b) for b in bundles)
print(f"{'bundle':<{width}}  A median ms (per round)  B median ms (per round)  B vs A")
for b in bundles:
    a = [median_ms(b, "a", r) for r in range(1, rounds + 1)]
    bb = [median_ms(b, "b", r) for r in range(1, rounds + 1)]
    change = statistics.median(y / x for x, y in zip(a, bb)) - 1
    fmt = lambda xs: " ".join(f"{x:.4f}" for x in xs)
    print(f"{b:<{width}}  {fmt(a):<23}  {fmt(bb):<23}  {change:+.1%} time")
PY
