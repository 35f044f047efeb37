#!/usr/bin/env python3
"""How long a new process takes to load a bundle's kernels, three ways.

Why: a kernel library is opened by processes that start often (training
jobs, servers in fresh containers), and each loads a kernel on its first
call. This measures that load for one bundle with SASS (docs/bundle.md):
  sass      the bundle as it is: its cubin, nothing compiled,
  jit-cold  a copy without its SASS, the driver's compute cache empty (a
            fresh CUDA_CACHE_PATH per process): the PTX JIT-compiled,
  jit-warm  that copy again with a cache the previous process filled: what
            the driver's own cache gives a second process.
Each run is a fresh `sinkattn-runner check --verbose` process (the check
must pass); the time is the runner's "loaded in" (LoadedBundle::load, the
first kernel load of the process, driver and context already up).

usage: load_time.py --runner R --bundle B [--runs N] [--json FILE]
                    [-- extra flags for check]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

LOADED = re.compile(r"^kernels of \S+: (.*), loaded in ([0-9.]+) ms$", re.M)


def load_once(runner, bundle, extra, cache_dir):
    """(code source, ms) of one check process, or exits naming the failure."""
    env = dict(os.environ, CUDA_CACHE_PATH=cache_dir)
    env.pop("CUDA_CACHE_DISABLE", None)
    proc = subprocess.run([runner, "check", "--bundle", bundle, "--verbose"] + extra,
                          env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: check of {bundle} failed (exit {proc.returncode}):\n"
                 f"{proc.stdout}{proc.stderr}")
    match = LOADED.search(proc.stderr)
    if not match:
        sys.exit(f"error: the runner printed no 'loaded in' line for {bundle}")
    return match.group(1), float(match.group(2))


def without_sass(bundle, directory):
    """A copy of `bundle` in `directory` without its SASS."""
    copy = os.path.join(directory, os.path.basename(bundle.rstrip("/")) + "-ptx")
    shutil.copytree(bundle, copy)
    with open(os.path.join(copy, "manifest.json")) as f:
        manifest = json.load(f)
    sass = manifest.pop("sass", None)
    if sass is None:
        sys.exit(f"error: {bundle} has no SASS (compile it with --ptxas)")
    os.remove(os.path.join(copy, sass["cubin"]))
    with open(os.path.join(copy, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    return copy


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runner", required=True)
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("extra", nargs="*", help="flags for check, after --")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    results = {}
    with tempfile.TemporaryDirectory(prefix="sinkattn-load-") as tmp:
        ptx_only = without_sass(args.bundle, tmp)
        warm_cache = os.path.join(tmp, "cache-warm")
        load_once(args.runner, ptx_only, args.extra, warm_cache)  # fills it
        expected = {"sass": "SASS for", "jit-cold": "PTX, JIT-compiled",
                    "jit-warm": "PTX, JIT-compiled"}
        for mode, prefix in expected.items():
            times = []
            for run in range(args.runs):
                if mode == "sass":
                    bundle, cache = args.bundle, os.path.join(tmp, "cache-sass")
                elif mode == "jit-cold":
                    bundle, cache = ptx_only, os.path.join(tmp, f"cache-cold-{run}")
                else:
                    bundle, cache = ptx_only, warm_cache
                source, ms = load_once(args.runner, bundle, args.extra, cache)
                if not source.startswith(prefix):
                    sys.exit(f"error: {mode}: the runner loaded '{source}', "
                             f"expected '{prefix}...'")
                times.append(ms)
            results[mode] = times
            print(f"{mode:9s} median {statistics.median(times):9.1f} ms  "
                  f"runs {', '.join(f'{t:.1f}' for t in times)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"bundle": args.bundle, "load_ms": results}, f, indent=2)


if __name__ == "__main__":
    main()
