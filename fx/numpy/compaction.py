"""Selections whose length depends on the data: ``nonzero``, ``argwhere``, ``flatnonzero``,
``extract`` and ``compress`` (and the helpers the set operations share).

Each takes jax's ``size=`` and ``fill_value=``: with ``size`` the result has that static length
(cut, or padded with ``fill_value``), so the functions trace under ``jit``/``vmap``; without it
the length is counted from the concrete data, and a traced argument raises a
``ConcretizationTypeError`` that names the function and asks for ``size=``.

Both paths run the same traceable program: a stable sort of the mask (``fx.lax.sort``) puts
the positions of the selected entries first, in order; values are then read with one gather,
so they are exact for every dtype and differentiable with respect to the data (filled slots
get a zero cotangent). Index results have the default integer dtype
(``fx.dtypes.default_int_dtype()``), as in jax.
"""

from __future__ import annotations

import operator

import numpy as np

from fx import dtypes, lax
from fx.core import ConcretizationTypeError, Tracer, get_aval
from fx.numpy._promote import canonical_axis, to_array

__all__ = ["argwhere", "compress", "extract", "flatnonzero", "nonzero"]


# --- shared helpers -----------------------------------------------------------------------------


def concrete(value, name: str, what: str) -> np.ndarray:
    """The host value of ``value``, or a ``ConcretizationTypeError`` asking for ``size=``."""
    if isinstance(value, Tracer):
        try:
            return np.asarray(value.to_concrete(name))
        except ConcretizationTypeError:
            raise ConcretizationTypeError(
                f"{name}: the length of the result depends on the values of {what}, which "
                "are unknown while tracing (jit, vmap, make_jaxpr). Pass size=N (and optionally "
                f"fill_value=) to give the result a static length, e.g. "
                f"{name.rsplit('.', 1)[-1]}(..., size=N)."
            ) from None
    return np.asarray(value)


def result_size(size, count, name: str) -> int:
    """``size`` as a non-negative Python int, or (when None) ``count()``, the number of
    selected entries counted on concrete data."""
    if size is None:
        return int(count())
    try:
        size = operator.index(size)
    except TypeError:
        raise TypeError(f"{name}: size must be a static non-negative int, got {size!r}") from None
    if size < 0:
        raise ValueError(f"{name}: size must be non-negative, got {size}")
    return size


def index_dtype() -> np.dtype:
    return dtypes.default_int_dtype()


def flat(x):
    return lax.reshape(x, (get_aval(x).size,))


def truthy(x):
    """``x != 0`` as bools (NaN counts as true, as in NumPy)."""
    aval = get_aval(x)
    if aval.dtype == dtypes.bool_:
        return x
    return lax.ne(x, lax.full(aval.shape, 0, aval.dtype))


def compact(mask, size: int):
    """For a 1-D bool ``mask``: ``(positions, valid)``, both of length ``size``. The first
    ``count`` positions are the indices of the True entries in order (``valid`` marks them);
    the rest are 0."""
    it = index_dtype()
    n = get_aval(mask).shape[0]
    if n == 0:
        return lax.full((size,), 0, it), lax.full((size,), False, dtypes.bool_)
    key = lax.convert_element_type(lax.eq(mask, False), dtypes.int32)
    _, order = lax.sort((key, lax.iota(it, n)), 0, num_keys=1)
    if size <= n:
        positions = lax.slice_in_dim(order, 0, size)
    else:
        positions = lax.concatenate([order, lax.full((size - n,), 0, it)], 0)
    count = lax.reduce_sum(lax.convert_element_type(mask, it), (0,))
    return positions, lax.lt(lax.iota(it, size), count)


def take_rows(x, positions, valid, fill_value, name: str):
    """``x[positions]`` along axis 0, with ``fill_value`` (converted to ``x.dtype``) where
    ``valid`` is False."""
    aval = get_aval(x)
    size = get_aval(positions).shape[0]
    out_shape = (size,) + aval.shape[1:]
    fill = lax.convert_element_type(to_array(fill_value, name), aval.dtype)
    if get_aval(fill).ndim:
        raise ValueError(f"{name}: fill_value must be a scalar, got shape {get_aval(fill).shape}")
    fill = lax.broadcast_in_dim(fill, out_shape, ())
    if aval.shape[0] == 0:
        return fill
    rows = lax.gather(x, lax.expand_dims(positions, (1,)), (0,), mode="clip")
    keep = lax.broadcast_in_dim(valid, out_shape, (0,))
    return lax.select(keep, rows, fill)


