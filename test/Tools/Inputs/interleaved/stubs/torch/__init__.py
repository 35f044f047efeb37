"""A stand-in for PyTorch (test/Tools/interleaved-seed.test,
clock-probe.test): only what bench/interleaved_seed.py and
bench/clock_probe.py themselves call."""
__version__ = "stub"


def manual_seed(seed):
    pass


class cuda:
    @staticmethod
    def get_device_name():
        return "Stub GPU"

    @staticmethod
    def empty_cache():
        pass
