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

# Resources of one kernel from `ptxas -v`: "<registers> <shared bytes> <spill stores>".
resources() {
  if [[ ! -x "$ptxas" ]]; then
    echo "? ? ?"
    return
  fi
  "$ptxas" -arch=sm_90a -v "$1" -o /dev/null 2>&1 | awk '
    /Used [0-9]+ registers/ { for (i = 1; i <= NF; i++) if ($(i+1) ~ /^registers/) regs = $i
                              for (i = 1; i <= NF; i++) if ($(i+1) == "bytes" && $(i+2) == "smem") smem = $i }
    /spill stores/ { for (i = 1; i <= NF; i++) if ($(i+1) == "bytes" && $(i+2) == "spill" && $(i+3) == "stores,") spill = $i }
    END { printf "%s %s %s\n", (regs == "" ? "?" : regs), (smem == "" ? 0 : smem), (spill == "" ? "?" : spill) }'
}

runner="$build_dir/bin/sinkattn-runner"
row() { printf '%-22s %-36s %9s %12s %7s\n' "$@"; }

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
  "tma-copy|tma-copy 8192x8192 S=3|--kernel tma-copy --m 8192 --n 8192 --stages 3"
  "tma-stream|tma-stream 8192x8192 S=3|--kernel tma-stream --m 8192 --k 8192 --stages 3"
)
for entry in "${kernels[@]}"; do
  IFS='|' read -r name title flags <<<"$entry"
  ptx="$ptx_dir/$name.ptx"
  # shellcheck disable=SC2086 # flags are words on purpose
  "$runner" compile $flags --emit ptx -o "$ptx" 2>/dev/null
  read -r regs smem spills < <(resources "$ptx")
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
