"""XLA's general gather and scatter (jax's ``GatherDimensionNumbers`` /
``ScatterDimensionNumbers`` forms), written over fx's point gather and scatters.

This module holds fx.lax's public ``gather`` and ``scatter*``: with ``axes`` they are the point
forms of :mod:`fx.lax.indexing`; ``fx.lax.gather(operand, start_indices, dimension_numbers,
slice_sizes)`` and ``fx.lax.scatter*(operand, indices, updates, dimension_numbers)`` take the
windowed path here when the third (fourth) argument is a dimension-numbers record (fx's or
jax's: the fields are read by name). The index vector is the last dimension of the indices, as
in jax.

Each window becomes explicit: for every batch position ``b`` and window offset ``w`` the full
operand coordinate ``start(b) + w`` is formed (``start`` from the index vector through
``start_index_map`` / ``scatter_dims_to_operand_dims``, from the batch position for the batching
dimensions, 0 elsewhere), and one point gather or scatter over all operand axes reads or
writes them. As in XLA, ``mode='clip'`` (or ``'promise_in_bounds'``, the default of a gather)
clamps each start so its window fits, and ``'fill'``/``'drop'`` (the default of a scatter)
fills a gathered window, or drops a scattered one, when any part of it is out of bounds.
"""

from __future__ import annotations

import math

import numpy as np

from fx import dtypes
from fx.core import get_aval
from fx.lax import elementwise as ew
from fx.lax import indexing
from fx.lax.base import broadcast_in_dim, full, reshape, transpose
from fx.lax.indexing import GatherScatterMode, default_fill_value
from fx.lax.structural import broadcasted_iota, concatenate


def _tuple(v) -> tuple[int, ...]:
    return tuple(int(d) for d in v)


def _starts(name, indices, batch, start_map, op_batching, idx_batching, r):
    """The start coordinate along each operand dimension, each an int32 array of ``batch``."""
    ia = get_aval(indices)
    if len(start_map) != ia.shape[-1]:
        raise TypeError(f"fx.lax.{name}: the index vector has {ia.shape[-1]} entries but the "
                        f"dimension numbers map {len(start_map)} ({start_map})")
    indices = ew.convert_element_type(indices, dtypes.int32)
    zero = full(batch, 0, dtypes.int32)
    starts = [zero] * r
    for k, d in enumerate(start_map):
        col = reshape(_take_last(indices, k), batch)
        starts[d] = col
    for d, bd in zip(op_batching, idx_batching):
        starts[d] = broadcasted_iota(dtypes.int32, batch, bd)
    return starts


def _take_last(x, k: int):
    from fx.lax.structural import slice_in_dim

    a = get_aval(x)
    return slice_in_dim(x, k, k + 1, 1, a.ndim - 1)


def _full_indices(starts, window_dims, window_sizes, batch, r):
    """``batch + window + (r,)`` int32 coordinates ``start + offset``."""
    shape = batch + tuple(window_sizes)
    nb = len(batch)
    cols = []
    for d in range(r):
        s = broadcast_in_dim(starts[d], shape, tuple(range(nb)))
        if d in window_dims:
            w = window_dims.index(d)
            s = ew.add(s, broadcasted_iota(dtypes.int32, shape, nb + w))
        cols.append(reshape(s, shape + (1,)))
    return concatenate(cols, len(shape)) if cols else full(shape + (0,), 0, dtypes.int32)


def _window_in_bounds(starts, sizes, shape, batch):
    """True where every start leaves its whole window inside the operand."""
    ok = None
    for s, size, n in zip(starts, sizes, shape):
        hi = np.asarray(n - size, np.int32)
        good = ew.and_(ew.ge(s, np.asarray(0, np.int32)), ew.le(s, hi))
        ok = good if ok is None else ew.and_(ok, good)
    return ok if ok is not None else full(batch, True, dtypes.bool_)


def _clamp(starts, sizes, shape):
    return [ew.clamp(np.asarray(0, np.int32), s, np.asarray(max(n - size, 0), np.int32))
            for s, size, n in zip(starts, sizes, shape)]


