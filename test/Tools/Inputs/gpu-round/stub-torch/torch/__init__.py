# A PyTorch that imports but has nothing in it: the baseline scripts fail
# (test/Tools/gpu-round.test).
