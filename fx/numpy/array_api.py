"""The Array API standard's inspection surface of ``fx.numpy``: ``__array_api_version__``,
``__array_namespace_info__()``, and the ``device=`` checks the creation functions share.

A device is what ``__array_namespace_info__().devices()`` lists: the ``fx.Device`` of each
device of every platform arrays can live on here (the CPU, and CUDA devices when CuPy finds
some). ``device=None`` means the default device. Anything else is refused with a ``ValueError``
naming the operation and the devices there are.

Capabilities are jax's: boolean-mask indexing and data-dependent output shapes work on concrete
arrays only (not under ``jit``), so the namespace does not claim them.
"""

from __future__ import annotations

from fx import devices, dtypes, processes
from fx.array import Array, device_put

__all__ = ["ArrayNamespaceInfo", "__array_api_version__", "__array_namespace_info__", "finfo"]

__array_api_version__ = "2024.12"

# The standard's dtypes, by the kind names of ``isdtype``; the 64-bit ones only in x64 mode.
_STANDARD_DTYPES = (
    dtypes.bool_, *dtypes.SIGNED, *dtypes.UNSIGNED, dtypes.float32, dtypes.float64,
    dtypes.complex64, dtypes.complex128,
)
_KINDS = {
    "bool": lambda d: d == dtypes.bool_,
    "signed integer": dtypes.is_signed_int,
    "unsigned integer": dtypes.is_unsigned_int,
    "integral": dtypes.is_int,
    "real floating": dtypes.is_float,
    "complex floating": dtypes.is_complex,
    "numeric": lambda d: d != dtypes.bool_,
}


def available_devices() -> list[devices.Device]:
    """Every device arrays can be put on in this process: the default backend's, then the
    CPU's when the default backend is another."""
    out = devices.devices_of_process(processes.layout().process_index)
    host = devices.host_device()
    return out if host in out else [*out, host]


def check_device(device, name: str) -> devices.Device | None:
    """``device`` if it is None or one of :func:`available_devices`; else a ``ValueError``
    naming ``name`` (the operation) and the devices there are."""
    if device is None:
        return None
    known = available_devices()
    if isinstance(device, devices.Device) and device in known:
        return device
    raise ValueError(f"{name}: device={device!r} is not a device of this process; pass None "
                     f"(the default device) or one of {known} "
                     f"(fx.numpy.__array_namespace_info__().devices())")


def place(x, device, name: str):
    """``x`` on ``device`` (checked by :func:`check_device`); unchanged when ``device`` is
    None or ``x`` is traced."""
    dev = check_device(device, name)
    return x if dev is None else device_put(x, dev)


class ArrayNamespaceInfo:
    """What ``fx.numpy`` supports, as the Array API standard's inspection functions report it.

    >>> info = fx.numpy.__array_namespace_info__()
    >>> info.capabilities()["boolean indexing"]
    False
    >>> sorted(info.dtypes(kind="signed integer"))
    ['int16', 'int32', 'int8']
    """

    def capabilities(self) -> dict:
        return {"boolean indexing": False, "data-dependent shapes": False,
                "max dimensions": 64}

    def default_device(self) -> devices.Device:
        return devices.default_device()

    def devices(self) -> list[devices.Device]:
        return available_devices()

    def default_dtypes(self, *, device=None) -> dict:
        check_device(device, "fx.numpy.__array_namespace_info__().default_dtypes")
        return {"real floating": dtypes.default_float_dtype(),
                "complex floating": dtypes.default_complex_dtype(),
                "integral": dtypes.default_int_dtype(),
                "indexing": dtypes.default_int_dtype()}

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The dtypes of ``kind`` (None: all; a kind name or a tuple of them) by name."""
        name = "fx.numpy.__array_namespace_info__().dtypes"
        check_device(device, name)
        kept = [d for d in _STANDARD_DTYPES if dtypes.x64_enabled() or d not in dtypes.WIDE]
        if kind is None:
            return {d.name: d for d in kept}
        kinds = kind if isinstance(kind, tuple) else (kind,)
        for k in kinds:
            if k not in _KINDS:
                raise KeyError(f"{name}: unknown kind {k!r}; the kinds are {list(_KINDS)}")
        return {d.name: d for d in kept if any(_KINDS[k](d) for k in kinds)}


class finfo:  # noqa: N801  (NumPy's and the standard's name)
    """Machine limits of a floating dtype (a complex dtype: of its parts), as
    ``jax.numpy.finfo``, with the Array API's types: ``eps``, ``max``, ``min``,
    ``smallest_normal`` and the other float limits are Python floats (jax's are NumPy scalars
    of the dtype), ``bits`` an int and ``dtype`` the real dtype.

    >>> fx.numpy.finfo(fx.numpy.float32).eps
    1.1920928955078125e-07
    >>> fx.numpy.finfo(fx.numpy.complex64).dtype
    dtype('float32')
    """

    _FLOATS = ("eps", "epsneg", "max", "min", "resolution", "smallest_normal",
               "smallest_subnormal", "tiny")

    def __init__(self, dtype):
        info = dtypes.finfo(dtype)
        self._info = info
        for name in self._FLOATS:
            setattr(self, name, float(getattr(info, name)))
        self.bits = int(info.bits)
        self.dtype = info.dtype

    def __getattr__(self, name):  # the integer fields (nmant, maxexp, ...): ml_dtypes' values
        return getattr(self.__dict__["_info"], name)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, "
                f"dtype={self.dtype})")


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The Array API standard's inspection namespace of ``fx.numpy``."""
    return ArrayNamespaceInfo()


def array_namespace(self, /, *, api_version: str | None = None):
    """``x.__array_namespace__()``: the module implementing the standard for ``x``."""
    import fx.numpy  # noqa: PLC0415

    if api_version is not None and api_version != __array_api_version__:
        raise ValueError(f"api_version={api_version!r} is not available; available versions "
                         f"are: [{__array_api_version__!r}]")
    return fx.numpy


def to_device(self, device, /, *, stream=None):
    """``x.to_device(device)``: ``x`` on ``device`` (one of
    ``fx.numpy.__array_namespace_info__().devices()``; None leaves it where it is)."""
    if stream is not None:
        raise NotImplementedError("fx.Array.to_device: the stream argument is not supported")
    dev = check_device(device, "fx.Array.to_device")
    return self if dev is None or not isinstance(self, Array) else device_put(self, dev)
