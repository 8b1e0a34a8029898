"""Set operations: ``unique`` (and the array API's ``unique_all``/``_counts``/``_inverse``/
``_values``), ``union1d``, ``intersect1d``, ``setdiff1d``, ``setxor1d`` and ``isin``.

Results are sorted, so each function is a stable ``fx.lax.sort`` (an index operand rides
along), a mask of the entries to keep computed from neighbouring sorted values, and the
compaction of ``fx.numpy.compaction``: with ``size=`` the result has that static length
(padded with ``fill_value``) and everything traces under ``jit``/``vmap``; without it the
length is counted on concrete data, and a traced argument raises an error asking for
``size=``. Values are gathered from the inputs, so they are exact and differentiable. Equality
is ``==`` (``-0.0`` equals ``0.0``; the first occurrence in sort order is kept); ``unique``
groups NaNs together unless ``equal_nan=False``; the set operations count the NaNs of one
input as one value but never match a NaN of one input with one of the other.
Default fills follow jax: the smallest result for ``unique``/``union1d``/``intersect1d``/
``setxor1d`` (NaN if a NaN is among the results, 0 if there are none), 0 for ``setdiff1d``.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy._promote import broadcast_to_shape, canonical_axis, promote_dtypes, to_array
from fx.numpy.compaction import (
    compact,
    count_true,
    flat,
    index_dtype,
    result_size,
    take_rows,
)

__all__ = [
    "UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult", "intersect1d", "isin",
    "setdiff1d", "setxor1d", "union1d", "unique", "unique_all", "unique_counts",
    "unique_inverse", "unique_values",
]


class UniqueAllResult(NamedTuple):
    values: object
    indices: object
    inverse_indices: object
    counts: object


class UniqueCountsResult(NamedTuple):
    values: object
    counts: object


class UniqueInverseResult(NamedTuple):
    values: object
    inverse_indices: object


# --- helpers ------------------------------------------------------------------------------------


def _neighbours_differ(keys, equal_nan: bool):
    """For sorted equal-length 1-D ``keys`` (one per column): ``True`` at ``i >= 1`` where row
    ``i`` differs from row ``i - 1`` (length n - 1)."""
    n = get_aval(keys[0]).shape[0]
    out = None
    for k in keys:
        hi, lo = lax.slice_in_dim(k, 1, n), lax.slice_in_dim(k, 0, n - 1)
        ne = lax.ne(hi, lo)
        if equal_nan and dtypes.is_float(get_aval(k).dtype):
            ne = lax.and_(ne, lax.bitwise_not(lax.and_(lax.ne(hi, hi), lax.ne(lo, lo))))
        out = ne if out is None else lax.or_(out, ne)
    return out


def _starts(keys, equal_nan: bool):
    """The mask of group starts in sorted ``keys``: the first row and every row that differs
    from its predecessor."""
    n = get_aval(keys[0]).shape[0]
    first = lax.full((min(n, 1),), True, dtypes.bool_)
    if n <= 1:
        return first
    return lax.concatenate([first, _neighbours_differ(keys, equal_nan)], 0)


def _smallest_fill(vals, valid):
    """jax's default fill for sorted results: the first (smallest) valid value, NaN if a valid
    value is NaN, 0 if none is valid."""
    dt = get_aval(vals).dtype
    size = get_aval(vals).shape[0]
    zero = lax.full((), 0, dt)
    if size == 0:
        return zero
    first = lax.reshape(lax.slice_in_dim(vals, 0, 1), ())
    any_valid = lax.reshape(lax.slice_in_dim(valid, 0, 1), ())
    if dtypes.is_float(dt):
        has_nan = lax.reduce_or(lax.and_(valid, lax.ne(vals, vals)), (0,))
        first = lax.select(has_nan, lax.full((), float("nan"), dt), first)
    return lax.select(any_valid, first, zero)


def _fill_invalid(vals, valid, fill_value, name: str):
    if fill_value is None:
        fill = _smallest_fill(vals, valid)
    else:
        fill = lax.convert_element_type(to_array(fill_value, name), get_aval(vals).dtype)
        if get_aval(fill).ndim:
            raise ValueError(f"{name}: fill_value must be a scalar, got shape "
                             f"{get_aval(fill).shape}")
    size = get_aval(vals).shape[0]
    return lax.select(valid, vals, lax.broadcast_in_dim(fill, (size,), ()))


def _select_sorted(values, mask, size, fill_value, name: str, what: str):
    """The entries of the 1-D ``values`` where ``mask`` holds, compacted to ``size`` (or the
    concrete count), with ``fill_value`` (None: jax's smallest-result default) after them."""
    k = result_size(size, lambda: count_true(mask, name, what), name)
    positions, valid = compact(mask, k)
    vals = take_rows(values, positions, valid, 0, name)
    return _fill_invalid(vals, valid, fill_value, name), positions, valid


def _sort_with_index(x):
    n = get_aval(x).shape[0]
    return lax.sort((x, lax.iota(index_dtype(), n)), 0, num_keys=1)


def _first_occurrences(x):
    """For a 1-D ``x``: its sorted values, the permutation that sorts it, and the mask of the
    first occurrence of each value in sort order (NaNs count as one value, as in jax)."""
    s, perm = _sort_with_index(x)
    return s, perm, _starts([s], equal_nan=True)


def _flat_pair(ar1, ar2, name: str):
    a, b = promote_dtypes(ar1, ar2, name=name)
    return flat(a), flat(b)


def _static_size(size, name: str):
    if size is None:
        return None
    try:
        return operator.index(size)
    except TypeError:
        raise TypeError(f"{name}: size must be a static int, got {size!r}") from None


# --- unique -------------------------------------------------------------------------------------


def _move_to_front(x, axis: int):
    nd = get_aval(x).ndim
    return lax.transpose(x, (axis,) + tuple(i for i in range(nd) if i != axis))


def _unique(ar, return_index, return_inverse, return_counts, axis, equal_nan, size,
            fill_value, name):
    x = to_array(ar, name)
    in_shape = get_aval(x).shape
    if axis is None:
        rows = flat(x)
        keys = [rows]
    else:
        if not in_shape:
            raise ValueError(f"{name}: axis {axis} is out of bounds for a 0-d array; use "
                             "axis=None")
        axis = canonical_axis(axis, len(in_shape), name)
        rows = _move_to_front(x, axis)
        n = in_shape[axis]
        cols = lax.reshape(rows, (n, get_aval(rows).size // n if n else 0))
        keys = [lax.reshape(lax.slice_in_dim(cols, j, j + 1, 1, 1), (n,))
                for j in range(get_aval(cols).shape[1])]
    it = index_dtype()
    n = get_aval(rows).shape[0]
    size = _static_size(size, name)
    if n == 0 and size and fill_value is None:
        raise ValueError(f"{name}: for a zero-sized input with size={size}, fill_value must be "
                         "given (there is no smallest value to pad with)")
    if keys:
        *sorted_keys, perm = lax.sort((*keys, lax.iota(it, n)), 0, num_keys=len(keys))
        starts = _starts(sorted_keys, equal_nan)
    else:  # rows of zero length: all equal
        perm = lax.iota(it, n)
        starts = lax.concatenate([lax.full((min(n, 1),), True, dtypes.bool_),
                                  lax.full((max(n - 1, 0),), False, dtypes.bool_)], 0)
    k = result_size(size, lambda: count_true(starts, name, "its argument"), name)
    # One slot more than asked for: where the group after the last one returned starts
    # (for the counts).
    positions, valid = compact(starts, k + 1)
    valid = lax.slice_in_dim(valid, 0, k)
    group_pos = lax.slice_in_dim(positions, 0, k)
    first = lax.full((k,), 0, it) if n == 0 else lax.broadcast_in_dim(
        lax.reshape(lax.slice_in_dim(perm, 0, 1), ()), (k,), ())
    source = lax.full((k,), 0, it) if n == 0 else take_rows(perm, group_pos, valid, 0, name)
    source = lax.select(valid, source, first)  # pads read the smallest row (jax's fill)
    values = take_rows(rows, source, lax.full((k,), True, dtypes.bool_), 0, name) if n else (
        lax.full((k,) + get_aval(rows).shape[1:], 0, get_aval(rows).dtype))
    if fill_value is not None:
        fill = lax.convert_element_type(to_array(fill_value, name), get_aval(values).dtype)
        row_shape = get_aval(values).shape[1:]
        try:
            fill = broadcast_to_shape(fill, row_shape, name)
        except ValueError:
            raise ValueError(f"{name}: fill_value of shape {get_aval(fill).shape} does not fit "
                             f"rows of shape {row_shape}") from None
        fill = lax.broadcast_in_dim(fill, get_aval(values).shape,
                                    tuple(range(1, get_aval(values).ndim)))
        keep = lax.broadcast_in_dim(valid, get_aval(values).shape, (0,))
        values = lax.select(keep, values, fill)
    if axis is not None:
        nd = get_aval(values).ndim
        perm_back = list(range(1, nd))
        perm_back.insert(axis, 0)
        values = lax.transpose(values, tuple(perm_back))
    out = [values]
    if n == 0:  # as jax: index and count results of an empty input stay empty
        k = 0
        source = group_pos = lax.full((0,), 0, it)
        positions, valid = lax.full((1,), 0, it), lax.full((0,), False, dtypes.bool_)
    if return_index:
        out.append(source)
    if return_inverse:
        if n:
            group_id = lax.sub(lax.cumsum(lax.convert_element_type(starts, it), 0),
                               lax.full((n,), 1, it))
            inverse = lax.sort((perm, group_id), 0, num_keys=1)[1]
        else:
            inverse = lax.full((0,), 0, it)
        out.append(lax.reshape(inverse, in_shape) if axis is None else inverse)
    if return_counts:
        nxt = lax.slice_in_dim(positions, 1, k + 1)
        has_next = lax.slice_in_dim(lax.lt(lax.iota(it, k + 1), lax.reduce_sum(
            lax.convert_element_type(starts, it), (0,))), 1, k + 1)
        nxt = lax.select(has_next, nxt, lax.full((k,), n, it))
        counts = lax.select(valid, lax.sub(nxt, group_pos), lax.full((k,), 0, it))
        out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)


def unique(ar, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           size: int | None = None, fill_value=None, sorted: bool = True):  # noqa: A002
    """The sorted unique values of ``ar`` (flattened, or the unique slices along ``axis``).

    Optionally also returns the index of each value's first occurrence (``return_index``),
    for each input entry the index of its value in the result (``return_inverse``; shaped like
    ``ar`` when ``axis`` is None) and how often each occurs (``return_counts``). NaNs count as
    one value unless ``equal_nan=False``. With ``size`` the results have that length: values
    are padded with ``fill_value`` (default: the smallest value), indices with the index of
    the smallest value and counts with 0, so ``unique`` works under ``jit``. ``sorted`` is
    accepted as in jax; the result is sorted either way.

    >>> fx.numpy.unique(fx.numpy.array([3, 1, 3, 2]))
    Array([1, 2, 3], dtype=int32)
    >>> fx.numpy.unique(fx.numpy.array([3, 1, 3]), size=4, return_counts=True)
    (Array([1, 3, 1, 1], dtype=int32), Array([1, 2, 0, 0], dtype=int32))
    """
    del sorted  # as jax: accepted, and the result is sorted either way
    return _unique(ar, return_index, return_inverse, return_counts, axis, equal_nan, size,
                   fill_value, "fx.numpy.unique")


def unique_all(x, /, *, size: int | None = None, fill_value=None) -> UniqueAllResult:
    """The array API's ``unique_all``: values, first-occurrence indices, inverse indices (shaped
    like ``x``) and counts; NaNs are distinct. ``size``/``fill_value`` as in :func:`unique`."""
    out = _unique(x, True, True, True, None, False, size, fill_value, "fx.numpy.unique_all")
    return UniqueAllResult(*out)


def unique_counts(x, /, *, size: int | None = None, fill_value=None) -> UniqueCountsResult:
    """The array API's ``unique_counts``: the unique values and how often each occurs."""
    out = _unique(x, False, False, True, None, False, size, fill_value,
                  "fx.numpy.unique_counts")
    return UniqueCountsResult(*out)


def unique_inverse(x, /, *, size: int | None = None, fill_value=None) -> UniqueInverseResult:
    """The array API's ``unique_inverse``: the unique values and, for each entry of ``x``, the
    index of its value among them (shaped like ``x``)."""
    out = _unique(x, False, True, False, None, False, size, fill_value,
                  "fx.numpy.unique_inverse")
    return UniqueInverseResult(*out)


def unique_values(x, /, *, size: int | None = None, fill_value=None):
    """The array API's ``unique_values``: the sorted unique values of ``x`` (NaNs distinct)."""
    return _unique(x, False, False, False, None, False, size, fill_value,
                   "fx.numpy.unique_values")


# --- operations on two sets ---------------------------------------------------------------------


def union1d(ar1, ar2, *, size: int | None = None, fill_value=None):
    """The sorted unique values found in either of the flattened ``ar1`` and ``ar2``.

    >>> fx.numpy.union1d(fx.numpy.array([3, 1]), fx.numpy.array([2, 3]))
    Array([1, 2, 3], dtype=int32)
    """
    a, b = _flat_pair(ar1, ar2, "fx.numpy.union1d")
    return _unique(lax.concatenate([a, b], 0), False, False, False, None, True, size,
                   fill_value, "fx.numpy.union1d")


def _tagged_firsts(a, b, assume_unique: bool):
    """The first occurrences of each value of ``a`` and of ``b`` (everything when
    ``assume_unique``), sorted together by (not kept, value, source): kept entries come first
    and an entry of ``a`` precedes an equal one of ``b``. Returns the sorted values, the kept
    mask, and each entry's source (0/1) and index in its array."""
    it = index_dtype()
    parts = []
    for src, x in enumerate((a, b)):
        n = get_aval(x).shape[0]
        if assume_unique:
            s, idx, keep = x, lax.iota(it, n), lax.full((n,), True, dtypes.bool_)
        else:
            s, idx, keep = _first_occurrences(x) if n else (x, lax.iota(it, 0), lax.full(
                (0,), True, dtypes.bool_))
        parts.append((s, keep, lax.full((n,), src, it), idx))
    vals, keep, src, idx = (lax.concatenate([p[i] for p in parts], 0) for i in range(4))
    drop = lax.convert_element_type(lax.bitwise_not(keep), it)
    drop, vals, src, idx = lax.sort((drop, vals, src, idx), 0, num_keys=3)
    return vals, lax.eq(drop, lax.full_like(drop, 0)), src, idx


def intersect1d(ar1, ar2, assume_unique: bool = False, return_indices: bool = False, *,
                size: int | None = None, fill_value=None):
    """The sorted values found in both of the flattened ``ar1`` and ``ar2``.

    ``return_indices`` also gives the index of each value's first occurrence in ``ar1`` and
    in ``ar2`` (padded with ``ar1.size`` / ``ar2.size`` under ``size``). ``assume_unique``
    skips the de-duplication (the inputs must then hold no repeats).

    >>> fx.numpy.intersect1d(fx.numpy.array([1, 3, 4, 3]), fx.numpy.array([3, 1, 2, 1]))
    Array([1, 3], dtype=int32)
    """
    name = "fx.numpy.intersect1d"
    a, b = _flat_pair(ar1, ar2, name)
    n1, n2 = get_aval(a).shape[0], get_aval(b).shape[0]
    vals, keep, _, idx = _tagged_firsts(a, b, assume_unique)
    m = get_aval(vals).shape[0]
    if m < 2:
        mask = lax.full((max(m - 1, 0),), False, dtypes.bool_)
    else:
        lo, hi = lax.slice_in_dim(vals, 0, m - 1), lax.slice_in_dim(vals, 1, m)
        both = lax.and_(lax.slice_in_dim(keep, 0, m - 1), lax.slice_in_dim(keep, 1, m))
        mask = lax.and_(both, lax.eq(lo, hi))
    head = lax.slice_in_dim(vals, 0, max(m - 1, 0))
    out, positions, valid = _select_sorted(head, mask, size, fill_value, name, "its arguments")
    if not return_indices:
        return out
    i1 = take_rows(lax.slice_in_dim(idx, 0, max(m - 1, 0)), positions, valid, n1, name)
    i2 = take_rows(lax.slice_in_dim(idx, min(1, m), m), positions, valid, n2, name)
    return out, i1, i2


def setdiff1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None,
              fill_value=None):
    """The sorted unique values of ``ar1`` that are not in ``ar2`` (both flattened).

    With ``assume_unique`` the values of ``ar1`` keep their order and are not de-duplicated.
    Under ``size`` the result is padded with ``fill_value`` (default 0, as in jax).

    >>> fx.numpy.setdiff1d(fx.numpy.array([4, 1, 3, 1]), fx.numpy.array([3]))
    Array([1, 4], dtype=int32)
    """
    name = "fx.numpy.setdiff1d"
    a, b = _flat_pair(ar1, ar2, name)
    if assume_unique:
        s = a
        keep = lax.full(get_aval(a).shape, True, dtypes.bool_)
    elif get_aval(a).shape[0]:
        s, _, keep = _first_occurrences(a)
    else:
        s, keep = a, lax.full((0,), True, dtypes.bool_)
    mask = lax.and_(keep, lax.bitwise_not(_isin(s, b)))
    out, _, _ = _select_sorted(s, mask, size, 0 if fill_value is None else fill_value, name,
                               "its arguments")
    return out


def setxor1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None,
             fill_value=None):
    """The sorted unique values found in exactly one of the flattened ``ar1`` and ``ar2``.

    >>> fx.numpy.setxor1d(fx.numpy.array([1, 2, 3]), fx.numpy.array([2, 3, 4]))
    Array([1, 4], dtype=int32)
    """
    name = "fx.numpy.setxor1d"
    a, b = _flat_pair(ar1, ar2, name)
    vals, keep, _, _ = _tagged_firsts(a, b, assume_unique)
    m = get_aval(vals).shape[0]
    if m < 2:
        mask = keep
    else:
        lo, hi = lax.slice_in_dim(vals, 0, m - 1), lax.slice_in_dim(vals, 1, m)
        klo, khi = lax.slice_in_dim(keep, 0, m - 1), lax.slice_in_dim(keep, 1, m)
        same = lax.and_(lax.and_(klo, khi), lax.eq(lo, hi))  # entry i equals entry i + 1
        no = lax.full((1,), False, dtypes.bool_)
        like_prev = lax.concatenate([no, same], 0)
        like_next = lax.concatenate([same, no], 0)
        mask = lax.and_(keep, lax.bitwise_not(lax.or_(like_prev, like_next)))
    out, _, _ = _select_sorted(vals, mask, size, fill_value, name, "its arguments")
    return out


