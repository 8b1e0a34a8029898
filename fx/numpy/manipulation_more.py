"""More array manipulation, as in ``jax.numpy``: ``append``, ``insert``, ``delete``,
``block``, ``concat``, ``copy``, ``hsplit``/``vsplit``/``dsplit``, ``unstack``, ``resize``,
``rollaxis``, ``rot90``, ``ediff1d``, ``diagflat``, ``vander``, ``trim_zeros``,
``partition``/``argpartition`` and ``apply_along_axis``/``apply_over_axes``.

Positions given as static data (``insert``/``delete`` indices, shapes, axes) are resolved on
the host: NumPy's own ``insert``/``delete`` run on an array of *labels* (the flat position of
each input entry), which gives NumPy's exact placement and broadcasting rules, and the result
is one gather from the inputs, so it is exact and differentiable. Everything else is built from
``fx.numpy``/``fx.lax`` functions that trace, differentiate and batch.
"""

from __future__ import annotations

import operator

import numpy as np

from fx import dtypes, lax
from fx.core import ConcretizationTypeError, Tracer, get_aval
from fx.numpy._promote import canonical_axis, promote_dtypes, to_array
from fx.numpy.compaction import concrete, flat
from fx.numpy.manipulation import (
    concatenate,
    expand_dims,
    flip,
    moveaxis,
    ravel,
    split,
    swapaxes,
    tile,
)

__all__ = [
    "append", "apply_along_axis", "apply_over_axes", "argpartition", "block", "concat", "copy",
    "delete", "diagflat", "dsplit", "ediff1d", "hsplit", "insert", "partition", "resize",
    "rollaxis", "rot90", "trim_zeros", "unstack", "vander", "vsplit",
]


def _arr(a, name: str):
    return to_array(a, f"fx.numpy.{name}")


# --- insert, delete, append ---------------------------------------------------------------------


def _gather_labels(sources, labels: np.ndarray):
    """``concatenate([ravel(s) for s in sources])[labels]``: one gather (a slice when the
    labels are a contiguous run)."""
    from fx.numpy.indexing import take  # noqa: PLC0415

    pool = lax.concatenate([flat(s) for s in sources], 0) if len(sources) > 1 else flat(
        sources[0])
    labels = np.asarray(labels, np.int64)
    if labels.size == 0:
        return lax.full(labels.shape, 0, get_aval(pool).dtype)
    small = labels.max() < 2**31
    return take(pool, np.asarray(labels, np.int32 if small else np.int64), mode="clip")


def _static_obj(obj, name: str):
    if isinstance(obj, slice):
        return obj
    try:
        host = concrete(obj, f"fx.numpy.{name}", "obj") if isinstance(obj, Tracer) else obj
    except ConcretizationTypeError:
        raise ConcretizationTypeError(
            f"fx.numpy.{name}: the positions (obj) must be static: the result's shape depends "
            "on them, and they are traced here (jit, vmap, make_jaxpr)") from None
    host = np.asarray(host)
    if host.dtype.kind not in "biu":
        raise TypeError(f"fx.numpy.{name}: obj must be an int, a slice, or an integer or "
                        f"boolean array, got dtype {host.dtype}")
    return host


def delete(arr, obj, axis: int | None = None, *, assume_unique_indices: bool = False):
    """``arr`` without the entries (``axis=None``: of the flattened array) or the slices along
    ``axis`` named by ``obj``: an int, a slice, or an integer or boolean array (static). As
    in jax, a traced integer ``obj`` works with ``assume_unique_indices=True`` (distinct,
    in-range indices: the result's length is then known).

    >>> fx.numpy.delete(fx.numpy.arange(5), [0, 3])
    Array([1, 2, 4], dtype=int32)
    """
    x = _arr(arr, "delete")
    if axis is None:
        x, axis = ravel(x), 0
    shape = get_aval(x).shape
    axis = canonical_axis(axis, len(shape), "fx.numpy.delete")
    if assume_unique_indices and isinstance(obj, Tracer):
        return _delete_traced(x, obj, axis)
    labels = np.arange(get_aval(x).size).reshape(shape)
    try:
        kept = np.delete(labels, _static_obj(obj, "delete"), axis)
    except IndexError as e:
        raise IndexError(f"fx.numpy.delete: {e} (array of shape {shape})") from None
    return _gather_labels([x], kept)


