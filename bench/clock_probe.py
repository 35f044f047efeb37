#!/usr/bin/env python3
"""SM clock and board power while SinkAttn and cuDNN run the same seed cell.

Why: the long seed cells slow down as a run goes on (PERF.md, session 16:
D 64 S 16384 ran 4.33 ms per call for four calls, then 4.84-5.01 ms), so
the H200 lowers its clocks under sustained load. If one side draws more
power per unit of work it runs at lower clocks than the other; this script
shows whether that is so. For each cell it runs `sinkattn-runner bench` on
the cell's bundle and then cuDNN SDPA (bench/compare_sdpa.CudnnCell) in each
of its forms (cudnn-gqa where this PyTorch's cuDNN runs it, else a line
saying why not, and cudnn-mha-expanded) for the same number of calls, each
side after the same rest (a synchronize, then --pause seconds) and each
while `nvidia-smi` samples the SM clock, power
and the active clock-event reasons every SAMPLE_MS milliseconds, and prints
per side, named with its form (SinkAttn's from its bundle's manifest, as
bench/interleaved_seed.py names it): the median ms per call, the first and last calls' times, and the
median clock and power over the samples taken while that side was busy
(power above half the run's peak: the runner's JIT link and input
generation, and PyTorch's setup, run at idle power).

usage: clock_probe.py --runner R --bundles DIR [--cells fwd:16384:64,...]
  (DIR holds the seed cells' bundles under make-bundles.sh's names,
  sink-{fwd,bwd}-seed-{2k..16k}-d{64,128}; a directory of symbolic links
  under those names times other bundles of the same shapes)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import torch

from check_bundles import check_bundles
from compare_sdpa import FORMS, MHA_EXPANDED, CudnnCell
from interleaved_seed import bundle_path, idle, sinkattn_form

SAMPLE_MS = 50
# The sampler's program (a stand-in in test/Tools/clock-probe.test).
NVIDIA_SMI = os.environ.get("SINKATTN_NVIDIA_SMI", "nvidia-smi")
QUERY = "clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"


class Sampler:
    """nvidia-smi's samples while a `with` block runs: (clock MHz, watts,
    degrees C, reasons bit mask)."""

    def __enter__(self):
        self.samples = []
        self.proc = subprocess.Popen(
            [NVIDIA_SMI, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits",
             f"-lms={SAMPLE_MS}"], stdout=subprocess.PIPE, text=True, bufsize=1)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        # nvidia-smi takes a moment to start: wait for its first sample.
        deadline = time.time() + 5
        while not self.samples and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        return self

    def _read(self):
        for line in self.proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            try:
                self.samples.append((float(parts[0]), float(parts[1]), float(parts[2]),
                                     int(parts[3], 16)))
            except (ValueError, IndexError):
                pass

    def __exit__(self, *exc):
        time.sleep(0.1)
        self.proc.terminate()
        self.proc.wait()
        self.thread.join(timeout=2)

    def busy(self):
        """Samples at more than half of the peak power seen."""
        if not self.samples:
            return []
        peak = max(s[1] for s in self.samples)
        return [s for s in self.samples if s[1] > peak / 2]


def summary(name, times, sampler):
    busy = sampler.busy()
    reasons = 0
    for s in busy:
        reasons |= s[3]
    clocks = [s[0] for s in busy]
    watts = [s[1] for s in busy]
    n = max(1, len(times) // 10)
    return (f"{name:29s} median {statistics.median(times):8.4f} ms  first {n} "
            f"{statistics.mean(times[:n]):8.4f}  last {n} {statistics.mean(times[-n:]):8.4f}  "
            f"clock {statistics.median(clocks) if clocks else 0:6.0f} MHz "
            f"(min {min(clocks) if clocks else 0:.0f})  power "
            f"{statistics.median(watts) if watts else 0:5.0f} W  temp "
            f"{max((s[2] for s in busy), default=0):.0f} C  reasons {reasons:#x}  "
            f"samples {len(busy)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", required=True)
    parser.add_argument("--bundles", required=True)
    parser.add_argument("--cells", default="fwd:16384:64,fwd:16384:128,bwd:16384:64,bwd:16384:128",
                        help="direction:seq:head_dim, comma-separated")
    parser.add_argument("--seconds", type=float, default=4.0,
                        help="about how long each side runs (default 4)")
    parser.add_argument("--pause", type=float, default=2.0,
                        help="seconds of rest before each side (default 2)")
    parser.add_argument("--checked", action="store_true",
                        help="the caller checked these bundles in this round "
                             "(scripts/gpu-round.sh); otherwise each is checked "
                             "(sinkattn-runner check) before any timing")
    args = parser.parse_args()
    cells = []
    for spec in args.cells.split(","):
        parts = spec.split(":")
        if (len(parts) != 3 or parts[0] not in ("fwd", "bwd") or
                not parts[1].isdigit() or parts[2] not in ("64", "128")):
            sys.exit(f"error: --cells entry '{spec}' is not direction:seq:head_dim "
                     "(fwd or bwd, a length, 64 or 128)")
        direction, seq, head_dim = parts[0], int(parts[1]), int(parts[2])
        bundle = bundle_path(args.bundles, direction, seq, head_dim)
        if not os.path.isdir(bundle):
            sys.exit(f"error: no bundle {bundle}")
        cells.append((direction, seq, head_dim, bundle, sinkattn_form(bundle)))
    if not args.checked:
        check_bundles(args.runner, [cell[3] for cell in cells])
    for direction, seq, head_dim, bundle, form in cells:
        cell = CudnnCell(1, 64, 8, seq, head_dim)
        # Calls for about --seconds, from one cuDNN call's time.
        probe = cell.timer(direction)(iters=3, per_call=True, form=MHA_EXPANDED)
        iters = max(10, int(args.seconds * 1000 / statistics.median(probe)))
        print(f"{direction} S {seq} D {head_dim}, {iters} calls per side:")
        idle(args.pause)
        with tempfile.NamedTemporaryFile(suffix=".json") as out, Sampler() as ours:
            proc = subprocess.run([args.runner, "bench", "--bundle", bundle, "--iters",
                                   str(iters), "--warmup", "3", "--json", out.name],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"error: runner failed on {bundle}:\n{proc.stdout}{proc.stderr}")
            with open(out.name) as f:
                ours_times = json.load(f)["results"][0]["times_ms"]
        print("  " + summary(f"sinkattn ({form})", ours_times, ours), flush=True)
        for cudnn_form in FORMS:
            reason = cell.unavailable(cudnn_form, direction)
            if reason:
                print(f"  {cudnn_form:29s} unavailable: {reason}", flush=True)
                continue
            idle(args.pause)
            with Sampler() as theirs:
                cudnn = cell.timer(direction)(iters=iters, per_call=True, form=cudnn_form)
            print("  " + summary(cudnn_form, cudnn, theirs))
            print(f"  ratio of medians ({cudnn_form} / SinkAttn) "
                  f"{statistics.median(cudnn) / statistics.median(ours_times):.3f}", flush=True)
        del cell
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
