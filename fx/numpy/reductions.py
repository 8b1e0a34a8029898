"""Reductions of ``fx.numpy``: ``sum``, ``mean``, ``var``, ``std``, ``max``, ``min``, ``prod``,
``argmax``, ``argmin``, ``any``, ``all``, ``count_nonzero``, ``ptp``, ``average``.

Each takes an array (or array-like), an ``axis`` (None for all, an int or a tuple; negative
counts from the end) and ``keepdims``, and returns an fx array, with JAX's dtype rules in fx's
32-bit-default world:

* ``sum``/``prod`` of bool give the default integer (int32); other integers keep their dtype
  (jax with x64 widens int32/uint32 to 64 bits: fx's default integer is int32).
* ``mean``/``var``/``std``/``average`` of integers or bools give float32 (float64 for int64).
* ``argmax``/``argmin``/``count_nonzero`` give int32 (jax with x64 gives int64).
* Half-precision sums and means accumulate in float32 and round once.

``where=`` masks entries out (``max``/``min`` then need ``initial``); ``out=`` is refused, since
fx arrays are immutable. Logsumexp lives in ``fx.nn``.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy._promote import (
    broadcast_to_shape,
    canonical_axes,
    canonical_axis,
    promote_to_inexact,
    to_array,
)

__all__ = [
    "all", "amax", "amin", "any", "argmax", "argmin", "average", "count_nonzero", "max", "mean",
    "min", "prod", "ptp", "std", "sum", "var",
]

_HALF = (dtypes.float16, dtypes.bfloat16)


# --- shared argument handling ---------------------------------------------------------------------


def _prepare(a, axis, out, name: str):
    if out is not None:
        raise NotImplementedError(
            f"fx.numpy.{name}: the out= argument is not supported (fx arrays are immutable); "
            "use the returned array instead")
    a = to_array(a, f"fx.numpy.{name}")
    aval = get_aval(a)
    return a, aval, canonical_axes(axis, aval.ndim, f"fx.numpy.{name}")


def _keepdims(x, shape, axes, keepdims: bool):
    if not keepdims:
        return x
    return lax.reshape(x, tuple(1 if i in axes else d for i, d in enumerate(shape)))


def _mask(where, shape, name: str):
    """``where`` as a bool array of ``shape``."""
    w = to_array(where, f"fx.numpy.{name}")
    if get_aval(w).dtype != dtypes.bool_:
        w = lax.ne(w, 0)
    return broadcast_to_shape(w, shape, f"fx.numpy.{name} (where=)")


def _count(aval, axes) -> int:
    return math.prod(aval.shape[i] for i in axes)


def _inexact(dtype: np.dtype) -> np.dtype:
    """The float dtype integer/bool data computes in (jax's ``to_inexact_dtype``)."""
    return dtypes.to_inexact_dtype(dtype)


def _computation(dtype: np.dtype) -> np.dtype:
    return dtypes.float32 if dtype in _HALF else dtype


def _scalar_of(value, dtype, name: str):
    v = to_array(value, f"fx.numpy.{name}")
    if get_aval(v).shape:
        raise ValueError(f"fx.numpy.{name}: initial must be a scalar, got shape "
                         f"{get_aval(v).shape}")
    return lax.convert_element_type(v, dtype)


# --- sum, prod --------------------------------------------------------------------------------


def _sum_like(kind: str, a, axis, dtype, out, keepdims, initial, where, promote_integers):
    a, aval, axes = _prepare(a, axis, out, kind)
    if dtype is not None:
        dt = dtypes.requested(dtype, f"fx.numpy.{kind}")
    elif aval.dtype == dtypes.bool_:
        dt = dtypes.default_int_dtype()
    elif promote_integers and dtypes.is_int(aval.dtype):
        # As jax: integers narrower than the mode's default widen to it (unsigned to the
        # default unsigned type).
        wide = (dtypes.default_uint_dtype() if dtypes.is_unsigned_int(aval.dtype)
                else dtypes.default_int_dtype())
        dt = wide if aval.dtype.itemsize < wide.itemsize else aval.dtype
    else:
        dt = aval.dtype
    x = lax.convert_element_type(a, dt, aval.weak_type and dtype is None)
    neutral = 0 if kind == "sum" else 1
    if where is not None:
        x = lax.select(_mask(where, aval.shape, kind), x, lax.full_like(x, neutral))
    if dt == dtypes.bool_:
        # A bool-typed sum is "any", a bool-typed product is "all".
        res = (lax.reduce_or if kind == "sum" else lax.reduce_and)(x, axes)
    else:
        res = (lax.reduce_sum if kind == "sum" else lax.reduce_prod)(x, axes)
    if initial is not None:
        init = _scalar_of(initial, dt, kind)
        res = lax.add(res, init) if kind == "sum" else lax.mul(res, init)
    return _keepdims(res, aval.shape, axes, keepdims)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,  # noqa: A001
        promote_integers=True):
    """Sum of entries over ``axis``, as ``numpy.sum``; bools sum to int32.

    Example: ``fnp.sum(fnp.ones((2, 3)), axis=1)`` is ``[3., 3.]``.
    """
    return _sum_like("sum", a, axis, dtype, out, keepdims, initial, where, promote_integers)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
    """Product of entries over ``axis``, as ``numpy.prod``; its gradient is exact at zeros."""
    return _sum_like("prod", a, axis, dtype, out, keepdims, initial, where, promote_integers)


