"""ONNX rules of the elementwise primitives: arithmetic, comparisons, logic, selection, casts
and the floating-point functions.

Most are one ONNX operator (``Add``, ``Exp``, ``Equal`` ...): the operator their record names
(``fx.lax.elementwise_record``, its ``onnx`` field), registered by :func:`_direct` for every
record, so a new record with an operator needs no line here. The rest are written below (some
through the family helper :func:`_composed`), in a few operators with fx's semantics: ``rem``
is C's truncated remainder (``Mod`` with ``fmod=1``), ``round`` away from zero,
``integer_pow`` by repeated squaring (exact for integers), ``select_n`` on an int32 selector as
nested ``Where`` (clamped as fx's impl clamps), ordering comparisons of bools through int32
(ONNX orders only numbers), shifts through the unsigned type of the same width,
``log1p``/``expm1`` with Goldberg's and Kahan's corrections (relative precision near 0).
``erfc`` is ``1 - erf``: exact to rounding in absolute terms, not in its far tail.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from fx.export.onnx_graph import Ctx, Value, register
from fx.lax import primitives as P
from fx.lax.elementwise_record import records


def _is_float(v: Value) -> bool:
    return np.dtype(v.dtype).kind == "f" or np.dtype(v.dtype).name == "bfloat16"


def _is_bool(v: Value) -> bool:
    return np.dtype(v.dtype) == np.bool_


def _one_op(op_type: str, ctx: Ctx, *args: Value, **params) -> str:
    return ctx.op(op_type, *args)


def _formula(expr, ctx: Ctx, *args: Value, **params) -> str:
    """A record's ONNX formula: ``(op_type, operand, ...)``, operands by position or nested."""

    def build(e):
        if isinstance(e, int):
            return args[e]
        op_type, *operands = e
        return ctx.op(op_type, *(build(o) for o in operands))

    out = build(expr)
    return ctx.op("Identity", out) if isinstance(out, Value) else out


def _direct(prim, onnx: str | tuple) -> None:
    """``prim`` as its record's ONNX operator (applied to every operand) or formula."""
    register(prim)(partial(_one_op, onnx) if isinstance(onnx, str) else partial(_formula, onnx))


# Every elementwise record with an ONNX operator of its own (fx.lax.elementwise_record), and
# add_any, the interpreters' sum of tangents.
for _record in records():
    if _record.onnx is not None:
        _direct(_record.primitive, _record.onnx)
_direct(P.add_any_p, "Add")


@register(P.rem_p)
def _rem(ctx: Ctx, x: Value, y: Value) -> str:
    return ctx.op("Mod", x, y, fmod=1)  # the sign of the dividend, for ints and floats


@register(P.ne_p)
def _ne(ctx: Ctx, x: Value, y: Value) -> str:
    return ctx.op("Not", ctx.op("Equal", x, y))


def _ordered(op_type: str, ctx: Ctx, x: Value, y: Value) -> str:
    if _is_bool(x):  # ONNX orders numbers only
        return ctx.op(op_type, ctx.cast(x, np.int32), ctx.cast(y, np.int32))
    return ctx.op(op_type, x, y)


for _prim, _op in [(P.lt_p, "Less"), (P.le_p, "LessOrEqual"), (P.gt_p, "Greater"),
                   (P.ge_p, "GreaterOrEqual")]:
    register(_prim)(partial(_ordered, _op))


def _logical(bool_op: str, int_op: str, ctx: Ctx, *args: Value) -> str:
    return ctx.op(bool_op if _is_bool(args[0]) else int_op, *args)


for _prim, _ops in [(P.and_p, ("And", "BitwiseAnd")), (P.or_p, ("Or", "BitwiseOr")),
                    (P.xor_p, ("Xor", "BitwiseXor")), (P.not_p, ("Not", "BitwiseNot"))]:
    register(_prim)(partial(_logical, *_ops))


def _shift(direction: str, ctx: Ctx, x: Value, y: Value) -> str:
    # ONNX shifts unsigned integers only; a shift by the width or more is 0, as in fx.
    bits = np.dtype(x.dtype).itemsize * 8
    unsigned = np.dtype(f"uint{bits}")
    shifted = ctx.op("BitShift", ctx.cast(x, unsigned), ctx.cast(y, unsigned),
                     direction=direction)
    too_far = ctx.op("Or", ctx.op("Less", y, ctx.scalar(0, y.dtype)),
                     ctx.op("GreaterOrEqual", y, ctx.scalar(bits, y.dtype)))
    out = ctx.op("Where", too_far, ctx.scalar(0, unsigned), shifted)
    return ctx.cast(Value(out, x.shape, unsigned), x.dtype)


register(P.shift_left_p)(partial(_shift, "LEFT"))
register(P.shift_right_logical_p)(partial(_shift, "RIGHT"))


@register(P.select_n_p)
def _select_n(ctx: Ctx, which: Value, *cases: Value) -> str:
    if len(cases) == 1:
        return ctx.op("Identity", cases[0])
    if _is_bool(which):
        return ctx.where(which, cases[1], cases[0], cases[0].dtype)
    out = cases[0].name
    for i, case in enumerate(cases[1:], 1):  # index clamped into range, as fx's impl does
        pick = ctx.op("GreaterOrEqual", which, ctx.scalar(i, which.dtype))
        out = ctx.where(pick, case, out, case.dtype)
    return out


