"""Elementwise primitives: one record each (``fx.lax.elementwise_record``: NumPy impl, accepted
dtypes, derivative, kernel spelling, ONNX operator, fx.numpy name), declared by
``elementwise(...)``, plus the primitives a record cannot hold (``round``, ``integer_pow`` and
``select_n`` take parameters or a selector) and the transposes of the linear ones.

Operands of an n-ary elementwise primitive have one dtype and either equal shapes or rank 0
(a scalar operand broadcasts, so ``x * 2.0`` stays ``mul x 2.0:f32[]`` in a jaxpr). The
user-facing numpy layer does broadcasting and promotion before reaching here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fx import dtypes
from fx.array import Array
from fx.avals import ShapedArray, physical_trailing
from fx.core import Primitive, get_aval, physical_rules
from fx.interpreters import batching, jvp, transpose
from fx.interpreters.jvp import Zero
from fx.interpreters.transpose import is_undefined, unbroadcast
from fx.lax import extrema
from fx.lax.base import broadcast_in_dim, full, shape_error
from fx.lax.convert import (  # noqa: F401  (re-exported: part of the elementwise family)
    _convert_impl,
    bitcast_convert_type,
    bitcast_convert_type_p,
    convert_element_type,
    convert_element_type_p,
)
from fx.lax.elementwise_record import (  # noqa: F401  (re-exported: the family helpers)
    _KIND_NAMES,
    ANY,
    BOOL,
    COMPLEX,
    FLOAT,
    INEXACT,
    INT,
    INT_OR_BOOL,
    NUMERIC,
    ORDERED,
    REAL,
    ZERO,
    Kernel,
    _check_kind,
    _coerce,
    _function,
    _is_python_scalar,
    _nary_shape,
    _via_f32,
    _via_f64,
    _zero_jvp,
    call,
    compare,
    complex_call,
    elementwise,
    infix,
    libm,
    naryop,
    on,
    record_of,
    unop,
)

# --- unary -------------------------------------------------------------------------------------
# One record each (see fx.lax.elementwise_record): the kernel spellings, ONNX operators and
# fx.numpy names here are the only place they are written.


def _sign(x):
    # As jax (and C's copysign-based kernels): the sign of a zero is that zero, -0.0 included
    # (NumPy's sign gives +0.0 for -0.0).
    s = np.sign(x)
    return np.where(x == 0, x, s) if s.dtype.kind == "f" else s


def _logistic(x):
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    # Stable on both tails: exp of a non-positive number only.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


def _const(x, value):
    """A weakly typed scalar with ``x``'s dtype (for constants inside rules)."""
    return Array(np.asarray(value, dtype=get_aval(x).dtype), weak_type=True)


# The C dialect computes float32 exp, log, log1p, expm1 and tanh with the prelude's
# vectorizable polynomials; the others call libm.
neg_p = elementwise("neg", np.negative, NUMERIC, jvp=lambda t, ans, x: neg(t), cheap=True,
                    kernel=Kernel({"*": "(-{0})"}) | complex_call("neg", 1), onnx="Neg",
                    numpy="negative", exact=True)
sign_p = elementwise("sign", _sign, NUMERIC, jvp=ZERO, cheap=True, onnx="Sign", numpy="sign",
                     kernel=Kernel({"f32": "fx_signf({0})", "f64": "fx_sign({0})",
                                    "*": "(({0} > 0) - ({0} < 0))"}), exact="real")
floor_p = elementwise("floor", np.floor, jvp=ZERO, kernel=libm("floor"), onnx="Floor",
                      numpy="floor", cheap=True, exact=True)
ceil_p = elementwise("ceil", np.ceil, jvp=ZERO, kernel=libm("ceil"), onnx="Ceil", numpy="ceil",
                     cheap=True, exact=True)
round_p = Primitive("round")  # params: rounding_method
# complex: the real modulus (type rule and jvp in fx.lax.complex_parts)
abs_p = elementwise("abs", np.abs, NUMERIC, onnx="Abs", numpy="absolute", cheap=True,
                    kernel=Kernel({"f32": "fabsf({0})", "f64": "fabs({0})", "uint": "{0}",
                                   "*": "({0} < 0 ? -{0} : {0})"}, libm=("fabs",))
                    | complex_call("abs", 1), exact="real")
