"""Array creation: ``array``, ``zeros``, ``arange``, ``linspace``, ``eye``, ..., the sample
grids ``logspace``/``geomspace``, ``fromfunction`` and ``copy``.

Python data defaults to float32 / int32 (JAX's default mode); numpy data keeps its dtype, and
an explicit ``dtype`` is always honoured (64-bit types included). Filled arrays are broadcasts
of a scalar and ranges are ``iota``, so under tracing they cost no constant buffers. Sample
grids take the mode's default float unless a ``dtype`` is given; they are built from
``linspace`` with one ``pow``, so they trace and differentiate in ``start``/``stop``.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from fx import dtypes, lax
from fx.array import Array
from fx.core import get_aval
from fx.numpy._promote import asarray as _asarray
from fx.numpy._promote import (
    broadcast_shapes,
    broadcast_to_shape,
    canonical_axis,
    promote_to_inexact,
    to_array,
)
from fx.numpy.array_api import place

__all__ = [
    "arange", "array", "asarray", "copy", "empty", "empty_like", "eye", "fromfunction", "full",
    "full_like", "geomspace", "identity", "linspace", "logspace", "ones", "ones_like", "zeros",
    "zeros_like", "tri",
]


def _check_order(order, name: str) -> None:
    if order not in (None, "K", "A", "C"):
        raise NotImplementedError(f"fx.numpy.{name}: only order='C' (or 'K'/'A') is supported, "
                                  f"got order={order!r}")


def asarray(a, dtype=None, order: str | None = None, *, copy: bool | None = None, device=None):
    """``a`` as an fx array. Nested lists may hold fx values.

    fx arrays are immutable, so sharing is never visible: as in jax, ``copy=False`` is accepted
    whatever ``a`` is, and ``copy=True`` gives an fx array a buffer of its own. ``device`` is
    one of ``fx.numpy.__array_namespace_info__().devices()`` (None: the default device).

    >>> fx.numpy.asarray([1, 2], copy=True)
    Array([1, 2], dtype=int32)
    """
    _check_order(order, "asarray")
    out = _asarray(a, dtype)
    if copy and out is a and isinstance(out, Array):
        out = out.copy()
    return place(out, device, "fx.numpy.asarray")


def array(object, dtype=None, copy: bool = True, order: str | None = "K",  # noqa: A002
          ndmin: int = 0, *, device=None):
    """A new fx array from ``object``; like ``numpy.array`` with JAX's default dtypes."""
    _check_order(order, "array")
    out = asarray(object, dtype, copy=copy)
    nd = get_aval(out).ndim
    if ndmin > nd:
        out = lax.reshape(out, (1,) * (ndmin - nd) + get_aval(out).shape)
    return place(out, device, "fx.numpy.array")


def _shape_tuple(shape, name) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        out = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"fx.numpy.{name}: shape must be a tuple of ints, got {shape!r}") from None
    if any(s < 0 for s in out):
        raise ValueError(f"fx.numpy.{name}: negative dimension in shape {out}")
    return out


def full(shape, fill_value, dtype=None, *, device=None):
    """An array of ``shape`` filled with ``fill_value`` (a scalar or an array broadcastable to
    ``shape``). Without ``dtype`` a Python scalar fill stays weakly typed, as in JAX."""
    return place(_full(shape, fill_value, dtype), device, "fx.numpy.full")


def _full(shape, fill_value, dtype=None):
    shape = _shape_tuple(shape, "full")
    if (dtype is not None and isinstance(fill_value, (bool, int, float))
            and not isinstance(fill_value, np.generic)
            and np.issubdtype(dtypes.requested(dtype, "fx.numpy.full"), np.inexact)):
        # A Python scalar goes straight to a float dtype (0.1 in float64 is 0.1); conversions
        # to integers (-1.5 to uint32) follow convert_element_type, as in JAX.
        fill = to_array(np.asarray(fill_value, dtypes.canonicalize(dtype)))
    else:
        fill = to_array(fill_value)
    weak = dtype is None and get_aval(fill).weak_type
    dt = dtypes.canonicalize(dtype) if dtype is not None else get_aval(fill).dtype
    fill = lax.convert_element_type(fill, dt, weak)
    fshape = get_aval(fill).shape
    if fshape:
        return broadcast_to_shape(fill, shape, "fx.numpy.full")
    return lax.broadcast_in_dim(fill, shape, ())


def zeros(shape, dtype=None, *, device=None):
    dt = dtypes.requested(dtype or float, "fx.numpy.zeros")
    return place(lax.full(_shape_tuple(shape, "zeros"), 0, dt), device, "fx.numpy.zeros")


