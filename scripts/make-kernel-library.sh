#!/usr/bin/env bash
# Compiles the kernel library the attention API opens by default: one
# sink-fwd bundle for run-time shapes per variant (dtype, head dim, masking,
# sink dtype) and form (the schedules auto picks between by row length:
# rt::sinkFwdAutoSchedule; at D 128 without a window, each also persistent,
# which calls of one sequence length take where auto would compile it:
# rt::sinkFwdRunsPersistent), and one sink-bwd bundle per causal variant,
# into OUTPUT_DIR (docs/library.md). With
# PTXAS each bundle also holds its kernel assembled for sm_90a
# (kernel.cubin).
# usage: scripts/make-kernel-library.sh RUNNER OUTPUT_DIR [PTXAS]
set -euo pipefail
runner=$1
out=$2
assemble=()
[[ -n ${3:-} ]] && assemble=(--ptxas "$3")
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
for dtype in bf16 f16; do
  for dim in 64 128; do
    if [[ $dim == 64 ]]; then forms="plain ws"; else forms="ws overlap"; fi
    for mask in causal window non-causal; do
      case $mask in
        causal) mask_flags="" ;;
        window) mask_flags="--window 128" ;;
        non-causal) mask_flags="--non-causal" ;;
      esac
      for sinks in f32 bf16; do
        variants=$forms
        if [[ $dim == 128 && $mask != window ]]; then
          variants="$forms ws-persistent overlap-persistent"
        fi
        for variant in $variants; do
          name="fwd-$dtype-d$dim-$mask-$sinks-sinks-$variant"
          form=${variant%-persistent}
          persistent=()
          # One block per SM of an H100 SXM or H200, as auto compiles it.
          [[ $variant == *-persistent ]] && persistent=(--persistent 132)
          # shellcheck disable=SC2086 # the mask's flags are words on purpose
          if ! log=$("$runner" compile --kernel sink-fwd --run-time-shapes \
              --seqlens-q 128 --heads 8 --kv-heads 8 --head-dim "$dim" \
              --dtype "$dtype" --sink-dtype "$sinks" --schedule "$form" \
              "${persistent[@]}" $mask_flags "${assemble[@]}" \
              --emit bundle -o "$out.tmp/$name" 2>&1); then
            echo "error: compiling the kernel library's $name failed:" >&2
            echo "$log" >&2
            exit 1
          fi
        done
      done
    done
  done
done
# The backward: its one form for run-time shapes (separate dQ, one
# warpgroup per block), compiled for GQA, which serves any group; causal
# and sliding-window.
for dtype in bf16 f16; do
  for dim in 64 128; do
    for mask in causal window; do
      mask_flags=()
      [[ $mask == window ]] && mask_flags=(--window 128)
      for sinks in f32 bf16; do
        name="bwd-$dtype-d$dim-$mask-$sinks-sinks-gqa"
        if ! log=$("$runner" compile --kernel sink-bwd --run-time-shapes \
            --seqlens-q 128 --heads 8 --kv-heads 2 --head-dim "$dim" \
            --dtype "$dtype" --sink-dtype "$sinks" "${mask_flags[@]}" \
            "${assemble[@]}" --emit bundle -o "$out.tmp/$name" 2>&1); then
          echo "error: compiling the kernel library's $name failed:" >&2
          echo "$log" >&2
          exit 1
        fi
      done
    done
  done
done
rm -rf "$out"
mv "$out.tmp" "$out"