def count_true(mask, name: str, what: str) -> int:
    return int(np.count_nonzero(concrete(mask, name, what)))


# --- nonzero and friends ------------------------------------------------------------------------


def _nonzero_columns(x, size, fill_value, name: str):
    shape = get_aval(x).shape
    mask = flat(truthy(x))
    size = result_size(size, lambda: count_true(mask, name, "its argument"), name)
    positions, valid = compact(mask, size)
    if fill_value is None:
        fill_value = 0
    fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * len(shape)
    if len(fills) != len(shape):
        raise ValueError(f"{name}: fill_value must be a scalar or a tuple of {len(shape)} "
                         f"values (one per dimension of the shape {shape} argument), got "
                         f"{len(fills)}")
    it = index_dtype()
    columns, stride = [], int(np.prod(shape, dtype=np.int64))
    for d, (dim, fill) in enumerate(zip(shape, fills)):
        # Row-major unravelling: (position // stride) % dim; the first quotient needs no
        # remainder (positions are below the total size).
        stride //= max(dim, 1)
        coord = positions if stride == 1 else lax.div(positions, lax.full((size,), stride, it))
        if d > 0:
            coord = lax.rem(coord, lax.full((size,), max(dim, 1), it))
        fill = lax.convert_element_type(to_array(fill, name), it)
        if get_aval(fill).ndim:
            raise ValueError(f"{name}: each fill_value must be a scalar, got shape "
                             f"{get_aval(fill).shape}")
        columns.append(lax.select(valid, coord, lax.broadcast_in_dim(fill, (size,), ())))
    return columns


def nonzero(a, *, size: int | None = None, fill_value=None) -> tuple:
    """The indices of the nonzero entries of ``a``, one array per dimension (row-major order).

    Without ``size`` the length is the number of nonzero entries, so ``a`` must be concrete;
    with ``size`` each result has that length, cut or padded with ``fill_value`` (default 0; a
    tuple gives one per dimension), and ``nonzero`` works under ``jit`` and ``vmap``.

    >>> fx.numpy.nonzero(fx.numpy.array([0, 3, 0, 5]))
    (Array([1, 3], dtype=int32),)
    >>> fx.numpy.nonzero(fx.numpy.array([0, 3, 0, 5]), size=3, fill_value=-1)
    (Array([ 1,  3, -1], dtype=int32),)
    """
    name = "fx.numpy.nonzero"
    x = to_array(a, name)
    if get_aval(x).ndim == 0:
        raise ValueError(f"{name}: 0-d arrays are not allowed; use "
                         "fx.numpy.atleast_1d(x).nonzero()")
    return tuple(_nonzero_columns(x, size, fill_value, name))


def flatnonzero(a, *, size: int | None = None, fill_value=None):
    """The indices of the nonzero entries of ``ravel(a)``; ``size``/``fill_value`` as in
    :func:`nonzero`.

    >>> fx.numpy.flatnonzero(fx.numpy.array([[0, 1], [2, 0]]))
    Array([1, 2], dtype=int32)
    """
    name = "fx.numpy.flatnonzero"
    x = flat(to_array(a, name))
    if isinstance(fill_value, (tuple, list)) and len(fill_value) == 1:
        fill_value = fill_value[0]
    return _nonzero_columns(x, size, fill_value, name)[0]


def argwhere(a, *, size: int | None = None, fill_value=None):
    """The indices of the nonzero entries of ``a`` as rows: shape ``(N, a.ndim)``.

    ``size``/``fill_value`` as in :func:`nonzero` (``fill_value`` may give one value per
    column). A 0-d ``a`` gives shape ``(1, 0)`` if nonzero, else ``(0, 0)``.

    >>> fx.numpy.argwhere(fx.numpy.array([[0, 1], [2, 0]]))
    Array([[0, 1],
           [1, 0]], dtype=int32)
    """
    name = "fx.numpy.argwhere"
    x = to_array(a, name)
    if get_aval(x).ndim == 0:
        mask = lax.reshape(truthy(x), (1,))
        n = result_size(size, lambda: count_true(mask, name, "its argument"), name)
        return lax.full((n, 0), 0, index_dtype())
    columns = _nonzero_columns(x, size, fill_value, name)
    n = get_aval(columns[0]).shape[0]
    return lax.concatenate([lax.reshape(c, (n, 1)) for c in columns], 1)


