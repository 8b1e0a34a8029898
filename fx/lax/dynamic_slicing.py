"""``dynamic_slice`` and ``dynamic_update_slice``: slicing at traced start indices.

Dynamic slicing follows XLA: start indices are integer scalars, clamped so that the slice fits
inside the operand. The batching rules for batched start indices are gather-free: a window at a
per-example offset is cut by shifting once per bit of the offset and selecting (see
``_batched_window``), which is exact for every dtype.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

import numpy as np

from fx import dtypes
from fx.array import Array
from fx.avals import ShapedArray, physical_trailing
from fx.core import Primitive, Tracer, get_aval, physical_rules
from fx.interpreters import batching, jvp, transpose
from fx.interpreters.batching import bdim_at_front, broadcast_batch, not_mapped
from fx.interpreters.transpose import is_undefined
from fx.lax.base import broadcast_in_dim, canonical_axes, full, shape_error
from fx.lax.elementwise import add, and_, clamp, ge, lt, ne, select, select_n, shift_right_logical
from fx.lax.structural import (
    broadcasted_iota,
    concatenate,
    expand_dims,
    pad,
    slice_in_dim,
    squeeze,
)

# --- dynamic_slice and dynamic_update_slice -----------------------------------------------------

dynamic_slice_p = Primitive("dynamic_slice")  # operand, *start_indices; params: slice_sizes
dynamic_update_slice_p = Primitive("dynamic_update_slice")  # operand, update, *start_indices


def _check_starts(name: str, x: ShapedArray, starts: Sequence[ShapedArray], *shown) -> None:
    if len(starts) != x.ndim:  # jax's ValueError
        raise shape_error(
            name, f"needs one start index per operand dimension ({x.ndim}), got {len(starts)}",
            x, *shown, *starts, error=ValueError,
        )
    if any(s.shape or not dtypes.is_int(s.dtype) for s in starts):
        raise shape_error(name, "start indices must be integer scalars", x, *shown, *starts)


@dynamic_slice_p.def_abstract_eval
def _dynamic_slice_abstract_eval(x, *starts, slice_sizes):
    _check_starts("dynamic_slice", x, starts)
    if len(slice_sizes) != x.ndim:  # jax's ValueError; sizes that do not fit are a TypeError
        raise shape_error(
            "dynamic_slice", f"needs one slice size per operand dimension ({x.ndim}), got "
            f"slice_sizes {slice_sizes}", x, error=ValueError)
    if any(not 0 <= n <= d for n, d in zip(slice_sizes, x.shape)):
        raise shape_error(
            "dynamic_slice", f"slice_sizes {slice_sizes} must fit inside the operand", x
        )
    return x.update(shape=tuple(slice_sizes))


def _clamped_window(starts, shape, sizes) -> tuple:
    # XLA's rule: each start is clamped to [0, dim - size], so the window always fits.
    return tuple(
        builtins.slice(lo, lo + n)
        for lo, n in ((int(np.clip(int(s), 0, d - n)), n) for s, d, n in zip(starts, shape, sizes))
    )


@dynamic_slice_p.def_impl
def _dynamic_slice_impl(x, *starts, slice_sizes):
    return x[_clamped_window(starts, x.shape, slice_sizes)]


@dynamic_update_slice_p.def_abstract_eval
def _dynamic_update_slice_abstract_eval(x, update, *starts):
    _check_starts("dynamic_update_slice", x, starts, update)
    if update.ndim != x.ndim or any(u > d for u, d in zip(update.shape, x.shape)):
        raise shape_error(
            "dynamic_update_slice", "the update must have the operand's rank and fit inside it",
            x, update,
        )
    if update.dtype != x.dtype:
        raise shape_error(
            "dynamic_update_slice", "the update must have the operand's dtype", x, update
        )
    return x.update(weak_type=x.weak_type and update.weak_type)


@dynamic_update_slice_p.def_impl
def _dynamic_update_slice_impl(x, update, *starts):
    out = x.copy()
    out[_clamped_window(starts, x.shape, update.shape)] = update
    return out


def _start_indices(name: str, start_indices, shape: tuple[int, ...]) -> list:
    """Start indices as integer scalars; negative ones count from the end (as in jax)."""
    if isinstance(start_indices, (Array, Tracer, np.ndarray)):
        aval = get_aval(start_indices)
        if aval.ndim != 1:
            raise TypeError(f"{name}: start_indices must be a sequence or a 1-D array, got "
                            f"{aval.str_short()}")
        start_indices = [
            squeeze(slice_in_dim(start_indices, i, i + 1), (0,)) for i in range(aval.shape[0])
        ]
    start_indices = list(start_indices)
    if len(start_indices) != len(shape):  # jax's ValueError
        raise ValueError(
            f"{name}: got {len(start_indices)} start indices for an operand of rank "
            f"{len(shape)}; give one per dimension"
        )
    out = []
    for i, d in zip(start_indices, shape):
        if isinstance(i, (int, np.integer)) or (isinstance(i, np.ndarray) and i.ndim == 0
                                                 and dtypes.is_int(dtypes.canonicalize(i.dtype))):
            i = int(i)
            i = i + d if i < 0 else i
            # Clamping here as well keeps huge Python ints inside int32.
            out.append(Array(np.asarray(min(max(i, 0), d), dtypes.int32)))
            continue
        aval = get_aval(i)
        if aval.shape or not dtypes.is_int(aval.dtype):
            raise TypeError(f"{name}: start indices must be integer scalars, got "
                            f"{aval.str_short()}")
        if dtypes.is_signed_int(aval.dtype):
            i = select(lt(i, 0), add(i, d), i)
        out.append(i)
    return out


def dynamic_slice(operand, start_indices, slice_sizes: Sequence[int]):
    """The window of ``operand`` of shape ``slice_sizes`` at traced ``start_indices``.

    Negative starts count from the end; starts are then clamped so that the window fits (XLA's
    semantics), so out-of-range starts never fail:

    >>> x = fx.numpy.arange(5)
    >>> fx.lax.dynamic_slice(x, (fx.numpy.asarray(4),), (2,))
    Array([3, 4], dtype=int32)
    >>> fx.lax.dynamic_slice(x, (-1,), (2,))
    Array([3, 4], dtype=int32)
    """
    shape = get_aval(operand).shape
    starts = _start_indices("dynamic_slice", start_indices, shape)
    return dynamic_slice_p.bind(operand, *starts, slice_sizes=tuple(int(n) for n in slice_sizes))


def dynamic_update_slice(operand, update, start_indices):
    """``operand`` with the window at ``start_indices`` replaced by ``update`` (starts are
    normalized and clamped as in :func:`dynamic_slice`)."""
    starts = _start_indices("dynamic_update_slice", start_indices, get_aval(operand).shape)
    return dynamic_update_slice_p.bind(operand, update, *starts)


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0):
    """:func:`dynamic_slice` along one ``axis``, keeping the others whole."""
    shape = get_aval(operand).shape
    axis = canonical_axes((axis,), len(shape), "dynamic_slice_in_dim")[0]
    starts = [0] * len(shape)
    sizes = list(shape)
    starts[axis], sizes[axis] = start_index, int(slice_size)
    return dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True):
    """``operand[..., index, ...]`` along ``axis`` for a traced ``index`` (clamped)."""
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int):
    """:func:`dynamic_update_slice` at ``start_index`` along ``axis`` (0 elsewhere)."""
    ndim = get_aval(operand).ndim
    axis = canonical_axes((axis,), ndim, "dynamic_update_slice_in_dim")[0]
    starts = [0] * ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis: int):
    """Write ``update`` (lacking ``axis``, or with size 1 there) at ``index`` along ``axis``."""
    ndim = get_aval(operand).ndim
    axis = canonical_axes((axis,), ndim, "dynamic_update_index_in_dim")[0]
    if get_aval(update).ndim == ndim - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis)


def _dynamic_slice_transpose(ct, x, *starts, slice_sizes):
    zeros = full(x.aval.shape, 0, x.aval.dtype)
    return [dynamic_update_slice_p.bind(zeros, ct, *starts)] + [None] * len(starts)


def _dynamic_update_slice_transpose(ct, x, update, *starts):
    u_aval = update.aval if is_undefined(update) else get_aval(update)
    ct_x = ct_u = None
    if is_undefined(x):
        ct_x = dynamic_update_slice_p.bind(ct, full(u_aval.shape, 0, u_aval.dtype), *starts)
    if is_undefined(update):
        ct_u = dynamic_slice_p.bind(ct, *starts, slice_sizes=u_aval.shape)
    return [ct_x, ct_u] + [None] * len(starts)


# Batched start indices. Each per-example start s (clamped to [0, D]) is a sum of bits; a window
# at offset s is cut by, for each bit t, selecting per example between the array and the array
# shifted by 2**t. Only selects and static slices/pads: exact for every dtype (NaN, -0.0, bool),
# O(log D) equations; per example, slicing touches about D + size * log D elements (each step
# keeps only what later steps can reach) and an update O(D log D). An unbatched operand is
# broadcast to the batch first. Every step is linear in the operand, so the result
# differentiates and batches again like any other fx code.


def _bit(s, t: int, shape, bdim: int = 0):
    """Bit ``t`` of the per-example start ``s`` (shape ``(B,)``), broadcast to ``shape``."""
    shifted = shift_right_logical(s, t) if t else s
    return broadcast_in_dim(ne(and_(shifted, 1), 0), shape, (bdim,))


def _batched_window(y, s, axis: int, size: int):
    """``y[b, ..., s[b]:s[b]+size, ...]`` along ``axis``; ``y``'s batch axis is 0."""
    for t in reversed(range((get_aval(y).shape[axis] - size).bit_length())):
        # Highest bit first; afterwards the remaining shift is below 2**t, so only the first
        # size + 2**t - 1 positions can still be reached.
        step, length, keep = 1 << t, get_aval(y).shape[axis], size + (1 << t) - 1
        unshifted = slice_in_dim(y, 0, keep, 1, axis)
        if step + keep <= length:
            shifted = slice_in_dim(y, step, step + keep, 1, axis)
        else:  # wrap around: those positions are never selected in the end
            shifted = concatenate([slice_in_dim(y, step, length, 1, axis),
                                   slice_in_dim(y, 0, step + keep - length, 1, axis)], axis)
        y = select_n(_bit(s, t, get_aval(unshifted).shape), unshifted, shifted)
    return slice_in_dim(y, 0, size, 1, axis)


