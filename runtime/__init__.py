"""Runtimes: executing lowered programs (CPU: generated C via ctypes plus NumPy library steps)."""

from fx.runtime.cpu import CpuExecutable
from fx.runtime.cuda import CudaExecutable


def executable_for(lowered):
    """An executable for a lowered program on its backend."""
    if lowered.backend == "cpu":
        return CpuExecutable(lowered)
    if lowered.backend == "cuda":
        return CudaExecutable(lowered)
    raise ValueError(f"fx: unknown backend {lowered.backend!r}")
