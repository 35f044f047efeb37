#!/usr/bin/env python3
"""Vendor baselines timed on the same GPU in the same run as our kernels.

cuBLAS bf16 GEMM (torch.matmul, fp32 accumulate) and a device-to-device copy.
CUDA events around each call, warm-up first, median of the timed calls, a
fresh set of random inputs (never zeros) for every shape; the timing
protocol is sinkattn-runner bench's (see time_ms).
"""
import argparse
import json
import statistics

import torch


def time_ms(fn, warmup=5, iters=50, protocol="flush", per_call=False):
    """Median milliseconds of `iters` timed calls of `fn` (with `per_call`,
    every call's milliseconds in order instead).

    protocol "flush" is sinkattn-runner bench's (lib/Runtime/Timing.cpp):
    before every timed call a buffer of twice the L2 size is filled on the
    stream (a cold L2, and GPU work that the host's next launches queue
    behind, so the events time the kernels and not the launch overhead, as
    long as the host queues a call faster than the GPU flushes and runs the
    previous one), no host synchronization between calls. "sync" is the
    older protocol: warm
    L2, the host waits for each call, so a call's events also time the
    host's launch overhead (which the GPU sat idle through).
    """
    flush = None
    if protocol == "flush":
        l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        flush = torch.empty(max(2 * l2, 1 << 20), dtype=torch.uint8, device="cuda")
    elif protocol != "sync":
        raise ValueError(f"unknown timing protocol {protocol!r}")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    pairs = []
    for i in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        if flush is not None:
            flush.fill_(i & 1)
        start.record()
        fn()
        end.record()
        if flush is None:
            end.synchronize()
        pairs.append((start, end))
    torch.cuda.synchronize()
    times = [start.elapsed_time(end) for start, end in pairs]
    return times if per_call else statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--protocol", choices=("flush", "sync"), default="flush",
                        help="timing protocol (compare_torch.time_ms): flush, "
                             "sinkattn-runner bench's (default), or sync")
    args = parser.parse_args()
    torch.manual_seed(0)
    results = []

    for m, n, k in [(4096, 4096, 4096), (8192, 8192, 8192)]:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        ms = time_ms(lambda: torch.matmul(a, b), protocol=args.protocol)
        tflops = 2 * m * n * k / (ms * 1e-3) / 1e12
        results.append({"name": "cublas_bf16_gemm", "m": m, "n": n, "k": k,
                        "median_ms": ms, "tflops": tflops})
        print(f"cublas bf16 gemm {m}x{n}x{k}: {ms:.4f} ms {tflops:.1f} TFLOP/s")

    rows, cols = 8192, 8192
    src = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src), protocol=args.protocol)
    gbps = 2 * src.numel() * src.element_size() / (ms * 1e-3) / 1e9
    results.append({"name": "d2d_copy_bf16", "rows": rows, "cols": cols,
                    "median_ms": ms, "gbps": gbps})
    print(f"copy d2d bf16 {rows}x{cols}: {ms:.4f} ms {gbps:.1f} GB/s")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "protocol": args.protocol,
                       "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
