"""Devices and backends.

A backend is ``"cpu"`` (NumPy buffers) or ``"cuda"`` (CuPy buffers); what each one's buffers
are is its platform record (``fx.runtime.platforms``). CuPy is optional: it is imported on
first use, and ``"cuda"`` exists only when CuPy imports and finds a device. The default
backend is CUDA when available, else CPU; ``FX_PLATFORM=cpu|cuda`` overrides it.

A process presents ``FX_NUM_CPU_DEVICES`` CPU devices (default 1; the ``num_cpu_devices``
option of ``fx.config``). They share the host's memory: a buffer is a NumPy array whichever
of them an array is placed on, so the device of an array placed on one is carried by the array
(its sharding, ``fx.array``) rather than read from its buffer. Devices are told apart by
platform, id (the index within its process) and process.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np

from fx import processes
from fx.runtime import platforms
from fx.runtime.platforms import cupy_module

__all__ = ["CPU", "Device", "cupy_module", "default_backend", "default_device", "devices",
           "devices_of_process", "device_of_buffer", "host_device", "put_buffer", "to_host"]


@dataclass(frozen=True)
class Device:
    platform: str  # a platform name: "cpu" or "cuda"
    id: int = 0  # the device's index in its process (CuPy's device id)
    process_index: int = 0  # the process holding it (``fx.distributed``)

    @property
    def record(self) -> platforms.Platform:
        return platforms.platform(self.platform)

    @property
    def on_host(self) -> bool:
        """Whether this device's buffers are NumPy arrays in host memory (read for every
        eager primitive: a lookup of the records' answers, not of the record)."""
        on_host = _ON_HOST.get(self.platform)
        return self.record.host_memory if on_host is None else on_host

    @property
    def xp(self):
        """The array module holding this device's buffers (numpy or cupy)."""
        return self.record.array_module()

    def __repr__(self) -> str:
        where = f", process_index={self.process_index}" if self.process_index else ""
        return f"{self.record.device_class}(id={self.id}{where})"


_ON_HOST = {name: p.host_memory for name, p in platforms.PLATFORMS.items()}
CPU = Device(platforms.HOST.name, 0)


def devices(backend: str | None = None) -> list[Device]:
    """The devices of ``backend`` (default: the default backend) in every process of the run
    (``fx.distributed``), process by process.

    >>> fx.devices("cpu")[0]
    CpuDevice(id=0)
    """
    g = processes.layout()
    if g.process_count == 1:
        return devices_of_process(0, backend)
    return [d for p in range(g.process_count) for d in devices_of_process(p, backend)]


def devices_of_process(process: int, backend: str | None = None) -> list[Device]:
    """Process ``process``'s devices: this process's are counted here, another's as it
    reported them to ``fx.distributed.initialize``."""
    record = platforms.platform(backend or default_backend())
    g = processes.layout()
    if process == g.process_index:
        if not record.available():
            raise RuntimeError(f"fx: backend {record.name!r} requested but it has no device "
                               f"here; {record.missing}")
        count = record.device_count() if g.process_count == 1 else \
            g.local_device_counts[process]
    else:
        count = g.local_device_counts[process]
    return [Device(record.name, i, process) for i in range(count)]


def default_backend() -> str:
    return _default_backend(os.environ.get("FX_PLATFORM", ""))


@functools.cache
def _default_backend(env: str) -> str:
    env = env.strip().lower()
    if env:
        eager = [n for n, p in platforms.PLATFORMS.items() if p.eager]
        if env not in eager:
            extra = ""
            if env in platforms.PLATFORMS:
                extra = (f" ({env!r} is a compile target only: use "
                         f"fx.jit(f, backend={env!r}))")
            raise ValueError(f"FX_PLATFORM={env!r}: expected one of "
                             f"{', '.join(repr(n) for n in eager)}{extra}")
        return env
    return platforms.preferred().name


def default_device() -> Device:
    return devices_of_process(processes.layout().process_index)[0]


def device_of_buffer(buf) -> Device:
    """The device holding ``buf`` as far as the buffer tells: host buffers are CPU device 0 of
    this process (an array placed on another CPU device says so itself)."""
    if isinstance(buf, (np.ndarray, np.generic)):
        return host_device()
    dev = getattr(buf, "device", None)
    return Device(platforms.CUDA.name, int(getattr(dev, "id", 0)),
                  processes.layout().process_index)


def host_device() -> Device:
    """This process's first CPU device (``CPU`` in process 0)."""
    here = processes.layout().process_index
    return CPU if here == 0 else Device(CPU.platform, 0, here)


def to_host(buf) -> np.ndarray:
    if isinstance(buf, np.ndarray):
        return buf
    return buf.get()


def put_buffer(buf, device: Device):
    """``buf`` (numpy or cupy) copied to ``device`` if it is elsewhere."""
    if device.on_host:
        return to_host(buf)
    cp = cupy_module()
    if isinstance(buf, np.ndarray) or device_of_buffer(buf) != device:
        with cp.cuda.Device(device.id):
            return cp.asarray(to_host(buf) if not isinstance(buf, np.ndarray) else buf)
    return buf
