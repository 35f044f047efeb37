# A PyTorch that cannot be imported (test/Tools/gpu-round.test).
raise ImportError("No module named 'torch' (stand-in)")
