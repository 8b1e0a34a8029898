"""Index helpers: ``s_``/``index_exp``, ``mgrid``/``ogrid``, ``r_``/``c_``, ``ix_``,
``meshgrid``, ``indices``, the ``diag_``/``tril_``/``triu_``/``mask_indices`` families,
``ravel_multi_index`` and ``unravel_index``.

Shapes are static Python data, so index arrays of known shapes are built with ``iota``
(``indices``, ``meshgrid``, grids) or on the host (triangles, then one constant), in the
default integer dtype (``fx.dtypes.default_int_dtype()``). ``ravel_multi_index`` and
``unravel_index`` are elementwise integer arithmetic on (possibly traced) indices.
"""

from __future__ import annotations

import operator

import numpy as np

from fx import dtypes, lax
from fx.core import ConcretizationTypeError, get_aval
from fx.numpy._promote import (
    asarray,
    broadcast_shapes,
    broadcast_to_shape,
    promote_dtypes,
    to_array,
)
from fx.numpy.compaction import concrete, nonzero

__all__ = [
    "c_", "diag_indices", "diag_indices_from", "index_exp", "indices", "ix_", "mask_indices",
    "meshgrid", "mgrid", "ogrid", "r_", "ravel_multi_index", "s_", "tril_indices",
    "tril_indices_from", "triu_indices", "triu_indices_from", "unravel_index",
]


def _int_dtype():
    return dtypes.default_int_dtype()


def _const(host: np.ndarray, dtype=None):
    return asarray(np.asarray(host, dtype=dtype or _int_dtype()))


# --- s_ and index_exp ---------------------------------------------------------------------------


class _IndexExpression:
    """``s_[...]`` returns the index expression as written; ``index_exp[...]`` always as a
    tuple (as NumPy's)."""

    def __init__(self, maketuple: bool):
        self._maketuple = maketuple

    def __getitem__(self, item):
        if self._maketuple and not isinstance(item, tuple):
            return (item,)
        return item


s_ = _IndexExpression(maketuple=False)
index_exp = _IndexExpression(maketuple=True)


# --- grids --------------------------------------------------------------------------------------


def _slice_range(s: slice, name: str):
    """The values a grid slice stands for: ``arange(start, stop, step)``, or ``linspace``
    (endpoint included) when ``step`` is imaginary: ``0:1:5j`` is five points."""
    from fx.numpy.creation import arange, linspace  # noqa: PLC0415

    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, complex):
        num = int(abs(step))
        return linspace(start, s.stop, num, dtype=dtypes.default_float_dtype())
    if s.stop is None:
        raise ValueError(f"{name}: a slice needs a stop, got {s!r}")
    if all(isinstance(v, (int, np.integer)) for v in (start, s.stop, step)):
        return arange(start, s.stop, step, dtype=_int_dtype())
    return arange(start, s.stop, step, dtype=dtypes.default_float_dtype())


class _Grid:
    def __init__(self, sparse: bool, name: str):
        self.sparse = sparse
        self.name = name

    def __getitem__(self, key):
        from fx.numpy.manipulation import stack  # noqa: PLC0415

        items = key if isinstance(key, tuple) else (key,)
        for s in items:
            if not isinstance(s, slice):
                raise TypeError(f"{self.name}: indices must be slices, got {s!r}")
        axes = [_slice_range(s, self.name) for s in items]
        if not isinstance(key, tuple):
            return axes[0]
        axes = promote_dtypes(*axes, name=self.name)
        grids = meshgrid(*axes, indexing="ij", sparse=self.sparse)
        return list(grids) if self.sparse else stack(grids, 0)


mgrid = _Grid(sparse=False, name="fx.numpy.mgrid")
mgrid.__doc__ = """``mgrid[0:2, 0:3]``: a dense grid, shape ``(2, 2, 3)`` (``0:1:5j`` is five
points from 0 to 1). Integer slices give the default int dtype, others the default float."""
ogrid = _Grid(sparse=True, name="fx.numpy.ogrid")
ogrid.__doc__ = """``ogrid[0:2, 0:3]``: the open (sparse) grid, a list of broadcastable arrays."""


# --- r_ and c_ ----------------------------------------------------------------------------------


