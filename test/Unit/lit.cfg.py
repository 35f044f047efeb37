# -*- Python -*-
# The GoogleTest unit tests, one lit test per test case.

import lit.formats

config.name = "SinkAttn-Unit"
config.suffixes = []
config.test_exec_root = config.unittests_dir
config.test_source_root = config.unittests_dir
# Executables whose names end in "Tests" below the unittests directory.
config.test_format = lit.formats.GoogleTest(".", "Tests")