def compress(condition, a, axis: int | None = None, *, size: int | None = None,
             fill_value=0, out=None):
    """The slices of ``a`` along ``axis`` (of ``ravel(a)`` when None) where the 1-D
    ``condition`` is true.

    A ``condition`` shorter than the axis counts as False beyond its end; a longer one may
    only hold False there. With ``size`` (at most the axis length, as in jax) the result has
    that many slices, padded with ``fill_value``; without it ``condition`` must be concrete.

    >>> fx.numpy.compress(fx.numpy.array([True, False, True]), fx.numpy.arange(3.0))
    Array([0., 2.], dtype=float32)
    """
    name = "fx.numpy.compress"
    if out is not None:
        raise NotImplementedError(f"{name}: the 'out' argument is not supported (arrays are "
                                  "immutable); use the return value")
    x = to_array(a, name)
    cond = to_array(condition, name)
    if get_aval(cond).ndim != 1:
        raise ValueError(f"{name}: condition must be a 1-D array, got shape "
                         f"{get_aval(cond).shape}")
    if axis is None:
        x, axis = flat(x), 0
    ndim = get_aval(x).ndim
    if ndim == 0:
        raise ValueError(f"{name}: a must be at least 1-D when axis is given, got a 0-d array")
    axis = canonical_axis(axis, ndim, name)
    n = get_aval(x).shape[axis]
    cond = truthy(cond)
    m = get_aval(cond).shape[0]
    if m > n:
        extra = lax.slice_in_dim(cond, n, m)
        try:
            extra_host = concrete(extra, name, "condition")
        except ConcretizationTypeError:
            extra_host = None  # traced: entries past the axis are ignored
        if extra_host is not None and extra_host.any():
            raise ValueError(f"{name}: condition of length {m} is True beyond the end of axis "
                             f"{axis} (size {n}) of the array of shape {get_aval(x).shape}")
        cond = lax.slice_in_dim(cond, 0, n)
    elif m < n:
        cond = lax.concatenate([cond, lax.full((n - m,), False, dtypes.bool_)], 0)
    if size is not None and not 0 <= operator.index(size) <= n:
        raise ValueError(f"{name}: size must be between 0 and the length {n} of axis {axis} "
                         f"(shape {get_aval(x).shape}), got size={size}")
    k = result_size(size, lambda: count_true(cond, name, "condition"), name)
    positions, valid = compact(cond, k)
    moved = _move_to_front(x, axis)
    return _move_from_front(take_rows(moved, positions, valid, fill_value, name), axis)


def extract(condition, arr, *, size: int | None = None, fill_value=0):
    """The entries of ``ravel(arr)`` where ``ravel(condition)`` is true: ``compress`` on the
    flattened arrays (a shorter ``condition`` counts as False beyond its end).

    >>> fx.numpy.extract(fx.numpy.array([[1, 0], [0, 1]]), fx.numpy.array([[1, 2], [3, 4]]))
    Array([1, 4], dtype=int32)
    """
    cond = flat(to_array(condition, "fx.numpy.extract"))
    x = flat(to_array(arr, "fx.numpy.extract"))
    try:
        return compress(cond, x, size=size, fill_value=fill_value)
    except (ValueError, ConcretizationTypeError) as e:
        raise type(e)(str(e).replace("fx.numpy.compress", "fx.numpy.extract")) from None


def _move_to_front(x, axis: int):
    if axis == 0:
        return x
    nd = get_aval(x).ndim
    return lax.transpose(x, (axis,) + tuple(i for i in range(nd) if i != axis))


def _move_from_front(x, axis: int):
    if axis == 0:
        return x
    nd = get_aval(x).ndim
    perm = list(range(1, nd))
    perm.insert(axis, 0)
    return lax.transpose(x, tuple(perm))
