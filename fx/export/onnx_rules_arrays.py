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

from fx.export.onnx_batch import Sym, dim_product
from fx.export.onnx_graph import Ctx, Value, onnx_dtype, register
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


def interior_pad(ctx: Ctx, x: Value, interior, value: str) -> Value:
    """``x`` with ``interior[d]`` copies of ``value`` between neighbours along each axis ``d``:
    per axis, a new axis after it padded to ``1 + p``, merged into it, the tail cut off."""
    name, shape = x.name, list(x.shape)
    for d, p in enumerate(interior):
        if not p:
            continue
        name = ctx.op("Unsqueeze", name, ctx.ints([d + 1]))
        pads = [0] * (len(shape) + 1) * 2
        pads[len(shape) + 1 + d + 1] = p
        name = ctx.op("Pad", name, ctx.ints(pads), value, mode="constant")
        merged = shape[d] * (1 + p)
        name = ctx.op("Reshape", name, ctx.shape_tensor(shape[:d] + [merged] + shape[d + 1:]),
                      allowzero=1)
        shape[d] = merged - p
        name = ctx.op("Slice", name, ctx.ints([0]), ctx.shape_tensor([shape[d]]),
                      ctx.ints([d]))
    return Value(name, tuple(shape), x.dtype)


@register(P.pad_p)
def _pad(ctx: Ctx, x: Value, padding_value: Value, *, padding_config) -> str:
    original = x.name
    if any(interior for _, _, interior in padding_config):
        if any(isinstance(d, Sym) and p for d, (_, _, p) in zip(x.shape, padding_config)):
            raise ctx.error("interior padding of the batch axis")
        x = interior_pad(ctx, x, [p for _, _, p in padding_config], padding_value.name)
    name = x.name
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
    return name if name != original else ctx.op("Identity", name)


@register(P.iota_p, shape_params=("shape",))
def _iota(ctx: Ctx, *, dtype, shape, dimension) -> str:
    n = ctx.op("Squeeze", ctx.dim(shape[dimension]), ctx.ints([0]))
    line = ctx.op("Range", ctx.scalar(0, np.int64), n, ctx.scalar(1, np.int64))
    axes = [d for d in range(len(shape)) if d != dimension]
    if axes:
        line = ctx.op("Unsqueeze", line, ctx.ints(axes))
    out = ctx.op("Expand", line, ctx.shape_tensor(shape))
    return ctx.op("Cast", out, to=onnx_dtype(dtype))




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
    if mode in (GatherScatterMode.CLIP, GatherScatterMode.PROMISE_IN_BOUNDS):
        return out
    inside = ctx.op("And", ctx.op("GreaterOrEqual", idx, zero),
                    ctx.op("LessOrEqual", idx, upper))
    ok = ctx.op("Cast", ctx.op("ReduceMin", ctx.op("Cast", inside, to=onnx_dtype(np.int32)),
                               ctx.ints([-1]), keepdims=0), to=onnx_dtype(np.bool_))
    if rest:
        ok = ctx.op("Unsqueeze", ok, ctx.ints(range(len(indices.shape) - 1, len(ctx.out_shape))))
    fill = default_fill_value(operand.dtype) if fill_value is None else fill_value
    return ctx.where(ok, out, ctx.scalar(fill, operand.dtype), operand.dtype)


@register(P.cumsum_p)
def _cumsum(ctx: Ctx, x: Value, *, axis, reverse) -> str:
    return ctx.op("CumSum", x, ctx.scalar(int(axis), np.int64), reverse=int(bool(reverse)))


def _logaddexp(ctx: Ctx, a: str, b: str, dtype) -> str:
    top = ctx.op("Max", a, b)
    gap = ctx.op("Neg", ctx.op("Abs", ctx.op("Sub", a, b)))
    tail = ctx.op("Log", ctx.op("Add", ctx.scalar(1, dtype), ctx.op("Exp", gap)))
    # Two -inf operands: their difference is NaN, the sum's log is -inf.
    both_inf = ctx.op("IsInf", top, detect_positive=0)
    return ctx.op("Where", both_inf, top, ctx.op("Add", top, tail))