def _delete_traced(x, obj, axis: int):
    from fx.numpy.compaction import compact, take_rows  # noqa: PLC0415

    idx = flat(to_array(obj, "fx.numpy.delete"))
    if not dtypes.is_int(get_aval(idx).dtype):
        raise TypeError(f"fx.numpy.delete: a traced obj must hold integers, got "
                        f"{get_aval(idx).str_short()}")
    n, k = get_aval(x).shape[axis], get_aval(idx).shape[0]
    keep = lax.full((n,), True, dtypes.bool_).at[idx].set(False)
    positions, valid = compact(keep, max(n - k, 0))
    moved = moveaxis(x, axis, 0)
    return moveaxis(take_rows(moved, positions, valid, 0, "fx.numpy.delete"), 0, axis)


def _insert_traced(x, v, obj, axis: int):
    """Insert at a traced scalar position: build the result with the values in front (static
    layout), then move them to the position with one gather along ``axis``."""
    from fx.numpy.indexing import take  # noqa: PLC0415

    shape = get_aval(x).shape
    n = shape[axis]
    labels = np.arange(get_aval(x).size).reshape(shape)
    vals = get_aval(x).size + np.arange(get_aval(v).size).reshape(get_aval(v).shape)
    front = _gather_labels([x, v], np.insert(labels, 0, vals, axis))
    m = get_aval(front).shape[axis] - n
    it = dtypes.default_int_dtype()
    i = lax.convert_element_type(obj, it)
    i = lax.clamp(0, lax.select(lax.lt(i, 0), lax.add(i, n), i), n)  # jax clamps
    j = lax.iota(it, n + m)
    before = lax.lt(j, i)
    inside = lax.lt(j, lax.add(i, m))
    src = lax.select(before, lax.add(j, m), lax.select(inside, lax.sub(j, i), j))
    return take(front, src, axis=axis, mode="clip")


def insert(arr, obj, values, axis: int | None = None):
    """``arr`` with ``values`` inserted before the positions ``obj`` (an int, slice or int
    array; a traced integer scalar too, as in jax, clamped into range) along ``axis``
    (``None``: the flattened array), with NumPy's placement and broadcasting of ``values``;
    ``values`` is converted to ``arr``'s dtype.

    >>> fx.numpy.insert(fx.numpy.arange(3), 1, 9)
    Array([0, 9, 1, 2], dtype=int32)
    """
    x = _arr(arr, "insert")
    v = lax.convert_element_type(_arr(values, "insert"), get_aval(x).dtype)
    if axis is None:
        x, axis = ravel(x), 0
    shape = get_aval(x).shape
    axis = canonical_axis(axis, len(shape), "fx.numpy.insert")
    if isinstance(obj, Tracer) and get_aval(obj).ndim == 0:
        if not dtypes.is_int(get_aval(obj).dtype):
            raise TypeError(f"fx.numpy.insert: a traced obj must be an integer scalar, got "
                            f"{get_aval(obj).str_short()}")
        return _insert_traced(x, v, obj, axis)
    n = get_aval(x).size
    labels = np.arange(n).reshape(shape)
    vals = n + np.arange(get_aval(v).size).reshape(get_aval(v).shape)
    try:
        out = np.insert(labels, _static_obj(obj, "insert"), vals, axis)
    except (IndexError, ValueError) as e:
        raise type(e)(f"fx.numpy.insert: {e} (array of shape {shape}, values of shape "
                      f"{get_aval(v).shape})") from None
    return _gather_labels([x, v], out)


def append(arr, values, axis: int | None = None):
    """``values`` joined to the end of ``arr`` (both flattened when ``axis`` is None),
    promoting dtypes.

    >>> fx.numpy.append(fx.numpy.array([1, 2]), fx.numpy.array([[3], [4]]))
    Array([1, 2, 3, 4], dtype=int32)
    """
    x, v = promote_dtypes(arr, values, name="fx.numpy.append")
    if axis is None:
        return concatenate([ravel(x), ravel(v)], 0)
    return concatenate([x, v], axis)


# --- joining, copying and splitting -------------------------------------------------------------


def concat(arrays, /, *, axis: int | None = 0):
    """The array API's name for :func:`fx.numpy.concatenate`."""
    return concatenate(arrays, axis)


def copy(a, order=None):
    """A copy of ``a`` as an fx array (fx arrays are immutable, so this is ``asarray``)."""
    if order not in (None, "C", "K", "A"):
        raise NotImplementedError(f"fx.numpy.copy: order={order!r} is not supported")
    return _arr(a, "copy")


