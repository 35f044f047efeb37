#!/usr/bin/env bash
# Installs the Debian packages SinkAttn builds with, only those that are
# missing. LLVM/MLIR 22 come from Debian; the CUDA toolkit headers are expected
# at /usr/local/cuda (cuda.h; ptxas is used when present).
set -euo pipefail

packages=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  cmake ninja-build g++ python3 libgtest-dev
  clang-22 libclang-rt-22-dev
)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "Installing missing packages: ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then
    sudo="sudo"
  else
    echo "error: packages ${missing[*]} are missing and this user cannot install them (not root, no sudo)" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}"