class _Concatenator:
    """``r_[...]``: join slices (as ranges), scalars and arrays along an axis. A leading string
    ``"axis"``, ``"axis,ndmin"`` or ``"axis,ndmin,trans1d"`` sets the axis, the minimum rank
    the pieces are raised to and where their own axes go (as NumPy's)."""

    def __init__(self, axis: int, ndmin: int, trans1d: int, name: str):
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __getitem__(self, key):
        from fx.numpy.manipulation import concatenate  # noqa: PLC0415

        items = list(key) if isinstance(key, tuple) else [key]
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        if items and isinstance(items[0], str):
            directive = items.pop(0)
            if directive in ("r", "c"):
                raise NotImplementedError(f"{self.name}: matrix directives 'r'/'c' are not "
                                          "supported (fx has no matrix type)")
            try:
                parts = [int(p) for p in directive.split(",")]
            except ValueError:
                raise ValueError(f"{self.name}: invalid directive {directive!r}; use 'axis', "
                                 "'axis,ndmin' or 'axis,ndmin,trans1d'") from None
            axis, ndmin, trans1d = (parts + [ndmin, trans1d][len(parts) - 1:])[:3]
        pieces = []
        for item in items:
            if isinstance(item, str):
                raise ValueError(f"{self.name}: a string directive must come first, got {item!r}")
            arr = _slice_range(item, self.name) if isinstance(item, slice) else to_array(
                item, self.name)
            pieces.append(_raise_rank(arr, ndmin, trans1d))
        if not pieces:
            return asarray(np.zeros(0, dtypes.default_float_dtype()))
        return concatenate(pieces, axis)


def _raise_rank(x, ndmin: int, trans1d: int):
    shape = get_aval(x).shape
    if len(shape) >= ndmin:
        return x
    extra = ndmin - len(shape)
    # NumPy's rule: the piece's own axes start at position ``trans1d`` of the new shape,
    # counted from the end (-1: they come last) when negative.
    start = trans1d if trans1d >= 0 else trans1d + extra + 1
    start = min(max(start, 0), extra)
    new = (1,) * start + shape + (1,) * (extra - start)
    return lax.reshape(x, new)


r_ = _Concatenator(0, 1, -1, "fx.numpy.r_")
c_ = _Concatenator(-1, 2, 0, "fx.numpy.c_")


# --- open meshes, meshgrid, indices -------------------------------------------------------------


def ix_(*args):
    """An open mesh from 1-D sequences: ``x[ix_(rows, cols)]`` is the cross product of the
    selected rows and columns; the ``k``-th result has its values along axis ``k``.

    >>> [a.shape for a in fx.numpy.ix_(fx.numpy.array([0, 2]), fx.numpy.array([1, 2, 3]))]
    [(2, 1), (1, 3)]
    """
    out = []
    for k, a in enumerate(args):
        x = to_array(a, "fx.numpy.ix_")
        aval = get_aval(x)
        if aval.ndim != 1:
            raise ValueError(f"fx.numpy.ix_: argument {k} must be 1-D, got shape {aval.shape}")
        if aval.dtype == dtypes.bool_:
            (x,) = nonzero(x)
        elif not dtypes.is_int(aval.dtype):
            raise TypeError(f"fx.numpy.ix_: argument {k} must be integer or boolean, got "
                            f"{aval.dtype}")
        shape = [1] * len(args)
        shape[k] = get_aval(x).shape[0]
        out.append(lax.reshape(x, tuple(shape)))
    return tuple(out)