# x * x, one rounding (exact on real operands), as jax's square_p.
square_p = elementwise("square", np.square, NUMERIC,
                       jvp=lambda t, ans, x: mul(t, mul(_const(x, 2), x)),
                       kernel=Kernel(formula=("mul", 0, 0)), onnx=("Mul", 0, 0), numpy="square",
                       cheap=True, exact="real")
exp_p = elementwise("exp", np.exp, INEXACT, jvp=lambda t, ans, x: mul(t, ans), onnx="Exp",
                    kernel=libm("exp") | on("c", f32="fx_expf({0})"), numpy="exp")
exp2_p = elementwise("exp2", np.exp2, INEXACT, kernel=libm("exp2"), numpy="exp2",
                     jvp=lambda t, ans, x: mul(t, mul(ans, _const(x, np.log(2)))))
log_p = elementwise("log", np.log, INEXACT, jvp=lambda t, ans, x: div(t, x), onnx="Log",
                    kernel=libm("log") | on("c", f32="fx_logf({0})"), numpy="log")
log1p_p = elementwise("log1p", np.log1p, INEXACT, numpy="log1p",
                      jvp=lambda t, ans, x: div(t, add(x, _const(x, 1))),
                      kernel=libm("log1p") | on("c", f32="fx_log1pf({0})"))
expm1_p = elementwise("expm1", np.expm1, INEXACT, numpy="expm1",
                      jvp=lambda t, ans, x: mul(t, add(ans, _const(x, 1))),
                      kernel=libm("expm1") | on("c", f32="fx_expm1f({0})"))
sqrt_p = elementwise("sqrt", np.sqrt, INEXACT, kernel=libm("sqrt"), onnx="Sqrt", numpy="sqrt",
                     jvp=lambda t, ans, x: div(t, mul(ans, _const(x, 2))), exact="real")
rsqrt_p = elementwise("rsqrt", lambda x: 1 / np.sqrt(x), INEXACT,
                      jvp=lambda t, ans, x: mul(t, mul(div(ans, x), _const(x, -0.5))),
                      kernel=Kernel({"f32": "(1.0f / sqrtf({0}))", "f64": "(1.0 / sqrt({0}))"},
                                    libm=("sqrt",)))
cbrt_p = elementwise("cbrt", np.cbrt, kernel=libm("cbrt"), numpy="cbrt",
                     jvp=lambda t, ans, x: mul(t, div(ans, mul(x, _const(x, 3)))))
tanh_p = elementwise("tanh", np.tanh, INEXACT, onnx="Tanh", numpy="tanh",
                     jvp=lambda t, ans, x: mul(t, sub(_const(x, 1), mul(ans, ans))),
                     kernel=libm("tanh") | on("c", f32="fx_tanhf({0})"))
logistic_p = elementwise("logistic", _logistic, INEXACT, onnx="Sigmoid",
                         jvp=lambda t, ans, x: mul(t, mul(ans, sub(_const(x, 1), ans))),
                         kernel=Kernel({"f32": "fx_logisticf({0})", "f64": "fx_logistic({0})"}))
sin_p = elementwise("sin", np.sin, INEXACT, jvp=lambda t, ans, x: mul(t, cos(x)),
                    kernel=libm("sin"), onnx="Sin", numpy="sin")
cos_p = elementwise("cos", np.cos, INEXACT, jvp=lambda t, ans, x: neg(mul(t, sin(x))),
                    kernel=libm("cos"), onnx="Cos", numpy="cos")
tan_p = elementwise("tan", np.tan, INEXACT, kernel=libm("tan"), onnx="Tan", numpy="tan",
                    jvp=lambda t, ans, x: mul(t, add(_const(x, 1), mul(ans, ans))))
asin_p = elementwise("asin", np.arcsin, INEXACT, kernel=libm("asin"), onnx="Asin",
                     numpy="arcsin",
                     jvp=lambda t, ans, x: mul(t, rsqrt(sub(_const(x, 1), mul(x, x)))))
acos_p = elementwise("acos", np.arccos, INEXACT, kernel=libm("acos"), onnx="Acos",
                     numpy="arccos",
                     jvp=lambda t, ans, x: neg(mul(t, rsqrt(sub(_const(x, 1), mul(x, x))))))
atan_p = elementwise("atan", np.arctan, INEXACT, kernel=libm("atan"), onnx="Atan",
                     numpy="arctan", jvp=lambda t, ans, x: div(t, add(_const(x, 1), mul(x, x))))
