#!/usr/bin/env bash
# The main job (`make run`): compile every kernel to PTX and report its
# resources; with a GPU, also run the kernels through sinkattn-runner.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${SINKATTN_BUILD_DIR:-build}
opt="$build_dir/bin/sinkattn-opt"
ptx_dir="$build_dir/ptx"
ptxas=${PTXAS:-/usr/local/cuda/bin/ptxas}
mkdir -p "$ptx_dir"

# Resources per kernel from `ptxas -v`: "<entry> <registers> <shared bytes> <spill stores>" lines.
entry_resources() {
  if [[ ! -x "$ptxas" ]]; then
    return
  fi
  "$ptxas" -arch=sm_90a -v "$1" -o /dev/null 2>&1 | awk '
    /Compiling entry function/ { if (entry != "") printf "%s %s %s %s\n", entry, regs, smem, spill
                                 split($0, quoted, "\047"); entry = quoted[2]; regs = "?"; smem = 0; spill = "?" }
    /Used [0-9]+ registers/ { for (i = 1; i <= NF; i++) if ($(i+1) ~ /^registers/) regs = $i
                              for (i = 1; i <= NF; i++) if ($(i+1) == "bytes" && $(i+2) == "smem") smem = $i }
    /spill stores/ { for (i = 1; i <= NF; i++) if ($(i+1) == "bytes" && $(i+2) == "spill" && $(i+3) == "stores,") spill = $i }
    END { if (entry != "") printf "%s %s %s %s\n", entry, regs, smem, spill }'
}

# Resources of a one-kernel PTX: "<registers> <shared bytes> <spill stores>".
resources() {
  if [[ ! -x "$ptxas" ]]; then
    echo "? ? ?"
    return
  fi
  entry_resources "$1" | awk 'END { if (NR) print $2, $3, $4; else print "? 0 ?" }'
}

runner="$build_dir/bin/sinkattn-runner"
row() { printf '%-32s %-38s %9s %12s %7s\n' "$@"; }