def _cumulative(kind: str):
    """``cumprod``/``cummax``/``cummin``/``cumlogsumexp`` as a Hillis-Steele scan: after the
    steps 1, 2, 4, ... each element has combined all those before it (the axis must have a
    static length). Exact for max and min; the products and log-sum-exps associate
    differently from fx's sequential loop, so they agree to rounding."""

    def rule(ctx: Ctx, x: Value, *, axis, reverse) -> str:
        n = x.shape[axis]
        if isinstance(n, Sym):
            raise ctx.error(f"a cumulative {kind} along the batch axis")
        name = x.name
        if np.dtype(x.dtype) == np.bool_:
            raise ctx.error(f"a cumulative {kind} of bools")
        if reverse:
            name = ctx.op("Slice", name, ctx.ints([-1]), ctx.ints([INT64_MIN]),
                          ctx.ints([axis]), ctx.ints([-1]))
        identity = {"prod": 1, "max": _extreme(np.dtype(x.dtype), False),
                    "min": _extreme(np.dtype(x.dtype), True),
                    "logsumexp": -np.inf}[kind]
        step = 1
        while step < n:
            pads = [0] * (2 * x.ndim)
            pads[axis] = step
            shifted = ctx.op("Pad", ctx.op("Slice", name, ctx.ints([0]), ctx.ints([n - step]),
                                           ctx.ints([axis])),
                             ctx.ints(pads), ctx.scalar(identity, x.dtype), mode="constant")
            if kind == "logsumexp":
                name = _logaddexp(ctx, name, shifted, x.dtype)
            else:
                name = ctx.op({"prod": "Mul", "max": "Max", "min": "Min"}[kind], name, shifted)
            step *= 2
        if reverse:
            name = ctx.op("Slice", name, ctx.ints([-1]), ctx.ints([INT64_MIN]),
                          ctx.ints([axis]), ctx.ints([-1]))
        return name if name != x.name else ctx.op("Identity", name)

    return rule


register(P.cumprod_p)(_cumulative("prod"))
register(P.cummax_p)(_cumulative("max"))
register(P.cummin_p)(_cumulative("min"))
register(P.cumlogsumexp_p)(_cumulative("logsumexp"))


def _scatter_rule(reduction: str):
    """``scatter_add/mul/min/max`` as ``ScatterND`` on the operand with the indexed axes in
    front (repeated indices combine, as in fx); in fill/drop mode an out-of-range row's
    update becomes the reduction's identity at a clamped position."""

    def rule(ctx: Ctx, operand: Value, indices: Value, updates: Value, *, axes, mode) -> str:
        k = len(axes)
        if k == 0:
            raise ctx.error("a scatter with no indexed axes")
        rest = [d for d in range(operand.ndim) if d not in axes]
        perm = list(axes) + rest
        moved = _perm(ctx, operand, perm)
        idx = ctx.cast(indices, np.int64)
        upper = ctx.shape_tensor([operand.shape[a] - 1 for a in axes])
        zero = ctx.ints([0] * k)
        safe = ctx.op("Min", ctx.op("Max", idx, zero), upper)
        upd = updates.name
        if mode is not GatherScatterMode.CLIP:
            inside = ctx.op("And", ctx.op("GreaterOrEqual", idx, zero),
                            ctx.op("LessOrEqual", idx, upper))
            ok = ctx.op("Cast", ctx.op("ReduceMin", ctx.op("Cast", inside, to=onnx_dtype(np.int32)),
                                       ctx.ints([-1]), keepdims=0), to=onnx_dtype(np.bool_))
            if rest:
                ok = ctx.op("Unsqueeze", ok, ctx.ints(range(indices.ndim - 1, updates.ndim)))
            identity = _IDENTITY[reduction](np.dtype(operand.dtype))
            upd = ctx.where(ok, upd, ctx.scalar(identity, operand.dtype), operand.dtype)
        out = ctx.op("ScatterND", moved, safe, upd, reduction=reduction)
        inverse = [0] * len(perm)
        for i, p in enumerate(perm):
            inverse[p] = i
        return _perm(ctx, out, inverse)

    return rule


MAX_SCATTER_ROWS = 4096  # the last-writer search compares every pair of rows


