"""NaN-ignoring reductions and cumulative functions of ``fx.numpy``: ``nansum``, ``nanprod``,
``nanmax``, ``nanmin``, ``nanargmax``, ``nanargmin``, ``nanmean``, ``nanvar``, ``nanstd``,
``nancumsum``, ``nancumprod`` (the NaN-ignoring quantiles are in :mod:`fx.numpy.quantiles`).

Each takes the arguments of its NaN-propagating twin in ``fx.numpy.reductions`` or
``fx.numpy.sorting`` and returns what the twin returns for the data with its NaNs left out,
with JAX's conventions where nothing is left: ``nansum`` 0, ``nanprod`` 1, ``nanmax``/
``nanmin``/``nanmean``/``nanvar`` NaN, ``nanargmax``/``nanargmin`` -1. Integer
and bool data have no NaNs and go straight to the twin. All are ``fx.lax`` compositions
(``select`` around the twin), so they trace, differentiate, vmap and compile; the derivative
with respect to a NaN entry is zero.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy import reductions, sorting
from fx.numpy._promote import (
    broadcast_to_shape,
    canonical_axis,
    promote_to_inexact,
    to_array,
)

__all__ = [
    "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmin",
    "nanprod", "nanstd", "nansum", "nanvar",
]


def _float_data(a, name: str):
    """``a`` as an fx array, and whether it can hold NaNs at all."""
    a = to_array(a, f"fx.numpy.{name}")
    return a, dtypes.is_inexact(get_aval(a).dtype)


def _isnan(a):
    # A complex entry is NaN when either part is: x != x then, as its parts are compared.
    return lax.ne(a, a)


def _replace_nans(a, value):
    return lax.select(_isnan(a), lax.full_like(a, value), a)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum over ``axis`` with NaNs counted as zero (see :func:`fx.numpy.sum`).

    Example: ``fnp.nansum(fnp.array([1.0, nan, 2.0]))`` is ``3.0``.
    """
    a, has_nan = _float_data(a, "nansum")
    x = _replace_nans(a, 0) if has_nan else a
    return reductions.sum(x, axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product over ``axis`` with NaNs counted as one (see :func:`fx.numpy.prod`)."""
    a, has_nan = _float_data(a, "nanprod")
    x = _replace_nans(a, 1) if has_nan else a
    return reductions.prod(x, axis, dtype, out, keepdims, initial, where)


def _nan_extremum(kind: str, a, axis, out, keepdims, initial, where):
    a, has_nan = _float_data(a, f"nan{kind}")
    reduce = reductions.max if kind == "max" else reductions.min
    if not has_nan:
        return reduce(a, axis, out, keepdims, initial, where)
    nan = _isnan(a)
    x = lax.select(nan, lax.full_like(a, -np.inf if kind == "max" else np.inf), a)
    res = reduce(x, axis, out, keepdims, initial, where)
    if initial is not None:
        return res  # an all-NaN slice gives the initial value, as in JAX
    all_nan = reductions.all(nan, axis, keepdims=keepdims)
    return lax.select(all_nan, lax.full_like(res, np.nan), res)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Largest non-NaN entry over ``axis``; NaN where every entry is NaN.

    Example: ``fnp.nanmax(fnp.array([[1.0, nan], [nan, nan]]), axis=1)`` is ``[1., nan]``.
    """
    return _nan_extremum("max", a, axis, out, keepdims, initial, where)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Smallest non-NaN entry over ``axis``; NaN where every entry is NaN."""
    return _nan_extremum("min", a, axis, out, keepdims, initial, where)


def _nan_arg(kind: str, a, axis, out, keepdims):
    a, has_nan = _float_data(a, f"nanarg{kind}")
    if dtypes.is_complex(get_aval(a).dtype):
        raise TypeError(f"fx.numpy.nanarg{kind} does not accept complex inputs (as jax), got "
                        f"{get_aval(a).str_short()}")
    if axis is not None:
        canonical_axis(axis, get_aval(a).ndim, f"fx.numpy.nanarg{kind}")
    arg = reductions.argmax if kind == "max" else reductions.argmin
    if not has_nan:
        return arg(a, axis, out, keepdims)
    nan = _isnan(a)
    x = lax.select(nan, lax.full_like(a, -np.inf if kind == "max" else np.inf), a)
    res = arg(x, axis, out, keepdims)
    all_nan = reductions.all(nan, axis, keepdims=bool(keepdims))
    return lax.select(all_nan, lax.full_like(res, -1), res)


def nanargmax(a, axis=None, out=None, keepdims=None):
    """Index of the largest non-NaN entry (see :func:`fx.numpy.argmax`); -1 where every
    entry is NaN (numpy raises there; JAX cannot under jit).

    Example: ``fnp.nanargmax(fnp.array([nan, 3.0, 1.0]))`` is ``1``.
    """
    return _nan_arg("max", a, axis, out, keepdims)


def nanargmin(a, axis=None, out=None, keepdims=None):
    """Index of the smallest non-NaN entry; -1 where every entry is NaN."""
    return _nan_arg("min", a, axis, out, keepdims)


def _and_where(mask, where, name):
    if where is None:
        return mask
    w = reductions._mask(where, get_aval(mask).shape, name)
    return lax.and_(mask, w)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """Mean of the non-NaN entries over ``axis``; NaN where there are none.

    Example: ``fnp.nanmean(fnp.array([1.0, nan, 3.0]))`` is ``2.0``.
    """
    a, has_nan = _float_data(a, "nanmean")
    if not has_nan:
        return reductions.mean(a, axis, dtype, out, keepdims, where=where)
    present = _and_where(lax.bitwise_not(_isnan(a)), where, "nanmean")
    total = nansum(a, axis, dtype, out, keepdims, where=present)
    count = reductions.sum(present, axis, get_aval(total).dtype, keepdims=keepdims)
    return lax.div(total, count)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """Variance of the non-NaN entries over ``axis``, ``sum((a - mean)**2) / (N - ddof)``
    with ``N`` the number of them; NaN where ``N <= ddof``. ``mean`` may pass a precomputed
    mean (with ``keepdims=True`` shape), as in the array API. Complex data (NaN in either
    part) give a real variance, ``sum(|a - mean|**2) / (N - ddof)``, as jax.

    Example: ``fnp.nanvar(fnp.array([1.0, nan, 3.0]))`` is ``1.0``.
    """
    name = "fx.numpy.nanvar"
    if out is not None:
        raise NotImplementedError(f"{name}: out= is not supported (fx arrays are immutable)")
    (a,) = promote_to_inexact(to_array(a, name), name=name)
    dt = dtypes.canonicalize(dtype) if dtype is not None else get_aval(a).dtype
    cplx = dtypes.is_complex(get_aval(a).dtype)
    if cplx and not dtypes.is_complex(dt):
        raise ValueError(f"{name}: a real dtype={dt} for complex data "
                         f"({get_aval(a).str_short()}) is not supported (as in jax)")
    comp = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt
    if cplx and dtype is None:
        dt = dtypes.real_dtype(dt)
    x = lax.convert_element_type(a, comp)
    present = _and_where(lax.bitwise_not(_isnan(x)), where, "nanvar")
    # NaNs become zeros before any arithmetic, so no NaN meets a zero cotangent.
    x = _replace_nans(x, 0)
    if mean is None:
        mean = nanmean(x, axis, keepdims=True, where=present)
    else:
        mean = lax.convert_element_type(to_array(mean, name), comp)
    centered = lax.sub(x, broadcast_to_shape(mean, get_aval(x).shape, name))
    if cplx:
        sq = lax.real(lax.mul(centered, lax.conj(centered)))
        sq = lax.select(present, sq, lax.full_like(sq, 0))
    else:
        sq = lax.select(present, lax.mul(centered, centered), lax.full_like(x, 0))
    total = reductions.sum(sq, axis, keepdims=keepdims)
    n = lax.sub(reductions.sum(present, axis, get_aval(sq).dtype, keepdims=keepdims), ddof)
    res = lax.select(lax.gt(n, 0), lax.div(total, n), lax.full_like(total, np.nan))
    return lax.convert_element_type(res, dt)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """Standard deviation of the non-NaN entries: the square root of :func:`nanvar`."""
    return lax.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where, mean))


def nancumsum(a, axis: int | None = None, dtype=None, out=None):
    """Cumulative sum along ``axis`` with NaNs counted as zero (see
    :func:`fx.numpy.cumsum`). Example: ``fnp.nancumsum(fnp.array([1.0, nan, 2.0]))`` is
    ``[1., 1., 3.]``."""
    a, has_nan = _float_data(a, "nancumsum")
    return sorting.cumsum(_replace_nans(a, 0) if has_nan else a, axis, dtype, out)


def nancumprod(a, axis: int | None = None, dtype=None, out=None):
    """Cumulative product along ``axis`` with NaNs counted as one."""
    a, has_nan = _float_data(a, "nancumprod")
    return sorting.cumprod(_replace_nans(a, 1) if has_nan else a, axis, dtype, out)