echo "Compiling kernels to PTX (sm_90a) into $ptx_dir"
row kernel ptx registers "shared (B)" spills
for src in examples/*.mlir; do
  name=$(basename "$src" .mlir)
  "$opt" "$src" --sinkattn-gpu-to-ptx --sinkattn-write-ptx=output-dir="$ptx_dir" -o /dev/null
  ptx="$ptx_dir/$name.ptx"
  read -r regs smem spills < <(resources "$ptx")
  row "example:$name" "$ptx" "$regs" "$smem" "$spills"
done
# The runner's kernels, at the sizes the main job runs them.
kernels=(
  "gemm|gemm 4096x4096x4096|--kernel gemm --m 4096 --n 4096 --k 4096"
  "gemm-persistent|gemm 4096 persistent 132|--kernel gemm --m 4096 --n 4096 --k 4096 --stages 4 --persistent 132"
  "gemm-cp-async|gemm 4096 cp.async producer|--kernel gemm --m 4096 --n 4096 --k 4096 --stages 4 --copy-engine cp-async"
  "tma-copy|tma-copy 8192x8192 S=3|--kernel tma-copy --m 8192 --n 8192 --stages 3"
  "tma-stream|tma-stream 8192x8192 S=3|--kernel tma-stream --m 8192 --k 8192 --stages 3"
  "sink-fwd-check|sink-fwd GQA8 S=1000 B=2 W=128|--kernel sink-fwd --batch 2 --heads 16 --kv-heads 2 --seq-q 1000 --seq-kv 1000 --head-dim 128 --window 128"
  "sink-fwd-bshd|sink-fwd BSHD GQA8 S=1000 B=2|--kernel sink-fwd --layout bshd --batch 2 --heads 16 --kv-heads 2 --seq-q 1000 --seq-kv 1000 --head-dim 128"
  "sink-fwd-varlen|sink-fwd varlen 100,0,513,1000|--kernel sink-fwd --seqlens-q 100,0,513,1000 --heads 16 --kv-heads 2 --head-dim 128"
  "sink-bwd-check|sink-bwd GQA8 S=1000 B=2 W=128|--kernel sink-bwd --batch 2 --heads 16 --kv-heads 2 --seq-q 1000 --seq-kv 1000 --head-dim 128 --window 128"
)
# The seed benchmark: bf16, B=1, H=64, HK=8, causal (timed, not checked:
# the check matrix is test/GPU/sink-fwd.test).
# The backward's cells in both forms the main job times below: the one
# `--dq auto` picks (the split at D 128, the deferred split at D 64 from
# 8k) and the deterministic one (`--deterministic`).
seed=()
for d in 64 128; do
  for s in 2048 4096 8192 16384; do
    shape="--batch 1 --heads 64 --kv-heads 8 --seq-q $s --seq-kv $s --head-dim $d"
    seed+=("sink-fwd-$s-d$d|sink-fwd seed S=$s D=$d|--kernel sink-fwd $shape")
    seed+=("sink-bwd-$s-d$d|sink-bwd seed S=$s D=$d|--kernel sink-bwd $shape")
    seed+=("sink-bwd-deterministic-$s-d$d|sink-bwd deterministic S=$s D=$d|--kernel sink-bwd --deterministic $shape")
  done
done
for entry in "${kernels[@]}" "${seed[@]}"; do
  IFS='|' read -r name title flags <<<"$entry"
  ptx="$ptx_dir/$name.ptx"
  # shellcheck disable=SC2086 # flags are words on purpose
  "$runner" compile $flags --emit bundle -o "$ptx_dir/$name.bundle" >/dev/null 2>"$ptx_dir/$name.log" || {
    cat "$ptx_dir/$name.log" >&2
    exit 1
  }
  cp "$ptx_dir/$name.bundle/kernel.ptx" "$ptx"
  if grep -q '"launches"' "$ptx_dir/$name.bundle/manifest.json"; then
    # Several kernels (sink-bwd): one row each, static shared memory
    # (ptxas) plus each launch's dynamic window.
    row "$title" "$ptx" "" "" ""
    declare -A dynamic_of=()
    while read -r entry bytes; do dynamic_of[$entry]=$bytes; done < <(python3 -c '
import json, sys
for launch in json.load(open(sys.argv[1]))["launches"]:
    print(launch["entry"], launch["shared_memory_bytes"])' "$ptx_dir/$name.bundle/manifest.json")
    while read -r entry regs smem spills; do
      [[ "$smem" == "?" ]] || smem=$((smem + ${dynamic_of[$entry]:-0}))
      row "  $entry" "" "$regs" "$smem" "$spills"
    done < <(entry_resources "$ptx")
    unset dynamic_of
    continue
  fi
  read -r regs smem spills < <(resources "$ptx")
  # Static shared memory (ptxas) plus the dynamic window the bundle launches with.
  dynamic=$(sed -n 's/.*"shared_memory_bytes": *\([0-9]*\).*/\1/p' "$ptx_dir/$name.bundle/manifest.json")
  [[ "$smem" == "?" ]] || smem=$((smem + ${dynamic:-0}))
  row "$title" "$ptx" "$regs" "$smem" "$spills"
done
[[ -x "$ptxas" ]] || echo "(ptxas not found at $ptxas: registers and shared memory unknown)"

if ! "$runner" devices >/dev/null 2>&1; then
  echo "No CUDA driver or GPU here ($("$runner" devices 2>&1 | head -1 | cut -c1-90)...):"
  echo "a GPU (sm_90a, Hopper) is needed to execute these kernels."
  exit 0
fi
"$runner" devices
for entry in "${kernels[@]}"; do
  IFS='|' read -r name title flags <<<"$entry"
  # shellcheck disable=SC2086
  "$runner" check $flags --seed 1
  "$runner" bench $flags
done
# The seed's table (and its window-128 rows) in one command, then the
# backward's (causal) in auto's forms and in the deterministic ones.
"$runner" bench --preset seed --iters 20
"$runner" bench --preset seed --kernel sink-bwd --iters 10
"$runner" bench --preset seed --kernel sink-bwd --deterministic --iters 10
