#!/usr/bin/env bash
# Makes DIR hold an empty directory for every bundle that gpu-round.sh times
# by default (test/Tools/gpu-round.test; the fake runner needs no files but
# the kernel library's manifests).
set -euo pipefail
dir=$1
mkdir -p "$dir"
cd "$dir"
mkdir -p gemm-4096x4096x4096 gemm-8192x8192x8192 gemm-persistent-4096-s4 gemm-cpasync-4096-s4 \
  gemm-cpasync-plain-4096-s3 tma-copy-8192x8192 tma-stream-8192x8192 \
  sink-fwd-seed-bshd-8k-d64 sink-fwd-seed-bshd-8k-d128 sink-fwd-varlen-16k-d64 sink-fwd-varlen-16k-d128 \
  sink-fwd-seed-{2k,4k,8k,16k}-d{64,128} sink-fwd-seed-win128-{2k,4k,8k,16k}-d{64,128} \
  sink-bwd-seed-{2k,4k,8k,16k}-d{64,128} sink-bwd-seed-{2k,4k,8k,16k}-d{64,128}-deterministic \
  sink-fwd-tune-2k-d64-plain sink-fwd-tune-2k-d64-ws \
  kernel-library/fwd-bf16-d64-causal-f32-sinks-{plain,ws} \
  kernel-library/fwd-bf16-d128-causal-f32-sinks-{ws,overlap}{,-persistent}
# The kernel library's bundles carry SASS (bench/load_time.py copies one
# without it).
for bundle in kernel-library/*; do
  echo '{"format_version": 6, "sass": {"cubin": "kernel.cubin"}}' >"$bundle/manifest.json"
  touch "$bundle/kernel.cubin"
done
echo test >COMMIT