# --- mean, var, std, average ---------------------------------------------------------------------


def _masked_sum_and_count(x, aval, axes, where, name):
    """The sum of the selected entries of ``x`` and how many there are (in ``x``'s dtype)."""
    dt = get_aval(x).dtype
    if where is None:
        return lax.reduce_sum(x, axes), lax.full((), _count(aval, axes), dt)
    mask = _mask(where, aval.shape, name)
    total = lax.reduce_sum(lax.select(mask, x, lax.full_like(x, 0)), axes)
    return total, lax.reduce_sum(lax.convert_element_type(mask, dt), axes)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over ``axis``; integers give float32 (float64 for int64). The mean of
    no entries is NaN. Example: ``fnp.mean(fnp.arange(4))`` is ``1.5``."""
    a, aval, axes = _prepare(a, axis, out, "mean")
    dt = dtypes.requested(dtype, "fx.numpy.mean") if dtype is not None else _inexact(aval.dtype)
    x = lax.convert_element_type(a, _computation(dt))
    total, n = _masked_sum_and_count(x, aval, axes, where, "mean")
    res = lax.convert_element_type(lax.div(total, n), dt)
    return _keepdims(res, aval.shape, axes, keepdims)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
    """Variance over ``axis``, ``sum((a - mean)**2) / (N - ddof)``, as ``numpy.var``."""
    if correction is not None:
        if ddof != 0:
            raise ValueError("fx.numpy.var: pass ddof or correction, not both")
        ddof = correction
    a, aval, axes = _prepare(a, axis, out, "var")
    if dtype is not None:
        dt = comp = dtypes.requested(dtype, "fx.numpy.var")
        if dtypes.is_complex(aval.dtype) and not dtypes.is_complex(dt):
            raise ValueError(f"fx.numpy.var: a real dtype={dt} for complex data "
                             f"({aval.str_short()}) is not supported (as in jax); leave dtype "
                             "out to get the variance in the data's real dtype")
    else:
        comp = _inexact(aval.dtype)
        dt = dtypes.real_dtype(comp)  # complex data: a real variance, as jax
    x = lax.convert_element_type(a, _computation(comp))
    total, n = _masked_sum_and_count(x, aval, axes, where, "var")
    kept = tuple(i for i in range(aval.ndim) if i not in axes)
    centered = lax.sub(x, lax.broadcast_in_dim(lax.div(total, n), aval.shape, kept))
    if dtypes.is_complex(get_aval(centered).dtype):
        sq = lax.real(lax.mul(centered, lax.conj(centered)))
        n = lax.real(n) if dtypes.is_complex(get_aval(n).dtype) else n
    else:
        sq = lax.mul(centered, centered)
    if where is not None:
        sq = lax.select(_mask(where, aval.shape, "var"), sq, lax.full_like(sq, 0))
    normalizer = lax.sub(n, ddof)
    res = lax.div(lax.reduce_sum(sq, axes), normalizer)
    # No more entries than ddof: NaN, like jax.
    res = lax.select(lax.gt(normalizer, 0), res, lax.full_like(res, np.nan))
    res = lax.convert_element_type(res, dt)
    return _keepdims(res, aval.shape, axes, keepdims)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
    """Standard deviation over ``axis``: the square root of :func:`var`."""
    v = var(a, axis, dtype, out, ddof, keepdims, where=where, correction=correction)
    return lax.sqrt(v)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """Weighted average over ``axis``; 1-D ``weights`` apply along a single ``axis``.

    With ``returned=True`` also returns the sum of the weights (broadcast like the result).
    Example: ``fnp.average(fnp.array([1., 2.]), weights=fnp.array([3., 1.]))`` is ``1.25``.
    """
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        if not returned:
            return avg
        aval = get_aval(to_array(a))
        n = _count(aval, canonical_axes(axis, aval.ndim, "fx.numpy.average"))
        return avg, lax.full_like(avg, n)
    a, w = promote_to_inexact(a, weights, name="fx.numpy.average")
    a_aval, w_aval = get_aval(a), get_aval(w)
    axes = canonical_axes(axis, a_aval.ndim, "fx.numpy.average")
    if w_aval.shape != a_aval.shape:
        if axis is None:
            raise TypeError(
                f"fx.numpy.average: weights of shape {w_aval.shape} differ from a's shape "
                f"{a_aval.shape}; pass axis= to say which axis 1-D weights apply to")
        if w_aval.ndim != 1 or len(axes) != 1:
            raise TypeError(
                f"fx.numpy.average: weights of shape {w_aval.shape} must be 1-D, along a single "
                f"axis, when they differ from a's shape {a_aval.shape}")
        if w_aval.shape[0] != a_aval.shape[axes[0]]:
            raise ValueError(
                f"fx.numpy.average: {w_aval.shape[0]} weights for axis {axes[0]} of length "
                f"{a_aval.shape[axes[0]]}")
        w = lax.broadcast_in_dim(w, a_aval.shape, axes)
    scale = sum(w, axis=axes, keepdims=keepdims)
    avg = lax.div(sum(lax.mul(a, w), axis=axes, keepdims=keepdims), scale)
    if returned:
        return avg, broadcast_to_shape(scale, get_aval(avg).shape)
    return avg


# --- max, min, ptp --------------------------------------------------------------------------------


def _identity_for(kind: str, dtype: np.dtype):
    if dtypes.is_inexact(dtype):  # complex: -inf + 0j, as jax
        return -np.inf if kind == "max" else np.inf
    if dtype == dtypes.bool_:
        return kind == "min"
    info = np.iinfo(dtype)
    return info.min if kind == "max" else info.max


def _extremum(kind: str, a, axis, out, keepdims, initial, where):
    a, aval, axes = _prepare(a, axis, out, kind)
    if initial is None:
        if where is not None:
            raise ValueError(
                f"fx.numpy.{kind}: reduction operation {kind} does not have an identity, so to "
                "use a where mask one has to specify 'initial'")
        if builtins.any(aval.shape[i] == 0 for i in axes):
            raise ValueError(
                f"fx.numpy.{kind}: zero-size array to reduction operation {kind} which has no "
                f"identity (shape {aval.shape}, axis {axis}); pass initial= to define one")
    x = a
    if where is not None:
        x = lax.select(_mask(where, aval.shape, kind), x,
                       lax.full_like(x, _identity_for(kind, aval.dtype)))
    res = (lax.reduce_max if kind == "max" else lax.reduce_min)(x, axes)
    if initial is not None:
        init = _scalar_of(initial, aval.dtype, kind)
        res = (lax.max if kind == "max" else lax.min)(res, init)
    return _keepdims(res, aval.shape, axes, keepdims)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Largest entry over ``axis``; NaN propagates. Tied maxima share the gradient equally.
    An empty reduction needs ``initial``. Example: ``fnp.max(x, axis=0)``."""
    return _extremum("max", a, axis, out, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Smallest entry over ``axis`` (see :func:`max`)."""
    return _extremum("min", a, axis, out, keepdims, initial, where)


amax, amin = max, min


def ptp(a, axis=None, out=None, keepdims=False):
    """Range (``max - min``) over ``axis``."""
    if get_aval(to_array(a, "fx.numpy.ptp")).dtype == dtypes.bool_:
        raise TypeError("fx.numpy.ptp: bool input is not supported (max - min of booleans); "
                        "convert to an integer type first")
    return lax.sub(max(a, axis, out, keepdims), min(a, axis, out, keepdims))


# --- argmax, argmin -------------------------------------------------------------------------------


def _arg(kind: str, a, axis, out, keepdims):
    a, aval, _ = _prepare(a, None, out, kind)
    if dtypes.is_complex(aval.dtype):
        raise TypeError(f"fx.numpy.{kind} does not accept complex inputs (as jax), got "
                        f"{aval.str_short()}")
    if axis is None:
        x, ax = lax.reshape(a, (aval.size,)), 0
        kept_shape = (1,) * aval.ndim
    else:
        x, ax = a, canonical_axis(axis, aval.ndim, f"fx.numpy.{kind}")
        kept_shape = tuple(1 if i == ax else d for i, d in enumerate(aval.shape))
    if get_aval(x).shape[ax] == 0:
        raise ValueError(f"fx.numpy.{kind}: attempt to get {kind} of an empty sequence "
                         f"(shape {aval.shape}, axis {axis})")
    res = (lax.argmax if kind == "argmax" else lax.argmin)(x, ax, dtypes.default_int_dtype())
    return lax.reshape(res, kept_shape) if keepdims else res


def argmax(a, axis=None, out=None, keepdims=False):
    """Index of the largest entry (of the flattened array when ``axis`` is None): the first one
    on ties, the first NaN if any. int32 (jax with x64 gives int64)."""
    return _arg("argmax", a, axis, out, keepdims)


def argmin(a, axis=None, out=None, keepdims=False):
    """Index of the smallest entry (see :func:`argmax`)."""
    return _arg("argmin", a, axis, out, keepdims)


# --- any, all, count_nonzero ----------------------------------------------------------------------


def _truth(a):
    return a if get_aval(a).dtype == dtypes.bool_ else lax.ne(a, 0)


def _logical(kind: str, a, axis, out, keepdims, where):
    a, aval, axes = _prepare(a, axis, out, kind)
    x = _truth(a)
    if where is not None:
        x = lax.select(_mask(where, aval.shape, kind), x, lax.full_like(x, kind == "all"))
    res = (lax.reduce_or if kind == "any" else lax.reduce_and)(x, axes)
    return _keepdims(res, aval.shape, axes, keepdims)


def any(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """Whether any entry over ``axis`` is nonzero (NaN counts as nonzero)."""
    return _logical("any", a, axis, out, keepdims, where)


def all(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """Whether every entry over ``axis`` is nonzero; True for an empty reduction."""
    return _logical("all", a, axis, out, keepdims, where)


def count_nonzero(a, axis=None, keepdims=False):
    """The number of nonzero entries over ``axis`` (int32)."""
    a, aval, axes = _prepare(a, axis, None, "count_nonzero")
    ones = lax.convert_element_type(_truth(a), dtypes.default_int_dtype())
    return _keepdims(lax.reduce_sum(ones, axes), aval.shape, axes, keepdims)
