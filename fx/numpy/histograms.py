"""Counting and binning in ``fx.numpy``: ``bincount``, ``digitize``, ``histogram_bin_edges``,
``histogram``, ``histogram2d``, ``histogramdd``.

Output shapes must not depend on the data, so, as in JAX, the number of bins is static:
``bins`` is a Python int (or explicit edges) and ``bincount`` needs ``length=`` when ``x`` is
traced (under ``jit``/``vmap``; eager calls read it from the data). Values outside the bins are
dropped; NaNs fall outside every bin. Counts are scatter-adds of the (optional) weights, so
they differentiate with respect to ``weights`` (and, through the edges, ``range``); the bin a
sample lands in is piecewise constant in the sample.
"""

from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from fx import dtypes, lax
from fx.core import ConcretizationTypeError, Tracer, get_aval
from fx.numpy import reductions, sorting, ufuncs
from fx.numpy._promote import asarray, is_fx_value, promote_to_inexact, to_array
from fx.numpy.creation import linspace, zeros
from fx.numpy.manipulation import ravel

__all__ = ["bincount", "digitize", "histogram", "histogram2d", "histogram_bin_edges",
           "histogramdd"]


def bincount(x, weights=None, minlength: int = 0, *, length: int | None = None):
    """How often each value ``0, 1, ..., length - 1`` occurs in the non-negative integers
    ``x`` (the sum of their ``weights`` when given). Negative values count as 0; values at
    or above ``length`` are dropped.

    ``length`` defaults to ``max(minlength, x.max() + 1)``, which needs concrete ``x``: pass
    ``length=`` under ``jit`` and ``vmap``. The counts have the default integer dtype, or the
    weights' dtype.

    Example: ``fnp.bincount(fnp.array([0, 1, 1, 3]))`` is ``[1, 2, 0, 1]``.
    """
    name = "fx.numpy.bincount"
    x = to_array(x, name)
    aval = get_aval(x)
    if not (dtypes.is_int(aval.dtype) or aval.dtype == dtypes.bool_):
        raise TypeError(f"{name}: x must have an integer type, got {aval.str_short()}")
    if aval.ndim != 1:
        raise ValueError(f"{name}: x must be 1-d, got shape {aval.shape}")
    if length is None:
        if isinstance(x, Tracer):
            raise ConcretizationTypeError(
                f"{name}: the output length depends on the values of x, which are traced "
                "here (under jit, vmap or grad); pass a static length=, e.g. "
                "bincount(x, length=n)")
        host = np.asarray(x)
        length = max(operator.index(minlength), int(host.max()) + 1 if host.size else 0)
    else:
        length = operator.index(length)
        if length < 0:
            raise ValueError(f"{name}: length must be non-negative, got {length}")
    if weights is None:
        w = lax.full(aval.shape, 1, dtypes.default_int_dtype())
    else:
        w = to_array(weights, name)
        if get_aval(w).shape != aval.shape:
            raise ValueError(f"{name}: weights of shape {get_aval(w).shape} must match x's "
                             f"shape {aval.shape}")
    idx = lax.max(lax.convert_element_type(x, dtypes.int32) if aval.dtype == dtypes.bool_
                  else x, lax.full((), 0, dtypes.int32 if aval.dtype == dtypes.bool_
                                   else aval.dtype))
    return zeros(length, get_aval(w).dtype).at[idx].add(w, mode="drop")


def digitize(x, bins, right: bool = False, *, method=None):
    """The index of the bin each value of ``x`` falls in, for monotonic 1-d ``bins``: ``i``
    with ``bins[i-1] <= x < bins[i]`` (``<`` and ``<=`` swapped when ``right``; the reverse
    for decreasing bins), as ``numpy.digitize``. int32, as in JAX.

    Example: ``fnp.digitize(fnp.array([0.5, 1.5, 9.]), fnp.array([1., 2.]))`` is ``[0, 1, 2]``.
    """
    name = "fx.numpy.digitize"
    bins = to_array(bins, name)
    if get_aval(bins).ndim != 1:
        raise ValueError(f"{name}: bins must be 1-d, got shape {get_aval(bins).shape}")
    x = to_array(x, name)
    n = get_aval(bins).shape[0]
    if n == 0:
        return lax.full(get_aval(x).shape, 0, dtypes.int32)
    side = "left" if right else "right"
    up = sorting.searchsorted(bins, x, side=side, method=method)
    down = lax.sub(n, sorting.searchsorted(lax.rev(bins, (0,)), x, side=side, method=method))
    # Complex bins compare lexicographically, as jax's.
    increasing = ufuncs.greater_equal(lax.slice_in_dim(bins, n - 1, n, 1, 0),
                                      lax.slice_in_dim(bins, 0, 1, 1, 0))
    return lax.select(lax.broadcast_in_dim(lax.reshape(increasing, ()), get_aval(up).shape, ()),
                      up, down)


