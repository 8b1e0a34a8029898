"""Arrays joined, split and edited along an axis, as in ``jax.numpy``, beyond
:mod:`fx.numpy.manipulation`'s ``concatenate``/``stack``/``split``: entries inserted, deleted or
appended (``insert``, ``delete``, ``append``), the array API's and NumPy's further joining and
splitting names (``concat``, ``block``, ``hsplit``/``vsplit``/``dsplit``, ``unstack``), and the
array cut or repeated to a size (``trim_zeros``, ``resize``).

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
    moveaxis,
    ravel,
    split,
    tile,
)

__all__ = [
    "append", "block", "concat", "delete", "dsplit", "hsplit", "insert", "resize", "trim_zeros",
    "unstack", "vsplit",
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


# --- joining and splitting ---------------------------------------------------------------------


def concat(arrays, /, *, axis: int | None = 0):
    """The array API's name for :func:`fx.numpy.concatenate`."""
    return concatenate(arrays, axis)


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


# --- resizing -----------------------------------------------------------------------------------


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
