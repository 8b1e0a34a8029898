"""Host-side input/output and printing: ``save``, ``savez``, ``load``, ``frombuffer``,
``fromstring``, ``fromiter``, ``fromfile``, ``array_repr``, ``array_str``, the print options and
``iterable``.

These delegate to NumPy on host data: fx values are copied to the host (``numpy.asarray``),
which needs concrete values, and loaded data becomes fx arrays with ``fx.numpy.asarray``'s
dtype rules. Nothing here traces: calling them inside ``jit`` on a traced value raises the
usual ``ConcretizationTypeError``.
"""

from __future__ import annotations

import numpy as np

from fx.numpy._promote import asarray, is_fx_value

__all__ = [
    "array_repr", "array_str", "frombuffer", "fromfile", "fromiter", "fromstring",
    "get_printoptions",
    "iterable", "load", "printoptions", "save", "savez", "set_printoptions",
]

# NumPy's print options govern how fx arrays print (their repr goes through NumPy).
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
printoptions = np.printoptions
iterable = np.iterable


def _host(a):
    return np.asarray(a) if is_fx_value(a) else a


def save(file, arr, allow_pickle: bool = True):
    """Write ``arr`` to a ``.npy`` file (NumPy's format), as ``numpy.save``."""
    np.save(file, _host(arr), allow_pickle=allow_pickle)


def savez(file, *args, allow_pickle: bool = True, **kwds):
    """Write several arrays to an uncompressed ``.npz`` archive, as ``numpy.savez``."""
    del allow_pickle  # numpy.savez always allows object arrays; kept for jax's signature
    np.savez(file, *[_host(a) for a in args], **{k: _host(v) for k, v in kwds.items()})


def load(file, *args, **kwargs):
    """Read a ``.npy`` file as an fx array (``numpy.load``'s other results, such as the
    archive of a ``.npz`` file, are returned as NumPy gives them).

    >>> import io
    >>> buf = io.BytesIO(); fx.numpy.save(buf, fx.numpy.arange(3)); _ = buf.seek(0)
    >>> fx.numpy.load(buf)
    Array([0, 1, 2], dtype=int32)
    """
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray) and out.dtype != object:
        return asarray(out)
    return out


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0):
    """An fx array from the bytes of ``buffer`` read as ``dtype`` (NumPy's ``frombuffer``;
    ``float`` and ``int`` mean NumPy's 64-bit types, then canonicalized like NumPy data)."""
    return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype=float, count: int = -1, *, sep: str):
    """An fx array from the numbers in the text ``string`` separated by ``sep``."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromiter(iterable, dtype, count: int = -1):
    """An fx array from the values of a Python iterable (consumed on the host, so not inside
    traced code). jax raises ``NotImplementedError`` here; fx follows NumPy."""
    return asarray(np.fromiter(iterable, dtype=dtype, count=count))


def fromfile(file, dtype=float, count: int = -1, sep: str = "", offset: int = 0):
    """An fx array from a binary (``sep=""``) or text file, as ``numpy.fromfile`` (read on the
    host; jax raises ``NotImplementedError`` here)."""
    return asarray(np.fromfile(file, dtype=dtype, count=count, sep=sep, offset=offset))


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None) -> str:
    """``repr`` of an array with NumPy's formatting options, named ``Array(...)`` as fx's
    arrays print."""
    if max_line_width is None and precision is None and suppress_small is None:
        return repr(asarray(arr))
    host = np.asarray(arr)
    body = np.array2string(host, max_line_width, precision, suppress_small, separator=", ",
                           prefix="Array(")
    return f"Array({body}, dtype={host.dtype.name})"


def array_str(a, max_line_width=None, precision=None, suppress_small=None) -> str:
    """The data of an array as text, as ``numpy.array_str``."""
    return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)