sinh_p = elementwise("sinh", np.sinh, INEXACT, jvp=lambda t, ans, x: mul(t, cosh(x)),
                     kernel=libm("sinh"), onnx="Sinh", numpy="sinh")
cosh_p = elementwise("cosh", np.cosh, INEXACT, jvp=lambda t, ans, x: mul(t, sinh(x)),
                     kernel=libm("cosh"), onnx="Cosh", numpy="cosh")
asinh_p = elementwise("asinh", np.arcsinh, INEXACT, kernel=libm("asinh"), onnx="Asinh",
                      numpy="arcsinh",
                      jvp=lambda t, ans, x: mul(t, rsqrt(add(mul(x, x), _const(x, 1)))))
# Two square roots, not one of the product: the same for real x > 1, and the principal branch
# for complex x.
acosh_p = elementwise(
    "acosh", np.arccosh, INEXACT, kernel=libm("acosh"), onnx="Acosh", numpy="arccosh",
    jvp=lambda t, ans, x: mul(t, mul(rsqrt(sub(x, _const(x, 1))), rsqrt(add(x, _const(x, 1))))),
)
atanh_p = elementwise("atanh", np.arctanh, INEXACT, kernel=libm("atanh"), onnx="Atanh",
                      numpy="arctanh",
                      jvp=lambda t, ans, x: div(t, sub(_const(x, 1), mul(x, x))))
is_finite_p = elementwise("is_finite", np.isfinite, FLOAT, out_dtype=dtypes.bool_,
                          numpy="isfinite",
                          kernel=Kernel({"f32": "((uint8_t)isfinite({0}))",
                                         "f64": "((uint8_t)isfinite({0}))"}), exact=True)
not_p = elementwise("not", np.invert, INT_OR_BOOL, lax_name="bitwise_not", numpy="bitwise_not",
                    kernel=Kernel({"bool": "((uint8_t)!{0})", "*": "(~{0})"}), cheap=True,
                    exact=True)
stop_gradient_p = elementwise("stop_gradient", lambda x: x, ANY, jvp=ZERO,
                              kernel=Kernel(formula=0),
                              onnx="Identity", cheap=True, exact=True)
physical_rules[stop_gradient_p] = lambda in_avals, out_avals, x: x  # (a PRNG key's data)


@round_p.def_abstract_eval
def _round_abstract_eval(x, *, rounding_method):
    _check_kind("round", FLOAT, x)
    if rounding_method not in (0, 1):
        raise ValueError("round: rounding_method must be 0 (away from zero) or 1 (to even)")
    return x


@round_p.def_impl
@_via_f32
def _round_impl(x, *, rounding_method):
    if rounding_method == 1:
        return np.round(x)
    # As C's round: the fraction compared exactly (floor(|x| + 0.5) rounds 0.49999997 up),
    # and copysign keeps -0.0 for -0.0 and -0.3.
    a = np.abs(x)
    t = np.trunc(a)
    return np.copysign(t + (a - t >= 0.5).astype(x.dtype), x)


batching.vectorized_batcher(round_p)

integer_pow_p = Primitive("integer_pow")  # params: y (a Python int)


@integer_pow_p.def_abstract_eval
def _integer_pow_abstract_eval(x, *, y):
    _check_kind("integer_pow", NUMERIC, x)
    if dtypes.is_int(x.dtype) and y < 0:
        raise ValueError(f"integer_pow: negative exponent {y} for integer operand {x}")
    return x


@integer_pow_p.def_impl
@_via_f32
def _integer_pow_impl(x, *, y):
    if y == 0:
        return np.ones_like(x)
    out = x
    for _ in range((-y if y < 0 else y) - 1):
        out = out * x
    return 1 / out if y < 0 else out


batching.vectorized_batcher(integer_pow_p)

# --- binary and ternary --------------------------------------------------------------------------


def _int_div(x, y):
    if not np.issubdtype(x.dtype, np.integer):
        return np.true_divide(x, y)
    # Round toward zero, like C and XLA (NumPy floors): the floor quotient, plus one where it
    # was rounded down (a nonzero remainder with operands of opposite signs). No absolute values,
    # which wrap at the most negative integer. Division by zero gives -1 (XLA's); MIN / -1
    # wraps to MIN, as in XLA.
    safe = np.where(y == 0, 1, y)
    with np.errstate(all="ignore"):
        q = np.floor_divide(x, safe)
        r = x - q * safe
    if x.dtype.kind == "i":
        q = np.where((r != 0) & ((x < 0) != (safe < 0)), q + 1, q)
    return np.where(y == 0, np.asarray(-1).astype(x.dtype), q).astype(x.dtype)