def _bin_count(bins, name: str):
    try:
        return operator.index(bins)
    except TypeError:
        if isinstance(bins, str):
            raise NotImplementedError(f"{name}: string values for bins ({bins!r}) are not "
                                      "supported; pass a number of bins or the edges") from None
        raise TypeError(f"{name}: bins must be a Python int or a 1-d array of edges, got "
                        f"{type(bins).__name__}") from None


def _edges_given(bins) -> bool:
    if isinstance(bins, str):
        return False
    return (get_aval(bins).ndim if is_fx_value(bins) else np.ndim(bins)) == 1


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    """The edges of the bins :func:`histogram` uses: ``bins + 1`` evenly spaced edges over
    ``range`` (default: the data's min and max, widened by 0.5 each way when they coincide),
    or ``bins`` itself when it is an array of edges. ``weights`` is accepted and unused, as
    in numpy.

    Example: ``fnp.histogram_bin_edges(fnp.array([0., 1., 4.]), bins=2)`` is ``[0., 2., 4.]``.
    """
    name = "fx.numpy.histogram_bin_edges"
    del weights
    (a,) = promote_to_inexact(to_array(a, name), name=name)
    dt = get_aval(a).dtype
    if _edges_given(bins):
        return lax.convert_element_type(to_array(bins, name), dt)
    n = _bin_count(bins, name)
    if n < 1:
        raise ValueError(f"{name}: bins must be positive, got {n}")
    if range is None:
        if get_aval(a).size == 0:
            lo, hi = lax.full((), 0.0, dt), lax.full((), 1.0, dt)
        else:
            lo, hi = reductions.min(a), reductions.max(a)
    else:
        r = lax.convert_element_type(asarray(range) if isinstance(range, (tuple, list))
                                     else to_array(range, name), dt)
        if get_aval(r).shape != (2,):
            raise ValueError(f"{name}: range must be None or a pair (low, high), got shape "
                             f"{get_aval(r).shape}")
        lo, hi = (lax.reshape(lax.slice_in_dim(r, i, i + 1, 1, 0), ()) for i in (0, 1))
    same = lax.eq(lo, hi)
    lo = lax.select(same, lax.sub(lo, 0.5), lo)
    hi = lax.select(same, lax.add(hi, 0.5), hi)
    return linspace(lo, hi, n + 1, dtype=dt)


