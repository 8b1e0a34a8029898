"""Structural primitives: creating, slicing, joining and rearranging arrays.

Each primitive is declared with its shape rule and impl, followed by its jvp, transpose and
batching rules. The operands are strictly typed (no broadcasting or promotion); static
parameters (sizes, axes, padding) are Python ints in tuples. ``expand_dims`` and ``collapse``
are wrappers over ``broadcast_in_dim``/``reshape``, as in jax, not primitives of their own.

``dynamic_slice`` and ``dynamic_update_slice`` live in ``fx.lax.dynamic_slicing``.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

import numpy as np

from fx import dtypes
from fx.array import Array
from fx.avals import ShapedArray, physical_trailing
from fx.core import Primitive, get_aval, physical_rules
from fx.interpreters import batching, transpose
from fx.interpreters.batching import bdim_at_front, not_mapped
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
    select_n,
    sub,
)

# --- iota ----------------------------------------------------------------------------------------

iota_p = Primitive("iota")  # params: dtype, shape, dimension


@iota_p.def_abstract_eval
def _iota_abstract_eval(*, dtype, shape, dimension):
    if dtype == dtypes.bool_:
        raise TypeError("iota: dtype must be an integer or floating type, got bool")
    if any(s < 0 for s in shape):  # jax's TypeError (its shape rule)
        raise TypeError(f"iota: negative dimension in shape {shape}; sizes must be >= 0")
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


def _check_slice_lengths(x: ShapedArray, start_indices, limit_indices, strides) -> None:
    # jax's types: start or limit indices of another length are a ValueError, strides a
    # TypeError.
    n = x.ndim
    if len(start_indices) != n or len(limit_indices) != n:
        raise shape_error(
            "slice", f"needs {n} start and limit indices, one per dimension, got "
            f"{len(start_indices)} and {len(limit_indices)}", x, error=ValueError)
    if strides is not None and len(strides) != n:
        raise shape_error("slice", f"needs {n} strides, one per dimension, got {len(strides)}",
                          x)


@slice_p.def_abstract_eval
def _slice_abstract_eval(x, *, start_indices, limit_indices, strides):
    n = x.ndim
    _check_slice_lengths(x, start_indices, limit_indices, strides)
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
    _check_slice_lengths(get_aval(x), start, limit, strides)
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


transpose.deflinear(slice_p, _slice_transpose)
batching.batch_rules[slice_p] = _slice_batch


def _slice_physical(in_avals, out_avals, x, *, start_indices, limit_indices, strides):
    # A key's stored words (the trailing dimensions) are taken whole.
    t = physical_trailing(in_avals[0])
    return slice_p.bind(x, start_indices=start_indices + (0,) * len(t),
                        limit_indices=limit_indices + t,
                        strides=None if strides is None else strides + (1,) * len(t))


physical_rules[slice_p] = _slice_physical


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


transpose.deflinear(concatenate_p, _concatenate_transpose)
batching.batch_rules[concatenate_p] = _concatenate_batch
physical_rules[concatenate_p] = lambda in_avals, out_avals, *xs, dimension: (
    concatenate_p.bind(*xs, dimension=dimension))  # (a key's words trail, untouched)


# --- pad ----------------------------------------------------------------------------------------

pad_p = Primitive("pad")  # params: padding_config: ((lo, hi, interior), ...)


@pad_p.def_abstract_eval
def _pad_abstract_eval(x, padding_value, *, padding_config):
    # jax's types: a dtype that differs is a TypeError, every shape or config error a
    # ValueError.
    if padding_value.shape != ():
        raise shape_error("pad", "padding_value must be a scalar", x, padding_value,
                          error=ValueError)
    if padding_value.dtype != x.dtype:
        raise shape_error("pad", "padding_value must be a scalar of the operand's dtype",
                          x, padding_value)
    if len(padding_config) != x.ndim:
        raise shape_error("pad", f"padding_config needs {x.ndim} (lo, hi, interior) triples, "
                          f"one per dimension, got {len(padding_config)}", x, error=ValueError)
    shape = []
    for d, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise shape_error("pad", "interior padding must be non-negative", x,
                              error=ValueError)
        n = lo + hi + d + max(d - 1, 0) * interior
        if n < 0:
            raise shape_error("pad", f"padding {(lo, hi, interior)} leaves a negative size", x,
                              error=ValueError)
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
            "squeeze", f"dimensions {dimensions} must be sorted, distinct axes of the operand", x,
            error=ValueError,
        )
    for d in dimensions:
        if x.shape[d] != 1:  # jax's ValueError
            raise shape_error(
                "squeeze", f"cannot remove dimension {d} of size {x.shape[d]}: only size-1 "
                "dimensions can be squeezed", x, error=ValueError,
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


transpose.deflinear(squeeze_p, lambda ct, x, *, dimensions: [reshape(ct, x.aval.shape)])
batching.batch_rules[squeeze_p] = _squeeze_batch
physical_rules[squeeze_p] = lambda in_avals, out_avals, x, *, dimensions: squeeze_p.bind(
    x, dimensions=dimensions)


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
    ndim = get_aval(operand).ndim
    dims = tuple(int(d) for d in dimensions)
    # jax's rev raises TypeError for an axis out of range or repeated (its shape rule).
    for d in dims:
        if not -ndim <= d < ndim:
            raise TypeError(f"rev: axis {d} is out of bounds for an array of rank {ndim}")
    if len({d % ndim for d in dims}) != len(dims):
        raise TypeError(f"rev: repeated axis in {dims}; each dimension can be reversed once")
    dims = tuple(sorted(d % ndim for d in dims))
    if not dims:
        return operand
    return rev_p.bind(operand, dimensions=dims)


def _rev_batch(axis, vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    return rev_p.bind(x, dimensions=tuple(k + (k >= d) for k in dimensions)), d


transpose.deflinear(rev_p, lambda ct, x, *, dimensions: [rev_p.bind(ct, dimensions=dimensions)])
batching.batch_rules[rev_p] = _rev_batch
physical_rules[rev_p] = lambda in_avals, out_avals, x, *, dimensions: rev_p.bind(
    x, dimensions=dimensions)