def _int_rem(x, y):
    if not np.issubdtype(x.dtype, np.integer):
        return np.fmod(x, y)
    safe = np.where(y == 0, 1, y)
    return np.where(y == 0, x, np.fmod(x, safe)).astype(x.dtype)


def _pow(x, y):
    return np.power(x, y)


def _shift_left(x, y):
    bits = x.dtype.itemsize * 8
    return np.where((y < 0) | (y >= bits), 0, np.left_shift(x, np.clip(y, 0, bits - 1)))


def _shift_right_logical(x, y):
    bits = x.dtype.itemsize * 8
    unsigned = x.view(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype.kind == "i" else x
    shifted = np.right_shift(unsigned, np.clip(y, 0, bits - 1).astype(unsigned.dtype))
    out = np.where((y < 0) | (y >= bits), 0, shifted).astype(unsigned.dtype)
    return out.view(x.dtype) if x.dtype.kind == "i" else out


def _pow_jvp_x(t, ans, x, y):
    # d/dx x^y = y x^(y-1), defined as 0 where y == 0 (so 0^0 has derivative 0, like jax).
    safe = mul(y, pow(x, sub(y, _const(y, 1))))
    return mul(t, select_n(eq(y, _const(y, 0)), safe, full_like(safe, 0)))


def _pow_jvp_y(t, ans, x, y):
    # d/dy x^y = log(x) x^y, taken as 0 where x == 0 (jax's convention).
    zero_x = eq(x, _const(x, 0))
    logx = log(select_n(zero_x, x, full_like(x, 1)))
    return mul(t, mul(select_n(zero_x, logx, full_like(logx, 0)), ans))


def _balanced_eq(x, z, y):
    """1 where x == z != y, 0.5 where x == z == y, 0 elsewhere (splits gradient at ties)."""
    ones_or_halves = select_n(eq(y, z), full_like(z, 1), full_like(z, 0.5))
    return select_n(eq(x, z), full_like(z, 0), ones_or_halves)


def _clamp_mask(cond, like):
    return select_n(cond, full_like(like, 0), full_like(like, 1))


# Integer division and remainder go through the prelude's helpers (defined results for a zero
# divisor and MIN / -1); 8- and 16-bit integers through the 32-bit ones.
_INT_HELPERS = {"i8": "i32", "i16": "i32", "i32": "i32", "i64": "i64", "u8": "u32", "u16": "u32",
                "u32": "u32", "u64": "u64"}


def _int_helper(op: str) -> Kernel:
    return Kernel({k: f"fx_{op}_{h}({{0}}, {{1}})" for k, h in _INT_HELPERS.items()})


def _max_min(name: str, c_op: str) -> Kernel:
    # C calls the prelude's integer max/min (a nested ?: reads to GCC as control flow).
    ints = {k: f"fx_{name}_{k}({{0}}, {{1}})" for k in ("i64", "i32", "u32")}
    return Kernel({"f32": f"fx_{name}f({{0}}, {{1}})", "f64": f"fx_{name}({{0}}, {{1}})",
                   "*": f"({{0}} {c_op} {{1}} ? {{0}} : {{1}})"}) | on("c", **ints)


def _complex_eq(negate: str) -> Kernel:
    return Kernel({c: f"((uint8_t){negate}fx_eq_{c}({{0}}, {{1}}))" for c in ("c64", "c128")})


add_p = elementwise("add", np.add, NUMERIC, 2, jvp=(lambda t, ans, x, y: t,
                                                    lambda t, ans, x, y: t),
                    kernel=infix("+") | complex_call("add", 2), onnx="Add", numpy="add",
                    cheap=True, exact=True)
sub_p = elementwise("sub", np.subtract, NUMERIC, 2, jvp=(lambda t, ans, x, y: t,
                                                         lambda t, ans, x, y: neg(t)),
                    kernel=infix("-") | complex_call("sub", 2), onnx="Sub", numpy="subtract",
                    cheap=True, exact=True)
# A uint16 product is taken in uint32: C would multiply in int, and 65535 * 65535 overflows it.
mul_p = elementwise("mul", np.multiply, NUMERIC, 2, jvp=(lambda t, ans, x, y: mul(t, y),
                                                         lambda t, ans, x, y: mul(x, t)),
                    kernel=infix("*") | Kernel({"u16": "((uint32_t){0} * (uint32_t){1})"})
                    | complex_call("mul", 2), onnx="Mul", numpy="multiply", cheap=True,
                    exact="real")
# ONNX's integer Div truncates toward zero, as fx's (C's) does.
div_p = elementwise("div", _int_div, NUMERIC, 2, onnx="Div", numpy="true_divide",
                    jvp=(lambda t, ans, x, y: div(t, y),
                         lambda t, ans, x, y: neg(mul(t, div(ans, y)))),
                    kernel=Kernel({"f32": "({0} / {1})", "f64": "({0} / {1})"})
                    | _int_helper("div") | complex_call("div", 2), exact="real")
rem_p = elementwise("rem", _int_rem, REAL, 2, numpy="remainder",
                    jvp=(lambda t, ans, x, y: t,
                         lambda t, ans, x, y: neg(mul(t, round(div(sub(x, ans), y), 0)))),
                    kernel=libm("fmod", 2) | _int_helper("rem"), exact=True)
pow_p = elementwise("pow", _pow, INEXACT, 2, jvp=(_pow_jvp_x, _pow_jvp_y),
                    kernel=libm("pow", 2), onnx="Pow", numpy="power")
# NaN propagates and -0.0 < +0.0, as in jax (NumPy's maximum returns its second operand on ties).
max_p = elementwise("max", extrema.maximum, ANY, 2,  # complex: lexicographic, as jax
                    jvp=(lambda t, ans, x, y: mul(t, _balanced_eq(x, ans, y)),
                         lambda t, ans, x, y: mul(t, _balanced_eq(y, ans, x))),
                    kernel=_max_min("max", ">"), onnx="Max", numpy="maximum", cheap=True,
                    exact=True)
min_p = elementwise("min", extrema.minimum, ANY, 2,
                    jvp=(lambda t, ans, x, y: mul(t, _balanced_eq(x, ans, y)),
                         lambda t, ans, x, y: mul(t, _balanced_eq(y, ans, x))),
                    kernel=_max_min("min", "<"), onnx="Min", numpy="minimum", cheap=True,
                    exact=True)
atan2_p = elementwise("atan2", np.arctan2, FLOAT, 2, kernel=libm("atan2", 2), numpy="arctan2",
                      jvp=(lambda t, ans, x, y: mul(t, div(y, add(mul(x, x), mul(y, y)))),
                           lambda t, ans, x, y: mul(t, neg(div(x, add(mul(x, x), mul(y, y)))))))
# NumPy (and ml_dtypes) step half-precision values natively: computing in float32 would not.
nextafter_p = elementwise("nextafter", np.nextafter, FLOAT, 2, jvp=ZERO, half_via_f32=False,
                          kernel=libm("nextafter", 2), numpy="nextafter", exact=True)
and_p = elementwise("and", np.bitwise_and, INT_OR_BOOL, 2, kernel=infix("&"), lax_name="and_",
                    numpy="bitwise_and", cheap=True, exact=True)
or_p = elementwise("or", np.bitwise_or, INT_OR_BOOL, 2, kernel=infix("|"), lax_name="or_",
                   numpy="bitwise_or", cheap=True, exact=True)
xor_p = elementwise("xor", np.bitwise_xor, INT_OR_BOOL, 2, kernel=infix("^"),
                    numpy="bitwise_xor", exact=True)
# Shifts by an amount outside [0, bits) give 0: the kernel rule (primitive_rules) needs the width.
shift_left_p = elementwise("shift_left", _shift_left, INT, 2, numpy="left_shift", exact=True)
shift_right_logical_p = elementwise("shift_right_logical", _shift_right_logical, INT, 2, exact=True)
eq_p = elementwise("eq", np.equal, ANY, 2, out_dtype=dtypes.bool_, onnx="Equal", numpy="equal",
                   kernel=compare("==") | _complex_eq(""), cheap=True, exact=True)
ne_p = elementwise("ne", np.not_equal, ANY, 2, out_dtype=dtypes.bool_, numpy="not_equal",
                   kernel=compare("!=") | _complex_eq("!"), cheap=True, exact=True)
lt_p = elementwise("lt", np.less, ORDERED, 2, out_dtype=dtypes.bool_, kernel=compare("<"),
                   numpy="less", cheap=True, exact=True)
le_p = elementwise("le", np.less_equal, ORDERED, 2, out_dtype=dtypes.bool_, kernel=compare("<="),
                   numpy="less_equal", cheap=True, exact=True)
gt_p = elementwise("gt", np.greater, ORDERED, 2, out_dtype=dtypes.bool_, kernel=compare(">"),
                   numpy="greater", cheap=True, exact=True)
ge_p = elementwise("ge", np.greater_equal, ORDERED, 2, out_dtype=dtypes.bool_,
                   kernel=compare(">="), numpy="greater_equal", cheap=True, exact=True)
clamp_p = elementwise(
    "clamp", lambda lo, x, hi: extrema.minimum(extrema.maximum(x, lo), hi), REAL, 3,
    jvp=(lambda t, ans, lo, x, hi: mul(t, _clamp_mask(gt(lo, x), ans)),
         lambda t, ans, lo, x, hi: mul(t, _clamp_mask(and_(gt(x, lo), lt(x, hi)), ans)),
         lambda t, ans, lo, x, hi: mul(t, _clamp_mask(lt(hi, x), ans))),
    kernel=Kernel(formula=("min", ("max", 1, 0), 2)), numpy="clip", cheap=True, exact=True)

select_n_p = Primitive("select_n")


@select_n_p.def_abstract_eval
def _select_n_abstract_eval(which, *cases):
    if not cases:
        raise TypeError("select_n requires at least one case")
    if which.dtype not in (dtypes.bool_, dtypes.int32):
        raise TypeError(f"select_n: the selector must be bool or int32, got {which.dtype}")
    if which.dtype == dtypes.bool_ and len(cases) > 2:
        raise TypeError("select_n: a bool selector chooses between at most two cases")
    shape = _nary_shape("select_n", *cases)
    if which.shape and which.shape != shape:
        raise shape_error("select_n", "the selector must be rank 0 or shaped like the cases",
                          which, *cases)
    if not shape and which.shape:
        raise shape_error("select_n", "cases must have the selector's shape", which, *cases)
    return ShapedArray(shape, cases[0].dtype, all(c.weak_type for c in cases))


@select_n_p.def_impl
def _select_n_impl(which, *cases):
    if len(cases) == 1:
        return np.broadcast_to(cases[0], np.shape(which)) if np.ndim(cases[0]) == 0 else cases[0]
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0])
    return np.choose(np.clip(which, 0, len(cases) - 1), cases)


