"""Array creation: ``array``, ``zeros``, ``arange``, ``linspace``, ``eye``, ...

Python data defaults to float32 / int32 (JAX's default mode); numpy data keeps its dtype, and
an explicit ``dtype`` is always honoured (64-bit types included). Filled arrays are broadcasts
of a scalar and ranges are ``iota``, so under tracing they cost no constant buffers.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy._promote import asarray as _asarray
from fx.numpy._promote import broadcast_to_shape, to_array

__all__ = [
    "arange", "array", "asarray", "empty", "empty_like", "eye", "full", "full_like",
    "identity", "linspace", "ones", "ones_like", "zeros", "zeros_like", "tri",
]


def asarray(a, dtype=None):
    """``a`` as an fx array (no copy for fx arrays). Nested lists may hold fx values."""
    return _asarray(a, dtype)


def array(object, dtype=None, copy: bool = True, ndmin: int = 0):  # noqa: A002
    """A new fx array from ``object``; like ``numpy.array`` with JAX's default dtypes."""
    out = _asarray(object, dtype)
    nd = get_aval(out).ndim
    if ndmin > nd:
        out = lax.reshape(out, (1,) * (ndmin - nd) + get_aval(out).shape)
    return out


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


def full(shape, fill_value, dtype=None):
    shape = _shape_tuple(shape, "full")
    fill = to_array(fill_value)
    dt = dtypes.canonicalize(dtype) if dtype is not None else get_aval(fill).dtype
    fill = lax.convert_element_type(fill, dt)
    fshape = get_aval(fill).shape
    if fshape:
        return broadcast_to_shape(fill, shape, "fx.numpy.full")
    return lax.broadcast_in_dim(fill, shape, ())


def zeros(shape, dtype=None):
    return lax.full(_shape_tuple(shape, "zeros"), 0, dtypes.canonicalize(dtype or float))


def ones(shape, dtype=None):
    return lax.full(_shape_tuple(shape, "ones"), 1, dtypes.canonicalize(dtype or float))


def empty(shape, dtype=None):
    return zeros(shape, dtype)


def _like(a, dtype, shape):
    aval = get_aval(to_array(a))
    return (
        aval.shape if shape is None else _shape_tuple(shape, "*_like"),
        aval.dtype if dtype is None else dtypes.canonicalize(dtype),
    )


def zeros_like(a, dtype=None, shape=None):
    shape, dt = _like(a, dtype, shape)
    return lax.full(shape, 0, dt)


def ones_like(a, dtype=None, shape=None):
    shape, dt = _like(a, dtype, shape)
    return lax.full(shape, 1, dt)


def empty_like(a, dtype=None, shape=None):
    return zeros_like(a, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None):
    shape, dt = _like(a, dtype, shape)
    return full(shape, fill_value, dt)


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in ``[start, stop)``; bounds must be concrete."""
    for v in (start, stop, step):
        if v is not None and not isinstance(v, (int, float, np.integer, np.floating)):
            try:
                float(v)
            except Exception:
                raise TypeError(
                    "fx.numpy.arange: bounds must be concrete numbers (the output length "
                    "depends on them)"
                ) from None
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    start, stop, step = (v.item() if hasattr(v, "item") else v for v in (start, stop, step))
    if step == 0:
        raise ValueError("fx.numpy.arange: step must not be zero")
    size = max(math.ceil((stop - start) / step), 0)
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
        dt = dtypes.default_int if is_int else dtypes.default_float
    else:
        dt = dtypes.canonicalize(dtype)
    if dtypes.is_int(dt) or dt == dtypes.bool_:
        ramp = lax.iota(dt, size)
        if step != 1:
            ramp = lax.mul(ramp, step)
        return lax.add(ramp, start) if start else ramp
    # Floats: compute in float64 like numpy, then round once.
    ramp = lax.convert_element_type(lax.iota(dtypes.int64, size), dtypes.float64)
    vals = lax.add(lax.mul(ramp, float(step)), float(start))
    return lax.convert_element_type(vals, dt)


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype=None, axis: int = 0):
    """``num`` evenly spaced samples over ``[start, stop]``."""
    if axis != 0:
        raise NotImplementedError("fx.numpy.linspace: only axis=0 is supported")
    num = int(num)
    if num < 0:
        raise ValueError(f"fx.numpy.linspace: num must be non-negative, got {num}")
    dt = dtypes.canonicalize(dtype) if dtype is not None else dtypes.default_float
    div = (num - 1) if endpoint else num
    start_a, stop_a = (lax.convert_element_type(to_array(v), dtypes.float64) for v in (start, stop))
    step = lax.div(lax.sub(stop_a, start_a), float(max(div, 1)))
    ramp = lax.convert_element_type(lax.iota(dtypes.int64, num), dtypes.float64)
    vals = lax.add(lax.mul(ramp, step), start_a)
    if endpoint and num > 1:
        last = lax.broadcasted_iota(dtypes.int32, (num,), 0)
        vals = lax.select(lax.eq(last, num - 1), lax.broadcast_in_dim(stop_a, (num,), ()), vals)
    out = lax.convert_element_type(vals, dt)
    if retstep:
        return out, lax.convert_element_type(step, dt)
    return out


def eye(N: int, M: int | None = None, k: int = 0, dtype=None):
    M = N if M is None else M
    dt = dtypes.canonicalize(dtype or float)
    rows = lax.broadcasted_iota(dtypes.int32, (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.int32, (N, M), 1)
    on = lax.eq(lax.add(rows, k), cols) if k else lax.eq(rows, cols)
    return lax.convert_element_type(on, dt)


def identity(n: int, dtype=None):
    return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype=None):
    M = N if M is None else M
    dt = dtypes.canonicalize(dtype or float)
    rows = lax.broadcasted_iota(dtypes.int32, (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.int32, (N, M), 1)
    return lax.convert_element_type(lax.ge(lax.add(rows, k), cols), dt)
