"""Where buffers live: one record per memory platform, registered here and nowhere else.

A :class:`Platform` says what a device's buffers are (NumPy arrays in host memory, CuPy
arrays on a GPU, OpenCL buffers), how many devices there are, whether fx arrays can live there,
and what to tell a user who asks for one that is missing. Everything that depends on a platform
reads its record, so no code outside this module compares platform names; the compile side
(dialect, executor, operator library) is the backend record in ``fx.lowering.select.backends``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@functools.cache
def cupy_module():
    """CuPy if it imports and sees at least one GPU, else None."""
    try:
        import cupy
    except ImportError:  # not installed, or its CUDA libraries are not
        return None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except cupy.cuda.runtime.CUDARuntimeError:  # no driver, or no device it can use
        return None
    return cupy


@functools.cache
def opencl_devices() -> tuple:
    """The OpenCL devices pyopencl sees, GPUs first (under Debian's PoCL: one CPU device), or
    () when pyopencl or an OpenCL runtime is missing."""
    try:
        import pyopencl as cl
    except ImportError:  # not installed, or no OpenCL ICD loader
        return ()
    try:
        found = [d for p in cl.get_platforms() for d in p.get_devices()]
    except cl.Error:  # no platform, or one without devices
        return ()
    return tuple(sorted(found, key=lambda d: not d.type & cl.device_type.GPU))


def _opencl_module():
    """``pyopencl`` where it sees a device, else None."""
    if not opencl_devices():
        return None
    import pyopencl

    return pyopencl


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
    # fx arrays can live on it and eager primitives run there. False: a compile target only,
    # whose programs take and return host arrays (never chosen as the default platform).
    eager: bool = True
    # NumPy's functions run on its arrays (CuPy's through NumPy's dispatch protocols), so a
    # program's NumPy steps run on them where they are. False: those steps copy their
    # operands to the host and their results back.
    numpy_arrays: bool = True

    def available(self) -> bool:
        return self.array_module() is not None and self.device_count() > 0


def _host_count_from_env() -> int:
    text = (os.environ.get("FX_NUM_CPU_DEVICES") or os.environ.get("JAX_NUM_CPU_DEVICES")
            or "1").strip()
    try:
        return check_host_device_count(int(text))
    except ValueError:
        raise ValueError(f"FX_NUM_CPU_DEVICES={text!r}: expected a positive integer (the "
                         "number of CPU devices this process presents)") from None


def check_host_device_count(n) -> int:
    """``n`` if it is a valid CPU device count (a positive integer), else ValueError."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"num_cpu_devices: expected a positive integer, got {n!r}")
    return int(n)


# How many CPU devices this process presents (``FX_NUM_CPU_DEVICES``, or the
# ``num_cpu_devices`` option). They are views of one host: their buffers are all host memory,
# so a device here is a place an array is said to live, not separate memory.
_host_devices = [_host_count_from_env()]


def host_device_count() -> int:
    return _host_devices[0]


def set_host_device_count(n: int) -> None:
    """Present ``n`` CPU devices from now on (``fx.config.update("num_cpu_devices", n)``)."""
    _host_devices[0] = check_host_device_count(n)


def _cuda_count() -> int:
    cp = cupy_module()
    return 0 if cp is None else cp.cuda.runtime.getDeviceCount()


CPU = Platform("cpu", "CpuDevice", host_memory=True, array_module=lambda: np,
               device_count=host_device_count, missing="")
CUDA = Platform("cuda", "CudaDevice", host_memory=False, array_module=cupy_module,
                device_count=_cuda_count, aliases=("gpu",),
                missing="install fx[cuda] on a machine with an NVIDIA GPU, or use backend='cpu'")

# OpenCL buffers are device memory (``cl.Buffer``s, one arena per call as on CUDA), written and
# read only by explicit copies: the model of a GPU, also under PoCL's CPU runtime. Programs take
# host arrays and return host arrays (fx arrays do not live on OpenCL devices).
OPENCL = Platform("opencl", "OpenCLDevice", host_memory=False, array_module=_opencl_module,
                  device_count=lambda: len(opencl_devices()), eager=False,
                  numpy_arrays=False,
                  missing="install fx[opencl] and an OpenCL runtime (Debian: apt-get install "
                          "pocl-opencl-icd), or use backend='cpu'")

PLATFORMS: dict[str, Platform] = {p.name: p for p in (CPU, CUDA, OPENCL)}
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
    available and can hold fx arrays, else the host."""
    for p in PLATFORMS.values():
        if not p.host_memory and p.eager and p.available():
            return p
    return HOST
