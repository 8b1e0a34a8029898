"""Sorting, searching, partitioning (``partition``/``argpartition``), cumulative and difference
(``diff``, ``ediff1d``) ``fx.numpy`` functions (the order statistics built on sorting are in
:mod:`fx.numpy.quantiles`).

All are traceable and differentiable: they are built on ``fx.lax.sort`` and the cumulative
primitives (``fx.lax.cumsum`` ...), with numpy's signatures and JAX's semantics (NaNs sort to
the end, sorts are stable, ``axis=None`` flattens). Index results (``argsort``, ``lexsort``,
``searchsorted``) are int32, fx's default integer (JAX with 64-bit enabled gives int64 for
``argsort``/``lexsort``); cumulative sums of bools count in int32 for the same reason.
"""

from __future__ import annotations

import operator

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.lax.sorting import descending_keys
from fx.numpy._promote import (
    broadcast_to_shape,
    canonical_axis,
    promote_dtypes,
    to_array,
)

__all__ = [
    "argpartition", "argsort", "cumprod", "cumsum", "cumulative_prod", "cumulative_sum", "diff",
    "ediff1d", "lexsort", "partition", "searchsorted", "sort",
]


def _flatten(x):
    return lax.reshape(x, (get_aval(x).size,))


def _axis_or_flat(a, axis, name: str):
    """``(a, axis)`` with ``axis=None`` meaning the flattened array's only axis."""
    a = to_array(a, name)
    if axis is None:
        return _flatten(a), 0
    ndim = get_aval(a).ndim
    if ndim == 0:
        raise ValueError(f"{name}: axis {axis} is out of bounds for a rank-0 array; "
                         "use axis=None to treat it as a 1-d array")
    return a, canonical_axis(axis, ndim, name)


def _check_order(order, name: str) -> None:
    if order is not None:
        raise NotImplementedError(f"{name}: the 'order' argument (structured arrays) is not "
                                  "supported")


def _sort_keys(a, descending: bool) -> list:
    return descending_keys(a) if descending else [a]


# --- sorting ------------------------------------------------------------------------------------


def sort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True,
         descending: bool = False):
    """A sorted copy of ``a`` along ``axis`` (``None``: the flattened array).

    Always stable (``kind`` is accepted and ignored). NaNs go last, or first when
    ``descending``.

    Example::

        >>> fnp.sort(fnp.array([3.0, nan, 1.0]))         # [1., 3., nan]
    """
    _check_order(order, "fx.numpy.sort")
    a, axis = _axis_or_flat(a, axis, "fx.numpy.sort")
    keys = _sort_keys(a, descending)
    if len(keys) == 1 and keys[0] is a:
        return lax.sort(a, axis)
    return lax.sort((*keys, a), axis, num_keys=len(keys))[-1]


def argsort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True,
            descending: bool = False):
    """The (int32) indices that sort ``a`` along ``axis``; equal entries keep their order,
    also when ``descending``.

    Example::

        >>> fnp.argsort(fnp.array([2, 1, 2]))             # [1, 0, 2]
    """
    _check_order(order, "fx.numpy.argsort")
    a, axis = _axis_or_flat(a, axis, "fx.numpy.argsort")
    keys = _sort_keys(a, descending)
    iota = lax.broadcasted_iota(dtypes.default_int_dtype(), get_aval(a).shape, axis)
    return lax.sort((*keys, iota), axis, num_keys=len(keys))[-1]


def lexsort(keys, axis: int = -1):
    """Indices (int32) sorting by several keys along ``axis``; the *last* key is the primary
    one, as in numpy.

    Example::

        >>> fnp.lexsort((first_names, surnames))         # by surname, then first name
    """
    if isinstance(keys, (list, tuple)):
        keys = [to_array(k, "fx.numpy.lexsort") for k in keys]
    else:
        rows = to_array(keys, "fx.numpy.lexsort")
        shape = get_aval(rows).shape
        if not shape:
            raise ValueError("fx.numpy.lexsort: keys must be a sequence or an array of rank >= 1")
        keys = [lax.reshape(lax.slice_in_dim(rows, i, i + 1, 1, 0), shape[1:])
                for i in range(shape[0])]
    if not keys:
        raise TypeError("fx.numpy.lexsort: needs at least one key")
    shapes = {get_aval(k).shape for k in keys}
    if len(shapes) != 1:
        raise ValueError(f"fx.numpy.lexsort: all keys need the same shape, got {sorted(shapes)}")
    shape = shapes.pop()
    if not shape:
        raise ValueError("fx.numpy.lexsort: keys must be at least one-dimensional")
    axis = canonical_axis(axis, len(shape), "fx.numpy.lexsort")
    iota = lax.broadcasted_iota(dtypes.default_int_dtype(), shape, axis)
    return lax.sort((*keys[::-1], iota), axis, num_keys=len(keys))[-1]


