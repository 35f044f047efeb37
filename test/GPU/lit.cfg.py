# -*- Python -*-
# GPU tests: run kernels on a Hopper GPU through sinkattn-runner. Every test
# says `REQUIRES: cuda-gpu`; without a GPU (CI) they report as unsupported.
#
# Self-contained (no lit.llvm, no FileCheck) so that the GPU machine, which
# has a runtime-only build and no LLVM tools, can run it too:
#   SINKATTN_RUNNER=<runner> SINKATTN_BUNDLES=<dir> lit test/GPU
# Defaults: the full build's build/bin/sinkattn-runner and build/bundles
# (compiled from bundles.txt by scripts/make-bundles.sh).

import os
import shutil
import sys

import lit.formats

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lit_support import cuda_gpu_present  # noqa: E402

config.name = "SinkAttn-GPU"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(os.path.dirname(config.test_source_root))
build = os.environ.get("SINKATTN_BUILD_DIR", os.path.join(repo, "build"))
if not os.path.isabs(build):
    build = os.path.join(repo, build)
config.test_exec_root = os.path.join(build, "test", "GPU")
os.makedirs(config.test_exec_root, exist_ok=True)

runner = os.environ.get("SINKATTN_RUNNER", os.path.join(build, "bin", "sinkattn-runner"))
bundles = os.environ.get("SINKATTN_BUNDLES", os.path.join(build, "bundles"))
smoke = os.environ.get(
    "SINKATTN_RUNTIME_SMOKE",
    os.path.join(build, "test", "Unit", "Runtime", "SinkAttnRuntimeGpuSmoke"))
attention = os.environ.get(
    "SINKATTN_ATTENTION_GPU",
    os.path.join(build, "test", "Unit", "Runtime", "SinkAttnAttentionGpuTest"))
# Tests run in their own directories: relative paths are taken from the
# directory lit was started in.
runner, bundles, smoke, attention = (
    os.path.abspath(p) for p in (runner, bundles, smoke, attention))
# A kernel that never finishes (a barrier nobody completes: the persistent
# GEMM's setmaxnreg.inc once waited forever) fails its RUN line with exit
# 124 after this many seconds instead of hanging the whole round (whose
# device call has 600 s). %runner_seed is for the checks of seed-size
# backward bundles (S 8k and 16k), whose float64 cross-check computes the
# statistics of every row of a kv head's query heads on the CPU: more than
# 60 s at S 16384, D 128.
limit = os.environ.get("SINKATTN_GPU_COMMAND_TIMEOUT", "60")
seed_limit = os.environ.get("SINKATTN_GPU_SEED_COMMAND_TIMEOUT", "300")
timeout_tool = shutil.which("timeout")
runner_seed = runner
if timeout_tool and limit != "0":
    runner_seed = f"{timeout_tool} --kill-after=10 {seed_limit} {runner}"
    runner = f"{timeout_tool} --kill-after=10 {limit} {runner}"
# %runner_seed first: lit substitutes in order, and %runner is its prefix.
config.substitutions.append(("%runner_seed", runner_seed))
config.substitutions.append(("%runner", runner))
config.substitutions.append(("%bundles", bundles))
config.substitutions.append(("%runtime_smoke", smoke))
config.substitutions.append(("%attention_gpu", attention))
config.environment["PATH"] = os.environ.get("PATH", "")


if cuda_gpu_present():
    config.available_features.add("cuda-gpu")