@register(P.scatter_p)
def _scatter_set(ctx: Ctx, operand: Value, indices: Value, updates: Value, *, axes,
                 mode) -> str:
    """``scatter`` (set) as a ``ScatterND`` that no row order can change: every row writes
    the update of the last row with its index (fx keeps the last update; ScatterND leaves
    repeated indices unspecified). Out-of-range rows in drop mode write to an extra slot past
    the end of each indexed axis, sliced off afterwards."""
    k = len(axes)
    n = dim_product(indices.shape[:-1])
    if k == 0 or isinstance(n, Sym) or n > MAX_SCATTER_ROWS:
        raise ctx.error(f"a scatter of {n} rows on {k} axes (the last-writer search takes "
                        f"1 to {MAX_SCATTER_ROWS} rows with a static count)")
    rest = [d for d in range(operand.ndim) if d not in axes]
    perm = list(axes) + rest
    moved = _perm(ctx, operand, perm)
    sizes = [operand.shape[a] for a in axes]
    rest_shape = [operand.shape[d] for d in rest]
    rows = ctx.op("Reshape", ctx.cast(indices, np.int64), ctx.ints([n, k]))
    upd = ctx.op("Reshape", updates, ctx.shape_tensor([n] + rest_shape), allowzero=1)
    upper = ctx.shape_tensor([d - 1 for d in sizes])
    zero = ctx.ints([0] * k)
    safe = ctx.op("Min", ctx.op("Max", rows, zero), upper)
    drop = mode is not GatherScatterMode.CLIP
    if drop:
        inside = ctx.op("And", ctx.op("GreaterOrEqual", rows, zero),
                        ctx.op("LessOrEqual", rows, upper))
        ok = ctx.op("Cast", ctx.op("ReduceMin", ctx.op("Cast", inside, to=onnx_dtype(np.int32)),
                                   ctx.ints([1]), keepdims=1), to=onnx_dtype(np.bool_))
        safe = ctx.op("Where", ok, safe, ctx.shape_tensor(sizes))  # the extra slot
        pads = [0] * (2 * operand.ndim)
        for a in range(k):
            pads[operand.ndim + a] = 1
        fill = ctx.scalar(np.zeros((), operand.dtype), operand.dtype)
        moved = ctx.op("Pad", moved, ctx.ints(pads), fill, mode="constant")
        sizes = [d + 1 for d in sizes]
    strides, acc = [], 1
    for d in reversed(sizes):
        strides.insert(0, acc)
        acc = d * acc
    lin = ctx.op("ReduceSum", ctx.op("Mul", safe, ctx.shape_tensor(strides)), ctx.ints([1]),
                 keepdims=0)
    same = ctx.op("Equal", ctx.op("Unsqueeze", lin, ctx.ints([1])),
                  ctx.op("Unsqueeze", lin, ctx.ints([0])))
    later = ctx.const(np.triu(np.ones((n, n), np.bool_)))
    order = ctx.const(np.broadcast_to(np.arange(n, dtype=np.int64), (n, n)))
    last = ctx.op("ReduceMax", ctx.op("Where", ctx.op("And", same, later), order,
                                      ctx.scalar(-1, np.int64)), ctx.ints([1]), keepdims=0)
    out = ctx.op("ScatterND", moved, safe, ctx.op("Gather", upd, last, axis=0))
    if drop:
        out = ctx.op("Slice", out, ctx.ints([0] * k), ctx.shape_tensor([d - 1 for d in sizes]),
                     ctx.ints(range(k)))
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return _perm(ctx, out, inverse)


def _extreme(dtype: np.dtype, top: bool):
    if dtype.kind == "f":
        return np.inf if top else -np.inf
    if dtype == np.bool_:
        return top
    info = np.iinfo(dtype)
    return info.max if top else info.min


_IDENTITY = {"add": lambda dt: 0, "mul": lambda dt: 1, "min": lambda dt: _extreme(dt, True),
             "max": lambda dt: _extreme(dt, False)}
register(P.scatter_add_p)(_scatter_rule("add"))
register(P.scatter_mul_p)(_scatter_rule("mul"))
register(P.scatter_min_p)(_scatter_rule("min"))
register(P.scatter_max_p)(_scatter_rule("max"))


@register(P.sort_p)
def _sort(ctx: Ctx, *operands: Value, dimension, is_stable, num_keys) -> list[str]:
    """``TopK`` (smallest first, over the whole axis): ONNX breaks its ties by the lower index,
    so it is a stable sort; the other operands follow the key through ``GatherElements``."""
    if num_keys != 1:
        raise ctx.error(f"a sort on {num_keys} keys (ONNX's TopK takes one)")
    key = operands[0]
    src = ctx.cast(key, np.int32) if np.dtype(key.dtype) == np.bool_ else key.name
    k = ctx.dim(key.shape[dimension])
    values, order = ctx.op("TopK", src, k, n_out=2, axis=int(dimension), largest=0, sorted=1)
    outs = [ctx.cast(Value(values, key.shape, np.dtype(np.int32)), key.dtype)
            if np.dtype(key.dtype) == np.bool_ else values]
    for x in operands[1:]:
        outs.append(ctx.op("GatherElements", x, order, axis=int(dimension)))
    return outs