def _bin_index(x, edges):
    """For each sample, 1 + the index of its bin, 0 below the first edge and len(edges)
    above the last one (the last bin is closed on the right)."""
    n = get_aval(edges).shape[0]
    idx = sorting.searchsorted(edges, x, side="right")
    last = lax.reshape(lax.slice_in_dim(edges, n - 1, n, 1, 0), ())
    return lax.select(lax.eq(x, last), lax.full_like(idx, n - 1), idx)


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """Counts (or summed ``weights``) of the entries of ``a`` in each bin, and the bin edges,
    as ``numpy.histogram``: bins are half open ``[e[i], e[i+1])`` except the last, which
    includes its right edge. ``density=True`` normalizes the counts to a probability
    density.

    Example: ``fnp.histogram(fnp.array([1., 2., 2., 5.]), bins=2)`` is ``([3., 1.], [1., 3.,
    5.])``.
    """
    name = "fx.numpy.histogram"
    (a,) = promote_to_inexact(to_array(a, name), name=name)
    a = ravel(a)
    w = None if weights is None else to_array(weights, name)
    if w is not None and (dtypes.is_complex(get_aval(a).dtype)
                          or dtypes.is_complex(get_aval(w).dtype)):
        a, w = promote_to_inexact(a, w, name=name)  # complex: one dtype for both, as jax
    edges = histogram_bin_edges(a, bins, range)
    if w is None:
        w = lax.full(get_aval(a).shape, 1, get_aval(a).dtype)
    else:
        if get_aval(w).size != get_aval(a).size:
            raise ValueError(f"{name}: weights must have a's shape, got {get_aval(w).shape}")
        w = ravel(w)
    n = get_aval(edges).shape[0]
    counts = zeros(n + 1, get_aval(w).dtype).at[_bin_index(a, edges)].add(w)
    counts = lax.slice_in_dim(counts, 1, n, 1, 0)
    if density:
        widths = lax.sub(lax.slice_in_dim(edges, 1, n, 1, 0), lax.slice_in_dim(edges, 0, n - 1,
                                                                              1, 0))
        counts = lax.div(lax.div(counts, widths), lax.reduce_sum(counts, (0,)))
    return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """The ``D``-dimensional histogram of ``N`` points (``sample`` of shape ``(N, D)``): an
    array of counts with one axis per coordinate, and the list of the ``D`` edge arrays.
    ``bins`` is an int or edges for all coordinates, or one of those per coordinate; ``range``
    one ``(low, high)`` pair (or None) per coordinate.

    Example: ``fnp.histogramdd(fnp.array([[0., 0.], [1., 1.]]), bins=2)[0]`` is ``[[1., 0.],
    [0., 1.]]``.
    """
    name = "fx.numpy.histogramdd"
    (sample,) = promote_to_inexact(to_array(sample, name), name=name)
    aval = get_aval(sample)
    if aval.ndim == 1:
        sample = lax.reshape(sample, (aval.shape[0], 1))
    elif aval.ndim != 2:
        raise ValueError(f"{name}: sample must be (N, D), got shape {aval.shape}")
    npts, d = get_aval(sample).shape
    if not isinstance(bins, (list, tuple)):
        bins = [bins] * d
    if len(bins) != d:
        raise ValueError(f"{name}: {len(bins)} bin specifications for {d}-dimensional samples")
    ranges = [None] * d if range is None else list(range)
    if len(ranges) != d:
        raise ValueError(f"{name}: {len(ranges)} ranges for {d}-dimensional samples")
    edges, index, sizes = [], None, []
    for i in builtins.range(d):
        col = lax.reshape(lax.slice_in_dim(sample, i, i + 1, 1, 1), (npts,))
        e = histogram_bin_edges(col, bins[i], ranges[i])
        edges.append(e)
        size = get_aval(e).shape[0] + 1
        sizes.append(size)
        idx = _bin_index(col, e)
        index = idx if index is None else lax.add(lax.mul(index, size), idx)
    if weights is None:
        # Plain counts are integers here (histogram's are floats), as in numpy and JAX.
        count_dt = get_aval(sample).dtype if density else dtypes.default_int_dtype()
        w = lax.full((npts,), 1, count_dt)
    else:
        w = to_array(weights, name)
        if get_aval(w).shape != (npts,):
            raise ValueError(f"{name}: weights must have shape ({npts},), got "
                             f"{get_aval(w).shape}")
    if index is None:
        index = lax.full((npts,), 0, dtypes.int32)
    total = math.prod(sizes)
    counts = zeros(total, get_aval(w).dtype).at[index].add(w)
    counts = lax.reshape(counts, tuple(sizes))
    counts = lax.slice(counts, (1,) * d, tuple(s - 1 for s in sizes))
    if density:
        counts = lax.div(counts, lax.reduce_sum(counts, tuple(builtins.range(d))))
        for i, e in enumerate(edges):
            m = get_aval(e).shape[0]
            widths = lax.sub(lax.slice_in_dim(e, 1, m, 1, 0), lax.slice_in_dim(e, 0, m - 1, 1, 0))
            counts = lax.div(counts, lax.broadcast_in_dim(widths, get_aval(counts).shape, (i,)))
    return counts, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """The 2-d histogram of the points ``(x[i], y[i])``: ``(counts, x_edges, y_edges)``.
    ``bins`` is an int or edges for both axes, or ``[bx, by]``. See :func:`histogramdd`.

    Example: ``fnp.histogram2d(fnp.array([0., 1.]), fnp.array([0., 1.]), bins=2)[0]`` is
    ``[[1., 0.], [0., 1.]]``.
    """
    name = "fx.numpy.histogram2d"
    x, y = promote_to_inexact(x, y, name=name)
    if get_aval(x).shape != get_aval(y).shape or get_aval(x).ndim != 1:
        raise ValueError(f"{name}: x and y must be 1-d of the same length, got shapes "
                         f"{get_aval(x).shape} and {get_aval(y).shape}")
    if not isinstance(bins, (int, np.integer)) and not (isinstance(bins, (list, tuple))
                                                         and len(bins) == 2):
        bins = [bins, bins]
    n = get_aval(x).shape[0]
    sample = lax.concatenate([lax.reshape(x, (n, 1)), lax.reshape(y, (n, 1))], 1)
    counts, edges = histogramdd(sample, bins, range, weights, density)
    return counts, edges[0], edges[1]
