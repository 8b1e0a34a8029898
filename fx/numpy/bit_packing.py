"""Bit packing: ``packbits`` and ``unpackbits``, on ``uint8`` (NumPy's and jax's dtype for
packed bits) with shifts and masks.
"""

from __future__ import annotations

import operator

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy._promote import canonical_axis, to_array
from fx.numpy.compaction import flat

__all__ = ["packbits", "unpackbits"]


def _bitorder(bitorder: str, name: str) -> str:
    if bitorder not in ("big", "little"):
        raise ValueError(f"{name}: bitorder must be 'big' or 'little', got {bitorder!r}")
    return bitorder


def packbits(a, axis: int | None = None, bitorder: str = "big"):
    """The truth values of ``a`` packed eight to a ``uint8`` along ``axis`` (the flattened
    array when None), padded with zeros to a multiple of 8; ``bitorder='big'`` puts the first
    value in the highest bit.

    >>> fx.numpy.packbits(fx.numpy.array([1, 0, 1, 1, 0, 0, 0, 0, 1]))
    Array([176, 128], dtype=uint8)
    """
    name = "fx.numpy.packbits"
    bitorder = _bitorder(bitorder, name)
    x = to_array(a, name)
    dt = get_aval(x).dtype
    if not (dt == dtypes.bool_ or dtypes.is_int(dt)):
        raise TypeError(f"{name}: expected an integer or boolean array, got {dt}")
    if axis is None:
        x, axis = flat(x), 0
    shape = get_aval(x).shape
    axis = canonical_axis(axis, len(shape), name)
    bits = lax.convert_element_type(
        x if dt == dtypes.bool_ else lax.ne(x, lax.full(shape, 0, dt)), dtypes.uint32)
    n = shape[axis]
    pad = -n % 8
    if pad:
        cfg = [(0, 0, 0)] * len(shape)
        cfg[axis] = (0, pad, 0)
        bits = lax.pad(bits, lax.full((), 0, dtypes.uint32), cfg)
    groups = (n + pad) // 8
    split = shape[:axis] + (groups, 8) + shape[axis + 1:]
    bits = lax.reshape(bits, split)
    weights = np.array([1 << (7 - i) if bitorder == "big" else 1 << i for i in range(8)],
                       np.uint32)
    w = lax.broadcast_in_dim(to_array(weights), split, (axis + 1,))
    packed = lax.reduce_sum(lax.mul(bits, w), (axis + 1,))
    return lax.convert_element_type(packed, dtypes.canonicalize(np.uint8))


def unpackbits(a, axis: int | None = None, count: int | None = None, bitorder: str = "big"):
    """The bits of the ``uint8`` array ``a`` as ``uint8`` zeros and ones along ``axis`` (the
    flattened array when None); ``count`` keeps that many (negative: drops that many from the
    end; more than there are pads with zeros).

    >>> fx.numpy.unpackbits(fx.numpy.array([5], fx.numpy.uint8))
    Array([0, 0, 0, 0, 0, 1, 0, 1], dtype=uint8)
    """
    name = "fx.numpy.unpackbits"
    bitorder = _bitorder(bitorder, name)
    x = to_array(a, name)
    u8 = dtypes.canonicalize(np.uint8)
    if get_aval(x).dtype != u8:
        raise TypeError(f"{name}: expected a uint8 array, got {get_aval(x).dtype}; convert "
                        "with .astype(fx.numpy.uint8)")
    if axis is None:
        x, axis = flat(x), 0
    shape = get_aval(x).shape
    axis = canonical_axis(axis, len(shape), name)
    wide = shape[: axis + 1] + (8,) + shape[axis + 1:]
    xs = lax.broadcast_in_dim(lax.convert_element_type(x, dtypes.uint32), wide,
                              tuple(i for i in range(len(wide)) if i != axis + 1))
    shifts = np.array([7 - i if bitorder == "big" else i for i in range(8)], np.uint32)
    sh = lax.broadcast_in_dim(to_array(shifts), wide, (axis + 1,))
    bits = lax.bitwise_and(lax.shift_right_logical(xs, sh), lax.full(wide, 1, dtypes.uint32))
    out_shape = shape[:axis] + (shape[axis] * 8,) + shape[axis + 1:]
    out = lax.convert_element_type(lax.reshape(bits, out_shape), u8)
    if count is None:
        return out
    total = out_shape[axis]
    count = operator.index(count)
    keep = max(total + count, 0) if count < 0 else count
    if keep <= total:
        return lax.slice_in_dim(out, 0, keep, 1, axis)
    cfg = [(0, 0, 0)] * len(out_shape)
    cfg[axis] = (0, keep - total, 0)
    return lax.pad(out, lax.full((), 0, u8), cfg)
