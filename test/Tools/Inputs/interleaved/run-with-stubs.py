#!/usr/bin/env python3
"""Runs a bench/ script (argv[1], with the arguments after it:
interleaved_seed.py, clock_probe.py) with the stand-ins in stubs/ (PyTorch,
compare_sdpa.py) ahead of bench/ on the module path:
test/Tools/interleaved-seed.test and clock-probe.test, on a machine without
PyTorch."""
import os
import runpy
import sys

script = os.path.abspath(sys.argv[1])
stubs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stubs")
sys.path[:0] = [stubs, os.path.dirname(script)]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