# --- searching ----------------------------------------------------------------------------------


def _total_lt(x, y):
    """``x < y`` in the sort order: NaN above everything, equal to itself; complex numbers
    by real part, then imaginary part (the order jax's sort and searchsorted use)."""
    if dtypes.is_complex(get_aval(x).dtype):
        rx, ry = lax.real(x), lax.real(y)
        same = lax.or_(lax.eq(rx, ry), lax.and_(lax.ne(rx, rx), lax.ne(ry, ry)))
        return lax.select(same, _total_lt(lax.imag(x), lax.imag(y)), _total_lt(rx, ry))
    lt = lax.lt(x, y)
    if not dtypes.is_float(get_aval(x).dtype):
        return lt
    return lax.or_(lt, lax.and_(lax.ne(y, y), lax.eq(x, x)))


def searchsorted(a, v, side: str = "left", sorter=None, *, method=None):
    """Indices (int32) where inserting ``v`` keeps the 1-d sorted ``a`` sorted.

    ``side="left"`` gives the first such index, ``"right"`` the last. NaNs count as larger
    than everything, matching where ``sort`` puts them. Computed by counting comparisons,
    so the work is ``a.size * v.size`` (``method`` is accepted and ignored).

    Example::

        >>> fnp.searchsorted(fnp.array([1, 2, 3]), fnp.array([2, 5]))   # [1, 3]
    """
    name = "fx.numpy.searchsorted"
    if side not in ("left", "right"):
        raise ValueError(f"{name}: side must be 'left' or 'right', got {side!r}")
    a, v = promote_dtypes(a, v, name=name)
    a_aval, v_aval = get_aval(a), get_aval(v)
    if a_aval.ndim != 1:
        raise ValueError(f"{name}: a must be 1-dimensional, got shape {a_aval.shape}")
    if sorter is not None:
        a = _permute(a, to_array(sorter, name), name)
    n = a_aval.shape[0]
    grid = v_aval.shape + (n,)
    last = len(v_aval.shape)
    a_b = lax.broadcast_in_dim(a, grid, (last,))
    v_b = lax.broadcast_in_dim(v, grid, tuple(range(last)))
    if side == "left":
        hits = _total_lt(a_b, v_b)
    else:
        hits = lax.bitwise_not(_total_lt(v_b, a_b))
    return lax.reduce_sum(lax.convert_element_type(hits, dtypes.int32), (last,))


def _permute(a, perm, name: str):
    """``a[perm]`` for a permutation ``perm``, with two sorts instead of a gather: sorting an
    iota by ``perm`` inverts it, and sorting ``a`` by the inverse applies ``perm``."""
    p_aval = get_aval(perm)
    if p_aval.shape != get_aval(a).shape or not dtypes.is_int(p_aval.dtype):
        raise ValueError(f"{name}: sorter must be an integer permutation of a's indices, got "
                         f"{p_aval.str_short()} for a of shape {get_aval(a).shape}")
    iota = lax.broadcasted_iota(p_aval.dtype, p_aval.shape, 0)
    inverse = lax.sort((perm, iota), 0)[1]
    return lax.sort((inverse, a), 0)[1]


# --- cumulative ---------------------------------------------------------------------------------


def _promote_integer(dt: np.dtype) -> np.dtype:
    # jax's rule: bools and integers narrower than the default (u)int count in the default
    # (u)int (NumPy would count in 64 bits).
    if dt == dtypes.bool_:
        return dtypes.default_int_dtype()
    for kind, default in ((dtypes.is_unsigned_int, dtypes.default_uint_dtype()),
                          (dtypes.is_signed_int, dtypes.default_int_dtype())):
        if kind(dt) and dt.itemsize < default.itemsize:
            return default
    return dt


def _accumulate(lax_fn, a, axis: int, dtype, name: str, promote_integers: bool):
    """``lax_fn`` (cumsum/cumprod) along ``axis`` in jax's dtypes: ``dtype`` if given (a bool
    ``dtype`` counts ``a != 0`` in the default int, then casts back), else ``a``'s with bools
    (and, when ``promote_integers``, narrow integers) widened by :func:`_promote_integer`."""
    dt = get_aval(a).dtype
    if dtype is None:
        result = _promote_integer(dt) if promote_integers or dt == dtypes.bool_ else dt
        compute = result
    else:
        result = dtypes.requested(dtype, f"fx.numpy.{name}")
        compute = result
        if result == dtypes.bool_:
            # Counting the original values could cancel ([-1, 1] sums to 0): count nonzeros.
            if dt != dtypes.bool_:
                a = lax.ne(a, lax.full((), 0, dt))
            compute = _promote_integer(result)
    out = lax_fn(lax.convert_element_type(a, compute), axis)
    return lax.convert_element_type(out, result)


