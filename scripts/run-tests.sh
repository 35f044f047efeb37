#!/usr/bin/env bash
# Runs every test of the given build directories (default: build) through
# lit (the unit tests run through lit's GoogleTest format; a sanitizer build
# adds bounded fuzzing runs) and ends with one line:
#   "N passed, N failed, N skipped"
# GPU tests need a GPU (`REQUIRES: cuda-gpu`) and count as skipped without one.
set -uo pipefail
cd "$(dirname "$0")/.."

lit=${SINKATTN_LIT:-/usr/lib/llvm-22/bin/lit}
builds=("$@")
((${#builds[@]})) || builds=("${SINKATTN_BUILD_DIR:-build}")

passed=0 failed=0 skipped=0
count() { # count LOG "Passed" -> number from lit's summary (0 when absent)
  grep -E "^\s+$2\s*:\s+[0-9]+" "$1" | sed -E 's/.*:\s+([0-9]+).*/\1/' |
    awk '{s += $1} END {print s + 0}'
}
for build in "${builds[@]}"; do
  log="$build/test-results.log"
  echo "== lit $build/test"
  "$lit" -v "$build/test" 2>&1 | tee "$log" |
    grep -E "^(FAIL|XPASS|UNRESOLVED|TIMEOUT):|^Testing Time" || true
  status=${PIPESTATUS[0]}
  p=$(($(count "$log" Passed) + $(count "$log" "Expectedly Failed")))
  f=$(($(count "$log" Failed) + $(count "$log" "Unexpectedly Passed") +
        $(count "$log" Unresolved) + $(count "$log" "Timed Out")))
  s=$(($(count "$log" Unsupported) + $(count "$log" Skipped)))
  # lit itself failing (bad configuration, crash) counts as a failure.
  ((status != 0 && f == 0)) && f=1
  echo "   $build: $p passed, $f failed, $s skipped (log: $log)"
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
done
echo "$passed passed, $failed failed, $skipped skipped"
((failed == 0))
