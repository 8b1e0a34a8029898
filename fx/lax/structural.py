"""Structural primitives: creating, slicing, joining and rearranging arrays.

Each primitive is declared with its shape rule and impl, followed by its jvp, transpose and
batching rules. The operands are strictly typed (no broadcasting or promotion); static
parameters (sizes, axes, padding) are Python ints in tuples. ``expand_dims`` and ``collapse``
are wrappers over ``broadcast_in_dim``/``reshape``, as in jax, not primitives of their own.

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
from fx.avals import ShapedArray
from fx.core import Primitive, Tracer, get_aval
from fx.interpreters import batching, jvp, transpose
from fx.interpreters.batching import bdim_at_front, broadcast_batch, not_mapped
from fx.interpreters.transpose import is_undefined
from fx.lax.base import (
    broadcast_in_dim,
    canonical_axes,
    full,
    reduce_sum,
    reshape,
    shape_error,
)
from fx.lax.elementwise import (
    add,
    and_,
    clamp,
    ge,
    lt,
    ne,
    select,
    select_n,
    shift_right_logical,
    sub,
)

# --- iota ----------------------------------------------------------------------------------------

iota_p = Primitive("iota")  # params: dtype, shape, dimension


@iota_p.def_abstract_eval
def _iota_abstract_eval(*, dtype, shape, dimension):
    if dtype == dtypes.bool_:
        raise TypeError("iota: dtype must be an integer or floating type, got bool")
    if any(s < 0 for s in shape):
        raise ValueError(f"iota: negative dimension in shape {shape}")
    if not 0 <= dimension < len(shape):
        raise ValueError(f"iota: dimension {dimension} out of range for shape {shape}")
    return ShapedArray(shape, dtype)


@iota_p.def_impl
def _iota_impl(*, dtype, shape, dimension):
    r = np.arange(shape[dimension], dtype=dtype)
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return np.broadcast_to(r.reshape(view), shape)


def iota(dtype, size: int):
    """``[0, 1, ..., size-1]`` of ``dtype``."""
    return broadcasted_iota(dtype, (int(size),), 0)


def broadcasted_iota(dtype, shape: Sequence[int], dimension: int):
    """An array of ``shape`` whose entries are their index along ``dimension``."""
    return iota_p.bind(
        dtype=dtypes.canonicalize(dtype), shape=tuple(int(s) for s in shape),
        dimension=int(dimension),
    )


# --- slice --------------------------------------------------------------------------------------

slice_p = Primitive("slice")  # params: start_indices, limit_indices, strides (or None)


@slice_p.def_abstract_eval
def _slice_abstract_eval(x, *, start_indices, limit_indices, strides):
    n = x.ndim
    if len(start_indices) != n or len(limit_indices) != n or (strides and len(strides) != n):
        raise shape_error("slice", f"needs {n} start/limit/stride entries", x)
    shape = []
    for d, lo, hi, st in zip(x.shape, start_indices, limit_indices, strides or (1,) * n):
        if not 0 <= lo <= hi <= d or st < 1:
            raise shape_error(
                "slice", f"invalid slice [{lo}:{hi}:{st}] of a dimension of size {d}", x
            )
        shape.append((hi - lo + st - 1) // st)
    return x.update(shape=tuple(shape))


@slice_p.def_impl
def _slice_impl(x, *, start_indices, limit_indices, strides):
    st = strides or (1,) * len(start_indices)
    # ``slice`` is this module's primitive wrapper; index with Python's builtin.
    bounds = zip(start_indices, limit_indices, st)
    return x[tuple(builtins.slice(lo, hi, s) for lo, hi, s in bounds)]


def slice(x, start_indices, limit_indices, strides=None):  # noqa: A001  (lax's name)
    """``x[start:limit:stride]`` along every dimension (static bounds)."""
    start = tuple(int(i) for i in start_indices)
    limit = tuple(int(i) for i in limit_indices)
    st = None if strides is None or all(s == 1 for s in strides) else tuple(map(int, strides))
    if start == (0,) * len(start) and limit == get_aval(x).shape and st is None:
        return x
    return slice_p.bind(x, start_indices=start, limit_indices=limit, strides=st)


def slice_in_dim(x, start: int, limit: int, stride: int = 1, axis: int = 0):
    aval = get_aval(x)
    starts = [0] * aval.ndim
    limits = list(aval.shape)
    strides = [1] * aval.ndim
    starts[axis], limits[axis], strides[axis] = start, limit, stride
    return slice(x, starts, limits, strides)


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    # The cotangent lands in the sliced positions of a zero array: pad with interior gaps.
    shape = x.aval.shape
    st = strides or (1,) * len(shape)
    ct_shape = get_aval(ct).shape
    config = []
    for d, lo, n, s in zip(shape, start_indices, ct_shape, st):
        used = lo + (n - 1) * s + 1 if n else lo
        config.append((lo, d - used if n else d - lo, s - 1 if n else 0))
    return [pad(ct, full((), 0, x.aval.dtype), config)]


def _slice_batch(axis, vals, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = vals, dims
    start = start_indices[:d] + (0,) + start_indices[d:]
    limit = limit_indices[:d] + (axis.size,) + limit_indices[d:]
    st = None if strides is None else strides[:d] + (1,) + strides[d:]
    return slice_p.bind(x, start_indices=start, limit_indices=limit, strides=st), d


jvp.deflinear(slice_p)
transpose.deflinear(slice_p, _slice_transpose)
batching.batch_rules[slice_p] = _slice_batch


# --- concatenate --------------------------------------------------------------------------------

concatenate_p = Primitive("concatenate")  # params: dimension


@concatenate_p.def_abstract_eval
def _concatenate_abstract_eval(*xs, dimension):
    if not xs:
        raise ValueError("concatenate: needs at least one operand")
    nd = xs[0].ndim
    if not 0 <= dimension < nd:
        raise shape_error("concatenate", f"dimension {dimension} out of range", *xs)
    for a in xs:
        if a.ndim != nd or any(
            s != t for i, (s, t) in enumerate(zip(a.shape, xs[0].shape)) if i != dimension
        ):
            raise shape_error(
                "concatenate", f"operands must agree in every dimension but {dimension}", *xs
            )
        if a.dtype != xs[0].dtype:
            raise shape_error("concatenate", "operands must have the same dtype", *xs)
    shape = list(xs[0].shape)
    shape[dimension] = sum(a.shape[dimension] for a in xs)
    return ShapedArray(shape, xs[0].dtype, all(a.weak_type for a in xs))


concatenate_p.def_impl(lambda *xs, dimension: np.concatenate(xs, axis=dimension))


def concatenate(operands: Sequence, dimension: int):
    """Join ``operands`` along ``dimension``."""
    operands = list(operands)
    if len(operands) == 1:
        return operands[0]
    return concatenate_p.bind(*operands, dimension=int(dimension))


def _concatenate_transpose(ct, *xs, dimension):
    out, start = [], 0
    for x in xs:
        aval = x.aval if is_undefined(x) else get_aval(x)
        size = aval.shape[dimension]
        out.append(
            slice_in_dim(ct, start, start + size, 1, dimension) if is_undefined(x) else None
        )
        start += size
    return out


def _concatenate_batch(axis, vals, dims, *, dimension):
    moved = [bdim_at_front(v, d, axis.size) for v, d in zip(vals, dims)]
    return concatenate_p.bind(*moved, dimension=dimension + 1), 0


jvp.deflinear(concatenate_p)
transpose.deflinear(concatenate_p, _concatenate_transpose)
batching.batch_rules[concatenate_p] = _concatenate_batch


# --- pad ----------------------------------------------------------------------------------------

pad_p = Primitive("pad")  # params: padding_config: ((lo, hi, interior), ...)


@pad_p.def_abstract_eval
def _pad_abstract_eval(x, padding_value, *, padding_config):
    if padding_value.shape != () or padding_value.dtype != x.dtype:
        raise shape_error("pad", "padding_value must be a scalar of the operand's dtype",
                          x, padding_value)
    if len(padding_config) != x.ndim:
        raise shape_error("pad", f"padding_config needs {x.ndim} (lo, hi, interior) triples", x)
    shape = []
    for d, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise shape_error("pad", "interior padding must be non-negative", x)
        n = lo + hi + d + max(d - 1, 0) * interior
        if n < 0:
            raise shape_error("pad", f"padding {(lo, hi, interior)} leaves a negative size", x)
        shape.append(n)
    return x.update(shape=tuple(shape), weak_type=x.weak_type and padding_value.weak_type)


@pad_p.def_impl
def _pad_impl(x, padding_value, *, padding_config):
    if not padding_config:  # rank 0: nothing to pad (np.pad rejects an empty width list)
        return x
    # Interior padding first (into a strided buffer), then edges; negative edges crop.
    inner_shape = [d + max(d - 1, 0) * i for d, (_, _, i) in zip(x.shape, padding_config)]
    buf = np.full(inner_shape, padding_value, dtype=x.dtype)
    buf[tuple(np.s_[:: i + 1] for _, _, i in padding_config)] = x
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi, _ in padding_config]
    buf = np.pad(buf, widths, constant_values=padding_value)
    crop = tuple(
        np.s_[max(-lo, 0) : buf.shape[k] - max(-hi, 0)]
        for k, (lo, hi, _) in enumerate(padding_config)
    )
    return buf[crop]


def pad(x, padding_value, padding_config: Sequence[tuple[int, int, int]]):
    """Pad ``x`` with ``padding_value``: ``(low, high, interior)`` per dimension; negative
    low/high crop."""
    cfg = tuple((int(lo), int(hi), int(i)) for lo, hi, i in padding_config)
    if isinstance(padding_value, (bool, int, float)):  # a Python scalar takes x's dtype
        padding_value = Array(np.asarray(padding_value, get_aval(x).dtype), weak_type=True)
    return pad_p.bind(x, padding_value, padding_config=cfg)


def _pad_transpose(ct, x, padding_value, *, padding_config):
    # The operand's cotangent: undo the edges (a negative pad had cropped, a positive one is
    # cut off), then take every (interior+1)-th element.
    unedged = pad(ct, full((), 0, get_aval(ct).dtype),
                  tuple((-lo, -hi, 0) for lo, hi, _ in padding_config))
    shape = get_aval(unedged).shape
    ct_x = slice(unedged, (0,) * len(shape), shape, tuple(i + 1 for _, _, i in padding_config))
    ct_v = None
    if is_undefined(padding_value):
        # Every output element not taken from the operand came from the padding value.
        every = reduce_sum(ct, tuple(range(len(get_aval(ct).shape))))
        ct_v = sub(every, reduce_sum(ct_x, tuple(range(len(shape)))))
    return [ct_x if is_undefined(x) else None, ct_v]


def _pad_batch(axis, vals, dims, *, padding_config):
    x, v = vals
    dx, dv = dims
    if dv is not_mapped:
        cfg = padding_config[:dx] + ((0, 0, 0),) + padding_config[dx:]
        return pad_p.bind(x, v, padding_config=cfg), dx
    # A batched padding value: pad with zeros, then select the value where padding went.
    x = bdim_at_front(x, dx, axis.size)
    cfg = ((0, 0, 0),) + padding_config
    padded = pad_p.bind(x, full((), 0, get_aval(x).dtype), padding_config=cfg)
    out_shape = get_aval(padded).shape
    ex_shape = get_aval(x).shape[1:]
    is_pad = pad(full(ex_shape, False, dtypes.bool_), full((), True, dtypes.bool_), padding_config)
    is_pad = broadcast_in_dim(is_pad, out_shape, tuple(range(1, len(out_shape))))
    values = broadcast_in_dim(v, out_shape, (0,))
    return select_n(is_pad, padded, values), 0


jvp.deflinear(pad_p)
transpose.deflinear(pad_p, _pad_transpose)
batching.batch_rules[pad_p] = _pad_batch


# --- squeeze, expand_dims, collapse -------------------------------------------------------------

squeeze_p = Primitive("squeeze")  # params: dimensions (sorted, distinct, each of size 1)


@squeeze_p.def_abstract_eval
def _squeeze_abstract_eval(x, *, dimensions):
    if any(not 0 <= d < x.ndim for d in dimensions) or list(dimensions) != sorted(
        set(dimensions)
    ):
        raise shape_error(
            "squeeze", f"dimensions {dimensions} must be sorted, distinct axes of the operand", x
        )
    for d in dimensions:
        if x.shape[d] != 1:
            raise shape_error(
                "squeeze", f"cannot remove dimension {d} of size {x.shape[d]}: only size-1 "
                "dimensions can be squeezed", x,
            )
    return x.update(shape=tuple(s for i, s in enumerate(x.shape) if i not in dimensions))


squeeze_p.def_impl(lambda x, *, dimensions: np.reshape(
    x, tuple(s for i, s in enumerate(x.shape) if i not in dimensions)
))


def squeeze(array, dimensions: Sequence[int]):
    """Remove the size-1 ``dimensions`` of ``array`` (negative axes count from the end).

    >>> fx.lax.squeeze(fx.numpy.ones((1, 3, 1)), (0, -1)).shape
    (3,)
    """
    dims = tuple(sorted(canonical_axes(dimensions, get_aval(array).ndim, "squeeze")))
    if not dims:
        return array
    return squeeze_p.bind(array, dimensions=dims)


def _squeeze_batch(axis, vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    moved = tuple(k + (k >= d) for k in dimensions)
    return squeeze_p.bind(x, dimensions=moved), d - sum(k < d for k in moved)


jvp.deflinear(squeeze_p)
transpose.deflinear(squeeze_p, lambda ct, x, *, dimensions: [reshape(ct, x.aval.shape)])
batching.batch_rules[squeeze_p] = _squeeze_batch


def expand_dims(array, dimensions: Sequence[int]):
    """Insert size-1 axes at ``dimensions`` (positions in the output; negative ones count from
    the end of the output), as a ``broadcast_in_dim``.

    >>> fx.lax.expand_dims(fx.numpy.ones(3), (0, -1)).shape
    (1, 3, 1)
    """
    aval = get_aval(array)
    ndim_out = aval.ndim + len(dimensions)
    dims = canonical_axes(dimensions, ndim_out, "expand_dims")
    if not dims:
        return array
    shape = list(aval.shape)
    for d in sorted(dims):
        shape.insert(d, 1)
    kept = tuple(i for i in range(ndim_out) if i not in dims)
    return broadcast_in_dim(array, shape, kept)


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """Merge dimensions ``[start_dimension, stop_dimension)`` (Python slice semantics) into one,
    row-major.

    >>> fx.lax.collapse(fx.numpy.ones((2, 3, 4)), 0, 2).shape
    (6, 4)
    """
    shape = get_aval(operand).shape
    lo, hi, _ = builtins.slice(start_dimension, stop_dimension).indices(len(shape))
    if hi < lo:
        raise ValueError(
            f"collapse: empty dimension range [{start_dimension}:{stop_dimension}] of an array "
            f"of shape {shape}"
        )
    return reshape(operand, shape[:lo] + (int(np.prod(shape[lo:hi], dtype=np.int64)),) + shape[hi:])


# --- rev ----------------------------------------------------------------------------------------

rev_p = Primitive("rev")  # params: dimensions (sorted, distinct)


@rev_p.def_abstract_eval
def _rev_abstract_eval(x, *, dimensions):
    if any(not 0 <= d < x.ndim for d in dimensions) or len(set(dimensions)) != len(dimensions):
        raise shape_error("rev", f"dimensions {dimensions} must be distinct axes of the operand", x)
    return x


rev_p.def_impl(lambda x, *, dimensions: np.flip(x, axis=dimensions))


def rev(operand, dimensions: Sequence[int]):
    """Reverse ``operand`` along ``dimensions``. Unlike jax, negative axes are accepted.

    >>> fx.lax.rev(fx.numpy.arange(3), (0,))
    Array([2, 1, 0], dtype=int32)
    """
    dims = tuple(sorted(canonical_axes(dimensions, get_aval(operand).ndim, "rev")))
    if not dims:
        return operand
    return rev_p.bind(operand, dimensions=dims)


def _rev_batch(axis, vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    return rev_p.bind(x, dimensions=tuple(k + (k >= d) for k in dimensions)), d


jvp.deflinear(rev_p)
transpose.deflinear(rev_p, lambda ct, x, *, dimensions: [rev_p.bind(ct, dimensions=dimensions)])
batching.batch_rules[rev_p] = _rev_batch


# --- dynamic_slice and dynamic_update_slice -----------------------------------------------------

dynamic_slice_p = Primitive("dynamic_slice")  # operand, *start_indices; params: slice_sizes
dynamic_update_slice_p = Primitive("dynamic_update_slice")  # operand, update, *start_indices


def _check_starts(name: str, x: ShapedArray, starts: Sequence[ShapedArray], *shown) -> None:
    if len(starts) != x.ndim:
        raise shape_error(
            name, f"needs one start index per operand dimension ({x.ndim}), got {len(starts)}",
            x, *shown, *starts,
        )
    if any(s.shape or not dtypes.is_int(s.dtype) for s in starts):
        raise shape_error(name, "start indices must be integer scalars", x, *shown, *starts)


@dynamic_slice_p.def_abstract_eval
def _dynamic_slice_abstract_eval(x, *starts, slice_sizes):
    _check_starts("dynamic_slice", x, starts)
    if len(slice_sizes) != x.ndim or any(
        not 0 <= n <= d for n, d in zip(slice_sizes, x.shape)
    ):
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
    if len(start_indices) != len(shape):
        raise TypeError(
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
