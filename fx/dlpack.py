"""DLPack exchange: fx arrays to and from NumPy, CuPy, jax, PyTorch and other DLPack libraries.

:func:`from_dlpack` takes any object with ``__dlpack__`` and ``__dlpack_device__`` and returns
an ``fx.Array`` sharing its memory (no copy unless a copy, a device transfer or the mode's
dtype narrowing needs one), as ``jax.dlpack.from_dlpack``. ``fx.Array.__dlpack__`` exports an
fx array the same way: ``np.from_dlpack(x)`` is a read-only NumPy view of ``x`` (fx arrays are
immutable, and DLPack 1.0 capsules carry a read-only flag). A consumer that asks for an older
DLPack, which cannot mark memory read-only, gets a private copy instead, so no library can write
into an fx array. CPU arrays are exchanged through NumPy's DLPack support, GPU arrays through
CuPy's.

The export side, which works on buffers and sits below ``fx.Array``, is
:mod:`fx.dlpack_capsules`.

As in jax, memory imported without a copy stays shared: writing to the source array afterwards
changes the fx array too (pass ``copy=True`` to decouple them).
"""

from __future__ import annotations

import numpy as np

from fx import dtypes
from fx.array import Array
from fx.devices import CPU, Device, cupy_module, put_buffer
from fx.dlpack_capsules import DLDeviceType

__all__ = ["from_dlpack", "is_supported_dtype", "DLDeviceType"]


_HOST_TYPES = (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost, DLDeviceType.kDLROCMHost)

# What NumPy's and CuPy's DLPack support can carry (bfloat16 and float8 have no NumPy export).
_SUPPORTED = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128))


def is_supported_dtype(dtype) -> bool:
    """Whether arrays of ``dtype`` can be exchanged through DLPack (as
    ``jax.dlpack.is_supported_dtype``; fx's CPU exchange goes through NumPy, which has no
    DLPack code for bfloat16 and float8)."""
    if dtype is None:
        raise TypeError(f"Expected a string or dtype-like object; got {dtype=}")
    return np.dtype(dtype) in _SUPPORTED


def from_dlpack(external_array, device: Device | None = None, copy: bool | None = None
                ) -> Array:
    """An ``fx.Array`` holding the data of ``external_array``, any object with ``__dlpack__``
    and ``__dlpack_device__`` (a NumPy, CuPy, jax or PyTorch array, an ``fx.Array``), as
    ``jax.dlpack.from_dlpack``.

    The result shares memory with ``external_array`` unless ``copy=True``, a transfer to
    another ``device``, or the mode's dtype narrowing (64-bit data outside x64 mode becomes
    32-bit, as in jax) makes a copy; ``copy=False`` refuses a device transfer. Sharing memory
    means that writing to the source later changes the result as well.

    Example::

        >>> import numpy as np
        >>> host = np.arange(4, dtype=np.float32)
        >>> x = fx.dlpack.from_dlpack(host)
        >>> x
        Array([0., 1., 2., 3.], dtype=float32)
        >>> bool(np.shares_memory(np.asarray(x), host))
        True
    """
    if not hasattr(external_array, "__dlpack__") or not hasattr(external_array,
                                                                "__dlpack_device__"):
        raise TypeError("The array passed to from_dlpack must have __dlpack__ and "
                        f"__dlpack_device__ methods (got {type(external_array).__name__}).")
    dl_type, dl_id = external_array.__dlpack_device__()
    if dl_type in _HOST_TYPES:
        source = CPU
        buf = np.from_dlpack(external_array, copy=copy)
    elif dl_type == DLDeviceType.kDLCUDA and cupy_module() is not None:
        source = Device("cuda", int(dl_id))
        cp = cupy_module()
        with cp.cuda.Device(source.id):
            buf = cp.from_dlpack(external_array) if not copy else cp.array(
                cp.from_dlpack(external_array), copy=True)
    else:
        name = DLDeviceType(dl_type).name if dl_type in DLDeviceType._value2member_map_ else ""
        raise TypeError(
            "Array passed to from_dlpack is on unsupported device type (DLDeviceType: "
            f"{dl_type}{' ' + name if name else ''}, array: {type(external_array).__name__}); "
            "fx reads CPU memory through NumPy and CUDA memory through CuPy"
            + ("" if dl_type != DLDeviceType.kDLCUDA else ", which is not installed or sees "
               "no GPU"))
    dt = dtypes.canonicalize(buf.dtype)
    if dt != buf.dtype:
        buf = buf.astype(dt)  # jax's mode narrowing: a copy
    if device is not None and device != source:
        if copy is False:
            raise ValueError(
                f"Specified {device=} which requires a copy since the source device is "
                f"{source!r}, however copy=False. Set copy=True or copy=None to perform the "
                "requested operation.")
        buf = put_buffer(buf, device)
    return Array(buf)


def numpy_from_dlpack(x, /, *, device: Device | None = None, copy: bool | None = None) -> Array:
    """``fx.numpy.from_dlpack``: :func:`from_dlpack` with ``jax.numpy.from_dlpack``'s
    signature (``x`` positional, ``device`` and ``copy`` by keyword)."""
    return from_dlpack(x, device=device, copy=copy)
