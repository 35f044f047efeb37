"""A stand-in for PyTorch (test/Tools/interleaved-seed.test): only what
bench/interleaved_seed.py itself calls."""
__version__ = "stub"


def manual_seed(seed):
    pass


class cuda:
    @staticmethod
    def get_device_name():
        return "Stub GPU"
