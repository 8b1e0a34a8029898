"""ONNX rules of the contractions, convolutions, pooling windows and reductions.

``dot_general`` is a ``MatMul`` where its dimension numbers are MatMul's (contract the last lhs
axis with the first of a matrix, or batched matrices with leading batch axes), an ``Einsum``
otherwise. ``conv_general_dilated`` transposes its operands to NCHW/OIHW, runs ``Conv`` and
transposes the result to its output layout (an lhs dilation, the transposed convolutions of
``conv_transpose``, first puts zeros between the input's pixels). ``reduce_window_*`` moves
the windowed axes last and folds the others into N and C, pads explicitly with the
reduction's identity (ONNX pools refuse pads as wide as the window) and runs ``MaxPool``
(``min``: of the negation) or ``AveragePool`` times the window size (``sum``).
"""

from __future__ import annotations

import numpy as np

from fx.export.onnx_batch import dim_product
from fx.export.onnx_graph import Ctx, Value, onnx_dtype, register
from fx.export.onnx_rules_arrays import interior_pad
from fx.lax import primitives as P


def _is_float(dtype) -> bool:
    return np.dtype(dtype).kind == "f"


# --- dot_general --------------------------------------------------------------------------------


@register(P.dot_general_p)
def _dot_general(ctx: Ctx, lhs: Value, rhs: Value, *, dimension_numbers, precision,
                 preferred_element_type) -> str:
    (lc, rc), (lb, rb) = dimension_numbers
    if np.dtype(lhs.dtype) == np.bool_:
        raise ctx.error("a dot of bool operands")
    dtype = preferred_element_type or lhs.dtype
    a, b = ctx.cast(lhs, dtype), ctx.cast(rhs, dtype)
    nb = len(lb)
    if tuple(lc) == (lhs.ndim - 1,) and not lb and rhs.ndim <= 2:
        if tuple(rc) == (0,):
            return ctx.op("MatMul", a, b)
        if rhs.ndim == 2:
            return ctx.op("MatMul", a, ctx.op("Transpose", b, perm=[1, 0]))
    batch = tuple(range(nb))
    if (tuple(lb) == tuple(rb) == batch and lhs.ndim == rhs.ndim == nb + 2
            and tuple(lc) == (nb + 1,) and tuple(rc) == (nb,)):
        return ctx.op("MatMul", a, b)
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    lhs_l = [""] * lhs.ndim
    rhs_l = [""] * rhs.ndim
    for i, j in zip(lb, rb):
        lhs_l[i] = rhs_l[j] = next(letters)
    for i, j in zip(lc, rc):
        lhs_l[i] = rhs_l[j] = next(letters)
    for side in (lhs_l, rhs_l):
        for i, s in enumerate(side):
            if not s:
                side[i] = next(letters)
    out = ([lhs_l[i] for i in lb] + [s for i, s in enumerate(lhs_l) if i not in lc + lb]
           + [s for i, s in enumerate(rhs_l) if i not in rc + rb])
    equation = f"{''.join(lhs_l)},{''.join(rhs_l)}->{''.join(out)}"
    return ctx.op("Einsum", a, b, equation=equation)


# --- convolution --------------------------------------------------------------------------------


def _inverse(perm) -> list[int]:
    out = [0] * len(perm)
    for i, p in enumerate(perm):
        out[p] = i
    return out


def _transposed(ctx: Ctx, x: Value | str, perm) -> str:
    name = x.name if isinstance(x, Value) else x
    if list(perm) == list(range(len(perm))):
        return name
    return ctx.op("Transpose", name, perm=list(perm))


@register(P.conv_general_dilated_p)
def _conv(ctx: Ctx, lhs: Value, rhs: Value, *, window_strides, padding, lhs_dilation,
          rhs_dilation, dimension_numbers, feature_group_count, batch_group_count, precision,
          preferred_element_type) -> str:
    if batch_group_count != 1:
        raise ctx.error(f"batch_group_count={batch_group_count} (a convolution's weight "
                        "gradient) has no ONNX rule")
    if not _is_float(lhs.dtype):
        raise ctx.error(f"ONNX Conv takes floating operands, not {np.dtype(lhs.dtype).name}")
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        raise ctx.error(f"negative padding {tuple(padding)}")
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    dtype = preferred_element_type or lhs.dtype
    x = _transposed(ctx, ctx.cast(lhs, dtype), lhs_spec)
    if any(d != 1 for d in lhs_dilation):  # a transposed convolution: zeros between pixels
        nchw = tuple(lhs.shape[d] for d in lhs_spec)
        x = interior_pad(ctx, Value(x, nchw, np.dtype(dtype)), [0, 0] + [d - 1 for d in
                                                                   lhs_dilation],
                         ctx.scalar(0, dtype)).name
    w = _transposed(ctx, ctx.cast(rhs, dtype), rhs_spec)
    pads = [lo for lo, _ in padding] + [hi for _, hi in padding]
    y = ctx.op("Conv", x, w, strides=list(window_strides), pads=pads,
               dilations=list(rhs_dilation), group=int(feature_group_count))
    return _transposed(ctx, y, _inverse(out_spec))


# --- pooling ------------------------------------------------------------------------------------


