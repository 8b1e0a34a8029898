"""Argument handling shared by the samplers of ``distributions.py``, ``gamma.py``,
``continuous.py``, ``discrete.py`` and ``multivariate.py``, with jax's defaults and errors:
constants (``const``), parameters converted in one rounding (``converted_param``) and broadcast
(``broadcast_shapes``, ``broadcast_to``, ``param``), dtypes and shapes checked as jax checks them.

Unlike the older samplers of ``distributions.py`` (fixed float32/int32 defaults), these take
jax's: ``dtype=None`` is the mode's default float (or int) type, and a Python scalar parameter
is a weak value that converts to the requested dtype in one rounding. Errors are jax's types,
with messages that name the ``fx.random`` function.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes, lax
from fx.array import Array
from fx.core import get_aval
from fx.random.threefry import as_value, canonical_shape


def const(value, dtype) -> Array:
    return Array(np.asarray(value, dtype=dtype))


def converted_param(name: str, what: str, value, dtype):
    """A distribution parameter converted to ``dtype`` (Python scalars exactly, in one
    rounding, as jax converts them)."""
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        return const(value, dtype)
    return lax.convert_element_type(as_value(value, name, what), dtype)


def broadcast_shapes(name: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(
            f"fx.random.{name}: parameter shapes {', '.join(map(str, shapes))} do not broadcast"
        ) from None


def broadcast_to(x, shape: tuple[int, ...]):
    """Numpy-style broadcast of ``x`` to ``shape``. Rank-0 values are broadcast too: under
    ``vmap`` a batched scalar meeting an unbatched array trips the elementwise batching rule."""
    aval = get_aval(x)
    if aval.shape == shape:
        return x
    lead = len(shape) - aval.ndim
    x = lax.reshape(x, tuple(d for d in aval.shape if d != 1) or ())
    dims = [lead + i for i, d in enumerate(aval.shape) if d != 1]
    return lax.broadcast_in_dim(x, shape, dims)


def float_dtype(name: str, dtype) -> np.dtype:
    """``dtype`` (``None``: the mode's default float), which must be a real float type; jax
    raises ValueError otherwise."""
    dt = dtypes.requested(float if dtype is None else dtype, f"fx.random.{name}")
    if not dtypes.is_float(dt):
        raise ValueError(f"fx.random.{name}: dtype argument must be a float dtype, got {dt}")
    return dt


def int_or_float_dtype(name: str, dtype, kind: str = "any") -> np.dtype:
    """``dtype`` (``None``: the mode's default int); ``kind='int'`` insists on an integer."""
    dt = dtypes.requested(int if dtype is None else dtype, f"fx.random.{name}")
    if kind == "int" and not dtypes.is_int(dt):
        raise ValueError(f"fx.random.{name}: dtype argument must be an int dtype, got {dt}")
    return dt


def value(name: str, what: str, x):
    """A parameter as an fx value (Python scalars weakly typed, as jax's ``asarray``)."""
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        return const(x, dtypes.canonicalize(type(x)))
    return as_value(x, name, what)


def check_cast(name: str, dtype: np.dtype, *args) -> None:
    """jax's ``_check_all_safe_to_cast``: a parameter must convert to ``dtype`` without
    changing kind or losing range (Python scalars always may)."""
    for a in args:
        if isinstance(a, (bool, int, float)) and not isinstance(a, np.generic):
            continue
        src = get_aval(as_value(a, name, "a parameter")).dtype
        if src != dtype and dtypes.result_type(src, dtype) != dtype:
            raise dtypes.TypePromotionError(
                f"fx.random.{name}: in arguments to {name}, cannot safely cast argument of "
                f"type {src} to {dtype}")


def _shape(x) -> tuple[int, ...]:
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        return ()
    return tuple(x.shape) if hasattr(x, "shape") else tuple(np.shape(x))


def shape_of(name: str, shape, *params) -> tuple[int, ...]:
    """jax's ``_check_broadcast_shapes``: ``shape`` (by default the parameters' broadcast
    shape), which the parameters must broadcast to without enlarging it."""
    shapes = [_shape(p) for p in params]
    if shape is None:
        return broadcast_shapes(name, *shapes) if shapes else ()
    shape = canonical_shape(name, shape)
    if shapes and broadcast_shapes(name, shape, *shapes) != shape:
        raise ValueError(
            f"fx.random.{name}: parameter shapes must be broadcast-compatible with shape "
            f"argument, and the result of broadcasting the shapes must equal the shape "
            f"argument, but got result {broadcast_shapes(name, shape, *shapes)} for shape "
            f"argument {shape}.")
    return shape


def result_shape(name: str, shape: tuple[int, ...], *params) -> tuple[int, ...]:
    """The numpy broadcast of ``shape`` with the parameters' shapes (for samplers like
    ``weibull_min`` whose parameters broadcast against the draw after sampling)."""
    return broadcast_shapes(name, shape, *(_shape(p) for p in params))


def param(name: str, what: str, x, dtype, shape: tuple[int, ...]):
    """``x`` converted to ``dtype`` and broadcast to ``shape``."""
    return broadcast_to(converted_param(name, what, x, dtype), shape)


def full(shape: tuple[int, ...], fill, dtype):
    return lax.full(shape, fill, dtype)
