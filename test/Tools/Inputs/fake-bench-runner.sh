#!/usr/bin/env bash
# A stand-in for `sinkattn-runner bench` (test/Tools/ab-bench.test): writes
# the median stored in the bundle directory's `median` file as bench --json
# would; a bundle with a `fail` file fails like a kernel that does not run.
set -euo pipefail
[[ $1 == bench ]] || { echo "fake runner: only bench" >&2; exit 2; }
shift
bundle= json=
while (($#)); do
  case $1 in
    --bundle) bundle=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    *) shift 2 ;;
  esac
done
if [[ -f $bundle/fail ]]; then
  echo "error: launch failed: CUDA_ERROR_ILLEGAL_ADDRESS" >&2
  exit 1
fi
printf '{"results": [{"median_ms": %s}]}\n' "$(cat "$bundle/median")" > "$json"
