#!/usr/bin/env python3
"""The seed table with SinkAttn and cuDNN timed in alternation, cell by cell.

Why: an H200 steps its clocks down under sustained load (PERF.md, session 16:
one D 128 S 8192 forward cell ran its first 16 calls at 1.69 ms, the rest at
1.84-1.94 ms). Timing all of SinkAttn's table and then all of cuDNN's puts
such a step on one side only. Here each cell is timed in ROUNDS rounds; a
round times every side once: SinkAttn, cuDNN in its GQA form (when this
PyTorch's cuDNN runs it) and cuDNN with K/V expanded to MHA
(bench/compare_sdpa.py's two forms), the order rotating by one side per
round (with two sides: SinkAttn first in even rounds, cuDNN first in odd
ones), so a clock step falls on every side alike. Each side's per-round
number is its median over the round's timed calls (every side uses
sinkattn-runner bench's protocol: L2 flushed before every call, no host wait
between calls, the same warm-up and timed call counts); a cell's result is
each side's median over its rounds, and its ratio the ratio of those medians
(what the chart shows); the per-round ratios are printed beside it.

Every side starts its round from the same idle state: the GPU synchronized,
then IDLE seconds (--idle, default 1) of sleep, then the side's own warm-up
calls. SinkAttn is timed by `sinkattn-runner bench --bundle DIR/sink-{fwd,
bwd}-seed-{2k..16k}-d{64,128}` (a process per round: the runner JIT-links
the bundle and draws fresh inputs, CPU work during which the GPU stays
idle, a little longer than cuDNN's gap); cuDNN through PyTorch SDPA
(bench/compare_sdpa.CudnnCell) in this process, on fresh random inputs per
cell. The equal sleep, longer than the runner's setup, is the simpler of the
two fair choices (the other, cuDNN in a process per round too, would import
PyTorch and build its inputs 100-odd times a table).

Every row names the form it times: SinkAttn's from its bundle's manifest
(`form`: auto for the forward's default compilation; the backward's form
by name: deterministic, split or deferred; else the options' values),
cuDNN's cudnn-gqa or cudnn-mha-expanded. Output files keep the formats of
`sinkattn-runner bench --preset seed --json` (the SinkAttn row of the
median round, its per-call times included) and `bench/compare_sdpa.py
--json`, so bench/plot_seed_table.py reads them.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

from check_bundles import check_bundles
from compare_sdpa import FORMS, SEED_SHAPES, CudnnCell

# Each direction's calls per round (the same counts as gpu-round.sh's tables).
ITERS = {"fwd": (50, 5), "bwd": (20, 3)}


def bundle_path(bundles, direction, seq, head_dim):
    """The seed cell's bundle under `bundles` (make-bundles.sh's names)."""
    return os.path.join(bundles, f"sink-{direction}-seed-{seq // 1024}k-d{head_dim}")


def sinkattn_form(bundle):
    """The name of the form a bundle was compiled in, from its manifest's
    config: "auto" for the default compilation of the forward,
    "deterministic" for the backward's --dq separate, else the backward's
    splits by name (split: --dq atomic --dkdv-warpgroups 2; deferred: the
    split with --dq-split deferred), else the opt-in options as
    key=value."""
    path = os.path.join(bundle, "manifest.json")
    try:
        with open(path) as f:
            config = json.load(f)["config"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"error: cannot read the config of {path}: {e}")
    if not isinstance(config, dict):
        sys.exit(f"error: {path}: config is not an object")
    opt_in = {}
    if config.get("dq", "separate") != "separate":
        opt_in["dq"] = config["dq"]
    for key in ("dq_warpgroups", "dkdv_warpgroups", "dq_split", "pack_gqa",
                "persistent_blocks"):
        if key in config:
            opt_in[key] = config[key]
    if not opt_in:
        return "deterministic" if config.get("dq") == "separate" else "auto"
    split = {"dq": "atomic", "dkdv_warpgroups": 2}
    for name, extra in (("split", {}), ("deferred", {"dq_split": "deferred"})):
        if opt_in == {**split, **extra}:
            return name
    return ",".join(f"{k}={v}" for k, v in opt_in.items())


def idle(seconds):
    """The state every side starts its round from: the GPU done with all
    work, then `seconds` without any."""
    torch.cuda.synchronize()
    time.sleep(seconds)


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
    parser.add_argument("--idle", type=float, default=1.0,
                        help="seconds of GPU idleness before each side's round "
                             "(default 1)")
    parser.add_argument("--checked", action="store_true",
                        help="the caller checked these bundles in this round "
                             "(scripts/gpu-round.sh); otherwise each is checked "
                             "(sinkattn-runner check) before any timing")
    parser.add_argument("--directions", default="fwd,bwd",
                        help="fwd, bwd or fwd,bwd (default)")
    parser.add_argument("--sinkattn-json", metavar="PREFIX", required=True,
                        help="writes PREFIX-fwd.json / PREFIX-bwd.json "
                             "(sinkattn-runner bench --preset seed --json format)")
    parser.add_argument("--cudnn-json", metavar="FILE", required=True,
                        help="the cuDNN rows (bench/compare_sdpa.py --json format)")
    args = parser.parse_args()
    directions = args.directions.split(",")
    if (args.rounds < 1 or args.timeout <= 0 or args.idle < 0
            or any(d not in ITERS for d in directions)):
        parser.error("--rounds must be >= 1, --timeout > 0, --idle >= 0 and "
                     "--directions a list of fwd, bwd")
    forms = {}  # bundle -> its form, read before anything runs
    for s, d in ((s, d) for _, _, _, s, d in SEED_SHAPES):
        for direction in directions:
            bundle = bundle_path(args.bundles, direction, s, d)
            if not os.path.isdir(bundle):
                parser.error(f"no bundle {bundle}")
            forms[bundle] = sinkattn_form(bundle)

    if not args.checked:
        check_bundles(args.runner, list(forms), args.timeout)

    torch.manual_seed(0)
    gpu = None
    ours = {direction: [] for direction in directions}
    theirs = []
    unavailable = {}
    print(f"interleaved seed table: {args.rounds} rounds per cell, SinkAttn and cuDNN "
          f"({', '.join(FORMS)}) in rotating order, {args.idle:g} s idle before each "
          f"side's round (median ms per round; ratio = cuDNN ms / SinkAttn ms; cell = "
          f"ratio of the rounds' medians)")
    for b, h, hk, s, d in SEED_SHAPES:
        cell = CudnnCell(b, h, hk, s, d)
        for direction in directions:
            bundle = bundle_path(args.bundles, direction, s, d)
            form = forms[bundle]
            iters, warmup = ITERS[direction]
            cudnn_forms = []
            for cudnn_form in FORMS:
                reason = cell.unavailable(cudnn_form, direction)
                if reason:
                    if cudnn_form not in unavailable:
                        print(f"{cudnn_form} unavailable: {reason}", flush=True)
                    unavailable.setdefault(cudnn_form, reason)
                else:
                    cudnn_forms.append(cudnn_form)
            runs, cudnn_ms = [], {f: [] for f in cudnn_forms}

            def time_ours():
                idle(args.idle)
                runs.append(runner_median(args.runner, bundle, iters, warmup, args.timeout))

            def time_theirs(cudnn_form):
                def step():
                    idle(args.idle)
                    cudnn_ms[cudnn_form].append(cell.timer(direction)(
                        iters=iters, warmup=warmup, form=cudnn_form))
                return step

            sides = [time_ours] + [time_theirs(f) for f in cudnn_forms]
            for r in range(args.rounds):
                shift = r % len(sides)
                for step in sides[shift:] + sides[:shift]:
                    step()
            gpu = runs[-1][0]
            rows = [row for _, row in runs]
            ours_ms = [row["median_ms"] for row in rows]
            # The median round's row (rounds sorted by time; the lower middle
            # one for an even count), so its fields agree with its median.
            middle = sorted(range(len(rows)), key=lambda i: ours_ms[i])[(len(rows) - 1) // 2]
            row = dict(rows[middle])
            row["form"] = form
            row["rounds_median_ms"] = ours_ms
            ours[direction].append(row)
            line = (f"{direction} D={d:<3} S={s:<5}  sinkattn ({form}) "
                    f"{' '.join(f'{v:.4f}' for v in ours_ms)}")
            for cudnn_form in cudnn_forms:
                times = cudnn_ms[cudnn_form]
                cudnn_row = cell.row(direction, statistics.median_low(times), cudnn_form)
                cudnn_row["rounds_median_ms"] = times
                theirs.append(cudnn_row)
                ratios = [c / o for c, o in zip(times, ours_ms)]
                line += (f"  {cudnn_form} {' '.join(f'{v:.4f}' for v in times)}  ratio "
                         f"{' '.join(f'{v:.3f}' for v in ratios)}  cell "
                         f"{cudnn_row['median_ms'] / row['median_ms']:.3f}x")
            print(line, flush=True)
        del cell
    for direction in directions:
        with open(f"{args.sinkattn_json}-{direction}.json", "w") as f:
            json.dump({"gpu": gpu, "preset": "seed", "protocol": "interleaved",
                       "rounds": args.rounds, "idle_s": args.idle,
                       "results": ours[direction]}, f, indent=2)
    with open(args.cudnn_json, "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "protocol": "flush, interleaved with sinkattn-runner",
                   "rounds": args.rounds, "idle_s": args.idle, "forms": list(FORMS),
                   "unavailable": unavailable, "results": theirs}, f, indent=2)


if __name__ == "__main__":
    main()
