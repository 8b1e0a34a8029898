"""ONNX rules of the structural primitives: broadcasting, reshaping, transposes, slices,
padding, concatenation, gathers, iota, reversal and cumulative sums.

Every size a rule passes to ONNX as data (``Reshape``'s and ``Expand``'s shapes, ``Slice``'s
ends, ``Range``'s limit) goes through ``ctx.shape_tensor``/``ctx.dim``, so a size that follows
the batch is computed at run time; the parameters that may hold such sizes are the ones each
rule lists in ``shape_params``.

``gather`` moves the indexed axes to the front and is a ``GatherND`` there (fx's gather is
XLA's with every indexed dimension collapsed, which is exactly GatherND's form); ``mode='clip'``
clamps the indices first, fill mode also masks the out-of-range rows with the fill value.
"""

from __future__ import annotations

import numpy as np

from fx.export.onnx_export import Ctx, Sym, Value, register
from fx.lax import primitives as P
from fx.lax.indexing import GatherScatterMode, default_fill_value

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


def _perm(ctx: Ctx, x: Value | str, perm) -> str:
    name = x.name if isinstance(x, Value) else x
    if list(perm) == list(range(len(perm))):
        return name
    return ctx.op("Transpose", name, perm=list(perm))


@register(P.broadcast_in_dim_p, shape_params=("shape",))
def _broadcast_in_dim(ctx: Ctx, x: Value, *, shape, broadcast_dimensions) -> str:
    order = sorted(range(len(broadcast_dimensions)), key=lambda i: broadcast_dimensions[i])
    name = _perm(ctx, x, order)
    new_axes = [d for d in range(len(shape)) if d not in broadcast_dimensions]
    if new_axes:
        name = ctx.op("Unsqueeze", name, ctx.ints(new_axes))
    return ctx.op("Expand", name, ctx.shape_tensor(shape))


@register(P.reshape_p, shape_params=("new_sizes",))
def _reshape(ctx: Ctx, x: Value, *, new_sizes) -> str:
    return ctx.op("Reshape", x, ctx.shape_tensor(new_sizes), allowzero=1)


@register(P.transpose_p)
def _transpose(ctx: Ctx, x: Value, *, permutation) -> str:
    return ctx.op("Transpose", x, perm=list(permutation))


@register(P.squeeze_p)
def _squeeze(ctx: Ctx, x: Value, *, dimensions) -> str:
    if not dimensions:
        return ctx.op("Identity", x)
    return ctx.op("Squeeze", x, ctx.ints(dimensions))


@register(P.concatenate_p)
def _concatenate(ctx: Ctx, *xs: Value, dimension) -> str:
    return ctx.op("Concat", *xs, axis=int(dimension))


@register(P.slice_p, shape_params=("start_indices", "limit_indices"))
def _slice(ctx: Ctx, x: Value, *, start_indices, limit_indices, strides) -> str:
    if x.ndim == 0:
        return ctx.op("Identity", x)
    steps = strides or (1,) * x.ndim
    return ctx.op("Slice", x, ctx.shape_tensor(start_indices), ctx.shape_tensor(limit_indices),
                  ctx.ints(range(x.ndim)), ctx.ints(steps))


@register(P.rev_p)
def _rev(ctx: Ctx, x: Value, *, dimensions) -> str:
    if not dimensions:
        return ctx.op("Identity", x)
    n = len(dimensions)
    return ctx.op("Slice", x, ctx.ints([-1] * n), ctx.ints([INT64_MIN] * n),
                  ctx.ints(dimensions), ctx.ints([-1] * n))


def _clamped_starts(ctx: Ctx, x: Value, starts, sizes) -> str:
    """The 1-D int64 start positions, clamped into ``[0, dim - size]`` as XLA clamps them."""
    cols = [ctx.op("Unsqueeze", ctx.cast(s, np.int64), ctx.ints([0])) for s in starts]
    start = cols[0] if len(cols) == 1 else ctx.op("Concat", *cols, axis=0)
    upper = ctx.shape_tensor([d - s for d, s in zip(x.shape, sizes)])
    return ctx.op("Min", ctx.op("Max", start, ctx.ints([0] * len(cols))), upper)


@register(P.dynamic_slice_p, shape_params=("slice_sizes",))
def _dynamic_slice(ctx: Ctx, x: Value, *starts: Value, slice_sizes) -> str:
    if x.ndim == 0:
        return ctx.op("Identity", x)
    start = _clamped_starts(ctx, x, starts, slice_sizes)
    end = ctx.op("Add", start, ctx.shape_tensor(slice_sizes))
    return ctx.op("Slice", x, start, end, ctx.ints(range(x.ndim)))


