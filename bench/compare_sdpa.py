#!/usr/bin/env python3
"""cuDNN scaled-dot-product attention (vanilla: no sinks) timed through
PyTorch on the same GPU in the same run as our attention kernels.

For each shape: bf16 Q [B, H, S, D] and K/V [B, HK, S, D], causal, with the
cuDNN backend forced (sdpa_kernel(SDPBackend.CUDNN_ATTENTION): PyTorch
raises instead of falling back to another backend), in two forms:
  cudnn-gqa            K/V as they are, SDPA's enable_gqa=True (PyTorch 2.5+):
                       the problem SinkAttn solves, K/V read once per KV head;
  cudnn-mha-expanded   K/V expanded to H heads before timing (the expansion
                       is not timed): cuDNN's dense MHA kernel.
Where this PyTorch has no enable_gqa, or cuDNN refuses the GQA form, the
output says so, with the reason, and the JSON's "unavailable" holds it.
CUDA events, warm-up first, median of the timed calls, fresh random inputs,
and sinkattn-runner bench's timing protocol by default (L2 flushed on the
stream before every call, no host wait between calls: compare_torch.time_ms).

TFLOP/s use the seed's causal formula 4*B*H*S*S*D / 2, and also the exact
attended-pair count 4*B*H*D*S(S+1)/2 (what sinkattn-runner bench reports).

The backward (vanilla causal, cuDNN) is timed the same way: one forward,
then torch.autograd.grad(out, (q, k, v), dO) with the graph retained, its
FLOPs 2.5x the forward's (the convention of issue 8 and FlashAttention).
"""
import argparse
import json
import warnings

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F

from compare_torch import time_ms

SEED_SHAPES = [(1, 64, 8, s, d) for d in (64, 128) for s in (2048, 4096, 8192, 16384)]

GQA = "cudnn-gqa"
MHA_EXPANDED = "cudnn-mha-expanded"
FORMS = (GQA, MHA_EXPANDED)


class CudnnCell:
    """One seed shape's cuDNN forward and backward calls on fresh random bf16
    inputs, in either form (FORMS); bench/interleaved_seed.py times them
    between sinkattn-runner's calls."""

    def __init__(self, b, h, hk, s, d):
        self.shape = (b, h, hk, s, d)
        self.q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, hk, s, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, hk, s, d, device="cuda", dtype=torch.bfloat16)
        # Expanded before any tensor requires grad, so the expansion is
        # never part of a timed backward.
        self.kv = {GQA: (k, v),
                   MHA_EXPANDED: (k.repeat_interleave(h // hk, dim=1),
                                  v.repeat_interleave(h // hk, dim=1))}
        self.graph = {}
        self.refusals = {}

    def _attend(self, form):
        k, v = self.kv[form]
        extra = {"enable_gqa": True} if form == GQA else {}
        return F.scaled_dot_product_attention(self.q, k, v, is_causal=True, **extra)

    def _backward_graph(self, form):
        if form not in self.graph:
            k, v = self.kv[form]
            for t in (self.q, k, v):
                t.requires_grad_(True)
            out = self._attend(form)
            self.graph[form] = (out, torch.randn_like(out), (self.q, k, v))
        return self.graph[form]

    def unavailable(self, form, direction):
        """None when cuDNN runs this form and direction here, else why not
        (one call tried, with only the cuDNN backend enabled)."""
        if form == MHA_EXPANDED:
            return None
        key = (form, direction)
        if key not in self.refusals:
            reason = None
            with warnings.catch_warnings(record=True) as caught, \
                    sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                warnings.simplefilter("always")
                try:
                    if direction == "fwd":
                        self._attend(form)
                    else:
                        out, grad_out, inputs = self._backward_graph(form)
                        torch.autograd.grad(out, inputs, grad_out, retain_graph=True)
                    torch.cuda.synchronize()
                except TypeError as e:
                    reason = (f"this PyTorch ({torch.__version__}) has no enable_gqa "
                              f"argument (PyTorch 2.5+): {e}")
                except RuntimeError as e:
                    why = "; ".join(str(w.message).splitlines()[0] for w in caught)
                    reason = (f"cuDNN refused it: {str(e).splitlines()[0]}"
                              + (f" ({why})" if why else ""))
            self.refusals[key] = reason
        return self.refusals[key]

    def fwd_ms(self, protocol="flush", iters=30, per_call=False, form=MHA_EXPANDED,
               warmup=5):
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return time_ms(lambda: self._attend(form), warmup=warmup, iters=iters,
                           protocol=protocol, per_call=per_call)

    def bwd_ms(self, protocol="flush", iters=30, per_call=False, form=MHA_EXPANDED,
               warmup=5):
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            out, grad_out, inputs = self._backward_graph(form)
            return time_ms(lambda: torch.autograd.grad(out, inputs, grad_out,
                                                       retain_graph=True),
                           warmup=warmup, iters=iters, protocol=protocol,
                           per_call=per_call)

    def timer(self, direction):
        """fwd_ms or bwd_ms, by direction ("fwd" or "bwd")."""
        return self.fwd_ms if direction == "fwd" else self.bwd_ms

    def row(self, direction, ms, form=MHA_EXPANDED):
        """The JSON row of one timing (direction "fwd" or "bwd")."""
        b, h, hk, s, d = self.shape
        seed_flops = 4 * b * h * s * s * d / 2
        exact_flops = 4 * b * h * d * s * (s + 1) / 2
        factor = 2.5 if direction == "bwd" else 1.0
        return {"name": f"cudnn_sdpa_causal_{direction}", "form": form, "batch": b,
                "heads": h, "kv_heads": hk, "seq": s, "head_dim": d, "median_ms": ms,
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
    unavailable = {}
    for b, h, hk, s, d in SEED_SHAPES:
        cell = CudnnCell(b, h, hk, s, d)
        for direction in ("fwd", "bwd"):
            for form in FORMS:
                reason = cell.unavailable(form, direction)
                if reason:
                    unavailable.setdefault(form, reason)
                    print(f"cudnn sdpa causal {direction} {form} B={b} H={h} HK={hk} S={s} "
                          f"D={d}: unavailable: {reason}")
                    continue
                row = cell.row(direction, cell.timer(direction)(args.protocol, form=form),
                               form)
                results.append(row)
                print(f"cudnn sdpa causal {direction} {form} B={b} H={h} HK={hk} S={s} D={d}: "
                      f"{row['median_ms']:.4f} ms {row['tflops_seed']:.1f} TFLOP/s (seed "
                      f"formula{', 2.5x forward' if direction == 'bwd' else ''})")
        del cell
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "protocol": args.protocol, "forms": list(FORMS),
                       "unavailable": unavailable, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
