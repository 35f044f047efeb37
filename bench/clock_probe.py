#!/usr/bin/env python3
"""SM clock and board power while SinkAttn and cuDNN run the same seed cell.

Why: the long seed cells slow down as a run goes on (PERF.md, session 16:
D 64 S 16384 ran 4.33 ms per call for four calls, then 4.84-5.01 ms), so
the H200 lowers its clocks under sustained load. If one side draws more
power per unit of work it runs at lower clocks than the other; this script
shows whether that is so. For each cell it runs `sinkattn-runner bench` on
the cell's bundle and then cuDNN SDPA (bench/compare_sdpa.CudnnCell) for the
same number of calls, each while `nvidia-smi` samples the SM clock, power
and the active clock-event reasons every SAMPLE_MS milliseconds, and prints
per side: the median ms per call, the first and last calls' times, and the
median clock and power over the samples taken while that side was busy
(power above half the run's peak: the runner's JIT link and input
generation, and PyTorch's setup, run at idle power).

usage: clock_probe.py --runner R --bundles DIR [--cells fwd:16384:64,...]
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
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from compare_sdpa import CudnnCell
from interleaved_seed import bundle_path

SAMPLE_MS = 50
QUERY = "clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"


class Sampler:
    """nvidia-smi's samples while a `with` block runs: (clock MHz, watts,
    degrees C, reasons bit mask)."""

    def __enter__(self):
        self.samples = []
        self.proc = subprocess.Popen(
            ["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits",
             f"-lms={SAMPLE_MS}"], stdout=subprocess.PIPE, text=True, bufsize=1)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        time.sleep(0.3)
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
    return (f"{name:8s} median {statistics.median(times):8.4f} ms  first {n} "
            f"{statistics.mean(times[:n]):8.4f}  last {n} {statistics.mean(times[-n:]):8.4f}  "
            f"clock {statistics.median(clocks) if clocks else 0:6.0f} MHz "
            f"(min {min(clocks) if clocks else 0:.0f})  power "
            f"{statistics.median(watts) if watts else 0:5.0f} W  temp "
            f"{max((s[2] for s in busy), default=0):.0f} C  reasons {reasons:#x}  "
            f"samples {len(busy)}")


def cudnn_times(cell, direction, iters):
    """Per-call ms of `iters` cuDNN calls under the runner's protocol
    (compare_torch.time_ms's "flush", keeping every call's time)."""
    l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    q, k, v = cell.q, cell.k, cell.v
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        if direction == "fwd":
            fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            for t in (q, k, v):
                t.requires_grad_(True)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            grad = torch.randn_like(out)
            fn = lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        pairs = []
        for i in range(iters):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            flush.fill_(i & 1)
            start.record()
            fn()
            end.record()
            pairs.append((start, end))
        torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in pairs]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", required=True)
    parser.add_argument("--bundles", required=True)
    parser.add_argument("--cells", default="fwd:16384:64,fwd:16384:128,bwd:16384:64,bwd:16384:128",
                        help="direction:seq:head_dim, comma-separated")
    parser.add_argument("--seconds", type=float, default=4.0,
                        help="about how long each side runs (default 4)")
    args = parser.parse_args()
    for spec in args.cells.split(","):
        direction, seq, head_dim = spec.split(":")
        seq, head_dim = int(seq), int(head_dim)
        bundle = bundle_path(args.bundles, direction, seq, head_dim)
        cell = CudnnCell(1, 64, 8, seq, head_dim)
        # Calls for about --seconds, from one cuDNN call's time.
        probe = cudnn_times(cell, direction, 3)
        iters = max(10, int(args.seconds * 1000 / statistics.median(probe)))
        with tempfile.NamedTemporaryFile(suffix=".json") as out, Sampler() as ours:
            proc = subprocess.run([args.runner, "bench", "--bundle", bundle, "--iters",
                                   str(iters), "--warmup", "3", "--json", out.name],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"error: runner failed on {bundle}:\n{proc.stdout}{proc.stderr}")
            with open(out.name) as f:
                ours_times = json.load(f)["results"][0]["times_ms"]
        time.sleep(2)
        with Sampler() as theirs:
            cudnn = cudnn_times(cell, direction, iters)
        print(f"{direction} S {seq} D {head_dim}, {iters} calls per side:")
        print("  " + summary("sinkattn", ours_times, ours))
        print("  " + summary("cudnn", cudnn, theirs))
        print(f"  ratio of medians (cuDNN / SinkAttn) "
              f"{statistics.median(cudnn) / statistics.median(ours_times):.3f}", flush=True)
        del cell
        torch.cuda.empty_cache()
        time.sleep(2)


if __name__ == "__main__":
    main()