@register(P.dynamic_update_slice_p)
def _dynamic_update_slice(ctx: Ctx, x: Value, update: Value, *starts: Value) -> str:
    # ScatterND at the update's positions: a grid of start + offset index rows.
    if x.ndim == 0:
        return ctx.op("Identity", update)
    if any(isinstance(d, Sym) for d in update.shape):
        raise ctx.error("an update whose size follows the batch")
    start = _clamped_starts(ctx, x, starts, update.shape)
    grid = np.stack(np.meshgrid(*[np.arange(n) for n in update.shape], indexing="ij"), -1)
    indices = ctx.op("Add", ctx.const(grid.astype(np.int64)), start)
    return ctx.op("ScatterND", x, indices, update)


@register(P.pad_p)
def _pad(ctx: Ctx, x: Value, padding_value: Value, *, padding_config) -> str:
    name = x.name
    if any(interior for _, _, interior in padding_config):
        raise ctx.error("interior padding (lax.pad with a nonzero interior) has no ONNX "
                        "spelling here yet")
    lo = [max(lo, 0) for lo, _, _ in padding_config]
    hi = [max(hi, 0) for _, hi, _ in padding_config]
    if any(lo) or any(hi):
        name = ctx.op("Pad", name, ctx.ints(lo + hi), padding_value, mode="constant")
    crop_lo = [max(-lo, 0) for lo, _, _ in padding_config]
    crop_hi = [max(-hi, 0) for _, hi, _ in padding_config]
    if any(crop_lo) or any(crop_hi):  # negative padding removes elements
        ends = [-c if c else INT64_MAX for c in crop_hi]
        name = ctx.op("Slice", name, ctx.ints(crop_lo), ctx.ints(ends),
                      ctx.ints(range(x.ndim)))
    return name if name != x.name else ctx.op("Identity", x)


@register(P.iota_p, shape_params=("shape",))
def _iota(ctx: Ctx, *, dtype, shape, dimension) -> str:
    n = ctx.op("Squeeze", ctx.dim(shape[dimension]), ctx.ints([0]))
    line = ctx.op("Range", ctx.scalar(0, np.int64), n, ctx.scalar(1, np.int64))
    axes = [d for d in range(len(shape)) if d != dimension]
    if axes:
        line = ctx.op("Unsqueeze", line, ctx.ints(axes))
    out = ctx.op("Expand", line, ctx.shape_tensor(shape))
    return ctx.op("Cast", out, to=_onnx(dtype))


def _onnx(dtype) -> int:
    from fx.export.onnx_export import onnx_dtype

    return onnx_dtype(dtype)


@register(P.gather_p)
def _gather(ctx: Ctx, operand: Value, indices: Value, *, axes, mode, fill_value) -> str:
    k = len(axes)
    rest = [d for d in range(operand.ndim) if d not in axes]
    moved = _perm(ctx, operand, list(axes) + rest)
    idx = ctx.cast(indices, np.int64)
    if k == 0:  # every row takes the whole operand
        batch = ctx.shape_tensor(indices.shape[:-1])
        shape = ctx.op("Concat", batch, ctx.shape_tensor(operand.shape), axis=0)
        lead = ctx.op("Reshape", moved, ctx.shape_tensor((1,) * len(indices.shape[:-1])
                                                           + operand.shape))
        return ctx.op("Expand", lead, shape)
    upper = ctx.shape_tensor([operand.shape[a] - 1 for a in axes])
    zero = ctx.ints([0] * k)
    safe = ctx.op("Min", ctx.op("Max", idx, zero), upper)
    out = ctx.op("GatherND", moved, safe, batch_dims=0)
    if mode is GatherScatterMode.CLIP:
        return out
    inside = ctx.op("And", ctx.op("GreaterOrEqual", idx, zero),
                    ctx.op("LessOrEqual", idx, upper))
    ok = ctx.op("Cast", ctx.op("ReduceMin", ctx.op("Cast", inside, to=_onnx(np.int32)),
                               ctx.ints([-1]), keepdims=0), to=_onnx(np.bool_))
    if rest:
        ok = ctx.op("Unsqueeze", ok, ctx.ints(range(len(indices.shape) - 1, len(ctx.out_shape))))
    fill = default_fill_value(operand.dtype) if fill_value is None else fill_value
    return ctx.where(ok, out, ctx.scalar(fill, operand.dtype), operand.dtype)


@register(P.cumsum_p)
def _cumsum(ctx: Ctx, x: Value, *, axis, reverse) -> str:
    return ctx.op("CumSum", x, ctx.scalar(int(axis), np.int64), reverse=int(bool(reverse)))