def _block_depth(arrays, name: str) -> int:
    if isinstance(arrays, tuple):
        raise TypeError(f"{name}: arrays must be nested lists, not tuples")
    if isinstance(arrays, list):
        if not arrays:
            raise ValueError(f"{name}: lists cannot be empty")
        depths = {_block_depth(a, name) for a in arrays}
        if len(depths) != 1:
            raise ValueError(f"{name}: list depths are mismatched ({sorted(depths)}); every "
                             "entry must be nested equally deep")
        return 1 + depths.pop()
    return 0


def _block(arrays, depth: int, ndim: int):
    if depth == 0:
        x = to_array(arrays, "fx.numpy.block")
        shape = get_aval(x).shape
        return lax.reshape(x, (1,) * (ndim - len(shape)) + shape)
    parts = [_block(a, depth - 1, ndim) for a in arrays]
    return concatenate(promote_dtypes(*parts, name="fx.numpy.block"), -depth)


def block(arrays):
    """Assemble an array from nested lists of blocks: the innermost lists join along the last
    axis, the next ones along the axis before it, and so on (blocks are raised to a common
    rank with leading ones).

    >>> fx.numpy.block([[fx.numpy.ones((1, 2)), fx.numpy.zeros((1, 1))]]).shape
    (1, 3)
    """
    depth = _block_depth(arrays, "fx.numpy.block")

    def max_ndim(a):
        if isinstance(a, list):
            return max(max_ndim(b) for b in a)
        return get_aval(to_array(a, "fx.numpy.block")).ndim

    return _block(arrays, depth, max(depth, max_ndim(arrays)))


def _split_axis(name: str, axis: int, need: int):
    def f(ary, indices_or_sections):
        x = _arr(ary, name)
        nd = get_aval(x).ndim
        if nd < need:
            raise ValueError(f"fx.numpy.{name}: needs an array of at least {need} dimensions, "
                             f"got shape {get_aval(x).shape}")
        ax = 0 if (name == "hsplit" and nd == 1) else axis
        return split(x, indices_or_sections, ax)

    f.__name__ = name
    f.__doc__ = (f"``split`` along axis {axis}" + (" (axis 0 for 1-D arrays)" if
                 name == "hsplit" else "") + f"; needs rank >= {need}.")
    return f


hsplit = _split_axis("hsplit", 1, 1)
vsplit = _split_axis("vsplit", 0, 2)
dsplit = _split_axis("dsplit", 2, 3)


def unstack(x, /, *, axis: int = 0) -> tuple:
    """The slices of ``x`` along ``axis``, as a tuple (the inverse of ``stack``)."""
    a = _arr(x, "unstack")
    nd = get_aval(a).ndim
    if nd == 0:
        raise ValueError("fx.numpy.unstack: needs an array of at least one dimension")
    axis = canonical_axis(axis, nd, "fx.numpy.unstack")
    n = get_aval(a).shape[axis]
    return tuple(lax.squeeze(lax.slice_in_dim(a, i, i + 1, 1, axis), (axis,)) for i in range(n))


# --- shapes and axes ----------------------------------------------------------------------------


