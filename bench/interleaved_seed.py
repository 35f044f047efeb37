#!/usr/bin/env python3
"""The seed table with SinkAttn and cuDNN timed in alternation, cell by cell.

Why: an H200 steps its clocks down under sustained load (PERF.md, session 16:
one D 128 S 8192 forward cell ran its first 16 calls at 1.69 ms, the rest at
1.84-1.94 ms). Timing all of SinkAttn's table and then all of cuDNN's puts
such a step on one side only. Here each cell is timed in ROUNDS rounds; a
round times both sides back to back, in alternating order (SinkAttn first in
even rounds, cuDNN first in odd ones), so a clock step falls on both sides
alike. Each side's per-round number is its median over the round's timed
calls (both sides use sinkattn-runner bench's protocol: L2 flushed before
every call, no host wait between calls); a cell's result is each side's
median over its rounds, and its ratio the ratio of those medians (what the
chart shows); the per-round ratios are printed beside it.

SinkAttn is timed by `sinkattn-runner bench --bundle DIR/sink-{fwd,bwd}-seed-
{2k..16k}-d{64,128}` (a process per round: the runner JIT-links the bundle
and draws fresh random inputs each time); cuDNN through PyTorch SDPA
(bench/compare_sdpa.CudnnCell) in this process, on fresh random inputs per
cell. Output files keep the formats of `sinkattn-runner bench --preset seed
--json` (the SinkAttn row of the median round, its per-call times included)
and `bench/compare_sdpa.py --json`, so bench/plot_seed_table.py reads them.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import torch

from compare_sdpa import SEED_SHAPES, CudnnCell

# Each direction's calls per round (the same counts as gpu-round.sh's tables).
ITERS = {"fwd": (50, 5), "bwd": (20, 3)}


def bundle_path(bundles, direction, seq, head_dim):
    """The seed cell's bundle under `bundles` (make-bundles.sh's names)."""
    return os.path.join(bundles, f"sink-{direction}-seed-{seq // 1024}k-d{head_dim}")


def runner_median(runner, bundle, iters, warmup, timeout):
    """sinkattn-runner bench's JSON row for one bundle (one process, at most
    `timeout` seconds: a kernel that hangs stops the table with a message)."""
    command = [runner, "bench", "--bundle", bundle, "--iters", str(iters),
               "--warmup", str(warmup)]
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        try:
            proc = subprocess.run(command + ["--json", out.name], capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            sys.exit(f"error: {runner} bench --bundle {bundle} did not finish in "
                     f"{timeout} s")
        if proc.returncode != 0:
            sys.exit(f"error: {runner} bench --bundle {bundle} failed "
                     f"(exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
        with open(out.name) as f:
            top = json.load(f)
    return top.get("gpu"), top["results"][0]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", required=True, help="sinkattn-runner")
    parser.add_argument("--bundles", required=True,
                        help="directory with the sink-{fwd,bwd}-seed-* bundles")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per cell (default 3)")
    parser.add_argument("--timeout", type=float, default=300,
                        help="seconds one runner call may take (default 300)")
    parser.add_argument("--directions", default="fwd,bwd",
                        help="fwd, bwd or fwd,bwd (default)")
    parser.add_argument("--sinkattn-json", metavar="PREFIX", required=True,
                        help="writes PREFIX-fwd.json / PREFIX-bwd.json "
                             "(sinkattn-runner bench --preset seed --json format)")
    parser.add_argument("--cudnn-json", metavar="FILE", required=True,
                        help="the cuDNN rows (bench/compare_sdpa.py --json format)")
    args = parser.parse_args()
    directions = args.directions.split(",")
    if args.rounds < 1 or args.timeout <= 0 or any(d not in ITERS for d in directions):
        parser.error("--rounds must be >= 1, --timeout > 0 and --directions a list "
                     "of fwd, bwd")
    for s, d in ((s, d) for _, _, _, s, d in SEED_SHAPES):
        for direction in directions:
            bundle = bundle_path(args.bundles, direction, s, d)
            if not os.path.isdir(bundle):
                parser.error(f"no bundle {bundle}")

    torch.manual_seed(0)
    gpu = None
    ours = {direction: [] for direction in directions}
    theirs = []
    print(f"interleaved seed table: {args.rounds} rounds per cell, SinkAttn and cuDNN "
          f"alternating (median ms per round; ratio = cuDNN ms / SinkAttn ms; cell = "
          f"ratio of the rounds' medians)")
    for b, h, hk, s, d in SEED_SHAPES:
        cell = CudnnCell(b, h, hk, s, d)
        for direction in directions:
            bundle = bundle_path(args.bundles, direction, s, d)
            iters, warmup = ITERS[direction]
            cudnn_timer = cell.timer(direction)
            runs, cudnn_ms = [], []

            def time_ours():
                runs.append(runner_median(args.runner, bundle, iters, warmup, args.timeout))

            def time_theirs():
                cudnn_ms.append(cudnn_timer(iters=iters))

            for r in range(args.rounds):
                for step in ((time_ours, time_theirs) if r % 2 == 0 else (time_theirs, time_ours)):
                    step()
            gpu = runs[-1][0]
            rows = [row for _, row in runs]
            ours_ms = [row["median_ms"] for row in rows]
            ratios = [c / o for c, o in zip(cudnn_ms, ours_ms)]
            # The median round's row (rounds sorted by time; the lower middle
            # one for an even count), so its fields agree with its median.
            middle = sorted(range(len(rows)), key=lambda i: ours_ms[i])[(len(rows) - 1) // 2]
            row = dict(rows[middle])
            row["rounds_median_ms"] = ours_ms
            ours[direction].append(row)
            cudnn_row = cell.row(direction, statistics.median_low(cudnn_ms))
            cudnn_row["rounds_median_ms"] = cudnn_ms
            theirs.append(cudnn_row)
            print(f"{direction} D={d:<3} S={s:<5}  sinkattn "
                  f"{' '.join(f'{v:.4f}' for v in ours_ms)}  cudnn "
                  f"{' '.join(f'{v:.4f}' for v in cudnn_ms)}  ratio "
                  f"{' '.join(f'{v:.3f}' for v in ratios)}  cell "
                  f"{cudnn_row['median_ms'] / row['median_ms']:.3f}x",
                  flush=True)
        del cell
    for direction in directions:
        with open(f"{args.sinkattn_json}-{direction}.json", "w") as f:
            json.dump({"gpu": gpu, "preset": "seed", "protocol": "interleaved",
                       "rounds": args.rounds, "results": ours[direction]}, f, indent=2)
    with open(args.cudnn_json, "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "protocol": "flush, interleaved with sinkattn-runner",
                   "rounds": args.rounds, "results": theirs}, f, indent=2)


if __name__ == "__main__":
    main()
