"""DLPack capsules of device buffers: what ``fx.Array.__dlpack__`` and ``__dlpack_device__``
return for an array's NumPy or CuPy buffer, and the DLPack device type codes.

This is the buffer side of :mod:`fx.dlpack`, below :mod:`fx.array`: it knows buffers, not
arrays, so ``fx.Array`` exports itself through it and :mod:`fx.dlpack` (which builds arrays
from capsules) imports both. fx arrays are immutable: a NumPy buffer goes out as a read-only
capsule, or as a private copy to a consumer older than DLPack 1.0, which cannot mark memory
read-only.
"""

from __future__ import annotations

import enum

import numpy as np

from fx.devices import device_of_buffer

__all__ = ["DLDeviceType", "export", "export_device"]


class DLDeviceType(enum.IntEnum):
    """The DLPack device types fx knows (the codes of ``__dlpack_device__``)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLROCM = 10
    kDLROCMHost = 11


def export(buf, *, stream=None, max_version=None, dl_device=None, copy=None):
    """The DLPack capsule of an fx array's buffer (what ``fx.Array.__dlpack__`` returns)."""
    if isinstance(buf, np.ndarray):
        legacy = max_version is None or tuple(max_version)[0] < 1
        if legacy and not buf.flags.writeable:
            # A pre-1.0 capsule cannot say "read-only": hand out a private copy instead.
            if copy is False:
                raise BufferError(
                    "fx arrays are immutable, and a DLPack consumer older than version 1.0 "
                    "cannot mark memory read-only: exporting it needs a copy, but copy=False. "
                    "Use a consumer that passes max_version=(1, 0) or later (NumPy >= 2.1), or "
                    "allow a copy.")
            buf, copy = buf.copy(), None
        return buf.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device,
                              copy=copy)
    # A CuPy buffer: pass only what was asked (older CuPy takes only the stream).
    extra = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device),
                               ("copy", copy)) if v is not None}
    return buf.__dlpack__(stream=stream, **extra)


def export_device(buf) -> tuple[int, int]:
    """``(device type, device id)`` of an fx array's buffer (``fx.Array.__dlpack_device__``)."""
    if isinstance(buf, np.ndarray):
        return (DLDeviceType.kDLCPU, 0)
    return (DLDeviceType.kDLCUDA, device_of_buffer(buf).id)
