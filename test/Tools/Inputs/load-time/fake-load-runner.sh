#!/bin/sh
# Stand-in for `sinkattn-runner check --bundle B --verbose`: loads SASS in
# 2.5 ms where the manifest names some, else "JIT-compiles" in 900 ms with
# an empty $CUDA_CACHE_PATH and 40 ms once a process has filled it. Each
# call is logged to $FAKE_RUNNER_LOG with the flags after the bundle; with
# $FAKE_FAIL set the check fails.
bundle=$3
shift 3
echo "check $(basename "$bundle") $*" >> "$FAKE_RUNNER_LOG"
if [ -n "$FAKE_FAIL" ]; then
  echo "FAIL: 3 of 100 elements outside tolerance"
  exit 1
fi
if grep -q '"sass"' "$bundle/manifest.json"; then
  echo "kernels of sink_fwd: SASS for sm_90a (kernel.cubin), loaded in 2.5 ms" >&2
elif [ -e "$CUDA_CACHE_PATH/filled" ]; then
  echo "kernels of sink_fwd: PTX, JIT-compiled, loaded in 40.0 ms" >&2
else
  mkdir -p "$CUDA_CACHE_PATH" && touch "$CUDA_CACHE_PATH/filled"
  echo "kernels of sink_fwd: PTX, JIT-compiled, loaded in 900.0 ms" >&2
fi
echo "JIT log of sink_fwd:" >&2
