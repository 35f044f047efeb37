#!/usr/bin/env bash
# Runs every test (lit suites, which include the unit tests through lit's
# GoogleTest format) and ends with one line: "N passed, N failed, N skipped".
# GPU tests need a GPU (`REQUIRES: cuda-gpu`) and count as skipped without one.
set -uo pipefail
cd "$(dirname "$0")/.."

build_dir=${SINKATTN_BUILD_DIR:-build}
lit=${SINKATTN_LIT:-/usr/lib/llvm-22/bin/lit}
log="$build_dir/test-results.log"

"$lit" -v "$build_dir/test" "$@" 2>&1 | tee "$log" | grep -E "^(FAIL|XPASS|UNRESOLVED|TIMEOUT):|^Testing Time" || true
status=${PIPESTATUS[0]}

count() { # count "Passed" -> number from lit's summary (0 when absent)
  local n
  n=$(grep -E "^\s+$1\s*:\s+[0-9]+" "$log" | sed -E 's/.*:\s+([0-9]+).*/\1/' | awk '{s += $1} END {print s + 0}')
  echo "${n:-0}"
}
passed=$(( $(count Passed) + $(count "Expectedly Failed") ))
failed=$(( $(count Failed) + $(count "Unexpectedly Passed") + $(count Unresolved) + $(count "Timed Out") ))
skipped=$(( $(count Unsupported) + $(count Skipped) ))
if (( status != 0 && failed == 0 )); then
  # lit itself failed (bad configuration, crash): count that as a failure.
  failed=1
fi
echo "Full log: $log"
echo "$passed passed, $failed failed, $skipped skipped"
(( failed == 0 ))
