"""Runtimes: executing lowered programs (CPU: generated C via ctypes plus NumPy library steps;
CUDA: NVRTC-compiled kernels and library calls through CuPy). Each target's executor is named
by its backend record (``fx.lowering.select.backends``); memory platforms are in ``platforms``."""