def ones(shape, dtype=None, *, device=None):
    dt = dtypes.requested(dtype or float, "fx.numpy.ones")
    return place(lax.full(_shape_tuple(shape, "ones"), 1, dt), device, "fx.numpy.ones")


def empty(shape, dtype=None, *, device=None):
    return zeros(shape, dtype, device=device)


def _like(a, dtype, shape):
    """Shape, dtype and weak type of a ``*_like`` result (weak only if ``a`` is and no dtype
    is given, as in JAX)."""
    aval = get_aval(to_array(a))
    return (
        aval.shape if shape is None else _shape_tuple(shape, "*_like"),
        aval.dtype if dtype is None else dtypes.requested(dtype, "fx.numpy.*_like"),
        aval.weak_type and dtype is None,
    )


def zeros_like(a, dtype=None, shape=None, *, device=None):
    shape, dt, weak = _like(a, dtype, shape)
    return place(lax.full(shape, 0, dt, weak), device, "fx.numpy.zeros_like")


def ones_like(a, dtype=None, shape=None, *, device=None):
    shape, dt, weak = _like(a, dtype, shape)
    return place(lax.full(shape, 1, dt, weak), device, "fx.numpy.ones_like")


def empty_like(prototype, dtype=None, shape=None, *, device=None):
    return zeros_like(prototype, dtype, shape, device=device)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    shape, dt, weak = _like(a, dtype, shape)
    out = _full(shape, fill_value, dt)
    out = lax.convert_element_type(out, dt, weak) if weak else out
    return place(out, device, "fx.numpy.full_like")


def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """Evenly spaced values in ``[start, stop)``; bounds must be concrete."""
    return place(_arange(start, stop, step, dtype), device, "fx.numpy.arange")


def _arange(start, stop, step, dtype):
    for v in (start, stop, step):
        if v is not None and not isinstance(v, (int, float, np.integer, np.floating)):
            try:
                float(v)
            except Exception:
                raise TypeError(
                    "fx.numpy.arange: bounds must be concrete numbers (the output length "
                    "depends on them)"
                ) from None
    implied = dtypes.result_type(*(v for v in (start, stop, step) if v is not None))
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    start, stop, step = (v.item() if hasattr(v, "item") else v for v in (start, stop, step))
    if step == 0:
        raise ValueError("fx.numpy.arange: step must not be zero")
    size = max(math.ceil((stop - start) / step), 0)
    if dtype is None:
        dt = implied  # the bounds' promoted dtype, Python scalars weak (as jax)
    else:
        dt = dtypes.requested(dtype, "fx.numpy.arange")
    if dtypes.is_int(dt) or dt == dtypes.bool_:
        # In int64, so negative steps and starts work for unsigned results too.
        ramp = lax.iota(dtypes.int64, size)
        if step != 1:
            ramp = lax.mul(ramp, int(step))
        if start:
            ramp = lax.add(ramp, int(start))
        return lax.convert_element_type(ramp, dt)
    # Floats: compute in float64 like numpy, then round once.
    ramp = lax.convert_element_type(lax.iota(dtypes.int64, size), dtypes.float64)
    vals = lax.add(lax.mul(ramp, float(step)), float(start))
    return lax.convert_element_type(vals, dt)