def _cumulative(lax_fn, name: str):
    def f(a, axis: int | None = None, dtype=None, out=None):
        if out is not None:
            raise NotImplementedError(f"fx.numpy.{name}: 'out' is not supported (arrays are "
                                      "immutable); use the return value")
        a, axis = _axis_or_flat(a, axis, f"fx.numpy.{name}")
        return _accumulate(lax_fn, a, axis, dtype, name, promote_integers=False)

    f.__name__ = name
    f.__doc__ = (
        f"The cumulative {name[3:]} of ``a`` along ``axis`` (``None``: flattened), as "
        f"``numpy.{name}``. Bools count as int32; other dtypes are kept (integers wrap).\n\n"
        f"Example::\n\n    >>> fnp.{name}(fnp.array([1, 2, 3]))\n"
    )
    return f


cumsum = _cumulative(lax.cumsum, "cumsum")
cumprod = _cumulative(lax.cumprod, "cumprod")


def _cumulative_with_initial(lax_fn, identity: int, name: str, promote_integers: bool):
    def f(x, /, *, axis: int | None = None, dtype=None, include_initial: bool = False):
        x = to_array(x, f"fx.numpy.{name}")
        ndim = get_aval(x).ndim
        if ndim == 0:
            raise ValueError(f"fx.numpy.{name}: x must be at least one-dimensional")
        if axis is None:
            if ndim > 1:
                raise ValueError(f"fx.numpy.{name}: axis must be given for arrays of rank > 1, "
                                 f"got rank {ndim}")
            axis = 0
        axis = canonical_axis(axis, ndim, f"fx.numpy.{name}")
        out = _accumulate(lax_fn, x, axis, dtype, name, promote_integers)
        if not include_initial:
            return out
        shape = list(get_aval(out).shape)
        shape[axis] = 1
        return lax.concatenate([lax.full(shape, identity, get_aval(out).dtype), out], axis)

    f.__name__ = name
    f.__doc__ = (
        f"The array API's ``{name}`` along ``axis`` (optional for 1-D ``x``), optionally "
        f"starting with the identity ({identity}) when ``include_initial``. "
        + ("Bools and integers narrower than the default (u)int count in it, as jax's. "
           if promote_integers else "Bools count in the default int; other dtypes are kept, "
           "as jax's. ")
        + f"\n\nExample::\n\n    >>> fnp.{name}(fnp.array([1, 2, 3], fnp.uint8))\n"
    )
    return f


# As jax's: cumulative_sum widens narrow integers (the standard's rule), cumulative_prod keeps
# them (the standard asks it to widen them too; jax does not).
cumulative_sum = _cumulative_with_initial(lax.cumsum, 0, "cumulative_sum", True)
cumulative_prod = _cumulative_with_initial(lax.cumprod, 1, "cumulative_prod", False)