def _window_rule(kind: str):
    def rule(ctx: Ctx, x: Value, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation) -> str:
        if any(d != 1 for d in base_dilation):
            raise ctx.error(f"base_dilation={tuple(base_dilation)} has no ONNX rule")
        if not _is_float(x.dtype):
            raise ctx.error(f"ONNX pools take floating operands, not {np.dtype(x.dtype).name}")
        trivial = [d for d in range(x.ndim) if window_dimensions[d] == 1
                   and window_strides[d] == 1 and tuple(padding[d]) == (0, 0)
                   and window_dilation[d] == 1]
        spatial = [d for d in range(x.ndim) if d not in trivial]
        if not spatial:
            return ctx.op("Identity", x)
        if len(spatial) > 3:
            raise ctx.error(f"a window over {len(spatial)} axes (ONNX pools take at most 3)")
        perm = trivial + spatial
        name = _transposed(ctx, x, perm)
        lead = [x.shape[d] for d in trivial]
        in_sp = [x.shape[d] for d in spatial]
        nc = ([dim_product(lead[:-1]), lead[-1]] if len(lead) >= 2 else [1] + lead if lead
              else [1, 1])
        name = ctx.op("Reshape", name, ctx.shape_tensor(nc + in_sp))
        if kind == "min":
            name = ctx.op("Neg", name)
        pads = [padding[d][0] for d in spatial] + [padding[d][1] for d in spatial]
        if any(pads):
            fill = 0.0 if kind == "sum" else -np.inf
            pads = [0, 0] + pads[:len(spatial)] + [0, 0] + pads[len(spatial):]
            name = ctx.op("Pad", name, ctx.ints(pads), ctx.scalar(fill, x.dtype),
                          mode="constant")
        attrs = dict(kernel_shape=[window_dimensions[d] for d in spatial],
                     strides=[window_strides[d] for d in spatial])
        dil = [window_dilation[d] for d in spatial]
        if any(d != 1 for d in dil):
            if kind == "sum" and ctx.exporter.opset < 19:
                raise ctx.error("a dilated sum window needs AveragePool's dilations "
                                "(opset 19 or later)")
            attrs["dilations"] = dil
        if kind == "sum":
            name = ctx.op("AveragePool", name, **attrs)
            size = int(np.prod([window_dimensions[d] for d in spatial]))
            name = ctx.op("Mul", name, ctx.scalar(size, x.dtype))
        else:
            name = ctx.op("MaxPool", name, **attrs)
            if kind == "min":
                name = ctx.op("Neg", name)
        out_sp = [ctx.out_shape[d] for d in spatial]
        name = ctx.op("Reshape", name, ctx.shape_tensor(lead + out_sp))
        return _transposed(ctx, name, _inverse(perm))

    return rule


register(P.reduce_window_max_p)(_window_rule("max"))
register(P.reduce_window_min_p)(_window_rule("min"))
register(P.reduce_window_sum_p)(_window_rule("sum"))


# --- reductions -------------------------------------------------------------------------------


def _reduce(op_type: str, via_int: bool = False):
    def rule(ctx: Ctx, x: Value, *, axes) -> str:
        if not axes:
            return ctx.op("Identity", x)
        is_bool = np.dtype(x.dtype) == np.bool_
        src = ctx.cast(x, np.int32) if is_bool else x.name
        if via_int and not is_bool:
            raise ctx.error(f"a bitwise reduction of {np.dtype(x.dtype).name} operands")
        out = ctx.op(op_type, src, ctx.ints(axes), keepdims=0)
        return ctx.op("Cast", out, to=onnx_dtype(np.bool_)) if is_bool else out

    return rule


register(P.reduce_sum_p)(_reduce("ReduceSum"))
register(P.reduce_max_p)(_reduce("ReduceMax"))
register(P.reduce_min_p)(_reduce("ReduceMin"))
register(P.reduce_prod_p)(_reduce("ReduceProd"))
register(P.reduce_or_p)(_reduce("ReduceMax", via_int=True))
register(P.reduce_and_p)(_reduce("ReduceMin", via_int=True))


@register(P.reduce_xor_p)
def _reduce_xor(ctx: Ctx, x: Value, *, axes) -> str:
    if np.dtype(x.dtype) != np.bool_:
        raise ctx.error(f"a bitwise reduction of {np.dtype(x.dtype).name} operands")
    if not axes:
        return ctx.op("Identity", x)
    count = ctx.op("ReduceSum", ctx.cast(x, np.int32), ctx.ints(axes), keepdims=0)
    odd = ctx.op("Mod", count, ctx.scalar(2, np.int32))
    return ctx.op("Equal", odd, ctx.scalar(1, np.int32))


def _arg(op_type: str):
    def rule(ctx: Ctx, x: Value, *, axes, index_dtype) -> str:
        src = ctx.cast(x, np.int32) if np.dtype(x.dtype) == np.bool_ else x.name
        out = ctx.op(op_type, src, axis=int(axes[0]), keepdims=0)
        return ctx.op("Cast", out, to=onnx_dtype(index_dtype))

    return rule


register(P.argmax_p)(_arg("ArgMax"))
register(P.argmin_p)(_arg("ArgMin"))
