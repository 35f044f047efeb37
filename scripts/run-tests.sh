#!/usr/bin/env bash
# Runs every test of the given build directories (default: build) through
# lit (the unit tests run through lit's GoogleTest format; a sanitizer build
# adds bounded fuzzing runs) and ends with one line:
#   "N passed, N failed, N skipped"
# and a non-zero exit status when anything failed. GPU tests need a GPU
# (`REQUIRES: cuda-gpu`) and count as skipped without one. A lit run that
# cannot be trusted counts as failed tests: lit exiting non-zero without a
# failing test (a broken configuration, a crash), no summary at all, or fewer
# tests counted in the summary than lit said it was running.
# SINKATTN_LIT: the lit to run (default /usr/lib/llvm-22/bin/lit).
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
  if [[ ! -d $build/test ]]; then
    echo "error: no directory $build/test (configure the build first)"
    echo "   $build: 0 passed, 1 failed, 0 skipped"
    failed=$((failed + 1))
    continue
  fi
  # The grep only echoes the failures; `|| true` inside the group keeps its
  # "no match" status out of PIPESTATUS[0], which is lit's own.
  "$lit" -v "$build/test" 2>&1 | tee "$log" |
    { grep -E "^(FAIL|XPASS|UNRESOLVED|TIMEOUT):|^Testing Time" || true; }
  status=${PIPESTATUS[0]}
  p=$(($(count "$log" Passed) + $(count "$log" "Expectedly Failed")))
  f=$(($(count "$log" Failed) + $(count "$log" "Unexpectedly Passed") +
        $(count "$log" Unresolved) + $(count "$log" "Timed Out")))
  s=$(($(count "$log" Unsupported) + $(count "$log" Skipped)))
  # The tests lit set out to run: "-- Testing: N tests" or, with a filter,
  # "-- Testing: N of M tests".
  started=$(sed -nE 's/^-- Testing: ([0-9]+) (of [0-9]+ )?tests?.*/\1/p' "$log" |
              awk '{s += $1} END {print s + 0}')
  problems=()
  if ! grep -qE "^Total Discovered Tests:" "$log"; then
    problems+=("lit printed no summary (exit status $status)")
    ((f == 0)) && f=1
  fi
  if ((status != 0 && f == 0)); then
    problems+=("lit exited with status $status but reported no failing test")
    f=1
  fi
  if ((p + f + s < started)); then
    problems+=("lit started $started tests but its summary counts $((p + f + s)) as passed, failed or skipped; the other $((started - p - f - s)) count as failed")
    f=$((started - p - s))
  fi
  if ((${#problems[@]})); then
    printf "error: $build: %s\n" "${problems[@]}"
    echo "   the log's last lines:"
    [[ -s $log ]] || echo "    (the log is empty)"
    tail -n 5 "$log" | sed 's/^/    /'
  fi
  echo "   $build: $p passed, $f failed, $s skipped (log: $log)"
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
done
echo "$passed passed, $failed failed, $skipped skipped"
((failed == 0))
