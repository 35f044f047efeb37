#!/usr/bin/env bash
# A stand-in for sinkattn-runner in test/Tools/gpu-round.test: `devices`,
# `check --bundle B`, `bench --bundle B --json J`, `bench --preset P
# --bundles DIR` and `tune --bundles DIR`; `check --verbose` says how the
# kernels loaded (SASS where the manifest has it). Each call appends a line to
# $FAKE_RUNNER_LOG ("check NAME", "bench NAME", "bench [--checked] --bundles NAME...",
# "tune NAME..."). A bundle with a `check-fail` file fails its check, one
# with a `bench-fail` file its bench; FAKE_TUNE_FAIL=1 fails tune.
set -uo pipefail
command=$1
shift
bundle= bundles= json= checked= verbose=
while (($#)); do
  case $1 in
    --bundle) bundle=$2; shift 2 ;;
    --bundles) bundles=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --checked) checked=" --checked"; shift ;;
    --verbose) verbose=1; shift ;;
    *) shift 2 || { echo "fake runner: no value for $1" >&2; exit 2; } ;;
  esac
done
log() { echo "$*" >>"$FAKE_RUNNER_LOG"; }
names() { (cd "$1" && ls | tr '\n' ' ' | sed 's/ $//'); }
case $command in
  devices) echo "device 0: Stub GPU" ;;
  check)
    log "check $(basename "$bundle")"
    if [[ -f $bundle/check-fail ]]; then
      echo "check $(basename "$bundle"): FAIL (rel-L2 0.5 > 0.01)"
      exit 1
    fi
    echo "check $(basename "$bundle"): PASS"
    # --verbose: how the kernels loaded (bench/load_time.py reads it).
    if [[ -n $verbose ]]; then
      if grep -q '"sass"' "$bundle/manifest.json" 2>/dev/null; then
        echo "kernels of sink_fwd: SASS for sm_90a (kernel.cubin), loaded in 2.0 ms" >&2
      else
        echo "kernels of sink_fwd: PTX, JIT-compiled, loaded in 500.0 ms" >&2
      fi
    fi ;;
  bench)
    if [[ -n $bundles ]]; then
      log "bench$checked --bundles $(names "$bundles")"
      echo "   2048   64   1.0000 ms"
    else
      log "bench $(basename "$bundle")"
      if [[ -f $bundle/bench-fail ]]; then
        echo "error: launch failed: CUDA_ERROR_ILLEGAL_ADDRESS" >&2
        exit 1
      fi
      echo "$(basename "$bundle")  1.0000 ms"
      echo '{"results": [{"median_ms": 1.0}]}' >"$json"
    fi ;;
  tune)
    log "tune $(names "$bundles")"
    [[ -n ${FAKE_TUNE_FAIL:-} ]] && { echo "error: tune failed" >&2; exit 1; }
    echo "tune S=2048 D=64: fastest $(names "$bundles" | cut -d' ' -f1)" ;;
  *) echo "fake runner: no command '$command'" >&2; exit 2 ;;
esac