# The selector may stay a scalar; the cases must take the batched shape.
batching.broadcasting_batcher(select_n_p, keep_scalar=lambda position: position == 0)


def _select_n_physical(in_avals, out_avals, which, *cases):
    # Cases of an extended dtype (PRNG keys): a shaped selector spans each key's words.
    t = physical_trailing(out_avals[0])
    if in_avals[0].shape:
        n = in_avals[0].ndim
        which = broadcast_in_dim(which, in_avals[0].shape + t, tuple(range(n)))
    return select_n_p.bind(which, *cases)


physical_rules[select_n_p] = _select_n_physical

# === differentiation rules of the primitives without a record =================================
# Written with the fx.lax wrappers below, so that they are themselves differentiable (the
# records' are in their declarations above).

jvp.jvp_rules[round_p] = _zero_jvp(round_p)


def _integer_pow_jvp(t, ans, x, *, y):
    if y == 0:
        return mul(t, _const(x, 0))
    if y == 1:
        return t
    lower = x if y == 2 else integer_pow(x, y - 1)
    return mul(t, mul(_const(x, y), lower))


jvp.defjvp(integer_pow_p, _integer_pow_jvp)


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    ans = select_n(which, *cases)
    if all(isinstance(t, Zero) for t in tangents[1:]):
        return ans, Zero.like(ans)
    case_ts = [jvp.instantiate(t) for t in tangents[1:]]
    return ans, select_n(which, *case_ts)