def resize(a, new_shape):
    """An array of ``new_shape`` filled with ``a``'s flattened entries, repeated as needed
    (zeros if ``a`` is empty).

    >>> fx.numpy.resize(fx.numpy.arange(3), (2, 2))
    Array([[0, 1],
           [2, 0]], dtype=int32)
    """
    x = ravel(_arr(a, "resize"))
    shape = (operator.index(new_shape),) if not isinstance(new_shape, (tuple, list)) else tuple(
        operator.index(s) for s in new_shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"fx.numpy.resize: all elements of new_shape must be non-negative, "
                         f"got {shape}")
    total = int(np.prod(shape, dtype=np.int64))
    n = get_aval(x).shape[0]
    if n == 0:
        return lax.full(shape, 0, get_aval(x).dtype)
    reps = -(-total // n)
    return lax.reshape(lax.slice_in_dim(tile(x, reps), 0, total), shape)


def rollaxis(a, axis: int, start: int = 0):
    """Move ``axis`` to come before position ``start`` (NumPy's older ``moveaxis``)."""
    x = _arr(a, "rollaxis")
    nd = get_aval(x).ndim
    axis = canonical_axis(axis, nd, "fx.numpy.rollaxis")
    if not -nd <= start <= nd:
        raise ValueError(f"fx.numpy.rollaxis: start {start} is out of bounds for an array of "
                         f"rank {nd}")
    start = start + nd if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(x, axis, start)


def rot90(m, k: int = 1, axes: tuple[int, int] = (0, 1)):
    """``m`` rotated by 90 degrees ``k`` times, from the first towards the second of ``axes``.

    >>> fx.numpy.rot90(fx.numpy.array([[1, 2], [3, 4]]))
    Array([[2, 4],
           [1, 3]], dtype=int32)
    """
    x = _arr(m, "rot90")
    nd = get_aval(x).ndim
    if nd < 2:
        raise ValueError(f"fx.numpy.rot90: needs an array of at least 2 dimensions, got shape "
                         f"{get_aval(x).shape}")
    a0, a1 = (canonical_axis(ax, nd, "fx.numpy.rot90") for ax in axes)
    if a0 == a1:
        raise ValueError(f"fx.numpy.rot90: axes must be different, got {tuple(axes)}")
    k = operator.index(k) % 4
    if k == 0:
        return x
    if k == 2:
        return flip(x, (a0, a1))
    if k == 1:
        return swapaxes(flip(x, a1), a0, a1)
    return flip(swapaxes(x, a0, a1), a1)


# --- differences, diagonals, powers -------------------------------------------------------------


def ediff1d(ary, to_end=None, to_begin=None):
    """The differences of consecutive entries of ``ravel(ary)``, with ``to_begin`` and
    ``to_end`` (flattened, converted to ``ary``'s dtype) around them.

    >>> fx.numpy.ediff1d(fx.numpy.array([1, 4, 9]), to_end=0)
    Array([3, 5, 0], dtype=int32)
    """
    x = ravel(_arr(ary, "ediff1d"))
    n = get_aval(x).shape[0]
    dt = get_aval(x).dtype
    if n >= 1:
        hi, lo = lax.slice_in_dim(x, 1, n), lax.slice_in_dim(x, 0, n - 1)
        d = lax.ne(hi, lo) if dt == dtypes.bool_ else lax.sub(hi, lo)
    else:
        d = x
    parts = [d]
    if to_begin is not None:
        parts.insert(0, lax.convert_element_type(ravel(_arr(to_begin, "ediff1d")), dt))
    if to_end is not None:
        parts.append(lax.convert_element_type(ravel(_arr(to_end, "ediff1d")), dt))
    return lax.concatenate(parts, 0) if len(parts) > 1 else d


def diagflat(v, k: int = 0):
    """A 2-D array with the flattened ``v`` on the ``k``-th diagonal."""
    from fx.numpy.diagonals import diag  # noqa: PLC0415

    return diag(ravel(_arr(v, "diagflat")), k)


def vander(x, N: int | None = None, increasing: bool = False):  # noqa: N803
    """The Vandermonde matrix of the 1-D ``x``: column ``j`` is ``x ** (N - 1 - j)`` (``x **
    j`` when ``increasing``), by binary exponentiation in ``x``'s dtype: exact for integers;
    for floats within rounding of jax (which uses ``pow``).

    >>> fx.numpy.vander(fx.numpy.array([2, 3]), 3)
    Array([[4, 2, 1],
           [9, 3, 1]], dtype=int32)
    """
    a = _arr(x, "vander")
    if get_aval(a).ndim != 1:
        raise ValueError(f"fx.numpy.vander: x must be 1-D, got shape {get_aval(a).shape}")
    n = get_aval(a).shape[0]
    N = n if N is None else operator.index(N)  # noqa: N806
    if N < 0:
        raise ValueError(f"fx.numpy.vander: N must be non-negative, got {N}")
    cols = [lax.reshape(_int_power(a, j), (n, 1)) for j in range(N)]
    if not cols:
        return lax.full((n, 0), 0, get_aval(a).dtype)
    out = lax.concatenate(cols, 1)
    return out if increasing else flip(out, 1)


def _int_power(x, j: int):
    """``x ** j`` by square-and-multiply from the low bits (``1`` for ``j = 0``)."""
    acc, base = None, x
    while j:
        if j & 1:
            acc = base if acc is None else lax.mul(acc, base)
        j >>= 1
        if j:
            base = lax.mul(base, base)
    return lax.full_like(x, 1) if acc is None else acc


# --- trimming (data-dependent) ------------------------------------------------------------------


def trim_zeros(filt, trim: str = "fb", axis=None):
    """``filt`` without its leading (``'f'`` in ``trim``) and trailing (``'b'``) zeros, along
    ``axis`` (all axes when None: the bounding box of the nonzero entries). The result's shape
    depends on the data, so ``filt`` must be concrete.

    >>> fx.numpy.trim_zeros(fx.numpy.array([0, 0, 1, 0, 2, 0]))
    Array([1, 0, 2], dtype=int32)
    """
    name = "fx.numpy.trim_zeros"
    x = _arr(filt, "trim_zeros")
    if not set(trim.lower()) <= {"f", "b"}:
        raise ValueError(f"{name}: trim must contain only 'f' and 'b', got {trim!r}")
    host = concrete(x, name, "its argument")
    if host.ndim == 0:
        raise ValueError(f"{name}: needs an array of at least one dimension")
    axes = range(host.ndim) if axis is None else [
        canonical_axis(a, host.ndim, name) for a in np.atleast_1d(axis)]
    nz = host != 0
    out = x
    for ax in axes:
        other = tuple(i for i in range(host.ndim) if i != ax)
        hits = np.flatnonzero(nz.any(axis=other)) if host.size else np.zeros(0, int)
        n = host.shape[ax]
        if hits.size == 0:  # all zeros: nothing is left, whichever side is trimmed
            lo = hi = 0
        else:
            lo = int(hits[0]) if "f" in trim.lower() else 0
            hi = int(hits[-1]) + 1 if "b" in trim.lower() else n
        out = lax.slice_in_dim(out, lo, hi, 1, ax)
    return out


# --- partitions ---------------------------------------------------------------------------------


def _partition_operand(a, kth, axis, name: str):
    """``a`` with ``axis`` swapped last, and ``kth`` in ``[0, n)``; jax's refusals."""
    x = _arr(a, name)
    aval = get_aval(x)
    if dtypes.is_complex(aval.dtype):
        raise NotImplementedError(f"fx.numpy.{name} of complex data is not implemented (as "
                                  "in jax); sort it instead")
    if aval.dtype == dtypes.bool_:
        raise TypeError(f"fx.numpy.{name}: bool arrays are not supported (jax negates the "
                        "operand); convert to an integer type first")
    axis = canonical_axis(axis, aval.ndim, f"fx.numpy.{name}")
    kth = _check_kth(kth, aval.shape[axis], name)
    return swapaxes(x, axis, -1), kth, axis


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
    return swapaxes(lax.concatenate([bottom, top], get_aval(x).ndim - 1), -1, axis)


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
    return swapaxes(out, -1, axis)


def _check_kth(kth, n: int, name: str) -> int:
    k = operator.index(kth)
    if not -n <= k < n:
        raise ValueError(f"fx.numpy.{name}: kth {k} is out of bounds for an axis of length {n}")
    return k % n


# --- applying functions -------------------------------------------------------------------------


def apply_along_axis(func1d, axis: int, arr, *args, **kwargs):
    """``func1d`` applied to every 1-D slice of ``arr`` along ``axis`` (vectorized with
    ``fx.vmap``); the dimensions of ``func1d``'s result replace ``axis``.

    >>> fx.numpy.apply_along_axis(lambda v: v.sum(), 1, fx.numpy.ones((2, 3)))
    Array([3., 3.], dtype=float32)
    """
    from fx.vectorize import vmap  # noqa: PLC0415

    x = _arr(arr, "apply_along_axis")
    nd = get_aval(x).ndim
    axis = canonical_axis(axis, nd, "fx.numpy.apply_along_axis")

    def f(v):
        return func1d(v, *args, **kwargs)

    # Map over the dimensions after axis, then over those before it, innermost first, so the
    # result's dimensions land where NumPy puts them.
    for _ in range(nd - axis - 1):
        f = vmap(f, in_axes=-1, out_axes=-1)
    for _ in range(axis):
        f = vmap(f, in_axes=0, out_axes=0)
    return to_array(f(x), "fx.numpy.apply_along_axis")


def apply_over_axes(func, a, axes):
    """``func(a, axis)`` applied for each of ``axes`` in turn; a result with one dimension
    fewer gets it back (``expand_dims``), so the rank stays ``a``'s.

    >>> fx.numpy.apply_over_axes(fx.numpy.sum, fx.numpy.ones((2, 3)), [0, 1])
    Array([[6.]], dtype=float32)
    """
    x = _arr(a, "apply_over_axes")
    nd = get_aval(x).ndim
    for ax in np.atleast_1d(axes):
        ax = int(ax)
        out = to_array(func(x, ax), "fx.numpy.apply_over_axes")
        if get_aval(out).ndim == nd - 1:
            out = expand_dims(out, ax)
        elif get_aval(out).ndim != nd:
            raise ValueError(f"fx.numpy.apply_over_axes: func must keep the rank {nd} or drop "
                             f"one dimension, got shape {get_aval(out).shape}")
        x = out
    return x

