"""Helpers shared by SinkAttn's lit configurations (not a test)."""

import ctypes


def cuda_gpu_present():
    """True when a CUDA driver loads and reports at least one device."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    if cuda.cuInit(0) != 0:
        return False
    count = ctypes.c_int(0)
    return cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0
