#!/usr/bin/env bash
# One whole GPU round, on the GPU machine (no MLIR there):
#   1. build the runtime-only runner (C++17 + CMake + cuda.h; skipped with
#      SINKATTN_GPU_RUNNER=PATH, a runner built already),
#   2. run every GPU test (test/GPU, through lit) on the precompiled bundles,
#      and the small backward bundles on SEED_SWEEP (20) seeds each,
#   3. run each small GPU-test kernel under compute-sanitizer (memcheck,
#      racecheck, synccheck),
#   4. time the benchmarks asked for, autotune the seed cells, time the
#      vendor baselines (PyTorch) and the seed table with SinkAttn and cuDNN
#      alternating per cell (bench/interleaved_seed.py), and draw its chart;
#      every bundle a step times is first run through `sinkattn-runner check`
#      in this round (once per bundle, log $OUT/check-NAME.log, one summary
#      line each), and a bundle whose check fails is not timed,
#   5. print a summary table; logs and JSON go to $OUT (default build-gpu/out).
# The round exits non-zero, its summary naming each FAIL, when a build, test,
# sanitizer run, check, bench, tune, baseline script or chart fails, or when
# the baselines or clocks are asked for and PyTorch cannot be imported.
#
# Bundles come from this machine's full build:
#   scripts/make-bundles.sh build/bin/sinkattn-runner .carry/bundles
# and travel with the working tree (.carry/ is git-ignored, carried).
# Through the device tool, which returns only a few files from $OUT, keep
# everything in one archive:
#   OUT=$OUT/round bash scripts/gpu-round.sh > $OUT/summary.txt 2>&1;
#   tar czf $OUT/round.tgz -C $OUT round && rm -rf $OUT/round
#
# usage: [GPU_ROUND_STEPS=STEP,...] scripts/gpu-round.sh [BENCH_BUNDLE...]
#   BENCH_BUNDLE: bundles to time; default: the gemm (TMA, persistent,
#   cp.async), tma-copy and tma-stream benches, sink-fwd in BSHD and varlen,
#   then `bench --preset seed` (the seed table and its window-128 rows) and
#   the backward's seed table (`--kernel sink-bwd`). Named bundles replace
#   all of that, and the tuning and the interleaved table, but the baselines.
#   GPU_ROUND_STEPS picks steps (default all; the build always runs unless
#   SINKATTN_GPU_RUNNER names a runner):
#     tests       the GPU tests (those GPU_TESTS_FILTER, a regular
#                 expression, matches; default all) and the seed sweep
#                 (SEED_SWEEP seeds),
#     sanitizers  compute-sanitizer on the small kernels,
#     benches     the benches above,
#     tune        `tune` over the seed cells ($OUT/tune-cache.json),
#     baselines   PyTorch's (cuBLAS, copy, cuDNN SDPA in its GQA and its
#                 expanded-MHA form), then the interleaved seed table
#                 (INTERLEAVED_ROUNDS rounds per cell, default 3) and its
#                 charts ($OUT/perf-seed-table.png, .json against cuDNN's
#                 expanded-MHA form; perf-seed-table-gqa.* against its GQA
#                 form, when this PyTorch's cuDNN runs it).
#     clocks      the S 16384 seed cells sustained (bench/clock_probe.py,
#                 about 4 s per side): the power limit's clocks per side.
#     ab-shapes   the shape-generic forward (the kernel library, re-shaped)
#                 against the kernels compiled per problem, alternated,
#                 each side checked first (scripts/ab-run-time-shapes.sh).
#     startup     what a process's first call and every call cost on the
#                 host: the kernel library's load from SASS against the
#                 JIT with an empty and a warm driver cache
#                 (bench/load_time.py, each run a passing check), and the
#                 library's host time per call (sinkattn-host-overhead of
#                 the runtime-only build).
#   SINKATTN_BUNDLES: the bundles (default .carry/bundles); SINKATTN_GPU_BUILD_DIR:
#   the runtime-only build (default build-gpu).
set -uo pipefail
cd "$(dirname "$0")/.."

