#!/usr/bin/env bash
# Same-run A/B of the shape-generic kernels against the kernels compiled
# for one problem (issue 45: no cell more than 1% slower). Forward: the shape-generic
# side is the kernel library's bundle in the form a call of that problem
# takes (rt::sinkFwdAutoSchedule), re-shaped by the runner's flags; the
# static side the bundle compiled for the problem. Cells: the seed table
# (BHSD, B 1, H 64, HK 8, causal, S 2k-16k, D 64/128) and the varlen batch
# of sink-fwd-varlen-16k-*. Each side is checked at the timed shape first
# (a cell whose check fails is not timed); then AB_ROUNDS (default 3) rounds
# alternate the sides, and the median of each side's per-round medians is
# compared. Backward (cells bwd-*): the shape-generic sink-bwd bundle
# (sink-bwd-run-time-shapes-d64/-d128) against varlen kernels compiled for
# the seed lengths as one sequence (S 2k-8k) and for the varlen batch, both
# in the form a varlen call takes; and (cells bwd-split-*) the
# shape-generic split (sink-bwd-run-time-shapes-d128-split, -d64-deferred)
# against the seed cells' static kernels in the form auto compiles them
# (the split from 2k at D 128, the deferred split from 8k at D 64). AB_CELLS
# (comma-separated names, e.g. seed-2k-d128,bwd-seed-2k-d64) runs only
# those cells.
# usage: scripts/ab-run-time-shapes.sh RUNNER BUNDLES OUT_DIR
#   BUNDLES holds the static bundles and kernel-library/ (make-bundles.sh).
# Prints one line per cell and exits non-zero when a check or bench fails.
set -uo pipefail
runner=$1
bundles=$2
out=$3
rounds=${AB_ROUNDS:-3}
library=$bundles/kernel-library
mkdir -p "$out"
failures=0

# The form a call takes: D 128 overlap from 17 key blocks of 128, else ws;
# D 64 ws from 128, else plain; persistent for a call of one length (ONE)
# at D 128 with rows of at most 32 key blocks and more than 132 tiles of
# 128 rows (the seed cells: 64 heads) (lib/Runtime/KernelGrids.cpp).
form() {
  local dim=$1 blocks=$((($2 + 127) / 128)) one=$3 name
  if ((dim == 128)); then
    ((blocks >= 17)) && name=overlap || name=ws
    ((one && blocks <= 32 && blocks * 64 > 132)) && name=$name-persistent
  else
    ((blocks >= 128)) && name=ws || name=plain
  fi
  echo "$name"
}

median_of() { # JSON files -> the median of their median_ms
  python3 - "$@" <<'PY'
import json, statistics, sys
print(statistics.median(json.load(open(f))["results"][0]["median_ms"]
                        for f in sys.argv[1:]))
PY
}

# cell NAME STATIC_BUNDLE GENERIC_BUNDLE GENERIC_FLAGS...
cell() {
  local name=$1 static=$2 generic=$3 side log r
  shift 3
  [[ -n ${AB_CELLS:-} && ",$AB_CELLS," != *",$name,"* ]] && return
  local -a flags=("$@")
  for side in static generic; do
    log="$out/ab-check-$name-$side.log"
    if [[ $side == static ]]; then
      "$runner" check --bundle "$static" >"$log" 2>&1
    else
      "$runner" check --bundle "$generic" "${flags[@]}" >"$log" 2>&1
    fi || {
      failures=$((failures + 1))
      echo "ab $name: FAIL: the $side side's check failed (log: $log)"
      return
    }
  done
  for ((r = 0; r < rounds; r++)); do
    for side in static generic; do
      log="$out/ab-bench-$name-$side-$r"
      if [[ $side == static ]]; then
        "$runner" bench --bundle "$static" --iters 30 --warmup 5 --json "$log.json" >"$log.txt" 2>&1
      else
        "$runner" bench --bundle "$generic" "${flags[@]}" --iters 30 --warmup 5 --json "$log.json" >"$log.txt" 2>&1
      fi || {
        failures=$((failures + 1))
        echo "ab $name: FAIL: the $side side's bench failed (log: $log.txt)"
        return
      }
    done
  done
  local staticMs genericMs
  staticMs=$(median_of "$out"/ab-bench-"$name"-static-*.json)
  genericMs=$(median_of "$out"/ab-bench-"$name"-generic-*.json)
  python3 -c "import sys; s, g = float(sys.argv[2]), float(sys.argv[3]); print(f'ab {sys.argv[1]}: static {s:.4f} ms, shape-generic {g:.4f} ms ({sys.argv[4]}), generic/static {g / s:.3f}')" \
    "$name" "$staticMs" "$genericMs" "$(basename "$generic")"
}

for dim in 64 128; do
  for s in 2k 4k 8k 16k; do
    seq=$((${s%k} * 1024))
    cell "seed-$s-d$dim" "$bundles/sink-fwd-seed-$s-d$dim" \
      "$library/fwd-bf16-d$dim-causal-f32-sinks-$(form "$dim" "$seq" 1)" \
      --seqlens-q "$seq" --heads 64 --kv-heads 8
  done
  lengths=4096,1024,2048,512,3000,777,4096,831
  cell "varlen-16k-d$dim" "$bundles/sink-fwd-varlen-16k-d$dim" \
    "$library/fwd-bf16-d$dim-causal-f32-sinks-$(form "$dim" 4096 0)" \
    --seqlens-q "$lengths" --heads 64 --kv-heads 8
done
for dim in 64 128; do
  for s in 2k 4k 8k; do
    cell "bwd-seed-$s-d$dim" "$bundles/sink-bwd-varlen-seed-$s-d$dim" \
      "$bundles/sink-bwd-run-time-shapes-d$dim" \
      --seqlens-q $((${s%k} * 1024)) --heads 64 --kv-heads 8
  done
  cell "bwd-varlen-16k-d$dim" "$bundles/sink-bwd-varlen-16k-d$dim" \
    "$bundles/sink-bwd-run-time-shapes-d$dim" \
    --seqlens-q 4096,1024,2048,512,3000,777,4096,831 --heads 64 --kv-heads 8
done
for s in 2k 4k 8k 16k; do
  cell "bwd-split-seed-$s-d128" "$bundles/sink-bwd-seed-$s-d128" \
    "$bundles/sink-bwd-run-time-shapes-d128-split" \
    --seqlens-q $((${s%k} * 1024)) --heads 64 --kv-heads 8
done
for s in 8k 16k; do
  cell "bwd-split-seed-$s-d64" "$bundles/sink-bwd-seed-$s-d64" \
    "$bundles/sink-bwd-run-time-shapes-d64-deferred" \
    --seqlens-q $((${s%k} * 1024)) --heads 64 --kv-heads 8
done
((failures == 0))
