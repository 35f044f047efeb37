#!/usr/bin/env bash
# A stand-in for `sinkattn-runner bench` and `check` (test/Tools/ab-bench.test,
# interleaved-seed.test, clock-probe.test): writes the median stored in the bundle directory
# as bench --json would, with the bundle's `kernel` and `config` files (when
# present) and a TFLOP/s of 100 / median. The median is the `median` file's,
# or the first line of a `medians` file, which the call then removes (one
# value per call). A bundle with a `fail` file fails like a kernel that does
# not run; one with a `hang` file sleeps for a minute first. With
# FAKE_RUNNER_LOG set, each call appends "runner BUNDLE" there.
set -euo pipefail
command=$1
[[ $command == bench || $command == check ]] ||
  { echo "fake runner: only bench and check" >&2; exit 2; }
shift
bundle= json=
while (($#)); do
  case $1 in
    --bundle) bundle=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    *) shift 2 ;;
  esac
done
# `check`: a bundle with a `wrong` file computes wrong answers.
if [[ $command == check ]]; then
  [[ -n ${FAKE_RUNNER_LOG:-} ]] && echo "check $(basename "$bundle")" >> "$FAKE_RUNNER_LOG"
  if [[ -f $bundle/wrong ]]; then
    echo "  FAIL (1 of 2 elements outside tolerance)"
    exit 1
  fi
  echo "  PASS"
  exit 0
fi
# A bundle with a `hang` file never finishes (a kernel that hangs).
[[ -f $bundle/hang ]] && sleep 60
if [[ -f $bundle/fail ]]; then
  echo "error: launch failed: CUDA_ERROR_ILLEGAL_ADDRESS" >&2
  exit 1
fi
if [[ -f $bundle/medians ]]; then
  median=$(head -n 1 "$bundle/medians")
  sed -i 1d "$bundle/medians"
else
  median=$(cat "$bundle/median")
fi
[[ -n ${FAKE_RUNNER_LOG:-} ]] && echo "runner $(basename "$bundle")" >> "$FAKE_RUNNER_LOG"
kernel=$(cat "$bundle/kernel" 2>/dev/null || echo sink-fwd)
config=$(cat "$bundle/config" 2>/dev/null || true)
# A `times` file: every call's ms (comma-separated), as times_ms.
times=
[[ -f $bundle/times ]] && times=", \"times_ms\": [$(cat "$bundle/times")]"
printf '{"gpu": "Stub GPU", "results": [{"kernel": "%s", "config": "%s", "median_ms": %s, "tflops_seed_formula": %s%s}]}\n' \
  "$kernel" "$config" "$median" "$(awk -v m="$median" 'BEGIN { print 100 / m }')" "$times" > "$json"
