"""A stand-in for bench/compare_sdpa.py (test/Tools/interleaved-seed.test,
clock-probe.test): two seed shapes, both cuDNN forms, and cuDNN "timings"
taken in turn from a fixed list per form, direction and cell, each call
logged to $FAKE_RUNNER_LOG. With FAKE_CUDNN_GQA=refuse the GQA form is
unavailable, as where cuDNN refuses it."""
import os

SEED_SHAPES = [(1, 64, 8, 2048, 64), (1, 64, 8, 4096, 128)]

GQA = "cudnn-gqa"
MHA_EXPANDED = "cudnn-mha-expanded"
FORMS = (GQA, MHA_EXPANDED)

# Per (form, direction, seq, head_dim): the medians of rounds 0, 1, 2, ...
TIMES = {
    (MHA_EXPANDED, "fwd", 2048, 64): [1.0, 1.2, 1.1],
    (MHA_EXPANDED, "bwd", 2048, 64): [3.0, 3.0, 3.0],
    (MHA_EXPANDED, "fwd", 4096, 128): [2.0, 2.2, 2.4],
    (MHA_EXPANDED, "bwd", 4096, 128): [6.0, 6.6, 6.3],
    (GQA, "fwd", 2048, 64): [0.9, 1.0, 0.8],
    (GQA, "bwd", 2048, 64): [2.5, 2.0, 3.0],
    (GQA, "fwd", 4096, 128): [1.8, 1.9, 2.0],
    (GQA, "bwd", 4096, 128): [5.0, 5.5, 6.0],
}


class CudnnCell:
    def __init__(self, b, h, hk, s, d):
        self.shape = (b, h, hk, s, d)
        self.calls = {}

    def unavailable(self, form, direction):
        if form == GQA and os.environ.get("FAKE_CUDNN_GQA") == "refuse":
            return "cuDNN refused it: No available kernel. Aborting execution. (stand-in)"
        return None

    def _time(self, direction, iters, per_call, form, warmup):
        s, d = self.shape[3:]
        key = (form, direction, s, d)
        ms = TIMES[key][self.calls.get(key, 0)]
        self.calls[key] = self.calls.get(key, 0) + 1
        with open(os.environ["FAKE_RUNNER_LOG"], "a") as log:
            log.write(f"{form} {direction} S={s} D={d} iters={iters} warmup={warmup}\n")
        # per_call: every call's time (bench/clock_probe.py), all `ms`.
        return [ms] * iters if per_call else ms

    def fwd_ms(self, protocol="flush", iters=30, per_call=False, form=MHA_EXPANDED, warmup=5):
        return self._time("fwd", iters, per_call, form, warmup)

    def bwd_ms(self, protocol="flush", iters=30, per_call=False, form=MHA_EXPANDED, warmup=5):
        return self._time("bwd", iters, per_call, form, warmup)

    def timer(self, direction):
        return self.fwd_ms if direction == "fwd" else self.bwd_ms

    def row(self, direction, ms, form=MHA_EXPANDED):
        b, h, hk, s, d = self.shape
        return {"name": f"cudnn_sdpa_causal_{direction}", "form": form, "batch": b,
                "heads": h, "kv_heads": hk, "seq": s, "head_dim": d, "median_ms": ms,
                "tflops_seed": 100 / ms}
