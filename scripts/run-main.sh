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

echo "Compiling kernels to PTX (sm_90a) into $ptx_dir"
printf '%-14s %-34s %9s %12s %7s\n' kernel ptx registers "shared (B)" spills
for src in examples/*.mlir; do
  name=$(basename "$src" .mlir)
  "$opt" "$src" --sinkattn-gpu-to-ptx --sinkattn-write-ptx=output-dir="$ptx_dir" -o /dev/null
  ptx="$ptx_dir/$name.ptx"
  read -r regs smem spills < <(resources "$ptx")
  printf '%-14s %-34s %9s %12s %7s\n' "$name" "$ptx" "$regs" "$smem" "$spills"
done
[[ -x "$ptxas" ]] || echo "(ptxas not found at $ptxas: registers and shared memory unknown)"

if python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
  echo "A CUDA driver is present, but running kernels needs sinkattn-runner, which is not built yet."
else
  echo "No CUDA driver (libcuda.so.1) here: a GPU (sm_90a, Hopper) is needed to execute these kernels."
fi