def _batched_place(u, s, axis: int, length: int):
    """``u`` moved to start at ``s[b]`` along ``axis`` within ``length`` positions (zeros
    elsewhere); ``u``'s batch axis is 0."""
    zero = full((), 0, get_aval(u).dtype)
    for t in range((length - get_aval(u).shape[axis]).bit_length()):
        cfg = [(0, 0, 0)] * get_aval(u).ndim
        cfg[axis] = (0, 1 << t, 0)
        at_front = pad(u, zero, cfg)
        cfg[axis] = (1 << t, 0, 0)
        u = select_n(_bit(s, t, get_aval(at_front).shape), at_front, pad(u, zero, cfg))
    return slice_in_dim(u, 0, length, 1, axis)


def _clamped_starts(axis, starts, dims, shape, sizes) -> list:
    """Per-example starts of shape ``(B,)`` clamped to ``[0, dim - size]``."""
    return [
        clamp(0, broadcast_batch(s, axis.size, 0) if d is not_mapped else s, n_max)
        for s, d, n_max in zip(starts, dims, (d - n for d, n in zip(shape, sizes)))
    ]


_ZERO_INDEX = Array(np.asarray(0, dtypes.int32))


def _dynamic_slice_batch(axis, vals, dims, *, slice_sizes):
    (x, *starts), (dx, *ds) = vals, dims
    if all(d is not_mapped for d in ds):
        sizes = slice_sizes[:dx] + (axis.size,) + slice_sizes[dx:]
        starts = starts[:dx] + [_ZERO_INDEX] + starts[dx:]
        return dynamic_slice_p.bind(x, *starts, slice_sizes=sizes), dx
    x = bdim_at_front(x, dx, axis.size)
    shape = get_aval(x).shape[1:]
    # Unbatched starts: one dynamic_slice for the whole batch, keeping the other dims whole.
    sizes = tuple(n if d is not_mapped else k for n, k, d in zip(slice_sizes, shape, ds))
    if sizes != shape:
        whole = [s if d is not_mapped else _ZERO_INDEX for s, d in zip(starts, ds)]
        x = dynamic_slice_p.bind(x, _ZERO_INDEX, *whole, slice_sizes=(axis.size,) + sizes)
    clamped = _clamped_starts(axis, starts, ds, shape, slice_sizes)
    for k, (s, d) in enumerate(zip(clamped, ds)):
        if d is not not_mapped and slice_sizes[k] != shape[k]:
            x = _batched_window(x, s, k + 1, slice_sizes[k])
    return x, 0


