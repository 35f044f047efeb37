#!/usr/bin/env python3
"""cuDNN scaled-dot-product attention (vanilla: no sinks) timed through
PyTorch on the same GPU in the same run as our attention kernels.

For each shape: bf16 Q [B, H, S, D], K/V [B, HK, S, D] expanded to H heads
before timing (the expansion is not timed: cuDNN's GQA support varies by
version, and the comparison is against the vendor's fastest dense kernel),
causal forward with the cuDNN backend forced. CUDA events, warm-up first,
median of the timed calls, fresh random inputs, and sinkattn-runner bench's
timing protocol by default (L2 flushed on the stream before every call, no
host wait between calls: compare_torch.time_ms).

TFLOP/s use the seed's causal formula 4*B*H*S*S*D / 2, and also the exact
attended-pair count 4*B*H*D*S(S+1)/2 (what sinkattn-runner bench reports).

The backward (vanilla causal, cuDNN) is timed the same way: one forward,
then torch.autograd.grad(out, (q, k, v), dO) with the graph retained, its
FLOPs 2.5x the forward's (the convention of issue 8 and FlashAttention).
"""
import argparse
import json

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F

from compare_torch import time_ms

SEED_SHAPES = [(1, 64, 8, s, d) for d in (64, 128) for s in (2048, 4096, 8192, 16384)]


class CudnnCell:
    """One seed shape's cuDNN forward and backward calls on fresh random bf16
    inputs (K/V expanded to H heads, not timed); bench/interleaved_seed.py
    times them between sinkattn-runner's calls."""

    def __init__(self, b, h, hk, s, d):
        self.shape = (b, h, hk, s, d)
        self.q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, hk, s, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, hk, s, d, device="cuda", dtype=torch.bfloat16)
        self.k = k.repeat_interleave(h // hk, dim=1)
        self.v = v.repeat_interleave(h // hk, dim=1)
        self.out = self.grad_out = None

    def fwd_ms(self, protocol="flush", iters=30, per_call=False):
        q, k, v = self.q, self.k, self.v
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return time_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                           iters=iters, protocol=protocol, per_call=per_call)

    def bwd_ms(self, protocol="flush", iters=30, per_call=False):
        q, k, v = self.q, self.k, self.v
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            if self.out is None:
                for t in (q, k, v):
                    t.requires_grad_(True)
                self.out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                self.grad_out = torch.randn_like(self.out)
            out, grad_out = self.out, self.grad_out
            return time_ms(lambda: torch.autograd.grad(out, (q, k, v), grad_out,
                                                       retain_graph=True),
                           iters=iters, protocol=protocol, per_call=per_call)

    def timer(self, direction):
        """fwd_ms or bwd_ms, by direction ("fwd" or "bwd")."""
        return self.fwd_ms if direction == "fwd" else self.bwd_ms

    def row(self, direction, ms):
        """The JSON row of one timing (direction "fwd" or "bwd")."""
        b, h, hk, s, d = self.shape
        seed_flops = 4 * b * h * s * s * d / 2
        exact_flops = 4 * b * h * d * s * (s + 1) / 2
        factor = 2.5 if direction == "bwd" else 1.0
        return {"name": f"cudnn_sdpa_causal_{direction}", "batch": b, "heads": h,
                "kv_heads": hk, "seq": s, "head_dim": d, "median_ms": ms,
                "tflops_seed": factor * seed_flops / (ms * 1e-3) / 1e12,
                "tflops_exact": factor * exact_flops / (ms * 1e-3) / 1e12}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--protocol", choices=("flush", "sync"), default="flush",
                        help="timing protocol (compare_torch.time_ms): flush, "
                             "sinkattn-runner bench's (default), or sync")
    args = parser.parse_args()
    torch.manual_seed(0)
    results = []
    for b, h, hk, s, d in SEED_SHAPES:
        cell = CudnnCell(b, h, hk, s, d)
        row = cell.row("fwd", cell.fwd_ms(args.protocol))
        results.append(row)
        print(f"cudnn sdpa causal fwd B={b} H={h} S={s} D={d}: {row['median_ms']:.4f} ms "
              f"{row['tflops_seed']:.1f} TFLOP/s (seed formula)")
        row = cell.row("bwd", cell.bwd_ms(args.protocol))
        results.append(row)
        print(f"cudnn sdpa causal bwd B={b} H={h} S={s} D={d}: {row['median_ms']:.4f} ms "
              f"{row['tflops_seed']:.1f} TFLOP/s (seed formula, 2.5x forward)")
        del cell
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "protocol": args.protocol,
                       "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