def _linspace(start, stop, num, endpoint, retstep, dtype, axis):
    """The body of :func:`linspace` (on the default device)."""
    try:
        num = operator.index(num)
    except TypeError:
        raise TypeError(f"fx.numpy.linspace: num must be an integer, got {num!r}") from None
    if num < 0:
        raise ValueError(f"fx.numpy.linspace: num must be non-negative, got {num}")
    start_a, stop_a = to_array(start), to_array(stop)
    cplx = any(dtypes.is_complex(get_aval(v).dtype) for v in (start_a, stop_a))
    if dtype is not None:
        dt = dtypes.requested(dtype, "fx.numpy.linspace")
    elif cplx:  # jax: the inexact result type of the endpoints
        dt = dtypes.to_inexact_dtype(dtypes.join(dtypes.dtype_and_weak(start_a),
                                                 dtypes.dtype_and_weak(stop_a))[0])
    else:
        dt = dtypes.default_float_dtype()
    div = (num - 1) if endpoint else num
    wide = dtypes.complex128 if cplx or dtypes.is_complex(dt) else dtypes.float64
    start_a, stop_a = (lax.convert_element_type(v, wide) for v in (start_a, stop_a))
    bshape = broadcast_shapes(get_aval(start_a).shape, get_aval(stop_a).shape,
                              name="fx.numpy.linspace")
    start_a, stop_a = (broadcast_to_shape(v, bshape, "fx.numpy.linspace")
                       for v in (start_a, stop_a))
    out_shape = (num,) + bshape
    axis = canonical_axis(axis, len(out_shape), "fx.numpy.linspace")
    step = lax.div(lax.sub(stop_a, start_a), float(max(div, 1)))
    along = tuple(range(1, len(out_shape)))  # where start/stop/step dims go in the output
    ramp = lax.convert_element_type(lax.broadcasted_iota(dtypes.int64, out_shape, 0), wide)
    vals = lax.add(lax.mul(ramp, lax.broadcast_in_dim(step, out_shape, along)),
                   lax.broadcast_in_dim(start_a, out_shape, along))
    if endpoint and num > 1:
        # The last sample is exactly stop, whatever the rounding of start + (num - 1) * step.
        is_last = lax.eq(lax.broadcasted_iota(dtypes.int32, out_shape, 0), num - 1)
        vals = lax.select(is_last, lax.broadcast_in_dim(stop_a, out_shape, along), vals)
    if not dtypes.is_inexact(dt):
        vals = lax.floor(lax.real(vals) if cplx else vals)
    out = lax.convert_element_type(vals, dt)
    if axis != 0:
        perm = list(range(1, len(out_shape)))
        perm.insert(axis, 0)
        out = lax.transpose(out, perm)
    if retstep:
        if div <= 0:
            step = lax.full(bshape, np.nan, wide)
        step_dt = dt if dtypes.is_inexact(dt) else (
            dtypes.float64 if dt == dtypes.int64 else dtypes.float32)
        return out, lax.convert_element_type(step, step_dt)
    return out


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype=None, axis: int = 0, *, device=None):
    """``num`` evenly spaced samples over ``[start, stop]`` (or ``[start, stop)`` without
    ``endpoint``), computed in float64. Integer dtypes round down, as numpy 2 and JAX do.

    ``start`` and ``stop`` may be arrays (broadcast together); the samples then run along a new
    axis ``axis`` of the result. ``retstep=True`` also returns the spacing (NaN when there are
    no gaps to space); for integer dtypes the spacing is float64 for int64 and else float32.
    Complex endpoints give complex samples (computed in complex128), as in jax.

    Example::

        >>> fx.numpy.linspace(0.0, 1.0, 5)
        Array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
    """
    out = _linspace(start, stop, num, endpoint, retstep, dtype, axis)
    if retstep:
        return place(out[0], device, "fx.numpy.linspace"), out[1]
    return place(out, device, "fx.numpy.linspace")


def _matrix_shape(N, M, name) -> tuple[int, int]:
    return _shape_tuple((N, N if M is None else M), name)


def eye(N: int, M: int | None = None, k: int = 0, dtype=None, *, device=None):
    """An ``N x M`` array with ones on the ``k``-th diagonal (float32 by default)."""
    N, M = _matrix_shape(N, M, "eye")
    dt = dtypes.requested(dtype or float, "fx.numpy.eye")
    k = operator.index(k)
    if not -N < k < M:  # no diagonal in the matrix (and k may not fit an index dtype)
        return place(lax.full((N, M), 0, dt), device, "fx.numpy.eye")
    rows = lax.broadcasted_iota(dtypes.int64, (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.int64, (N, M), 1)
    on = lax.eq(lax.add(rows, k), cols) if k else lax.eq(rows, cols)
    return place(lax.convert_element_type(on, dt), device, "fx.numpy.eye")


def identity(n: int, dtype=None):
    return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype=None):
    """An ``N x M`` array with ones at and below the ``k``-th diagonal."""
    N, M = _matrix_shape(N, M, "tri")
    dt = dtypes.requested(dtype or float, "fx.numpy.tri")
    rows = lax.broadcasted_iota(dtypes.int64, (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.int64, (N, M), 1)
    return lax.convert_element_type(lax.ge(lax.add(rows, int(k)), cols), dt)


# --- sample grids and fromfunction ---------------------------------------------------------------


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


def copy(a, order=None):
    """A copy of ``a`` as an fx array (fx arrays are immutable, so this is ``asarray``)."""
    if order not in (None, "C", "K", "A"):
        raise NotImplementedError(f"fx.numpy.copy: order={order!r} is not supported")
    return to_array(a, "fx.numpy.copy")