jvp.jvp_rules[select_n_p] = _select_n_jvp


# --- transposes of the linear ones ---------------------------------------------------------------


def _binary_transpose(ct_x: Callable, ct_y: Callable):
    def rule(ct, x, y):
        return [
            unbroadcast(ct_x(ct, x, y), x.aval) if is_undefined(x) else None,
            unbroadcast(ct_y(ct, x, y), y.aval) if is_undefined(y) else None,
        ]

    return rule


transpose.deftranspose(neg_p, lambda ct, x: [neg(ct)])
transpose.deftranspose(add_p, _binary_transpose(lambda ct, x, y: ct, lambda ct, x, y: ct))
transpose.deftranspose(sub_p, _binary_transpose(lambda ct, x, y: ct, lambda ct, x, y: neg(ct)))
transpose.defbilinear(mul_p, lambda ct, x, y: mul(ct, y), lambda ct, x, y: mul(x, ct))


def _div_transpose(ct, x, y):
    if is_undefined(y):
        raise TypeError(
            f"div: x / y is linear in x only, but the divisor y ({y.aval.str_short()}) is a "
            "linear input here; a function linear in the divisor cannot be transposed "
            "(differentiate it with jvp or grad, which linearize first)")
    return [unbroadcast(div(ct, y), x.aval)]


