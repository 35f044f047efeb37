# -*- Python -*-
# The GoogleTest unit tests, one lit test per test case.

import lit.formats

config.name = "SinkAttn-Unit"
config.suffixes = []
config.test_exec_root = config.unittests_dir
config.test_source_root = config.unittests_dir
# Executables whose names end in "Tests" below the unittests directory.
config.test_format = lit.formats.GoogleTest(".", "Tests")

# For the sanitizer build (ignored by uninstrumented binaries): LLVM's
# allocators poison memory by hand in our instrumented code but not in
# Debian's LLVM/MLIR libraries; that mix reports false use-after-poison.
config.environment["ASAN_OPTIONS"] = "abort_on_error=1:detect_leaks=1:allow_user_poisoning=0"
config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