def general_gather(operand, start_indices, dimension_numbers, slice_sizes, *, mode,
                   fill_value=None):
    name = "gather"
    oa = get_aval(operand)
    r = oa.ndim
    dn = dimension_numbers
    offset_dims = _tuple(dn.offset_dims)
    collapsed = _tuple(dn.collapsed_slice_dims)
    start_map = _tuple(dn.start_index_map)
    op_batching = _tuple(getattr(dn, "operand_batching_dims", ()))
    idx_batching = _tuple(getattr(dn, "start_indices_batching_dims", ()))
    sizes = _tuple(slice_sizes)
    if len(sizes) != r or any(not 0 <= s <= n for s, n in zip(sizes, oa.shape)):
        raise TypeError(f"fx.lax.gather: slice_sizes {sizes} needs one size per operand "
                        f"dimension, each within it ({oa.str_short()})")
    if any(sizes[d] > 1 for d in collapsed + op_batching):
        raise TypeError(f"fx.lax.gather: collapsed and batching dimensions need slice size "
                        f"<= 1, got slice_sizes {sizes} for {collapsed + op_batching}")
    window_dims = [d for d in range(r) if d not in collapsed and d not in op_batching]
    if len(window_dims) != len(offset_dims):
        raise TypeError(f"fx.lax.gather: offset_dims {offset_dims} must name one output "
                        f"dimension per window dimension of the operand ({window_dims})")
    indices = start_indices
    ia = get_aval(indices)
    batch = ia.shape[:-1]
    starts = _starts(name, indices, batch, start_map, op_batching, idx_batching, r)
    # As jax's: no mode means "promise in bounds", which XLA keeps by clamping.
    mode = GatherScatterMode.CLIP if mode is None else GatherScatterMode.parse(mode)
    valid = _window_in_bounds(starts, sizes, oa.shape, batch)
    starts = _clamp(starts, sizes, oa.shape)
    window_sizes = [sizes[d] for d in window_dims]
    full_idx = _full_indices(starts, window_dims, window_sizes, batch, r)
    out = indexing.gather(operand, full_idx, tuple(range(r)), mode="clip") if math.prod(
        get_aval(full_idx).shape[:-1]) else full(batch + tuple(window_sizes), 0, oa.dtype)
    nb, shape = len(batch), batch + tuple(window_sizes)
    if mode is GatherScatterMode.FILL_OR_DROP:
        fill = default_fill_value(oa.dtype) if fill_value is None else fill_value
        keep = broadcast_in_dim(valid, shape, tuple(range(nb)))
        out = ew.select(keep, out, full(shape, fill, oa.dtype))
    # Batch + window -> the output order: window dims at offset_dims, batch dims elsewhere.
    out_rank = nb + len(window_dims)
    batch_positions = [p for p in range(out_rank) if p not in offset_dims]
    source = [0] * out_rank
    for i, p in enumerate(batch_positions):
        source[p] = i
    for i, p in enumerate(sorted(offset_dims)):
        source[p] = nb + i
    return transpose(out, source)


