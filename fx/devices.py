"""Devices and backends.

A backend is ``"cpu"`` (NumPy buffers) or ``"cuda"`` (CuPy buffers). CuPy is optional: it is
imported on first use, and ``"cuda"`` exists only when CuPy imports and finds a device. The
default backend is CUDA when available, else CPU; ``FX_PLATFORM=cpu|cuda`` overrides it.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Device:
    platform: str  # "cpu" or "cuda"
    id: int = 0

    @property
    def xp(self):
        """The array module holding this device's buffers (numpy or cupy)."""
        return np if self.platform == "cpu" else cupy_module()

    def __repr__(self) -> str:
        return f"{'CpuDevice' if self.platform == 'cpu' else 'CudaDevice'}(id={self.id})"


CPU = Device("cpu", 0)


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


def devices(backend: str | None = None) -> list[Device]:
    """The devices of ``backend`` (default: the default backend)."""
    backend = backend or default_backend()
    if backend == "cpu":
        return [CPU]
    if backend == "cuda":
        cp = cupy_module()
        if cp is None:
            raise RuntimeError(
                "fx: backend 'cuda' requested but CuPy is not installed or sees no GPU; "
                "install fx[cuda] on a machine with an NVIDIA GPU, or use backend='cpu'"
            )
        return [Device("cuda", i) for i in range(cp.cuda.runtime.getDeviceCount())]
    raise ValueError(f"fx: unknown backend {backend!r}; expected 'cpu' or 'cuda'")


def default_backend() -> str:
    return _default_backend(os.environ.get("FX_PLATFORM", ""))


@functools.cache
def _default_backend(env: str) -> str:
    env = env.strip().lower()
    if env:
        if env not in ("cpu", "cuda"):
            raise ValueError(f"FX_PLATFORM={env!r}: expected 'cpu' or 'cuda'")
        return env
    return "cuda" if cupy_module() is not None else "cpu"


def default_device() -> Device:
    return devices()[0]


def device_of_buffer(buf) -> Device:
    if isinstance(buf, (np.ndarray, np.generic)):
        return CPU
    dev = getattr(buf, "device", None)
    return Device("cuda", int(getattr(dev, "id", 0)))


def to_host(buf) -> np.ndarray:
    if isinstance(buf, np.ndarray):
        return buf
    return buf.get()


def put_buffer(buf, device: Device):
    """``buf`` (numpy or cupy) copied to ``device`` if it is elsewhere."""
    if device.platform == "cpu":
        return to_host(buf)
    cp = cupy_module()
    if isinstance(buf, np.ndarray) or device_of_buffer(buf) != device:
        with cp.cuda.Device(device.id):
            return cp.asarray(to_host(buf) if not isinstance(buf, np.ndarray) else buf)
    return buf