def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis``: ``a[1:] - a[:-1]`` repeated ``n``
    times (``!=`` for bools), after joining ``prepend`` and ``append`` (scalars broadcast).

    Example::

        >>> fnp.diff(fnp.array([1, 4, 9, 16]))             # [3, 5, 7]
    """
    name = "fx.numpy.diff"
    a = to_array(a, name)
    n = int(n)
    if n < 0:
        raise ValueError(f"{name}: order must be non-negative, got n={n}")
    aval = get_aval(a)
    if aval.ndim == 0:
        raise ValueError(f"{name}: requires input that is at least one dimensional")
    axis = canonical_axis(axis, aval.ndim, name)
    if n == 0:
        return a
    parts = [a]
    for extra, front in ((prepend, True), (append, False)):
        if extra is None:
            continue
        extra = to_array(extra, name)
        if get_aval(extra).ndim == 0:
            shape = list(aval.shape)
            shape[axis] = 1
            extra = broadcast_to_shape(extra, shape, name)
        parts.insert(0, extra) if front else parts.append(extra)
    if len(parts) > 1:
        parts = promote_dtypes(*parts, name=name)
        a = lax.concatenate(parts, axis)
    for _ in range(n):
        size = get_aval(a).shape[axis]
        if size == 0:
            break
        hi = lax.slice_in_dim(a, 1, size, 1, axis)
        lo = lax.slice_in_dim(a, 0, size - 1, 1, axis)
        a = lax.ne(hi, lo) if get_aval(a).dtype == dtypes.bool_ else lax.sub(hi, lo)
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """The differences of consecutive entries of ``ravel(ary)``, with ``to_begin`` and
    ``to_end`` (flattened, converted to ``ary``'s dtype) around them.

    >>> fx.numpy.ediff1d(fx.numpy.array([1, 4, 9]), to_end=0)
    Array([3, 5, 0], dtype=int32)
    """
    name = "fx.numpy.ediff1d"
    x = _flatten(to_array(ary, name))
    n = get_aval(x).shape[0]
    dt = get_aval(x).dtype
    if n >= 1:
        hi, lo = lax.slice_in_dim(x, 1, n), lax.slice_in_dim(x, 0, n - 1)
        d = lax.ne(hi, lo) if dt == dtypes.bool_ else lax.sub(hi, lo)
    else:
        d = x
    parts = [d]
    if to_begin is not None:
        parts.insert(0, lax.convert_element_type(_flatten(to_array(to_begin, name)), dt))
    if to_end is not None:
        parts.append(lax.convert_element_type(_flatten(to_array(to_end, name)), dt))
    return lax.concatenate(parts, 0) if len(parts) > 1 else d


# --- partitions (selection by rank) -------------------------------------------------------------


def _swap(x, i: int, j: int):
    """``x`` with its (non-negative) axes ``i`` and ``j`` interchanged."""
    perm = list(range(get_aval(x).ndim))
    perm[i], perm[j] = j, i
    return lax.transpose(x, perm)


def _partition_operand(a, kth, axis, name: str):
    """``a`` with ``axis`` swapped last, and ``kth`` in ``[0, n)``; jax's refusals."""
    x = to_array(a, f"fx.numpy.{name}")
    aval = get_aval(x)
    if dtypes.is_complex(aval.dtype):
        raise NotImplementedError(f"fx.numpy.{name} of complex data is not implemented (as "
                                  "in jax); sort it instead")
    if aval.dtype == dtypes.bool_:
        raise TypeError(f"fx.numpy.{name}: bool arrays are not supported (jax negates the "
                        "operand); convert to an integer type first")
    axis = canonical_axis(axis, aval.ndim, f"fx.numpy.{name}")
    kth = _check_kth(kth, aval.shape[axis], name)
    return _swap(x, axis, aval.ndim - 1), kth, axis


def _smallest_first(x, k: int):
    """``top_k`` of ``-x``, as jax's partition takes it: the ``k`` smallest entries (and
    their indices) by the order of ``-x`` (unsigned integers shifted so 0 negates to the
    largest)."""
    if dtypes.is_unsigned_int(get_aval(x).dtype):
        return lax.top_k(lax.neg(lax.add(x, lax.full((), 1, get_aval(x).dtype))), k)
    return lax.top_k(lax.neg(x), k)


def partition(a, kth: int, axis: int = -1):
    """``a`` rearranged along ``axis`` so that position ``kth`` holds the entry a sort would
    put there, with no larger entries before it and no smaller ones after, arranged exactly
    as jax's: the ``kth + 1`` smallest ascending, then the others descending (two
    ``lax.top_k``; so NaNs with the sign bit set come first, other NaNs go after ``kth``).

    >>> fx.numpy.partition(fx.numpy.array([6, 8, 4, 3, 1, 9, 7, 5, 2, 3]), 4)
    Array([1, 2, 3, 3, 4, 9, 8, 7, 6, 5], dtype=int32)
    """
    x, kth, axis = _partition_operand(a, kth, axis, "partition")
    n = get_aval(x).shape[-1]
    bottom = _smallest_first(x, kth + 1)[0]
    if dtypes.is_unsigned_int(get_aval(x).dtype):
        bottom = lax.sub(lax.neg(bottom), lax.full((), 1, get_aval(x).dtype))
    else:
        bottom = lax.neg(bottom)
    top = lax.top_k(x, n - kth - 1)[0]
    nd = get_aval(x).ndim
    return _swap(lax.concatenate([bottom, top], nd - 1), nd - 1, axis)


def argpartition(a, kth: int, axis: int = -1):
    """The indices that :func:`partition` ``a`` (int32), as jax's: those of the ``kth + 1``
    smallest entries, smallest first (ties in index order), then the others in index order.

    >>> fx.numpy.argpartition(fx.numpy.array([6, 8, 4, 3, 1, 9, 7, 5, 2, 3]), 4)
    Array([4, 8, 3, 9, 2, 0, 1, 5, 6, 7], dtype=int32)
    """
    x, kth, axis = _partition_operand(a, kth, axis, "argpartition")
    nd, n = get_aval(x).ndim, get_aval(x).shape[-1]
    order = _smallest_first(x, n)[1]
    # jax's top_k of a 0/1 mask of the rest: the remaining indices in increasing order.
    rest = lax.sort(lax.slice_in_dim(order, kth + 1, n, 1, nd - 1), nd - 1)
    out = lax.concatenate([lax.slice_in_dim(order, 0, kth + 1, 1, nd - 1), rest], nd - 1)
    return _swap(out, nd - 1, axis)


def _check_kth(kth, n: int, name: str) -> int:
    k = operator.index(kth)
    if not -n <= k < n:
        raise ValueError(f"fx.numpy.{name}: kth {k} is out of bounds for an axis of length {n}")
    return k % n