def general_scatter(kind: str, operand, scatter_indices, updates, dimension_numbers, *, mode):
    oa, ua = get_aval(operand), get_aval(updates)
    r = oa.ndim
    dn = dimension_numbers
    update_window_dims = _tuple(dn.update_window_dims)
    inserted = _tuple(dn.inserted_window_dims)
    to_operand = _tuple(dn.scatter_dims_to_operand_dims)
    op_batching = _tuple(getattr(dn, "operand_batching_dims", ()))
    idx_batching = _tuple(getattr(dn, "scatter_indices_batching_dims", ()))
    window_dims = [d for d in range(r) if d not in inserted and d not in op_batching]
    if len(window_dims) != len(update_window_dims):
        raise TypeError(f"fx.lax.scatter: update_window_dims {update_window_dims} must name one "
                        f"updates dimension per window dimension of the operand ({window_dims})")
    batch = get_aval(scatter_indices).shape[:-1]
    update_batch = [p for p in range(ua.ndim) if p not in update_window_dims]
    if tuple(ua.shape[p] for p in update_batch) != batch:
        raise TypeError(f"fx.lax.scatter: the updates' scatter dimensions "
                        f"{tuple(ua.shape[p] for p in update_batch)} must equal the indices' "
                        f"batch shape {batch} ({ua.str_short()})")
    window_sizes = [ua.shape[p] for p in sorted(update_window_dims)]
    sizes = [1] * r
    for d, s in zip(window_dims, window_sizes):
        sizes[d] = s
    if any(s > n for s, n in zip(sizes, oa.shape)):
        raise TypeError(f"fx.lax.scatter: the update windows {tuple(sizes)} exceed the operand "
                        f"{oa.str_short()}")
    starts = _starts("scatter", scatter_indices, batch, to_operand, op_batching, idx_batching, r)
    mode = GatherScatterMode.parse(mode)
    nb, shape = len(batch), batch + tuple(window_sizes)
    if mode is GatherScatterMode.CLIP:
        starts = _clamp(starts, sizes, oa.shape)
    full_idx = _full_indices(starts, window_dims, window_sizes, batch, r)
    if mode is not GatherScatterMode.CLIP and r:
        # A window partly out of bounds is dropped whole: move all its points out of range.
        valid = broadcast_in_dim(_window_in_bounds(starts, sizes, oa.shape, batch), shape,
                                 tuple(range(nb)))
        valid = broadcast_in_dim(valid, shape + (r,), tuple(range(len(shape))))
        outside = full(shape + (r,), max(oa.shape), dtypes.int32)
        full_idx = ew.select(valid, full_idx, outside)
    upd = transpose(updates, tuple(update_batch) + tuple(sorted(update_window_dims)))
    fn = {"set": indexing.scatter, "add": indexing.scatter_add, "mul": indexing.scatter_mul,
          "min": indexing.scatter_min, "max": indexing.scatter_max}[kind]
    return fn(operand, full_idx, upd, tuple(range(r)), mode=mode)


# --- the public functions: the point form, or jax's dimension-numbers form ---------------------


def gather(operand, indices, axes, slice_sizes=None, *, mode=None, fill_value=None,
           unique_indices: bool = False, indices_are_sorted: bool = False):
    """``operand`` read at the positions in ``indices``, as ``jax.lax.gather``.

    fx's point form ``gather(operand, indices, axes)`` reads one position per row of
    ``indices`` along the ``axes`` and takes the other dimensions whole (see
    :func:`fx.lax.indexing.gather`); ``mode='clip'`` clamps out-of-range indices, ``'fill'``
    (the default, as in jax) returns ``fill_value`` there. Example: rows 2 and 0 of a matrix::

        gather(x, np.array([[2], [0]]), axes=(0,))   # x[[2, 0]], shape (2, x.shape[1])

    jax's form ``gather(operand, start_indices, dimension_numbers, slice_sizes)``, with a
    ``GatherDimensionNumbers`` (fx's or jax's), is XLA's windowed gather (this module).
    """
    if hasattr(axes, "offset_dims"):
        return general_gather(operand, indices, axes, slice_sizes, mode=mode,
                              fill_value=fill_value)
    return indexing.gather(operand, indices, axes, mode=mode, fill_value=fill_value)


def _scatter_fn(point, kind: str):
    def f(operand, indices, updates, axes, *, mode=None, indices_are_sorted: bool = False,
          unique_indices: bool = False):
        if hasattr(axes, "update_window_dims"):  # jax's ScatterDimensionNumbers form
            return general_scatter(kind, operand, indices, updates, axes, mode=mode)
        return point(operand, indices, updates, axes, mode=mode)

    f.__name__ = f.__qualname__ = point.__name__
    f.__doc__ = point.__doc__ + (
        "\n\njax's form, with a ``ScatterDimensionNumbers`` (fx's or jax's) in place of "
        "``axes``, is XLA's windowed scatter (see :mod:`fx.lax.general_indexing`).")
    return f


scatter = _scatter_fn(indexing.scatter, "set")
scatter_add = _scatter_fn(indexing.scatter_add, "add")
scatter_mul = _scatter_fn(indexing.scatter_mul, "mul")
scatter_min = _scatter_fn(indexing.scatter_min, "min")
scatter_max = _scatter_fn(indexing.scatter_max, "max")
