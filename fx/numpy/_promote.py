"""Argument handling shared by the ``fx.numpy`` functions: conversion to arrays, dtype
promotion (JAX's lattice, weak Python scalars) and numpy-style broadcasting."""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from fx import dtypes, lax
from fx.array import Array
from fx.core import (  # noqa: F401  (to_array, ensure_arraylike: fx.numpy's, from the core)
    Tracer,
    device_array,
    ensure_arraylike,
    get_aval,
    python_scalar_buffer,
    to_array,
    to_value,
)


def is_fx_value(x) -> bool:
    return isinstance(x, (Array, Tracer))


def asarray(x, dtype=None):
    """``x`` as an fx array, converted to ``dtype`` if given (see ``fx.numpy.asarray``)."""
    dt = None if dtype is None else dtypes.requested(dtype, "fx.numpy.asarray")
    if is_fx_value(x):
        return x if dt is None else lax.convert_element_type(x, dt)
    if isinstance(x, (list, tuple)) and _holds_fx_value(x):
        return _stack_nested(x, dt)
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic) and dt is None:
        return to_array(x)
    try:
        host = np.asarray(x)
    except (ValueError, TypeError) as e:
        raise TypeError(f"fx.numpy.asarray: cannot convert ragged or non-numeric data "
                        f"{type(x).__name__}: {e}") from None
    if dt is None and isinstance(x, (list, tuple)) and host.dtype != object:
        dt = dtypes.python_data_dtype(x)
    if host.dtype == object:
        raise TypeError(f"fx.numpy.asarray: cannot convert ragged or non-numeric data {x!r}")
    dt = dt or dtypes.canonicalize(host.dtype)
    return device_array(np.asarray(host, dtype=dt))


def _holds_fx_value(x) -> bool:
    if is_fx_value(x):
        return True
    return isinstance(x, (list, tuple)) and any(_holds_fx_value(e) for e in x)


def _stack_nested(x, dt):
    # The dtype comes from all the leaves at once (as jax's), not row by row.
    dt_all = dt or dtypes.python_data_dtype(x)
    elems = [asarray(e, dt_all) for e in x]
    elems = [lax.convert_element_type(e, dt_all) for e in elems]
    shapes = {get_aval(e).shape for e in elems}
    if len(shapes) != 1:
        raise ValueError(f"fx.numpy.asarray: ragged nested sequence with shapes {shapes}")
    rows = [lax.reshape(e, (1,) + get_aval(e).shape) for e in elems]
    out = lax.concatenate(rows, 0)
    return out if dt is None else lax.convert_element_type(out, dt)


def promote_dtypes(*args, name: str = "fx.numpy") -> list:
    """The arguments as fx values of one promoted dtype. Python scalars are converted from
    their exact value to the result dtype (``f64_array * 0.3`` uses 0.3 in float64, not a
    float32 rounding of it)."""
    arrs = [a if _is_python_scalar(a) else to_array(a, name) for a in args]
    dt, weak = dtypes.join(*(dtypes.dtype_and_weak(a) for a in arrs))
    return [Array(python_scalar_buffer(a, dt, name), weak) if _is_python_scalar(a)
            else lax.convert_element_type(a, dt, weak) for a in arrs]


def _is_python_scalar(x) -> bool:
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def promote_to_inexact(*args, name: str = "fx.numpy") -> list:
    """Like :func:`promote_dtypes`, then integers and bools become the mode's default float
    (float32, or float64 in x64 mode), as jax's ``promote_dtypes_inexact``."""
    arrs = promote_dtypes(*args, name=name)
    dt = get_aval(arrs[0]).dtype if arrs else dtypes.default_float_dtype()
    to = dtypes.to_inexact_dtype(dt)
    if to == dt:
        return arrs
    return [lax.convert_element_type(a, to, get_aval(a).weak_type) for a in arrs]


def broadcast_shapes(*shapes: Sequence[int], name: str = "fx.numpy",
                     equal_rank_error: type[Exception] = ValueError) -> tuple[int, ...]:
    """numpy's broadcast of ``shapes``. Shapes that do not broadcast raise ``ValueError``, or
    ``equal_rank_error`` when all the non-scalar shapes have the same rank: jax's elementwise
    functions promote only ranks and leave equal ranks to the lax primitive, whose shape check
    raises ``TypeError`` (``jnp.add(ones(3), ones(4))``), while a rank promotion goes through
    ``lax.broadcast_shapes``, a ``ValueError`` (``jnp.add(ones((2, 3)), ones(4))``)."""
    shapes = [tuple(s) for s in shapes]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        ranks = {len(s) for s in shapes if s}
        error = equal_rank_error if len(ranks) == 1 else ValueError
        raise error(
            f"{name}: operands could not be broadcast together with shapes "
            + " ".join(str(s) for s in shapes)
        ) from None


def broadcast_to_shape(x, shape: Sequence[int], name: str = "fx.numpy.broadcast_to"):
    """``x`` broadcast to ``shape`` with numpy's rules (align trailing dimensions)."""
    shape = tuple(int(s) for s in shape)
    aval = get_aval(x)
    if aval.shape == shape:
        return x
    if aval.ndim > len(shape):
        raise ValueError(f"{name}: cannot broadcast {aval.shape} to the lower-rank {shape}")
    lead = len(shape) - aval.ndim
    for d, s in zip(aval.shape, shape[lead:]):
        if d != 1 and d != s:
            raise ValueError(f"{name}: cannot broadcast shape {aval.shape} to {shape}")
    return lax.broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


def promote_and_broadcast(*args, name: str = "fx.numpy", inexact: bool = False,
                          equal_rank_error: type[Exception] = TypeError) -> list:
    """Promote dtypes, then broadcast non-scalar operands to the common shape (rank-0 operands
    stay rank 0: the elementwise primitives broadcast scalars themselves). Shapes that do not
    broadcast raise as jax's elementwise functions do (:func:`broadcast_shapes`); those jax
    computes with ``where`` or ``broadcast_arrays`` (copysign, heaviside, gcd, lcm) raise
    ``ValueError`` at any rank and pass ``equal_rank_error=ValueError``."""
    dtypes.refuse_extended(name, [get_aval(a).dtype for a in args if is_fx_value(a)])
    arrs = promote_to_inexact(*args, name=name) if inexact else promote_dtypes(*args, name=name)
    shapes = [get_aval(a).shape for a in arrs]
    out = broadcast_shapes(*shapes, name=name, equal_rank_error=equal_rank_error)
    return [a if not s else broadcast_to_shape(a, out, name) for a, s in zip(arrs, shapes)]


def canonical_axis(axis: int, ndim: int, name: str) -> int:
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim


def canonical_axes(axis, ndim: int, name: str) -> tuple[int, ...]:
    """``axis`` (None, int or sequence) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (axis,)
    out = tuple(sorted(canonical_axis(a, ndim, name) for a in axis))
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {axis}")
    return out


def axis_list(axes, ndim: int, name: str) -> tuple[int, ...]:
    """``axes`` (an int or a sequence) as non-negative axes in the given order; ValueError
    naming ``fx.numpy.<name>`` for one out of bounds."""
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    out = []
    for ax in axes:
        ax = operator.index(ax)
        if not -ndim <= ax < ndim:
            raise ValueError(f"fx.numpy.{name}: axis {ax} is out of bounds for rank {ndim}")
        out.append(ax % ndim)
    return tuple(out)
