# -*- Python -*-
# lit configuration of SinkAttn's regression tests.

import os
import shutil
import sys

import lit.formats

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "."))
from lit_support import cuda_gpu_present  # noqa: E402
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "SinkAttn"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.sinkattn_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "lit_support.py", "Inputs", "consumer", "corpus", "README.md"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%sinkattn_src_root", config.sinkattn_src_root))
config.substitutions.append(("%sinkattn_obj_root", config.sinkattn_obj_root))
config.substitutions.append(("%cmake_generator", config.cmake_generator))
config.substitutions.append(("%cmake", config.cmake_command))
config.substitutions.append(("%cxx", config.cxx_compiler))
config.substitutions.append(("%cc", config.c_compiler))
config.substitutions.append(("%mlir_dir", config.mlir_dir))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

config.substitutions.append(
    ("%expect_exit", os.path.join(config.sinkattn_src_root, "test", "Inputs", "expect-exit")))
config.substitutions.append(("%bundles", os.path.join(config.sinkattn_obj_root, "bundles")))
# The runtime's CUDA driver without a GPU (test/Unit/Runtime/FakeCudaDriver.cpp).
config.substitutions.append(("%fake_cuda_driver", os.path.join(
    config.sinkattn_obj_root, "test", "Unit", "Runtime", "libsinkattn-fake-cuda.so")))

tool_dirs = [config.sinkattn_tools_dir, config.llvm_tools_dir]
tools = ["sinkattn-opt", "sinkattn-runner", "sinkattn-capi-test", "sinkattn-host-overhead",
         "FileCheck", "not", "count", "split-file"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Debian's stock mlir-opt-22 (it links libMLIR.so) loads libSinkAttnPlugin.so.
# Its tools directory names it mlir-opt; /usr/bin has the versioned link.
config.substitutions.append(
    ("%sinkattn_plugin", os.path.join(config.sinkattn_obj_root, "lib", "libSinkAttnPlugin.so")))
mlir_opt = shutil.which("mlir-opt-22") or os.path.join(config.llvm_tools_dir, "mlir-opt")
if os.path.exists(mlir_opt):
    llvm_config.add_tool_substitutions([ToolSubst("mlir-opt-22", command=mlir_opt)])
    # A plugin built with the sanitizers needs their runtime, which the
    # uninstrumented mlir-opt-22 does not load: its symbols stay undefined.
    if not config.sanitizers:
        config.available_features.add("mlir-opt-plugins")


# Sanitizer builds (make test-asan) and their fuzzers.
if config.sanitizers:
    config.available_features.add("sanitizers")
    # Findings abort the process, so a lit test fails on any report.
    # allow_user_poisoning=0: LLVM's allocators poison memory by hand when
    # their headers are compiled with ASan (our code) but not in Debian's
    # uninstrumented LLVM/MLIR libraries; the mix reports false
    # use-after-poison errors inside MLIR.
    config.environment["ASAN_OPTIONS"] = (
        "abort_on_error=1:detect_leaks=1:allow_user_poisoning=0")
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
if config.fuzzers:
    config.available_features.add("fuzzers")
    config.substitutions.append(
        ("%opt_fuzzer", os.path.join(config.sinkattn_tools_dir, "sinkattn-opt-fuzzer")))
    config.substitutions.append(
        ("%bundle_fuzzer", os.path.join(config.sinkattn_tools_dir, "sinkattn-bundle-fuzzer")))
config.substitutions.append(
    ("%fuzz_seconds", os.environ.get("SINKATTN_FUZZ_SECONDS", "60")))

# GPU tests carry `REQUIRES: cuda-gpu` and report as unsupported (skipped)
# on machines without a GPU, such as CI.
if cuda_gpu_present():
    config.available_features.add("cuda-gpu")

# ptxas, when present, lets tests assemble the PTX we emit.
ptxas = "/usr/local/cuda/bin/ptxas"
if os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
