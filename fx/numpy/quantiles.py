"""Order statistics of ``fx.numpy``: ``quantile``, ``percentile``, ``median`` and their
NaN-ignoring twins ``nanquantile``, ``nanpercentile``, ``nanmedian``.

Each reduces over ``axis`` (one, several, or all with None) by sorting the reduced axes merged
into one last axis (``fx.lax.sort``, NaNs last) and reading the sorted data at the positions
``q`` asks for, with numpy's ``method`` (``linear``, ``lower``, ``higher``, ``midpoint``,
``nearest``, ``inverted_cdf``; ``weights`` with ``inverted_cdf`` only, as in numpy and JAX).
The NaN-propagating ones give NaN for a slice holding a NaN; the ``nan*`` ones leave NaNs out
and give NaN only where nothing is left. Complex input is refused, as in JAX. All are
``fx.lax`` compositions, so they trace, differentiate, vmap and compile.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy._promote import asarray, canonical_axes, canonical_axis, promote_to_inexact, to_array

__all__ = ["median", "nanmedian", "nanpercentile", "nanquantile", "percentile", "quantile"]


def _isnan(a):
    # A complex entry is NaN when either part is: x != x then, as its parts are compared.
    return lax.ne(a, a)


_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _reduce_axes_last(a, axis, name: str):
    """``a`` with the reduced axes merged into one last axis, and the result shape that
    ``keepdims`` asks for."""
    aval = get_aval(a)
    axes = canonical_axes(axis, aval.ndim, name)
    kept = [i for i in range(aval.ndim) if i not in axes]
    moved = lax.transpose(a, kept + list(axes))
    kept_shape = tuple(aval.shape[i] for i in kept)
    size = int(np.prod([aval.shape[i] for i in axes], dtype=np.int64))
    keep_shape = tuple(1 if i in axes else d for i, d in enumerate(aval.shape))
    return lax.reshape(moved, kept_shape + (size,)), keep_shape


def _take_last(x, index):
    """``x[..., index]`` along the last axis for an integer array ``index`` of any shape
    ``Q``: result ``Q + x.shape[:-1]``. A one-hot select and sum keeps it gather-free and
    exact (a single entry survives each sum)."""
    x_aval, i_aval = get_aval(x), get_aval(index)
    q = i_aval.ndim
    grid = i_aval.shape + x_aval.shape
    xb = lax.broadcast_in_dim(x, grid, tuple(range(q, len(grid))))
    ib = lax.broadcast_in_dim(index, grid, tuple(range(q)))
    hit = lax.eq(lax.broadcasted_iota(i_aval.dtype, grid, len(grid) - 1), ib)
    picked = lax.select(hit, xb, lax.full(grid, 0, x_aval.dtype))
    return lax.reduce_sum(picked, (len(grid) - 1,))


def quantile(a, q, axis: int | Sequence[int] | None = None, out=None,
             overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
             *, weights=None):
    """The ``q``-th quantiles (``0 <= q <= 1``) of ``a`` over ``axis``, interpolating by
    ``method`` (``linear``, ``lower``, ``higher``, ``midpoint`` or ``nearest``), or with
    ``method="inverted_cdf"`` the first sorted value whose cumulative weight reaches ``q``
    times the total; that method alone takes ``weights`` (as jax 0.10's).

    The result has shape ``q.shape + `` the remaining axes; it is NaN where the reduced data
    holds a NaN. Integers compute in the default float.

    Example::

        >>> fnp.quantile(fnp.array([1.0, 2.0, 3.0, 4.0]), 0.5)   # 2.5
    """
    return _quantile(a, q, axis, out, overwrite_input, method, keepdims, "fx.numpy.quantile",
                     weights)


def _refuse_complex_quantile(a, name: str) -> None:
    # As jax: an order statistic of complex numbers is poorly defined.
    if dtypes.is_complex(get_aval(to_array(a, name)).dtype):
        raise ValueError(f"{name} does not support complex input (an order statistic of "
                         "complex numbers is poorly defined), got "
                         f"{get_aval(to_array(a, name)).str_short()}")


def _quantile(a, q, axis, out, overwrite_input, method, keepdims, name, weights=None):
    _refuse_complex_quantile(a, name)
    if out is not None or overwrite_input:
        raise NotImplementedError(f"{name}: 'out' and 'overwrite_input' are not supported")
    if method not in _METHODS:
        raise ValueError(f"{name}: method must be one of {_METHODS}, got {method!r}")
    if method == "inverted_cdf" or weights is not None:
        return _inverted_cdf_quantile(a, q, axis, out, overwrite_input, method, keepdims,
                                      weights, name)
    (a,) = promote_to_inexact(a, name=name)
    dt = get_aval(a).dtype
    q = asarray(q, dt)  # Python scalars convert exactly, not through float32
    flat, keep_shape = _reduce_axes_last(a, axis, name)
    n = get_aval(flat).shape[-1]
    if n == 0:
        raise ValueError(f"{name}: cannot take a quantile over zero elements "
                         f"(shape {get_aval(a).shape}, axis {axis})")
    data = lax.sort(flat, -1)
    pos = lax.mul(q, float(n - 1))
    low = lax.floor(pos)
    high = lax.ceil(pos)
    high_w = lax.sub(pos, low)
    low_w = lax.sub(lax.full_like(high_w, 1), high_w)
    idx = [lax.convert_element_type(lax.clamp(0.0, i, float(n - 1)), dtypes.int32)
           for i in (low, high)]
    low_v, high_v = (_take_last(data, i) for i in idx)
    q_nd, rest = get_aval(q).ndim, get_aval(low_v).shape
    if method == "linear":
        def spread(w):
            return lax.broadcast_in_dim(w, rest, tuple(range(q_nd)))

        result = lax.add(lax.mul(low_v, spread(low_w)), lax.mul(high_v, spread(high_w)))
    elif method == "lower":
        result = low_v
    elif method == "higher":
        result = high_v
    elif method == "nearest":
        pick_low = lax.broadcast_in_dim(lax.le(high_w, 0.5), rest, tuple(range(q_nd)))
        result = lax.select(pick_low, low_v, high_v)
    else:
        result = lax.mul(lax.add(low_v, high_v), 0.5)
    # NaNs sort last: a NaN in the last sorted slot means the slice held one.
    last = lax.slice_in_dim(data, n - 1, n, 1, get_aval(data).ndim - 1)
    has_nan = lax.reshape(lax.ne(last, last), get_aval(last).shape[:-1])
    has_nan = lax.broadcast_in_dim(has_nan, rest, tuple(range(q_nd, len(rest))))
    result = lax.select(has_nan, lax.full(rest, np.nan, dt), result)
    if keepdims:
        result = lax.reshape(result, get_aval(q).shape + keep_shape)
    return result


def percentile(a, q, axis: int | Sequence[int] | None = None, out=None,
               overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
               *, weights=None):
    """The ``q``-th percentiles (``0 <= q <= 100``) of ``a``; see :func:`quantile`
    (``weights`` with ``method="inverted_cdf"``).

    Example::

        >>> fnp.percentile(x, [25, 50, 75], axis=0)
    """
    name = "fx.numpy.percentile"
    (a,) = promote_to_inexact(a, name=name)
    q = asarray(q, get_aval(a).dtype)
    return _quantile(a, lax.div(q, 100.0), axis, out, overwrite_input, method, keepdims, name,
                     weights)


def _inverted_cdf_quantile(a, q, axis, out, overwrite_input, method, keepdims, weights, name):
    """``inverted_cdf`` (weighted or not) is the NaN-ignoring one of ``nanquantile`` with
    NaN wherever the reduced slice holds a NaN, as jax's ``quantile``."""
    result = _nanquantile(a, q, axis, out, overwrite_input, method, keepdims, weights, name)
    (a,) = promote_to_inexact(a, name=name)
    nan = lax.ne(a, a)
    flat, keep_shape = _reduce_axes_last(nan, axis, name)
    any_nan = lax.reduce_or(flat, (get_aval(flat).ndim - 1,))
    if keepdims:
        any_nan = lax.reshape(any_nan, keep_shape)
    shape = get_aval(result).shape
    any_nan = lax.broadcast_in_dim(any_nan, shape, tuple(range(len(shape) - get_aval(any_nan).ndim,
                                                               len(shape))))
    return lax.select(any_nan, lax.full(shape, np.nan, get_aval(result).dtype), result)


def median(a, axis: int | Sequence[int] | None = None, out=None,
           overwrite_input: bool = False, keepdims: bool = False):
    """The median of ``a`` over ``axis`` (the mean of the two middle values for even sizes);
    NaN where the data holds a NaN.

    Example::

        >>> fnp.median(fnp.array([[1.0, 5.0, 2.0]]), axis=1)      # [2.]
    """
    return _quantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims,
                     "fx.numpy.median")


# --- the NaN-ignoring twins ---------------------------------------------------------------------


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
    if method not in _METHODS:
        raise ValueError(f"{name}: method must be one of {_METHODS}, got "
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
