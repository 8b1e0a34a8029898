"""Argument handling shared by the ``fx.scipy.special`` modules."""

from __future__ import annotations

import numpy as np

from fx import dtypes
from fx.core import Tracer, get_aval
from fx.numpy._promote import ensure_arraylike, promote_and_broadcast, to_array


def promote_inexact(name: str, *args, equal_rank_error: type[Exception] = TypeError) -> list:
    """jax's ``promote_args_inexact``: arrays or scalars, one inexact dtype (integers and bools
    become the mode's default float), broadcast to one shape. Shapes of one rank that do not
    broadcast raise ``equal_rank_error``: jax's ``TypeError`` from the lax primitive, or
    ``ValueError`` for the functions that jax broadcasts with ``broadcast_arrays``."""
    ensure_arraylike(f"fx.scipy.special.{name}", *args)
    return promote_and_broadcast(*args, name=f"fx.scipy.special.{name}", inexact=True,
                                 equal_rank_error=equal_rank_error)


def require_float(name: str, x):
    """The functions jax defines only for float32 and float64 (ndtr, ndtri, spence, ...)."""
    x = to_array(x, f"fx.scipy.special.{name}")
    dt = get_aval(x).dtype
    if dt not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"x.dtype={dt} is not supported, see docstring for supported types.")
    return x


def reject_complex(name: str, *args) -> None:
    for a in args:
        if dtypes.is_complex(get_aval(a).dtype):
            raise ValueError(f"{name} does not support complex-valued inputs.")


def concrete_or_error(convert, value, context: str):
    """``convert`` of the host value of ``value``; a ConcretizationTypeError under tracing."""
    if isinstance(value, Tracer):
        value = value.to_concrete(context)
    return convert(np.asarray(value)) if not isinstance(value, (int, float)) else convert(value)
