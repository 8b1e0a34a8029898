"""Where buffers live: one record per memory platform, registered here and nowhere else.

A :class:`Platform` says what a device's buffers are (NumPy arrays in host memory, or CuPy
arrays on a GPU), how many devices there are, and what to tell a user who asks for one that is
missing. Everything that depends on a platform reads its record, so no code outside this
module compares platform names; the compile side (dialect, executor, operator library) is the
backend record in ``fx.lowering.backends``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@functools.cache
def cupy_module():
    """CuPy if it imports and sees at least one GPU, else None."""
    try:
        import cupy
    except Exception:
        return None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:
        return None
    return cupy


@dataclass(frozen=True)
class Platform:
    """A kind of device memory."""

    name: str
    device_class: str  # how a device of it prints: ``CpuDevice(id=0)``
    host_memory: bool  # buffers are NumPy arrays the CPU reads directly
    array_module: Callable[[], object]  # numpy, cupy, or None where it is unavailable
    device_count: Callable[[], int]
    missing: str  # what to do when it is asked for and absent
    aliases: tuple[str, ...] = ()  # other names code may use for it (``gpu``)

    def available(self) -> bool:
        return self.array_module() is not None and self.device_count() > 0


def _cuda_count() -> int:
    cp = cupy_module()
    return 0 if cp is None else cp.cuda.runtime.getDeviceCount()


CPU = Platform("cpu", "CpuDevice", host_memory=True, array_module=lambda: np,
               device_count=lambda: 1, missing="")
CUDA = Platform("cuda", "CudaDevice", host_memory=False, array_module=cupy_module,
                device_count=_cuda_count, aliases=("gpu",),
                missing="install fx[cuda] on a machine with an NVIDIA GPU, or use backend='cpu'")

PLATFORMS: dict[str, Platform] = {p.name: p for p in (CPU, CUDA)}
# The platform a program for a device-resident backend falls back to for NumPy-only steps.
HOST = CPU


def platform(name: str) -> Platform:
    """The record named ``name``; a ValueError listing the known ones otherwise."""
    try:
        return PLATFORMS[name]
    except KeyError:
        raise ValueError(f"fx: unknown platform {name!r}; expected one of "
                         f"{', '.join(repr(n) for n in PLATFORMS)}") from None


def preferred() -> Platform:
    """The platform fx uses when none is asked for: the first device platform that is
    available, else the host."""
    for p in PLATFORMS.values():
        if not p.host_memory and p.available():
            return p
    return HOST
