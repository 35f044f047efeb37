#!/usr/bin/env bash
# Configures the CMake build in $SINKATTN_BUILD_DIR (default: build) against
# Debian's LLVM/MLIR 22, once; later builds re-run CMake through the generator.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${SINKATTN_BUILD_DIR:-build}
build_type=${SINKATTN_BUILD_TYPE:-Release}
llvm_prefix=${SINKATTN_LLVM_PREFIX:-/usr/lib/llvm-22}

if [[ -f "$build_dir/CMakeCache.txt" ]]; then
  exit 0
fi

args=(
  -S . -B "$build_dir"
  -DCMAKE_BUILD_TYPE="$build_type"
  -DMLIR_DIR="$llvm_prefix/lib/cmake/mlir"
  -DLLVM_EXTERNAL_LIT="$llvm_prefix/bin/lit"
)
if command -v ninja >/dev/null; then
  args+=(-G Ninja)
fi
# lld links the MLIR tools several times faster than ld.bfd.
if command -v ld.lld >/dev/null; then
  args+=(-DLLVM_USE_LINKER=lld)
fi
cmake "${args[@]}" "$@"
