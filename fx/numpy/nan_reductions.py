"""NaN-ignoring reductions and cumulative functions of ``fx.numpy``: ``nansum``, ``nanprod``,
``nanmax``, ``nanmin``, ``nanargmax``, ``nanargmin``, ``nanmean``, ``nanvar``, ``nanstd``,
``nanmedian``, ``nanquantile``, ``nanpercentile``, ``nancumsum``, ``nancumprod``.

Each takes the arguments of its NaN-propagating twin in ``fx.numpy.reductions`` or
``fx.numpy.sorting`` and returns what the twin returns for the data with its NaNs left out,
with JAX's conventions where nothing is left: ``nansum`` 0, ``nanprod`` 1, ``nanmax``/
``nanmin``/``nanmean``/``nanvar``/the quantiles NaN, ``nanargmax``/``nanargmin`` -1. Integer
and bool data have no NaNs and go straight to the twin. All are ``fx.lax`` compositions
(``select`` around the twin), so they trace, differentiate, vmap and compile; the derivative
with respect to a NaN entry is zero.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy import reductions, sorting
from fx.numpy._promote import (
    asarray,
    broadcast_to_shape,
    canonical_axis,
    promote_to_inexact,
    to_array,
)
from fx.numpy.sorting import _reduce_axes_last, _refuse_complex_quantile

__all__ = [
    "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmedian",
    "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd", "nansum", "nanvar",
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


# --- order statistics -------------------------------------------------------------------------

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _take_per_row(data, index):
    """``data[..., index]`` where ``data`` is ``R + (n,)`` and ``index`` is ``Q + R`` (one
    position per row and quantile): a one-hot select and sum, exact and gather-free."""
    d_aval, i_aval = get_aval(data), get_aval(index)
    q_nd = i_aval.ndim - (d_aval.ndim - 1)
    grid = i_aval.shape + (d_aval.shape[-1],)
    db = lax.broadcast_in_dim(data, grid, tuple(range(q_nd, len(grid))))
    ib = lax.broadcast_in_dim(index, grid, tuple(range(len(grid) - 1)))
    hit = lax.eq(lax.broadcasted_iota(i_aval.dtype, grid, len(grid) - 1), ib)
    return lax.reduce_sum(lax.select(hit, db, lax.full(grid, 0, d_aval.dtype)),
                          (len(grid) - 1,))


def _nanquantile(a, q, axis, out, overwrite_input, method, keepdims, weights, name):
    _refuse_complex_quantile(a, name)
    if out is not None or overwrite_input:
        raise NotImplementedError(f"{name}: 'out' and 'overwrite_input' are not supported")
    if method not in _METHODS + ("inverted_cdf",):
        raise ValueError(f"{name}: method must be one of {_METHODS + ('inverted_cdf',)}, got "
                         f"{method!r}")
    if weights is not None and method != "inverted_cdf":
        raise NotImplementedError(f"{name}: method {method!r} does not support weights; only "
                                  "method='inverted_cdf' does (as in numpy and JAX)")
    if weights is None:
        (a,) = promote_to_inexact(to_array(a, name), name=name)
    else:  # the weights take part in the promotion, as in JAX
        a, weights = promote_to_inexact(a, weights, name=name)
    dt = get_aval(a).dtype
    q = asarray(q, dt)
    flat, keep_shape = _reduce_axes_last(a, axis, name)
    n = get_aval(flat).shape[-1]
    if n == 0:
        raise ValueError(f"{name}: cannot take a quantile over zero elements "
                         f"(shape {get_aval(a).shape}, axis {axis})")
    last = get_aval(flat).ndim - 1
    rest = get_aval(flat).shape[:-1]
    q_nd = get_aval(q).ndim
    full = get_aval(q).shape + rest
    qb = lax.broadcast_in_dim(q, full, tuple(range(q_nd)))
    if method == "inverted_cdf":
        result, count = _inverted_cdf(a, flat, qb, axis, weights, name)
    else:
        data = lax.sort(flat, -1)  # NaNs last
        count = lax.reduce_sum(lax.convert_element_type(lax.eq(data, data), dt), (last,))
        count = lax.broadcast_in_dim(count, full, tuple(range(q_nd, len(full))))
        result = _interpolate(data, qb, count, method)
    result = lax.select(lax.eq(count, 0), lax.full_like(result, np.nan), result)
    if keepdims:
        result = lax.reshape(result, get_aval(q).shape + keep_shape)
    return result


def _inverted_cdf(a, flat, qb, axis, weights, name):
    """The first sorted value whose cumulative weight reaches ``q`` times the total (NaNs
    weigh nothing); unit weights without ``weights``."""
    dt = get_aval(flat).dtype
    last = get_aval(flat).ndim - 1
    full = get_aval(qb).shape
    q_nd = len(full) - last
    if weights is None:
        w = lax.full_like(flat, 1)
    else:
        w = lax.convert_element_type(to_array(weights, name), dt)
        a_shape = get_aval(a).shape
        if get_aval(w).shape != a_shape:
            if get_aval(w).ndim == 1 and isinstance(axis, (int, np.integer)):
                ax = canonical_axis(axis, len(a_shape), name)
                if get_aval(w).shape[0] != a_shape[ax]:
                    raise ValueError(f"{name}: {get_aval(w).shape[0]} weights for axis {ax} "
                                     f"of length {a_shape[ax]}")
                w = lax.broadcast_in_dim(w, a_shape, (ax,))
            else:
                raise ValueError(f"{name}: weights of shape {get_aval(w).shape} must have a's "
                                 f"shape {a_shape} (or be 1-d along a single axis)")
        w, _ = _reduce_axes_last(w, axis, name)
    # A negative or NaN weight makes its slice's quantile NaN (jax's rule).
    bad = lax.reduce_or(lax.bitwise_or(lax.lt(w, lax.full_like(w, 0)), _isnan(w)), (last,))
    bad = lax.broadcast_in_dim(bad, full, tuple(range(q_nd, len(full))))
    w = lax.select(_isnan(flat), lax.full_like(w, 0), w)
    data, w = lax.sort((flat, w), last, num_keys=1)
    cw = lax.cumsum(w, last)
    n = get_aval(flat).shape[-1]
    total = lax.slice_in_dim(cw, n - 1, n, 1, last)
    count = lax.reduce_sum(lax.convert_element_type(lax.eq(data, data), dt), (last,))
    count = lax.broadcast_in_dim(count, full, tuple(range(q_nd, len(full))))
    grid = full + (n,)
    target = lax.mul(lax.broadcast_in_dim(qb, grid, tuple(range(len(full)))),
                     lax.broadcast_in_dim(lax.reshape(total, get_aval(total).shape[:-1]), grid,
                                          tuple(range(q_nd, len(full)))))
    below = lax.lt(lax.broadcast_in_dim(cw, grid, tuple(range(q_nd, len(grid)))), target)
    index = lax.reduce_sum(lax.convert_element_type(below, dtypes.int32), (len(grid) - 1,))
    top = lax.sub(lax.convert_element_type(count, dtypes.int32), 1)
    index = lax.clamp(0, lax.min(index, lax.max(top, lax.full_like(top, 0))), n - 1)
    result = _take_per_row(data, index)
    return lax.select(bad, lax.full_like(result, np.nan), result), count


def _interpolate(data, qb, count, method):
    top = lax.max(lax.sub(count, 1.0), lax.full_like(count, 0))
    pos = lax.mul(qb, top)
    low, high = lax.floor(pos), lax.ceil(pos)
    high_w = lax.sub(pos, low)
    low_w = lax.sub(lax.full_like(high_w, 1), high_w)
    low_v, high_v = (_take_per_row(data, lax.convert_element_type(i, dtypes.int32))
                     for i in (low, high))
    if method == "linear":
        result = lax.add(lax.mul(low_v, low_w), lax.mul(high_v, high_w))
    elif method == "lower":
        result = low_v
    elif method == "higher":
        result = high_v
    elif method == "nearest":
        result = lax.select(lax.le(high_w, 0.5), low_v, high_v)
    else:
        result = lax.mul(lax.add(low_v, high_v), 0.5)
    return result


def nanquantile(a, q, axis: int | Sequence[int] | None = None, out=None,
                overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
                *, weights=None):
    """The ``q``-th quantiles of the non-NaN entries of ``a`` over ``axis`` (see
    :func:`fx.numpy.quantile`); NaN where a slice holds nothing but NaNs.

    ``method="inverted_cdf"`` gives the first sorted value whose cumulative weight reaches
    ``q`` times the total; it alone takes ``weights`` (``a``'s shape, or 1-d along a single
    ``axis``), as in numpy and JAX.

    Example: ``fnp.nanquantile(fnp.array([1.0, nan, 3.0, 2.0]), 0.5)`` is ``2.0``.
    """
    return _nanquantile(a, q, axis, out, overwrite_input, method, keepdims, weights,
                        "fx.numpy.nanquantile")


def nanpercentile(a, q, axis: int | Sequence[int] | None = None, out=None,
                  overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights=None):
    """The ``q``-th percentiles (``0 <= q <= 100``) of the non-NaN entries; see
    :func:`nanquantile` (``weights`` with ``method="inverted_cdf"``)."""
    name = "fx.numpy.nanpercentile"
    (a,) = promote_to_inexact(to_array(a, name), name=name)
    q = lax.div(asarray(q, get_aval(a).dtype), 100.0)
    return _nanquantile(a, q, axis, out, overwrite_input, method, keepdims, weights, name)


def nanmedian(a, axis: int | Sequence[int] | None = None, out=None,
              overwrite_input: bool = False, keepdims: bool = False):
    """The median of the non-NaN entries over ``axis``; NaN for all-NaN slices.

    Example: ``fnp.nanmedian(fnp.array([1.0, nan, 3.0]))`` is ``2.0``.
    """
    return _nanquantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims, None,
                        "fx.numpy.nanmedian")


# --- cumulative -------------------------------------------------------------------------------


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
