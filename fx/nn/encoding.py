"""``fx.nn.one_hot``: integer class ids as one-hot vectors."""

from __future__ import annotations

import operator

from fx import dtypes, lax
from fx import numpy as fnp
from fx.core import get_aval
from fx.numpy._promote import canonical_axis, to_array

__all__ = ["one_hot"]


def one_hot(x, num_classes: int, *, dtype=None, axis: int = -1):
    """One-hot encode the integer array ``x``: a new axis ``axis`` of size ``num_classes``
    holds 1 at index ``x`` and 0 elsewhere. Out-of-range indices (negative ones included)
    encode as all zeros. ``dtype`` defaults to float32 (jax-x64: float64).

    Example::

        >>> fx.nn.one_hot(fnp.array([0, 2, 5]), 3)
        Array([[1., 0., 0.],
               [0., 0., 1.],
               [0., 0., 0.]], dtype=float32)
    """
    try:
        num_classes = operator.index(num_classes)
    except TypeError:
        raise TypeError(
            f"fx.nn.one_hot: num_classes must be a concrete integer, got {num_classes!r} "
            "(the output shape depends on it)"
        ) from None
    if num_classes < 0:
        raise ValueError(f"fx.nn.one_hot: num_classes must be non-negative, got {num_classes}")
    x = to_array(x, "fx.nn.one_hot")
    aval = get_aval(x)
    if aval.dtype == dtypes.bool_:
        x = lax.convert_element_type(x, dtypes.int32)
        aval = get_aval(x)
    out_dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize(dtype)
    axis = canonical_axis(axis, aval.ndim + 1, "fx.nn.one_hot")
    lhs = lax.reshape(x, aval.shape[:axis] + (1,) + aval.shape[axis:])
    rhs_shape = [1] * aval.ndim
    rhs_shape.insert(axis, num_classes)
    classes = lax.broadcasted_iota(aval.dtype, tuple(rhs_shape), axis)
    return lax.convert_element_type(fnp.equal(lhs, classes), out_dt)
