"""A stand-in for bench/compare_sdpa.py (test/Tools/interleaved-seed.test,
clock-probe.test):
two seed shapes, and cuDNN "timings" taken in turn from a fixed list per
direction and cell, each call logged to $FAKE_RUNNER_LOG."""
import os

SEED_SHAPES = [(1, 64, 8, 2048, 64), (1, 64, 8, 4096, 128)]

# Per (direction, seq, head_dim): the medians of rounds 0, 1, 2, ...
TIMES = {
    ("fwd", 2048, 64): [1.0, 1.2, 1.1],
    ("bwd", 2048, 64): [3.0, 3.0, 3.0],
    ("fwd", 4096, 128): [2.0, 2.2, 2.4],
    ("bwd", 4096, 128): [6.0, 6.6, 6.3],
}


class CudnnCell:
    def __init__(self, b, h, hk, s, d):
        self.shape = (b, h, hk, s, d)
        self.calls = {"fwd": 0, "bwd": 0}

    def _time(self, direction, iters, per_call):
        s, d = self.shape[3:]
        ms = TIMES[(direction, s, d)][self.calls[direction]]
        self.calls[direction] += 1
        with open(os.environ["FAKE_RUNNER_LOG"], "a") as log:
            log.write(f"cudnn {direction} S={s} D={d} iters={iters}\n")
        # per_call: every call's time (bench/clock_probe.py), all `ms`.
        return [ms] * iters if per_call else ms

    def fwd_ms(self, protocol="flush", iters=30, per_call=False):
        return self._time("fwd", iters, per_call)

    def bwd_ms(self, protocol="flush", iters=30, per_call=False):
        return self._time("bwd", iters, per_call)

    def timer(self, direction):
        return self.fwd_ms if direction == "fwd" else self.bwd_ms

    def row(self, direction, ms):
        b, h, hk, s, d = self.shape
        return {"name": f"cudnn_sdpa_causal_{direction}", "batch": b, "heads": h,
                "kv_heads": hk, "seq": s, "head_dim": d, "median_ms": ms,
                "tflops_seed": 100 / ms}
