"""Runtimes: executing lowered programs (CPU: generated C via ctypes plus NumPy library steps)."""

from fx.runtime.cpu import CpuExecutable


def executable_for(lowered):
    """An executable for a lowered program on its backend."""
    if lowered.backend == "cpu":
        return CpuExecutable(lowered)
    raise NotImplementedError(f"fx: no runtime for backend {lowered.backend!r} yet")