@register(P.clamp_p)
def _clamp(ctx: Ctx, lo: Value, x: Value, hi: Value) -> str:
    return ctx.op("Min", ctx.op("Max", x, lo), hi)


@register(P.convert_element_type_p)
def _convert(ctx: Ctx, x: Value, *, new_dtype, weak_type) -> str:
    if np.dtype(new_dtype) == np.bool_ and not _is_bool(x):
        return ctx.op("Not", ctx.op("Equal", x, ctx.scalar(0, x.dtype)))
    return ctx.op("Identity", ctx.cast(x, new_dtype))


# --- floating functions spelled in several operators ---------------------------------------------


def _composed(prim, build) -> None:
    @register(prim)
    def rule(ctx: Ctx, x: Value, **params) -> str:
        return build(ctx, x, lambda v: ctx.scalar(v, x.dtype))


_composed(P.exp2_p, lambda ctx, x, c: ctx.op("Pow", c(2), x))


@register(P.log1p_p)
def _log1p(ctx: Ctx, x: Value) -> str:
    # Goldberg's trick: log(u) * x / (u - 1) with u = 1 + x cancels u's rounding error, so
    # tiny x keep their relative precision (log(1 + x) alone returns 0 below one ulp of 1).
    one = ctx.scalar(1, x.dtype)
    u = ctx.op("Add", x, one)
    log_u = ctx.op("Log", u)
    scaled = ctx.op("Div", ctx.op("Mul", log_u, x), ctx.op("Sub", u, one))
    exact = ctx.op("Or", ctx.op("Equal", u, one), ctx.op("IsInf", u))
    return ctx.op("Where", exact, ctx.op("Where", ctx.op("Equal", u, one), x, log_u), scaled)


@register(P.expm1_p)
def _expm1(ctx: Ctx, x: Value) -> str:
    # Kahan's trick: (u - 1) * x / log(u) with u = exp(x), exact where u rounds to 1.
    one = ctx.scalar(1, x.dtype)
    u = ctx.op("Exp", x)
    um1 = ctx.op("Sub", u, one)
    scaled = ctx.op("Div", ctx.op("Mul", um1, x), ctx.op("Log", u))
    plain = ctx.op("Or", ctx.op("IsInf", u), ctx.op("Equal", um1, ctx.scalar(-1, x.dtype)))
    return ctx.op("Where", ctx.op("Equal", u, one), x, ctx.op("Where", plain, um1, scaled))

_composed(P.rsqrt_p, lambda ctx, x, c: ctx.op("Reciprocal", ctx.op("Sqrt", x)))
_composed(P.cbrt_p, lambda ctx, x, c: ctx.op(
    "Mul", ctx.op("Sign", x), ctx.op("Pow", ctx.op("Abs", x), c(1 / 3))))
_composed(P.is_finite_p, lambda ctx, x, c: ctx.op(
    "Not", ctx.op("Or", ctx.op("IsInf", x), ctx.op("IsNaN", x))))


@register(P.round_p)
def _round(ctx: Ctx, x: Value, *, rounding_method) -> str:
    if rounding_method == 1:
        return ctx.op("Round", x)  # half to even
    # Away from zero: the integer part, plus one where the (exact) fraction is at least 1/2
    # (adding 0.5 before flooring would round 0.49999997 up).
    magnitude = ctx.op("Abs", x)
    whole = ctx.op("Floor", magnitude)
    frac = ctx.op("Sub", magnitude, whole)
    up = ctx.cast(ctx.op("GreaterOrEqual", frac, ctx.scalar(0.5, x.dtype)), x.dtype)
    return ctx.op("Mul", ctx.op("Sign", x), ctx.op("Add", whole, up))


@register(P.integer_pow_p)
def _integer_pow(ctx: Ctx, x: Value, *, y: int) -> str:
    if y == 0:
        return ctx.op("Expand", ctx.scalar(1, x.dtype), ctx.op("Shape", x))
    acc, base_, n = None, x.name, abs(y)
    while n:  # repeated squaring: exact for integers, as fx's impl
        if n & 1:
            acc = base_ if acc is None else ctx.op("Mul", acc, base_)
        n >>= 1
        if n:
            base_ = ctx.op("Mul", base_, base_)
    if y < 0:
        return ctx.op("Reciprocal", acc)
    return ctx.op("Identity", acc) if acc == x.name else acc


@register(P.atan2_p)
def _atan2(ctx: Ctx, y: Value, x: Value) -> str:
    c = partial(ctx.scalar, dtype=x.dtype)
    base_ = ctx.op("Atan", ctx.op("Div", y, x))
    up = ctx.op("Where", ctx.op("Less", y, c(0)), c(-np.pi), c(np.pi))
    left = ctx.op("Add", base_, up)  # x < 0: the angle of the opposite quadrant
    vertical = ctx.op("Where", ctx.op("Less", y, c(0)), c(-np.pi / 2),
                      ctx.op("Where", ctx.op("Greater", y, c(0)), c(np.pi / 2), c(0)))
    out = ctx.op("Where", ctx.op("Less", x, c(0)), left, base_)
    return ctx.op("Where", ctx.op("Equal", x, c(0)), vertical, out)


@register(P.erfc_p)
def _erfc(ctx: Ctx, x: Value) -> str:
    return ctx.op("Sub", ctx.scalar(1, x.dtype), ctx.op("Erf", x))