def _dynamic_update_slice_batch(axis, vals, dims):
    (x, u, *starts), (dx, du, *ds) = vals, dims
    x, u = bdim_at_front(x, dx, axis.size), bdim_at_front(u, du, axis.size)
    if all(d is not_mapped for d in ds):
        return dynamic_update_slice_p.bind(x, u, _ZERO_INDEX, *starts), 0
    shape, sizes = get_aval(x).shape, get_aval(u).shape
    if 0 in sizes:
        return x, 0
    clamped = _clamped_starts(axis, starts, ds, shape[1:], sizes[1:])
    mask = None
    for k, s in enumerate(clamped, start=1):
        if sizes[k] == shape[k]:
            continue
        u = _batched_place(u, s, k, shape[k])
        pos = broadcasted_iota(get_aval(s).dtype, shape, k)
        lo = broadcast_in_dim(s, shape, (0,))
        inside = and_(ge(pos, lo), lt(pos, add(lo, sizes[k])))
        mask = inside if mask is None else and_(mask, inside)
    return (u if mask is None else select_n(mask, x, u)), 0


jvp.deflinear_in(dynamic_slice_p, 0)
jvp.deflinear_in(dynamic_update_slice_p, 0, 1)
transpose.transpose_rules[dynamic_slice_p] = _dynamic_slice_transpose
transpose.transpose_rules[dynamic_update_slice_p] = _dynamic_update_slice_transpose
batching.batch_rules[dynamic_slice_p] = _dynamic_slice_batch
batching.batch_rules[dynamic_update_slice_p] = _dynamic_update_slice_batch


def _word_starts(in_avals, starts) -> list:
    # A key's stored words (the trailing dimensions) are taken whole: they start at 0.
    dt = get_aval(starts[0]).dtype if starts else dtypes.int32
    return [Array(np.zeros((), dt))] * len(physical_trailing(in_avals[0]))


def _dynamic_slice_physical(in_avals, out_avals, x, *starts, slice_sizes):
    return dynamic_slice_p.bind(x, *starts, *_word_starts(in_avals, starts),
                                slice_sizes=slice_sizes + physical_trailing(in_avals[0]))


def _dynamic_update_slice_physical(in_avals, out_avals, x, update, *starts):
    return dynamic_update_slice_p.bind(x, update, *starts, *_word_starts(in_avals, starts))


physical_rules[dynamic_slice_p] = _dynamic_slice_physical
physical_rules[dynamic_update_slice_p] = _dynamic_update_slice_physical