transpose.deftranspose(div_p, _div_transpose)


def _select_n_transpose(ct, which, *cases):
    if is_undefined(which):
        raise ValueError("select_n: the selector cannot be a linear input")
    zeros = full_like(ct, 0)
    return [None] + [
        unbroadcast(select_n(which, *[ct if j == i else zeros for j in range(len(cases))]),
                    c.aval) if is_undefined(c) else None
        for i, c in enumerate(cases)
    ]


transpose.deftranspose(select_n_p, _select_n_transpose)


# === the fx.lax functions =======================================================================


def _unary(prim: Primitive) -> Callable:
    """The fx.lax function of a unary primitive (a record's is the one its record made)."""
    record = record_of(prim)
    return record.function if record is not None else _function(prim, 1)


def _binary(prim: Primitive) -> Callable:
    record = record_of(prim)
    return record.function if record is not None else _function(prim, 2)


neg, sign, floor, ceil, abs, exp, exp2, log, log1p, expm1 = map(
    _unary, (neg_p, sign_p, floor_p, ceil_p, abs_p, exp_p, exp2_p, log_p, log1p_p, expm1_p)
)
sqrt, rsqrt, cbrt, tanh, logistic, sin, cos, tan, asin, acos, atan = map(
    _unary, (sqrt_p, rsqrt_p, cbrt_p, tanh_p, logistic_p, sin_p, cos_p, tan_p, asin_p, acos_p,
             atan_p)
)
sinh, cosh, asinh, acosh, atanh, is_finite = map(
    _unary, (sinh_p, cosh_p, asinh_p, acosh_p, atanh_p, is_finite_p)
)
bitwise_not = _unary(not_p)
stop_gradient = _unary(stop_gradient_p)
stop_gradient.__doc__ = """The identity, with a zero derivative: gradients do not flow through."""
add, sub, mul, div, rem, pow, max, min, atan2, nextafter = map(
    _binary, (add_p, sub_p, mul_p, div_p, rem_p, pow_p, max_p, min_p, atan2_p, nextafter_p)
)
and_, or_, xor, shift_left, shift_right_logical = map(
    _binary, (and_p, or_p, xor_p, shift_left_p, shift_right_logical_p)
)
eq, ne, lt, le, gt, ge = map(_binary, (eq_p, ne_p, lt_p, le_p, gt_p, ge_p))
bitwise_and, bitwise_or, bitwise_xor = and_, or_, xor


def round(x, rounding_method: int = 0):
    """Round to the nearest integer; ties away from zero (0) or to even (1)."""
    return round_p.bind(x, rounding_method=int(rounding_method))


def integer_pow(x, y: int):
    """``x ** y`` for a static Python integer ``y``."""
    return integer_pow_p.bind(x, y=int(y))


square = _unary(square_p)


def clamp(lo, x, hi):
    """``x`` clipped to ``[lo, hi]``; ``lo`` and ``hi`` may be scalars."""
    return clamp_p.bind(*_coerce(lo, x, hi))


def select_n(which, *cases):
    """``cases[which]`` elementwise: a bool ``which`` picks ``cases[1]`` where True."""
    return select_n_p.bind(which, *_coerce(*cases))


def select(pred, on_true, on_false):
    return select_n(pred, on_false, on_true)


def full_like(x, fill_value, dtype=None, shape=None):
    aval = get_aval(x)
    return full(aval.shape if shape is None else shape, fill_value,
                aval.dtype if dtype is None else dtype)


def zeros_like_array(x):
    return full_like(x, 0)


def broadcast_scalar(x, shape):
    return broadcast_in_dim(x, shape, ())
