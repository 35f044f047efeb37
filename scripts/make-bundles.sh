#!/usr/bin/env bash
# Compiles every bundle listed in test/GPU/bundles.txt with sinkattn-runner.
# usage: [PTXAS=PATH] scripts/make-bundles.sh [RUNNER [OUTPUT_DIR]]
#   defaults: build/bin/sinkattn-runner, build/bundles; PTXAS (default the
#   CUDA toolkit's) assembles the kernel library's SASS, which
#   test/GPU/kernel-library-sass.test runs.
set -euo pipefail
cd "$(dirname "$0")/.."
runner=${1:-${SINKATTN_BUILD_DIR:-build}/bin/sinkattn-runner}
out=${2:-${SINKATTN_BUILD_DIR:-build}/bundles}
ptxas=${PTXAS:-/usr/local/cuda/bin/ptxas}
if [[ ! -x $ptxas ]]; then
  echo "error: no ptxas at '$ptxas' for the kernel library's SASS (set PTXAS)" >&2
  exit 1
fi
mkdir -p "$out"
while read -r name flags; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  # shellcheck disable=SC2086 # flags are words on purpose
  "$runner" compile $flags --emit bundle -o "$out/$name" 2>/dev/null || {
    echo "error: compiling bundle $name ($flags) failed:" >&2
    "$runner" compile $flags --emit bundle -o "$out/$name" >&2 || true
    exit 1
  }
done < test/GPU/bundles.txt
# The tutorial's bundle (test/GPU/tutorial.test): docs/tutorial.md's steps
# before the GPU's, as the document shows them, with the tools next to the
# runner (the plugin's steps are left out: the bundle does not need them).
tutorial=$(mktemp -d)
mkdir -p "$tutorial/build"
ln -s "$(cd "$(dirname "$runner")" && pwd)" "$tutorial/build/bin"
python3 scripts/tutorial-commands.py docs/tutorial.md --dir "$tutorial" --tag tutorial \
  > "$tutorial/steps.sh"
(cd "$tutorial" && bash steps.sh) > "$tutorial/log" 2>&1 || {
  echo "error: docs/tutorial.md's steps failed:" >&2
  cat "$tutorial/log" >&2
  exit 1
}
rm -rf "$out/tutorial-gemm" && mv "$tutorial/gemm-bundle" "$out/tutorial-gemm"
rm -rf "$tutorial"
# The installed kernel library, which test/GPU/attention-library.test runs
# the library's calls over too, with its SASS as the build makes it.
scripts/make-kernel-library.sh "$runner" "$out/kernel-library" "$ptxas"
# The commit the bundles were compiled from (the GPU machine's checkout may
# not know it): gpu-round.sh reports it.
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit-dirty"
echo "$commit" > "$out/COMMIT"
echo "bundles in $out: $(ls -d "$out"/*/ | wc -l) (commit $commit)"
