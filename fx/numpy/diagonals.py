"""Triangles and diagonals: ``tril``, ``triu``, ``diagonal``, ``diag``, ``diagflat`` and
``trace``, as in ``numpy``/``jax.numpy``, built from iota masks, selects, strided slices and
interior padding (exact for every dtype, differentiable and batchable). Offsets and axes are
static ints.
"""

from __future__ import annotations

import operator

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy._promote import canonical_axis, to_array
from fx.numpy.manipulation import moveaxis, ravel

__all__ = ["diag", "diagflat", "diagonal", "trace", "tril", "triu"]


def _arr(a, name: str):
    return to_array(a, f"fx.numpy.{name}")



def _triangle(m, k: int, name: str, lower: bool):
    x = _arr(m, name)
    shape = get_aval(x).shape
    if len(shape) < 2:
        raise ValueError(f"fx.numpy.{name}: input must be at least 2-D, got shape {shape}")
    rows = lax.broadcasted_iota(dtypes.int64, shape[-2:], 0)
    cols = lax.broadcasted_iota(dtypes.int64, shape[-2:], 1)
    keep = lax.ge(lax.add(rows, int(k)), cols) if lower else lax.le(lax.add(rows, int(k)), cols)
    keep = lax.broadcast_in_dim(keep, shape, (len(shape) - 2, len(shape) - 1))
    return lax.select(keep, x, lax.full(shape, 0, get_aval(x).dtype))


def tril(m, k: int = 0):
    """``m`` with the entries above the ``k``-th diagonal (of the last two axes) zeroed."""
    return _triangle(m, k, "tril", lower=True)


def triu(m, k: int = 0):
    """``m`` with the entries below the ``k``-th diagonal (of the last two axes) zeroed."""
    return _triangle(m, k, "triu", lower=False)


def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The ``offset`` diagonal of the ``(axis1, axis2)`` planes, as a new last axis.

    A strided slice of the flattened planes: element ``i`` of the diagonal sits ``i * (m + 1)``
    after the first, where ``m`` is the row length.

    >>> fx.numpy.diagonal(fx.numpy.arange(6).reshape(2, 3), 1)
    Array([1, 5], dtype=int32)
    """
    x = _arr(a, "diagonal")
    ndim = get_aval(x).ndim
    if ndim < 2:
        raise ValueError(f"fx.numpy.diagonal: needs an array of at least 2 dimensions, got {ndim}")
    i, j = (canonical_axis(ax, ndim, "fx.numpy.diagonal") for ax in (axis1, axis2))
    if i == j:
        raise ValueError("fx.numpy.diagonal: axis1 and axis2 must differ")
    x = moveaxis(x, (i, j), (-2, -1))
    *batch, n, m = get_aval(x).shape
    offset = operator.index(offset)
    length = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    flat = lax.reshape(x, (*batch, n * m))
    start = 0 if not length else (offset if offset >= 0 else -offset * m)
    limit = start + (length - 1) * (m + 1) + 1 if length else 0
    return lax.slice_in_dim(flat, start, limit, m + 1, len(batch))


def diag(v, k: int = 0):
    """The ``k``-th diagonal of a 2-D ``v``, or a 2-D array with 1-D ``v`` on its ``k``-th
    diagonal (built by one interior-padding of ``v``, no scatter)."""
    x = _arr(v, "diag")
    shape = get_aval(x).shape
    k = operator.index(k)
    if len(shape) == 2:
        return diagonal(x, k)
    if len(shape) != 1:
        raise ValueError(f"fx.numpy.diag: input must be 1-D or 2-D, got shape {shape}")
    n = shape[0]
    size = n + abs(k)
    start = k if k >= 0 else -k * size
    zero = lax.full((), 0, get_aval(x).dtype)
    if n == 0:
        cfg = [(0, size * size, 0)]
    else:
        cfg = [(start, size * size - start - (n - 1) * (size + 1) - 1, size)]
    return lax.reshape(lax.pad(x, zero, cfg), (size, size))


def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None):
    """Sum of the ``offset`` diagonal, with ``fx.numpy.sum``'s dtypes (bools and integers
    narrower than the mode's default integer sum in it)."""
    from fx.numpy.reductions import sum as sum_

    d = diagonal(a, offset, axis1, axis2)
    return sum_(d, axis=-1, dtype=dtype)


def diagflat(v, k: int = 0):
    """A 2-D array with the flattened ``v`` on the ``k``-th diagonal."""
    return diag(ravel(_arr(v, "diagflat")), k)