out=${OUT:-build-gpu/out}
mkdir -p "$out"
build=${SINKATTN_GPU_BUILD_DIR:-build-gpu}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
bundles=$(realpath -m "${SINKATTN_BUNDLES:-.carry/bundles}")
# The commit the bundles come from (make-bundles.sh records it).
commit=$(cat "$bundles/COMMIT" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)
benches=("$@")
# The seed cells under their seed names (interleaved_seed.py's and
# clock_probe.py's), the backward in the form `--dq auto` picks.
link_seed_bundles() {
  local dir=$1 bundle
  rm -rf "$dir" && mkdir -p "$dir"
  for bundle in "$bundles"/sink-{fwd,bwd}-seed-{2k,4k,8k,16k}-d{64,128}; do
    [[ -d $bundle ]] || {
      echo "error: no bundle $bundle" >&2
      return 1
    }
    ln -s "$bundle" "$dir/"
  done
}
# The seed table itself comes from `bench --preset seed` (step 4) unless
# benches are named.
preset=seed
((${#benches[@]})) && preset=
((${#benches[@]})) || benches=(gemm-4096x4096x4096 gemm-8192x8192x8192 gemm-persistent-4096-s4 gemm-cpasync-4096-s4 gemm-cpasync-plain-4096-s3 tma-copy-8192x8192 tma-stream-8192x8192
  sink-fwd-seed-bshd-8k-d64 sink-fwd-seed-bshd-8k-d128 sink-fwd-varlen-16k-d64 sink-fwd-varlen-16k-d128)
# Small sizes, lengths that are not multiples of the blocks included.
sanitized=(tma-copy-1024x512 gemm-256x256x128 tma-stream-odd-start tma-im2col
           sink-fwd-tiny-d64 sink-fwd-win128-f16-d64 sink-fwd-past-d128
           sink-fwd-ws-tiny-d64 sink-fwd-ws-win128-f16-d64 gemm-plain-512x512x1024
           sink-fwd-overlap-tiny-d64 sink-fwd-overlap-varlen-win-d128 sink-fwd-ws-s3-past-f16-d128
           sink-fwd-persist-gqa-d128 sink-fwd-persist-oddlast-d128
           sink-fwd-persist-tiny-d64 sink-fwd-overlap-pack-d64
           sink-fwd-persist-clamp-d128 sink-fwd-bf16sink-gqa-d128
           gemm-cpasync-512x512x1024-s3 gemm-mixed-512x512x1024-s2
           gemm-cpasync-plain-256x512x448-s1 gemm-persistent-512x512x192-s2
           gemm-persistent-plain-512x512x192-s2
           gemm-persistent-plain-s1-512x512x448
           sink-fwd-bshd-plain-s3-d128 sink-fwd-varlen-short-kv-ws-d64
           sink-fwd-varlen-plain-s3-d128 sink-bwd-tiny-d64 sink-bwd-varlen-win-d64
           sink-bwd-gqa8-d64 sink-bwd-atomic-kvw2-tiny-d64 sink-bwd-deferred-nokeys-d64
           sink-bwd-shared-tiny-mha-d128 sink-bwd-shared-varlen-d128
           sink-bwd-shared-gqa8-d128
           sink-bwd-atomic-kvw2-tiny-d128 sink-bwd-atomic-kvw2-varlen-d128
           sink-bwd-past-d128 sink-bwd-shared-past-d128)
summary=()
failures=0
note() { summary+=("$1"); echo "== $1"; }
steps=",${GPU_ROUND_STEPS:-tests,sanitizers,benches,ab-shapes,startup,tune,baselines,clocks},"
for step in ${steps//,/ }; do
  case $step in
    tests | sanitizers | benches | ab-shapes | startup | tune | baselines | clocks) ;;
    *) echo "error: unknown step '$step' in GPU_ROUND_STEPS (tests, sanitizers, benches, ab-shapes, startup, tune, baselines, clocks)" >&2
       exit 2 ;;
  esac
done
want() { [[ $steps == *",$1,"* ]]; }
# A bundle is checked at most once per round: its real path -> pass or FAIL.
declare -A check_result
# check_bundles BUNDLE... -> status 0 when every bundle passes `check`.
# A timing step calls it first so that no table holds the time of a kernel
# whose results are wrong; a failed check counts once as a round failure.
check_bundles() {
  local bundle real name log code bad=0
  for bundle in "$@"; do
    real=$(realpath -m "$bundle")
    if [[ -z ${check_result[$real]:-} ]]; then
      name=$(basename "$real")
      log="$out/check-$name.log"
      if [[ -d $real ]]; then
        "$runner" check --bundle "$real" >"$log" 2>&1
        code=$?
      else
        echo "error: no bundle $real" >"$log"
        code=2
      fi
      if ((code == 0)); then
        check_result[$real]=pass
        note "check $name: pass (log: $log)"
      else
        check_result[$real]=FAIL
        failures=$((failures + 1))
        note "check $name: FAIL (exit $code, log: $log)"
      fi
    fi
    [[ ${check_result[$real]} == pass ]] || bad=1
  done
  return $bad
}
# torch_missing -> status 0 (and the reason on stdout) when python3 cannot
# import PyTorch: the baselines and clock steps then fail instead of
# vanishing from the summary.
torch_missing() {
  local err
  err=$(python3 -c 'import torch' 2>&1) && return 1
  echo "${err##*$'\n'}"
}
# The seed cells for the interleaved table and the clock probe, linked once
# (empty when a bundle is missing: both steps then fail).
seed_bundles=
if [[ -n "$preset" ]] && { want baselines || want clocks; }; then
  if link_seed_bundles "$out/seed-bundles" 2>"$out/seed-bundles.err"; then
    seed_bundles="$out/seed-bundles"
  else
    cat "$out/seed-bundles.err"
  fi
fi

# 1. Build (or take the runner given).
if [[ -n ${SINKATTN_GPU_RUNNER:-} ]]; then
  runner=$SINKATTN_GPU_RUNNER
  if [[ ! -x $runner ]]; then
    echo "error: SINKATTN_GPU_RUNNER: '$runner' is not an executable file"
    exit 2
  fi
  note "build: skipped (SINKATTN_GPU_RUNNER=$runner)"
else
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  if ! { cmake -S . -B "$build" "${generator[@]}" -DSINKATTN_RUNTIME_ONLY=ON \
           -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 &&
         cmake --build "$build" -j "$(nproc)" >>"$out/build.log" 2>&1; }; then
    tail -30 "$out/build.log"
    echo "error: the runtime-only build failed (log: $out/build.log)"
    exit 2
  fi
  runner=$build/bin/sinkattn-runner
  note "build: ok ($runner)"
fi
"$runner" devices | tee "$out/devices.txt"

# 2. GPU tests through lit: the carried wheel (an unrelated 'lit' module may
# shadow it on the GPU machine, so it goes first on the path).
if want tests; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/sinkattn-site .carry/wheels/lit-*.whl
  SINKATTN_RUNNER=$runner SINKATTN_BUNDLES=$bundles SINKATTN_BUILD_DIR=$build \
  SINKATTN_RUNTIME_SMOKE=$build/bin/SinkAttnRuntimeGpuSmoke \
  SINKATTN_ATTENTION_GPU=$build/bin/SinkAttnAttentionGpuTest \
  PYTHONPATH=/tmp/sinkattn-site${PYTHONPATH:+:$PYTHONPATH} \
    python3 -c 'import sys; from lit.main import main; sys.argv[0] = "lit"; main()' \
    -a ${GPU_TESTS_FILTER:+--filter "$GPU_TESTS_FILTER"} test/GPU \
    >"$out/gpu-tests.log" 2>&1
  status=$?
  grep -E "^(PASS|FAIL|UNSUPPORTED|UNRESOLVED):|Passed|Failed|^check |^  (rel-L2|PASS|FAIL)" "$out/gpu-tests.log" | head -60
  ((status == 0)) || failures=$((failures + 1))
  note "gpu tests: $( ((status == 0)) && echo pass || echo FAIL) (log: $out/gpu-tests.log)"

  # 2b. The small backward bundles on many seeds (SEED_SWEEP per bundle).
  sweep_log="$out/seed-sweep.log"
  scripts/seed-sweep.sh "$runner" "$bundles" "${SEED_SWEEP:-20}" sink-bwd-tiny-d64 \
    sink-bwd-varlen-win-d64 sink-bwd-varlen-nokeys-d64 sink-bwd-bshd-win-d64 \
    sink-bwd-moreq-win-d64 sink-bwd-gqa8-d64 >"$sweep_log" 2>&1
  status=$?
  ((status == 0)) || failures=$((failures + 1))
  while read -r line; do note "$line"; done < <(grep "^seed sweep" "$sweep_log")
  ((status == 0)) || note "seed sweep: FAIL (log: $sweep_log)"
fi

# 3. compute-sanitizer on the small kernels.
if ! want sanitizers; then
  :
elif command -v compute-sanitizer >/dev/null; then
  for bundle in "${sanitized[@]}"; do
    for tool in memcheck racecheck synccheck; do
      log="$out/sanitizer-$tool-$bundle.log"
      compute-sanitizer --tool "$tool" --error-exitcode 3 \
        "$runner" check --bundle "$bundles/$bundle" --seed 7 >"$log" 2>&1
      code=$?
      result=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
      ((code == 0)) || failures=$((failures + 1))
      note "sanitizer $tool $bundle: exit $code ${result:-}"
    done
  done
else
  note "sanitizer: compute-sanitizer not found"
fi

# 4. Benchmarks and baselines.
want benches || benches=()
for bundle in "${benches[@]}"; do
  if ! check_bundles "$bundles/$bundle"; then
    note "bench $bundle: FAIL: not timed (its check failed)"
    continue
  fi
  "$runner" bench --bundle "$bundles/$bundle" --iters 50 --warmup 5 \
    --json "$out/bench-$bundle.json" 2>&1 | tee "$out/bench-$bundle.txt"
  status=${PIPESTATUS[0]}
  if ((status != 0)); then
    failures=$((failures + 1))
    note "bench $bundle: FAIL (exit $status, log: $out/bench-$bundle.txt)"
    continue
  fi
  # The timing row (metric lines below it are indented).
  line=$(grep -v '^ ' "$out/bench-$bundle.txt" | tail -1)
  note "bench $bundle: $line"
done
# preset_table LABEL DIR BENCH_ARGS...: `bench --preset` over the bundles
# linked in DIR, after checking every one of them.
preset_table() {
  local label=$1 dir=$2 log=$out/bench-$1.txt status
  shift 2
  if ! check_bundles "$dir"/*; then
    note "$label: FAIL: not timed (a check of its bundles failed)"
    return
  fi
  "$runner" bench --bundles "$dir" "$@" --checked --json "$out/bench-$label.json" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  if ((status != 0)); then
    failures=$((failures + 1))
    note "$label: FAIL (exit $status, log: $log)"
    return
  fi
  while read -r line; do note "$label: $line"; done < <(grep -E "^ *[0-9]+ " "$log")
}
if [[ -n "$preset" ]] && want benches; then
  # The preset's bundles (one per configuration: .carry/bundles also holds
  # other schedules of the same shapes).
  preset_bundles="$out/preset-bundles"
  rm -rf "$preset_bundles" && mkdir -p "$preset_bundles"
  for d in 64 128; do
    for s in 2k 4k 8k 16k; do
      ln -s "$bundles/sink-fwd-seed-$s-d$d" "$preset_bundles/"
      ln -s "$bundles/sink-fwd-seed-win128-$s-d$d" "$preset_bundles/"
    done
  done
  preset_table "preset-$preset" "$preset_bundles" --preset "$preset" --iters 50 --warmup 5
  # The backward's tables (causal), in auto's forms and in the deterministic
  # ones: the eight cells by name (the preset refuses a directory with two
  # bundles of one shape, and .carry/bundles holds the cells' other forms).
  for form in auto deterministic; do
    suffix=; [[ $form == auto ]] || suffix=-$form
    bwd_bundles="$out/preset-bwd-bundles-$form"
    rm -rf "$bwd_bundles" && mkdir -p "$bwd_bundles"
    for cell in {2k,4k,8k,16k}-d{64,128}; do
      ln -s "$bundles/sink-bwd-seed-$cell$suffix" "$bwd_bundles/"
    done
    label="preset-$preset-bwd"
    [[ $form == auto ]] || label+="-$form"
    preset_table "$label" "$bwd_bundles" --preset "$preset" --kernel sink-bwd \
      --iters 20 --warmup 3
  done
fi
if want ab-shapes; then
  ab_log="$out/ab-shapes.log"
  scripts/ab-run-time-shapes.sh "$runner" "$bundles" "$out/ab-shapes" >"$ab_log" 2>&1
  status=$?
  ((status == 0)) || failures=$((failures + 1))
  while read -r line; do note "$line"; done < <(grep "^ab " "$ab_log")
  ((status == 0)) || note "ab-shapes: FAIL (log: $ab_log)"
fi
if want startup; then
  # The library's D 128 and D 64 kernels of the seed table's variant.
  for form in d128-causal-f32-sinks-overlap d64-causal-f32-sinks-plain; do
    log="$out/load-time-$form.log"
    python3 bench/load_time.py --runner "$runner" \
      --bundle "$bundles/kernel-library/fwd-bf16-$form" --runs 3 \
      --json "$out/load-time-$form.json" -- --seqlens-q 1000 >"$log" 2>&1
    status=$?
    ((status == 0)) || failures=$((failures + 1))
    while read -r line; do note "load $form: $line"; done < <(grep "median" "$log")
    ((status == 0)) || note "load $form: FAIL (log: $log)"
  done
  log="$out/host-overhead.log"
  "$build/bin/sinkattn-host-overhead" --library "$bundles/kernel-library" \
    --calls 300 >"$log" 2>&1
  status=$?
  ((status == 0)) || failures=$((failures + 1))
  while read -r line; do note "host time: ${line#  }"; done < <(grep " us$" "$log")
  ((status == 0)) || note "host time: FAIL (log: $log)"
fi
if [[ -n "$preset" ]] && want tune; then
  # Autotuning: every seed cell's schedule x stages variant (and the ws/overlap
  # persistent forms at 2 stages); the fastest
  # per cell goes to $out/tune-cache.json (compile --tune-cache uses it).
  # A variant whose check fails is left out of the race.
  tune_bundles="$out/tune-bundles"
  rm -rf "$tune_bundles" && mkdir -p "$tune_bundles"
  ln -s "$bundles"/sink-fwd-tune-* "$tune_bundles/"
  for link in "$tune_bundles"/*; do
    check_bundles "$link" || rm "$link"
  done
  if ! compgen -G "$tune_bundles/*" >/dev/null; then
    failures=$((failures + 1))
    note "tune: FAIL: no bundle to tune (none under $bundles/sink-fwd-tune-* passed its check)"
  else
    "$runner" tune --bundles "$tune_bundles" --tune-cache "$out/tune-cache.json" \
      --iters 30 --warmup 5 2>&1 | tee "$out/tune.txt"
    status=${PIPESTATUS[0]}
    while read -r line; do note "tune $line"; done < <(grep -E "^tune |fastest" "$out/tune.txt")
    if ((status != 0)); then
      failures=$((failures + 1))
      note "tune: FAIL (exit $status, log: $out/tune.txt)"
    fi
  fi
fi
# baseline LABEL PATTERN LOG COMMAND...: runs a PyTorch baseline script into
# LOG, notes its lines matching PATTERN, and a FAIL when it exits non-zero.
baseline() {
  local label=$1 pattern=$2 log=$3 status
  shift 3
  "$@" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  while read -r line; do note "$label $line"; done < <(grep -E "$pattern" "$log")
  if ((status != 0)); then
    failures=$((failures + 1))
    note "$label: FAIL (exit $status, log: $log)"
  fi
  return "$status"
}
# seed_cells_ready STEP: the seed cells' bundles are linked and pass their
# checks (else a FAIL for STEP).
seed_cells_ready() {
  if [[ -z "$seed_bundles" ]]; then
    failures=$((failures + 1))
    note "$1: FAIL: the seed cells' bundles are missing ($(tail -1 "$out/seed-bundles.err"))"
    return 1
  fi
  if ! check_bundles "$seed_bundles"/*; then
    note "$1: FAIL: not timed (a check of the seed cells' bundles failed)"
    return 1
  fi
}
if want baselines && reason=$(torch_missing); then
  failures=$((failures + 1))
  note "baselines: FAIL: PyTorch cannot be imported by python3 ($reason)"
elif want baselines; then
  baseline baseline "^(cublas|copy)" "$out/torch-baselines.txt" \
    python3 bench/compare_torch.py --json "$out/torch-baselines.json"
  baseline baseline "^cudnn" "$out/sdpa-baselines.txt" \
    python3 bench/compare_sdpa.py --json "$out/sdpa-baselines.json"
  if [[ -n "$preset" ]] && seed_cells_ready "interleaved seed table"; then
    # The seed table again, SinkAttn and cuDNN alternating cell by cell (a
    # clock step then falls on both sides), and its charts and tables (copy
    # them next to docs/PERF.md).
    if baseline interleaved "^(fwd|bwd) |^cudnn-gqa" "$out/interleaved.txt" \
        python3 bench/interleaved_seed.py --runner "$runner" --bundles "$seed_bundles" \
        --rounds "${INTERLEAVED_ROUNDS:-3}" --sinkattn-json "$out/interleaved-sinkattn" \
        --cudnn-json "$out/interleaved-cudnn.json" --checked; then
      for form in cudnn-mha-expanded cudnn-gqa; do
        suffix=; [[ $form == cudnn-gqa ]] && suffix=-gqa
        python3 bench/plot_seed_table.py --sinkattn "$out/interleaved-sinkattn-fwd.json" \
          --cudnn "$out/interleaved-cudnn.json" --cudnn-form "$form" --date "$(date -u +%F)" \
          --commit "$commit" \
          --command "bash scripts/gpu-round.sh (bench/interleaved_seed.py, ${INTERLEAVED_ROUNDS:-3} rounds per cell)" \
          --write-table "$out/perf-seed-table$suffix.json" --output "$out/perf-seed-table$suffix.png" \
          >"$out/perf-seed-table$suffix.log" 2>&1
        status=$?
        if ((status == 0)); then
          note "seed chart ($form): $out/perf-seed-table$suffix.png"
        elif [[ $form == cudnn-gqa ]] && grep -q "the cuDNN form cudnn-gqa is unavailable" "$out/perf-seed-table$suffix.log"; then
          # interleaved_seed.py said why (its "cudnn-gqa unavailable" line).
          note "seed chart ($form): none: $(tail -1 "$out/perf-seed-table$suffix.log")"
        else
          failures=$((failures + 1))
          note "seed chart ($form): FAIL ($(tail -1 "$out/perf-seed-table$suffix.log"))"
        fi
      done
    fi
  fi
fi

if [[ -n "$preset" ]] && want clocks; then
  # The long cells run at the power limit: each side's clock and power in
  # a sustained run (PERF.md, session 19).
  if reason=$(torch_missing); then
    failures=$((failures + 1))
    note "clocks: FAIL: PyTorch cannot be imported by python3 ($reason)"
  elif seed_cells_ready clocks; then
    baseline clocks "^(fwd|bwd) |sinkattn|cudnn|ratio" "$out/clocks.txt" \
      python3 bench/clock_probe.py --runner "$runner" --bundles "$seed_bundles" \
      --cells fwd:16384:64,fwd:16384:128,bwd:16384:64,bwd:16384:128 --checked
  fi
fi

if ((failures)); then
  note "round: FAIL ($failures failures)"
else
  note "round: pass"
fi
echo
echo "=== GPU round summary ($(date -u +%F), bundles of $commit) ==="
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
exit $((failures > 0))
