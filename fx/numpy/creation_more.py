"""More array creation: ``geomspace``, ``logspace``, ``fromfunction``, and the bit packers
``packbits``/``unpackbits``.

Sample grids take the mode's default float (``fx.dtypes.default_float_dtype()``) unless a
``dtype`` is given; they are built from ``fx.numpy.linspace`` with one ``pow``, so they trace
and differentiate in ``start``/``stop``. Bit packing works on ``uint8`` (NumPy's and jax's
dtype for packed bits) with shifts and masks.
"""

from __future__ import annotations

import operator

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy._promote import canonical_axis, promote_to_inexact, to_array
from fx.numpy.compaction import flat
from fx.numpy.creation import linspace

__all__ = ["fromfunction", "geomspace", "logspace", "packbits", "unpackbits"]


def _result_dtype(dtype, *args):
    if dtype is not None:
        return dtypes.canonicalize(dtype)
    arrs = promote_to_inexact(*args, name="fx.numpy")
    return get_aval(arrs[0]).dtype


def logspace(start, stop, num: int = 50, endpoint: bool = True, base=10.0, dtype=None,
             axis: int = 0):
    """``base ** linspace(start, stop, num)``: ``num`` samples evenly spaced on a log scale
    from ``base ** start`` to ``base ** stop``.

    >>> fx.numpy.logspace(0.0, 2.0, 3)
    Array([  1.,  10., 100.], dtype=float32)
    """
    dt = _result_dtype(dtype, start, stop, base)
    work = dt if dtypes.is_inexact(dt) else dtypes.default_float_dtype()
    exps = linspace(start, stop, num, endpoint, dtype=work, axis=axis)
    b = lax.convert_element_type(to_array(base, "fx.numpy.logspace"), work)
    if get_aval(b).ndim:
        raise ValueError(f"fx.numpy.logspace: base must be a scalar, got shape "
                         f"{get_aval(b).shape}")
    out = lax.pow(lax.broadcast_in_dim(b, get_aval(exps).shape, ()), exps)
    return lax.convert_element_type(lax.floor(out) if not dtypes.is_inexact(dt) else out, dt)


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
    """``num`` samples evenly spaced on a log scale from ``start`` to ``stop`` (same sign,
    nonzero); the end points are exactly ``start`` and ``stop``.

    >>> fx.numpy.geomspace(1.0, 1000.0, 4)
    Array([   1.,   10.,  100., 1000.], dtype=float32)
    """
    name = "fx.numpy.geomspace"
    dt = _result_dtype(dtype, start, stop)
    work = dt if dtypes.is_inexact(dt) else dtypes.default_float_dtype()
    a = lax.convert_element_type(to_array(start, name), work)
    b = lax.convert_element_type(to_array(stop, name), work)
    if get_aval(a).ndim or get_aval(b).ndim:
        raise NotImplementedError(f"{name}: array-valued start/stop are not supported; pass "
                                  "scalars")
    for v, what in ((a, "start"), (b, "stop")):
        try:
            if np.abs(np.asarray(v)).item() == 0:
                raise ValueError(f"{name}: a geometric sequence cannot include zero ({what} is "
                                 "0)")
        except TypeError:
            pass  # traced: not checked
    from fx.numpy.ufuncs import log10  # noqa: PLC0415

    # As jax: 10 ** (evenly spaced exponents), so powers of ten come out exact.
    sign = lax.sign(a)
    if dtypes.is_complex(work):  # jax's: the exponents of start/sign and stop/sign
        exps = linspace(log10(lax.div(a, sign)), log10(lax.div(b, sign)), num, endpoint,
                        dtype=work)
    else:
        exps = linspace(log10(lax.abs(a)), log10(lax.abs(b)), num, endpoint, dtype=work)
    out = lax.pow(lax.full(get_aval(exps).shape, 10, work), exps)
    out = lax.mul(lax.broadcast_in_dim(sign, (num,), ()), out)
    n = get_aval(out).shape[0]
    if n == 1:
        out = lax.reshape(a, (1,))
    elif n:
        # The end points exactly as given (rounding of exp(log(x)) aside).
        pieces = [lax.reshape(a, (1,)), lax.slice_in_dim(out, 1, n - 1 if endpoint else n)]
        if endpoint and n > 1:
            pieces.append(lax.reshape(b, (1,)))
        out = lax.concatenate(pieces, 0)
    if not dtypes.is_inexact(dt):
        out = lax.floor(lax.real(out) if dtypes.is_complex(work) else out)
    canonical_axis(axis, 1, name)  # the result is 1-D: axis 0 (or -1)
    return lax.convert_element_type(out, dt)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """``function(i, j, ...)`` at every index of ``shape``, as jax: ``function`` is mapped
    with ``fx.vmap`` over one index array (of ``dtype``) per dimension, so it sees scalar
    indices; ``kwargs`` are passed to it unchanged.

    >>> fx.numpy.fromfunction(lambda i, j: i * 10 + j, (2, 3), dtype=int)
    Array([[ 0,  1,  2],
           [10, 11, 12]], dtype=int32)
    """
    from fx.vectorize import vmap  # noqa: PLC0415

    dims = tuple(operator.index(s) for s in shape)
    dt = dtypes.canonicalize(dtype) if dtype not in (float, int) else (
        dtypes.default_float_dtype() if dtype is float else dtypes.default_int_dtype())

    def f(*idx):
        return function(*idx, **kwargs)

    for k in reversed(range(len(dims))):  # the outermost map is dimension 0
        f = vmap(f, in_axes=tuple(0 if j == k else None for j in range(len(dims))))
    return f(*(lax.iota(dt, d) for d in dims))


