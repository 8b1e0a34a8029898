"""``fx.Array``: an immutable array living on one device.

An Array wraps a NumPy buffer (CPU) or a CuPy buffer (GPU) of a supported dtype, plus the
``weak_type`` bit of its abstract value. Buffers are never mutated: the NumPy buffer is marked
read-only, so ``np.asarray(x)`` gives a read-only view. Arithmetic, indexing and the numpy-style
methods are installed by ``fx.numpy`` (they are shared with tracers).
"""

from __future__ import annotations

import numpy as np

from fx import devices, dlpack_capsules, dtypes
from fx.avals import ShapedArray


class Array:
    __slots__ = ("_buf", "aval", "__weakref__")
    __array_priority__ = 100

    def __init__(self, buf, weak_type: bool = False):
        if isinstance(buf, np.ndarray) and buf.flags.writeable:
            buf = buf.view()  # the caller may still write its array: freeze our view only
            buf.flags.writeable = False
        self._buf = buf
        self.aval = ShapedArray(buf.shape, buf.dtype, weak_type)

    @classmethod
    def _wrap(cls, buf, aval: ShapedArray) -> Array:
        """An Array taking ownership of a freshly produced buffer (frozen in place)."""
        if isinstance(buf, np.ndarray):
            buf.flags.writeable = False
        out = cls.__new__(cls)
        out._buf = buf
        out.aval = aval
        return out

    # -- metadata ---------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def nbytes(self) -> int:
        return self.aval.nbytes

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    @property
    def device(self) -> devices.Device:
        return devices.device_of_buffer(self._buf)

    def devices(self) -> set[devices.Device]:
        return {self.device}

    # -- host interop -------------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        if not isinstance(self.aval.dtype, np.dtype):
            raise TypeError(
                f"an fx array of dtype {self.dtype} (a PRNG key array) cannot be converted to "
                "a NumPy array; use fx.random.key_data(k) for its raw uint32 data")
        host = devices.to_host(self._buf)
        if copy:
            host = host.copy()
        return host if dtype is None else host.astype(dtype)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this array, so ``np.from_dlpack(x)`` (and CuPy's, jax's, torch's
        ``from_dlpack``) read it without copying; see :mod:`fx.dlpack`. DLPack 1.0 consumers
        get a read-only view; older ones, which cannot mark memory read-only, get a copy."""
        return dlpack_capsules.export(self._buf, stream=stream, max_version=max_version,
                             dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return dlpack_capsules.export_device(self._buf)

    def delete(self) -> None:
        """Free the buffer; later use raises (what donation to a jitted call does)."""
        self._buf = _DELETED

    def is_deleted(self) -> bool:
        return self._buf is _DELETED

    def block_until_ready(self) -> Array:
        if not isinstance(self._buf, np.ndarray):
            devices.cupy_module().cuda.get_current_stream().synchronize()
        return self

    def item(self):
        return np.asarray(self).item()

    def tolist(self):
        return np.asarray(self).tolist()

    def copy(self) -> Array:
        return Array._wrap(self._buf.copy(), self.aval)

    def __bool__(self) -> bool:
        return bool(np.asarray(self))

    def __int__(self) -> int:
        return int(np.asarray(self))

    def __float__(self) -> float:
        return float(np.asarray(self))

    def __index__(self) -> int:
        if not dtypes.is_int(self.dtype):
            raise TypeError(f"only integer arrays can be used as an index, got {self.dtype}")
        return int(np.asarray(self))

    def __complex__(self) -> complex:
        return complex(np.asarray(self))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d fx.Array)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d fx.Array")
        return (self[i] for i in range(self.shape[0]))

    def __reversed__(self):
        return (self[i] for i in reversed(range(len(self))))

    __hash__ = None  # type: ignore[assignment]  # arrays are unhashable, like numpy's

    def __setitem__(self, idx, value):
        raise TypeError(
            "fx arrays are immutable: 'x[idx] = y' is not supported. "
            "Use the functional update 'x = x.at[idx].set(y)' instead."
        )

    def __format__(self, spec: str) -> str:
        if not self.shape and isinstance(self.aval.dtype, np.dtype):
            return format(np.asarray(self).item(), spec)
        return format(str(self), spec)

    def __str__(self) -> str:
        if not isinstance(self.aval.dtype, np.dtype):
            return self._overlay_repr()
        return str(np.asarray(self))

    def __repr__(self) -> str:
        if not isinstance(self.aval.dtype, np.dtype):
            return self._overlay_repr()
        host = np.asarray(self)
        prefix = "Array("
        body = np.array2string(host, separator=", ", prefix=prefix)
        extra = f", dtype={self.dtype.name}"
        if self.weak_type:
            extra += ", weak_type=True"
        return f"{prefix}{body}{extra})"

    def _overlay_repr(self) -> str:
        # An extended dtype (PRNG keys) shows its stored data, as jax prints key arrays.
        data = devices.to_host(self._buf)
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{data}"

    def __reduce__(self):
        if not isinstance(self.aval.dtype, np.dtype):
            return (Array._wrap, (np.array(devices.to_host(self._buf)), self.aval))
        return (_rebuild, (np.asarray(self), self.weak_type))


class _Deleted:
    """Stands in for the buffer of a deleted (donated) array: any use is an error."""

    def _fail(self, *args, **kwargs):
        raise RuntimeError(
            "this fx.Array was deleted: it was donated to a jitted function "
            "(donate_argnums), which may have reused its memory; use the function's outputs"
        )

    __array__ = _fail
    __getattr__ = _fail


_DELETED = _Deleted()


def _rebuild(host, weak_type):
    return Array(host, weak_type)


def device_put(x, device: devices.Device | str | None = None) -> Array:
    """``x`` as an Array on ``device`` (default: the default device), copying between host and
    GPU only when the data lives elsewhere. Traced values pass through unchanged."""
    if hasattr(x, "_trace"):
        return x
    if isinstance(device, str):
        device = devices.devices(device)[0]
    device = device or devices.default_device()
    if isinstance(x, Array):
        if x.device == device:
            return x
        return Array(devices.put_buffer(x._buf, device), x.weak_type)
    host = np.asarray(x)
    return Array(devices.put_buffer(np.array(host, copy=True), device))