def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list:
    """Coordinate arrays from 1-D coordinate vectors (any rank is flattened first, as NumPy).

    ``indexing="xy"`` (Cartesian, the default) swaps the first two output axes; ``"ij"``
    (matrix) keeps them. ``sparse`` returns broadcastable arrays instead of full grids.

    >>> [g.shape for g in fx.numpy.meshgrid(fx.numpy.arange(3), fx.numpy.arange(2))]
    [(2, 3), (2, 3)]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"fx.numpy.meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    vecs = [to_array(x, "fx.numpy.meshgrid") for x in xi]
    vecs = [lax.reshape(v, (get_aval(v).size,)) for v in vecs]
    n = len(vecs)
    sizes = [get_aval(v).shape[0] for v in vecs]
    if indexing == "xy" and n > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for k, v in enumerate(vecs):
        axis = k
        if indexing == "xy" and n > 1 and k < 2:
            axis = 1 - k
        if sparse:
            shape = [1] * n
            shape[axis] = sizes[axis]
            out.append(lax.reshape(v, tuple(shape)))
        else:
            out.append(lax.broadcast_in_dim(v, tuple(sizes), (axis,)))
    return out


def indices(dimensions, dtype=None, sparse: bool = False):
    """The index grid of an array of shape ``dimensions``: shape ``(len(dimensions),) +
    dimensions`` (a tuple of broadcastable arrays when ``sparse``).

    >>> fx.numpy.indices((2, 3))[1]
    Array([[0, 1, 2],
           [0, 1, 2]], dtype=int32)
    """
    dims = tuple(operator.index(d) for d in dimensions)
    dt = dtypes.canonicalize(dtype) if dtype is not None else _int_dtype()
    if sparse:
        out = []
        for k, d in enumerate(dims):
            shape = [1] * len(dims)
            shape[k] = d
            out.append(lax.reshape(lax.iota(dt, d), tuple(shape)))
        return tuple(out)
    grids = [lax.broadcasted_iota(dt, dims, k) for k in range(len(dims))]
    if not grids:
        return lax.full((0,), 0, dt)
    return lax.concatenate([lax.expand_dims(g, (0,)) for g in grids], 0)


# --- diagonals and triangles --------------------------------------------------------------------


def diag_indices(n: int, ndim: int = 2) -> tuple:
    """The indices of the main diagonal of an ``n x ... x n`` array of rank ``ndim``."""
    n, ndim = operator.index(n), operator.index(ndim)
    if n < 0:
        raise ValueError(f"fx.numpy.diag_indices: n must be non-negative, got {n}")
    if ndim < 0:
        raise ValueError(f"fx.numpy.diag_indices: ndim must be non-negative, got {ndim}")
    return (lax.iota(_int_dtype(), n),) * ndim


def diag_indices_from(arr) -> tuple:
    """:func:`diag_indices` for the square array ``arr`` (all its dimensions equal, rank >= 2)."""
    shape = get_aval(to_array(arr, "fx.numpy.diag_indices_from")).shape
    if len(shape) < 2 or len(set(shape)) != 1:
        raise ValueError("fx.numpy.diag_indices_from: input must be at least 2-D with all "
                         f"dimensions equal, got shape {shape}")
    return diag_indices(shape[0], len(shape))


def _triangle(n, k, m, lower: bool, name: str) -> tuple:
    n = operator.index(n)
    m = n if m is None else operator.index(m)
    k = operator.index(k)
    if n < 0 or m < 0:
        raise ValueError(f"{name}: n and m must be non-negative, got n={n}, m={m}")
    rows, cols = np.tril_indices(n, k, m) if lower else np.triu_indices(n, k, m)
    return _const(rows), _const(cols)


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """The (row, column) indices of the lower triangle of an ``n x m`` array, at and below
    the ``k``-th diagonal, in row-major order.

    >>> fx.numpy.tril_indices(2)
    (Array([0, 1, 1], dtype=int32), Array([0, 0, 1], dtype=int32))
    """
    return _triangle(n, k, m, True, "fx.numpy.tril_indices")


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """The (row, column) indices of the upper triangle (at and above diagonal ``k``)."""
    return _triangle(n, k, m, False, "fx.numpy.triu_indices")


def _from(arr, name: str) -> tuple[int, int]:
    shape = get_aval(to_array(arr, name)).shape
    if len(shape) != 2:
        raise ValueError(f"{name}: input array must be 2-D, got shape {shape}")
    return shape


def tril_indices_from(arr, k: int = 0) -> tuple:
    """:func:`tril_indices` for the shape of the 2-D ``arr``."""
    n, m = _from(arr, "fx.numpy.tril_indices_from")
    return tril_indices(n, k, m)


def triu_indices_from(arr, k: int = 0) -> tuple:
    """:func:`triu_indices` for the shape of the 2-D ``arr``."""
    n, m = _from(arr, "fx.numpy.triu_indices_from")
    return triu_indices(n, k, m)


def mask_indices(n: int, mask_func, k: int = 0, *, size: int | None = None) -> tuple:
    """The indices where ``mask_func(ones((n, n)), k)`` is nonzero, e.g.
    ``mask_indices(3, fx.numpy.triu)``; ``size`` as in ``nonzero``."""
    from fx.numpy.creation import ones  # noqa: PLC0415

    mask = mask_func(ones((operator.index(n),) * 2, dtypes.int32), k)
    return nonzero(mask, size=size)


# --- flat and multi-dimensional indices ---------------------------------------------------------


def _dims(dims, name: str) -> tuple[int, ...]:
    try:
        return (operator.index(dims),)
    except TypeError:
        pass
    try:
        return tuple(operator.index(d) for d in dims)
    except TypeError:
        raise TypeError(f"{name}: dims must be a static int or sequence of ints, got "
                        f"{dims!r}") from None


def ravel_multi_index(multi_index, dims, mode: str = "raise", order: str = "C"):
    """Flat indices from a tuple of index arrays (one per dimension of ``dims``).

    ``mode="raise"`` checks the indices (they must be concrete); ``"clip"`` clamps each into
    range and ``"wrap"`` wraps it. ``order="F"`` ravels column-major.

    >>> fx.numpy.ravel_multi_index((fx.numpy.array([0, 2]), fx.numpy.array([1, 3])), (3, 4))
    Array([ 1, 11], dtype=int32)
    """
    name = "fx.numpy.ravel_multi_index"
    dims = _dims(dims, name)
    if order not in ("C", "F"):
        raise ValueError(f"{name}: order must be 'C' or 'F', got {order!r}")
    if mode not in ("raise", "clip", "wrap"):
        raise ValueError(f"{name}: mode must be 'raise', 'clip' or 'wrap', got {mode!r}")
    idx = [to_array(i, name) for i in multi_index]
    if len(idx) != len(dims):
        raise ValueError(f"{name}: got {len(idx)} index arrays for the {len(dims)} dimensions "
                         f"{dims}")
    for i in idx:
        if not dtypes.is_int(get_aval(i).dtype):
            raise TypeError(f"{name}: indices must be integers, got {get_aval(i).str_short()}")
    shape = broadcast_shapes(*(get_aval(i).shape for i in idx), name=name)
    idx = [broadcast_to_shape(i, shape, name) for i in promote_dtypes(*idx, name=name)]
    dt = get_aval(idx[0]).dtype
    if mode == "raise":
        for k, (i, d) in enumerate(zip(idx, dims)):
            try:
                host = concrete(i, name, "the indices")
            except ConcretizationTypeError:
                raise ConcretizationTypeError(
                    f"{name}: mode='raise' checks the indices, which are traced here (jit, vmap, "
                    "make_jaxpr); use mode='clip' or mode='wrap'") from None
            if host.size and (host.min() < 0 or host.max() >= d):
                raise ValueError(f"{name}: index array {k} has entries outside [0, {d}) for "
                                 f"dims {dims}; use mode='clip' or 'wrap'")
    fixed = []
    for i, d in zip(idx, dims):
        if mode == "clip":
            i = lax.clamp(0, i, max(d - 1, 0))
        elif mode == "wrap":
            dd = lax.full(shape, max(d, 1), dt)
            i = lax.rem(lax.add(lax.rem(i, dd), dd), dd)
        fixed.append(i)
    order_dims = range(len(dims)) if order == "C" else reversed(range(len(dims)))
    flat = lax.full(shape, 0, dt)
    for k in order_dims:
        flat = lax.add(lax.mul(flat, lax.full(shape, dims[k], dt)), fixed[k])
    return flat


def unravel_index(indices, shape) -> tuple:
    """The multi-dimensional indices (row-major) of flat ``indices`` into an array of
    ``shape``. As in jax, negative indices count from the end and out-of-range ones clamp.

    >>> fx.numpy.unravel_index(fx.numpy.array([5, -1]), (3, 4))
    (Array([1, 2], dtype=int32), Array([1, 3], dtype=int32))
    """
    name = "fx.numpy.unravel_index"
    shape = _dims(shape, name)
    i = to_array(indices, name)
    aval = get_aval(i)
    if not dtypes.is_int(aval.dtype):
        raise TypeError(f"{name}: indices must be integers, got {aval.str_short()}")
    if any(d < 0 for d in shape):
        raise ValueError(f"{name}: negative dimension in shape {shape}")
    total = int(np.prod(shape, dtype=np.int64))
    dt = aval.dtype
    if total == 0:
        raise ValueError(f"{name}: cannot unravel into the empty shape {shape}")
    if dtypes.is_signed_int(dt):
        i = lax.select(lax.lt(i, lax.full(aval.shape, 0, dt)),
                       lax.add(i, lax.full(aval.shape, total, dt)), i)
    i = lax.clamp(0, i, total - 1)
    out = []
    for d in reversed(shape):
        dd = lax.full(aval.shape, d, dt)
        out.append(lax.rem(i, dd))
        i = lax.div(i, dd)
    return tuple(reversed(out))