# --- membership ---------------------------------------------------------------------------------

_ISIN_METHODS = ("auto", "compare_all", "binary_search", "sort")


def _isin(x, test):
    """``x == t`` for any ``t`` in the 1-D ``test``, elementwise over ``x``."""
    shape = get_aval(x).shape
    m = get_aval(test).shape[0]
    if m == 0:
        return lax.full(shape, False, dtypes.bool_)
    nd = len(shape)
    grid = shape + (m,)
    eq = lax.eq(lax.broadcast_in_dim(x, grid, tuple(range(nd))),
                lax.broadcast_in_dim(test, grid, (nd,)))
    return lax.reduce_or(eq, (nd,))


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False, *,
         method: str = "auto"):
    """Whether each entry of ``element`` equals some entry of ``test_elements`` (shaped like
    ``element``; negated with ``invert``). NaN is in nothing. Every ``method`` computes the
    same result, by comparing all pairs.

    >>> fx.numpy.isin(fx.numpy.array([1, 2, 3]), fx.numpy.array([3, 1]))
    Array([ True, False,  True], dtype=bool)
    """
    name = "fx.numpy.isin"
    if method not in _ISIN_METHODS:
        raise ValueError(f"{name}: method must be one of {_ISIN_METHODS}, got {method!r}")
    x, t = promote_dtypes(element, test_elements, name=name)
    out = _isin(x, flat(t))
    return lax.bitwise_not(out) if invert else out
