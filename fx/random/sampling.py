"""Argument handling shared by the samplers of ``gamma.py``, ``continuous.py``, ``discrete.py``
and ``multivariate.py``, with jax's defaults and errors.

Unlike the older samplers of ``distributions.py`` (fixed float32/int32 defaults), these take
jax's: ``dtype=None`` is the mode's default float (or int) type, and a Python scalar parameter
is a weak value that converts to the requested dtype in one rounding. Errors are jax's types,
with messages that name the ``fx.random`` function.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.random.distributions import _broadcast_shapes, _broadcast_to, _const, _param
from fx.random.threefry import _as_value, canonical_shape


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
        return _const(x, dtypes.canonicalize(type(x)))
    return _as_value(x, name, what)


def check_cast(name: str, dtype: np.dtype, *args) -> None:
    """jax's ``_check_all_safe_to_cast``: a parameter must convert to ``dtype`` without
    changing kind or losing range (Python scalars always may)."""
    for a in args:
        if isinstance(a, (bool, int, float)) and not isinstance(a, np.generic):
            continue
        src = get_aval(_as_value(a, name, "a parameter")).dtype
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
        return _broadcast_shapes(name, *shapes) if shapes else ()
    shape = canonical_shape(name, shape)
    if shapes and _broadcast_shapes(name, shape, *shapes) != shape:
        raise ValueError(
            f"fx.random.{name}: parameter shapes must be broadcast-compatible with shape "
            f"argument, and the result of broadcasting the shapes must equal the shape "
            f"argument, but got result {_broadcast_shapes(name, shape, *shapes)} for shape "
            f"argument {shape}.")
    return shape


def result_shape(name: str, shape: tuple[int, ...], *params) -> tuple[int, ...]:
    """The numpy broadcast of ``shape`` with the parameters' shapes (for samplers like
    ``weibull_min`` whose parameters broadcast against the draw after sampling)."""
    return _broadcast_shapes(name, shape, *(_shape(p) for p in params))


def param(name: str, what: str, x, dtype, shape: tuple[int, ...]):
    """``x`` converted to ``dtype`` and broadcast to ``shape``."""
    return _broadcast_to(_param(name, what, x, dtype), shape)


def full(shape: tuple[int, ...], fill, dtype):
    return lax.full(shape, fill, dtype)
