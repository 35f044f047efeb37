"""A stand-in for PyTorch (test/Tools/interleaved-seed.test,
clock-probe.test): only what bench/interleaved_seed.py and
bench/clock_probe.py themselves call. synchronize() logs "synchronize" to
$FAKE_RUNNER_LOG, so the tests see where each side's idle gap begins."""
import os

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

    @staticmethod
    def synchronize():
        if os.environ.get("FAKE_RUNNER_LOG"):
            with open(os.environ["FAKE_RUNNER_LOG"], "a") as log:
                log.write("synchronize\n")