# --- bits ---------------------------------------------------------------------------------------


def _bitorder(bitorder: str, name: str) -> str:
    if bitorder not in ("big", "little"):
        raise ValueError(f"{name}: bitorder must be 'big' or 'little', got {bitorder!r}")
    return bitorder


def packbits(a, axis: int | None = None, bitorder: str = "big"):
    """The truth values of ``a`` packed eight to a ``uint8`` along ``axis`` (the flattened
    array when None), padded with zeros to a multiple of 8; ``bitorder='big'`` puts the first
    value in the highest bit.

    >>> fx.numpy.packbits(fx.numpy.array([1, 0, 1, 1, 0, 0, 0, 0, 1]))
    Array([176, 128], dtype=uint8)
    """
    name = "fx.numpy.packbits"
    bitorder = _bitorder(bitorder, name)
    x = to_array(a, name)
    dt = get_aval(x).dtype
    if not (dt == dtypes.bool_ or dtypes.is_int(dt)):
        raise TypeError(f"{name}: expected an integer or boolean array, got {dt}")
    if axis is None:
        x, axis = flat(x), 0
    shape = get_aval(x).shape
    axis = canonical_axis(axis, len(shape), name)
    bits = lax.convert_element_type(
        x if dt == dtypes.bool_ else lax.ne(x, lax.full(shape, 0, dt)), dtypes.uint32)
    n = shape[axis]
    pad = -n % 8
    if pad:
        cfg = [(0, 0, 0)] * len(shape)
        cfg[axis] = (0, pad, 0)
        bits = lax.pad(bits, lax.full((), 0, dtypes.uint32), cfg)
    groups = (n + pad) // 8
    split = shape[:axis] + (groups, 8) + shape[axis + 1:]
    bits = lax.reshape(bits, split)
    weights = np.array([1 << (7 - i) if bitorder == "big" else 1 << i for i in range(8)],
                       np.uint32)
    w = lax.broadcast_in_dim(to_array(weights), split, (axis + 1,))
    packed = lax.reduce_sum(lax.mul(bits, w), (axis + 1,))
    return lax.convert_element_type(packed, dtypes.canonicalize(np.uint8))


def unpackbits(a, axis: int | None = None, count: int | None = None, bitorder: str = "big"):
    """The bits of the ``uint8`` array ``a`` as ``uint8`` zeros and ones along ``axis`` (the
    flattened array when None); ``count`` keeps that many (negative: drops that many from the
    end; more than there are pads with zeros).

    >>> fx.numpy.unpackbits(fx.numpy.array([5], fx.numpy.uint8))
    Array([0, 0, 0, 0, 0, 1, 0, 1], dtype=uint8)
    """
    name = "fx.numpy.unpackbits"
    bitorder = _bitorder(bitorder, name)
    x = to_array(a, name)
    u8 = dtypes.canonicalize(np.uint8)
    if get_aval(x).dtype != u8:
        raise TypeError(f"{name}: expected a uint8 array, got {get_aval(x).dtype}; convert "
                        "with .astype(fx.numpy.uint8)")
    if axis is None:
        x, axis = flat(x), 0
    shape = get_aval(x).shape
    axis = canonical_axis(axis, len(shape), name)
    wide = shape[: axis + 1] + (8,) + shape[axis + 1:]
    xs = lax.broadcast_in_dim(lax.convert_element_type(x, dtypes.uint32), wide,
                              tuple(i for i in range(len(wide)) if i != axis + 1))
    shifts = np.array([7 - i if bitorder == "big" else i for i in range(8)], np.uint32)
    sh = lax.broadcast_in_dim(to_array(shifts), wide, (axis + 1,))
    bits = lax.bitwise_and(lax.shift_right_logical(xs, sh), lax.full(wide, 1, dtypes.uint32))
    out_shape = shape[:axis] + (shape[axis] * 8,) + shape[axis + 1:]
    out = lax.convert_element_type(lax.reshape(bits, out_shape), u8)
    if count is None:
        return out
    total = out_shape[axis]
    count = operator.index(count)
    keep = max(total + count, 0) if count < 0 else count
    if keep <= total:
        return lax.slice_in_dim(out, 0, keep, 1, axis)
    cfg = [(0, 0, 0)] * len(out_shape)
    cfg[axis] = (0, keep - total, 0)
    return lax.pad(out, lax.full((), 0, u8), cfg)
