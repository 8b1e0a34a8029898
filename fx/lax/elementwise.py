"""Elementwise primitives: declarations, type rules, impls, and their jvp, transpose and
batching rules, each family set up by one helper.

Operands of an n-ary elementwise primitive have one dtype and either equal shapes or rank 0
(a scalar operand broadcasts, so ``x * 2.0`` stays ``mul x 2.0:f32[]`` in a jaxpr). The
user-facing numpy layer does broadcasting and promotion before reaching here.
"""

from __future__ import annotations

import functools
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

# Which dtypes each primitive accepts.
FLOAT = frozenset(dtypes.FLOATING)
COMPLEX = frozenset(dtypes.COMPLEX)
INEXACT = FLOAT | COMPLEX
INT = frozenset(dtypes.INTEGER)
BOOL = frozenset([dtypes.bool_])
REAL = FLOAT | INT
NUMERIC = REAL | COMPLEX
INT_OR_BOOL = INT | BOOL
ORDERED = REAL | BOOL  # comparisons lt/le/gt/ge: no complex, as jax
ANY = NUMERIC | BOOL
_KIND_NAMES = {
    FLOAT: "real floating", INEXACT: "floating or complex", INT: "integer",
    REAL: "real numeric", NUMERIC: "numeric", INT_OR_BOOL: "integer or bool",
    ORDERED: "real numeric or bool",
}


def _check_kind(name: str, kinds, *avals: ShapedArray) -> None:
    for a in avals:
        if a.dtype not in kinds:
            what = _KIND_NAMES.get(kinds, "supported")
            raise TypeError(f"{name} requires {what} operands, got {a.dtype} ({a.str_short()})")


def _nary_shape(name: str, *avals: ShapedArray) -> tuple[int, ...]:
    shapes = {a.shape for a in avals if a.shape}
    if len(shapes) > 1:
        raise shape_error(
            name, "operands must have equal shapes (or be rank 0); use fx.numpy for broadcasting",
            *avals,
        )
    dts = {a.dtype for a in avals}
    if len(dts) > 1:
        raise shape_error(
            name, "operands must have the same dtype; use fx.lax.convert_element_type or "
            "fx.numpy (which promotes)", *avals,
        )
    return shapes.pop() if shapes else ()


# --- impl helpers -------------------------------------------------------------------------------


def _via_f32(fn: Callable) -> Callable:
    """Half-precision operands compute in float32 and round back (as XLA does); floating
    exceptions are silenced so NaN and Inf propagate as values."""

    @functools.wraps(fn)
    def impl(*args, **params):
        dt = args[0].dtype if hasattr(args[0], "dtype") else None
        with np.errstate(all="ignore"):
            if dt in (dtypes.float16, dtypes.bfloat16):
                out = fn(*(np.asarray(a).astype(np.float32) for a in args), **params)
                return np.asarray(out).astype(dt)
            return fn(*args, **params)

    return impl


def _via_f64(fn: Callable) -> Callable:
    """For the special functions computed in float64 here."""

    def impl(x):
        return np.asarray(fn(np.asarray(x, dtype=np.float64))).astype(x.dtype)

    return impl


# --- declaring families -------------------------------------------------------------------------


def unop(name: str, impl: Callable, kinds=FLOAT, out_dtype=None) -> Primitive:
    prim = Primitive(name)

    def abstract_eval(x, **params):
        _check_kind(name, kinds, x)
        return x.update(dtype=out_dtype) if out_dtype is not None else x

    prim.def_abstract_eval(abstract_eval)
    prim.def_impl(_via_f32(impl))
    batching.vectorized_batcher(prim)
    return prim


def naryop(name: str, impl: Callable, kinds=NUMERIC, out_dtype=None, nargs=2) -> Primitive:
    prim = Primitive(name)

    def abstract_eval(*avals):
        if len(avals) != nargs:
            raise TypeError(f"{name} takes {nargs} operands, got {len(avals)}")
        _check_kind(name, kinds, *avals)
        shape = _nary_shape(name, *avals)
        weak = all(a.weak_type for a in avals)
        return ShapedArray(shape, out_dtype or avals[0].dtype, weak and out_dtype is None)

    prim.def_abstract_eval(abstract_eval)
    prim.def_impl(_via_f32(impl))
    batching.broadcasting_batcher(prim)
    return prim


def _zero_jvp(prim: Primitive) -> None:
    """Piecewise-constant float functions (floor, sign, ...): zero tangent everywhere."""

    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        return ans, Zero.like(ans)

    jvp.jvp_rules[prim] = rule


# --- unary floating functions -------------------------------------------------------------------

neg_p = unop("neg", np.negative, NUMERIC)
def _sign(x):
    # As jax (and C's copysign-based kernels): the sign of a zero is that zero, -0.0 included
    # (NumPy's sign gives +0.0 for -0.0).
    s = np.sign(x)
    return np.where(x == 0, x, s) if s.dtype.kind == "f" else s


sign_p = unop("sign", _sign, NUMERIC)
floor_p = unop("floor", np.floor)
ceil_p = unop("ceil", np.ceil)
round_p = Primitive("round")  # params: rounding_method
abs_p = unop("abs", np.abs, NUMERIC)  # complex: the real modulus (rule below)
exp_p = unop("exp", np.exp, INEXACT)
exp2_p = unop("exp2", np.exp2, INEXACT)
log_p = unop("log", np.log, INEXACT)
log1p_p = unop("log1p", np.log1p, INEXACT)
expm1_p = unop("expm1", np.expm1, INEXACT)
sqrt_p = unop("sqrt", np.sqrt, INEXACT)
rsqrt_p = unop("rsqrt", lambda x: 1 / np.sqrt(x), INEXACT)
cbrt_p = unop("cbrt", np.cbrt)
tanh_p = unop("tanh", np.tanh, INEXACT)
logistic_p = unop("logistic", lambda x: _logistic(x), INEXACT)
sin_p = unop("sin", np.sin, INEXACT)
cos_p = unop("cos", np.cos, INEXACT)
tan_p = unop("tan", np.tan, INEXACT)
asin_p = unop("asin", np.arcsin, INEXACT)
acos_p = unop("acos", np.arccos, INEXACT)
atan_p = unop("atan", np.arctan, INEXACT)
sinh_p = unop("sinh", np.sinh, INEXACT)
cosh_p = unop("cosh", np.cosh, INEXACT)
asinh_p = unop("asinh", np.arcsinh, INEXACT)
acosh_p = unop("acosh", np.arccosh, INEXACT)
atanh_p = unop("atanh", np.arctanh, INEXACT)
is_finite_p = unop("is_finite", np.isfinite, FLOAT, out_dtype=dtypes.bool_)
not_p = unop("not", np.invert, INT_OR_BOOL)
stop_gradient_p = unop("stop_gradient", lambda x: x, ANY)
physical_rules[stop_gradient_p] = lambda in_avals, out_avals, x: x  # (a PRNG key's data)


def _logistic(x):
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    # Stable on both tails: exp of a non-positive number only.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


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


add_p = naryop("add", np.add)
sub_p = naryop("sub", np.subtract)
mul_p = naryop("mul", np.multiply)
div_p = naryop("div", _int_div)
rem_p = naryop("rem", _int_rem, REAL)
pow_p = naryop("pow", _pow, INEXACT)
# NaN propagates and -0.0 < +0.0, as in jax (NumPy's maximum returns its second operand on ties).
max_p = naryop("max", extrema.maximum, ANY)  # complex: lexicographic, as jax
min_p = naryop("min", extrema.minimum, ANY)
atan2_p = naryop("atan2", np.arctan2, FLOAT)
nextafter_p = naryop("nextafter", np.nextafter, FLOAT)
# NumPy (and ml_dtypes) step half-precision values natively: computing in float32 would not.
nextafter_p.def_impl(lambda x, y: np.nextafter(x, y))
and_p = naryop("and", np.bitwise_and, INT_OR_BOOL)
or_p = naryop("or", np.bitwise_or, INT_OR_BOOL)
xor_p = naryop("xor", np.bitwise_xor, INT_OR_BOOL)
shift_left_p = naryop("shift_left", _shift_left, INT)
shift_right_logical_p = naryop("shift_right_logical", _shift_right_logical, INT)
eq_p = naryop("eq", np.equal, ANY, out_dtype=dtypes.bool_)
ne_p = naryop("ne", np.not_equal, ANY, out_dtype=dtypes.bool_)
lt_p = naryop("lt", np.less, ORDERED, out_dtype=dtypes.bool_)
le_p = naryop("le", np.less_equal, ORDERED, out_dtype=dtypes.bool_)
gt_p = naryop("gt", np.greater, ORDERED, out_dtype=dtypes.bool_)
ge_p = naryop("ge", np.greater_equal, ORDERED, out_dtype=dtypes.bool_)
clamp_p = naryop("clamp", lambda lo, x, hi: extrema.minimum(extrema.maximum(x, lo), hi), REAL,
                 nargs=3)

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

# === differentiation rules ======================================================================
# Written with the fx.lax wrappers below, so that they are themselves differentiable.


def _const(x, value):
    """A weakly typed scalar with ``x``'s dtype (for constants inside rules)."""
    return Array(np.asarray(value, dtype=get_aval(x).dtype), weak_type=True)


for _p in (sign_p, floor_p, ceil_p, round_p, nextafter_p, stop_gradient_p):
    _zero_jvp(_p)

jvp.defjvp(neg_p, lambda t, ans, x: neg(t))
# abs's type rule and jvp (complex operands included) are in fx.lax.complex_parts.
jvp.defjvp(exp_p, lambda t, ans, x: mul(t, ans))
jvp.defjvp(exp2_p, lambda t, ans, x: mul(t, mul(ans, _const(x, np.log(2)))))
jvp.defjvp(log_p, lambda t, ans, x: div(t, x))
jvp.defjvp(log1p_p, lambda t, ans, x: div(t, add(x, _const(x, 1))))
jvp.defjvp(expm1_p, lambda t, ans, x: mul(t, add(ans, _const(x, 1))))
jvp.defjvp(sqrt_p, lambda t, ans, x: div(t, mul(ans, _const(x, 2))))
jvp.defjvp(rsqrt_p, lambda t, ans, x: mul(t, mul(div(ans, x), _const(x, -0.5))))
jvp.defjvp(cbrt_p, lambda t, ans, x: mul(t, div(ans, mul(x, _const(x, 3)))))
jvp.defjvp(tanh_p, lambda t, ans, x: mul(t, sub(_const(x, 1), mul(ans, ans))))
jvp.defjvp(logistic_p, lambda t, ans, x: mul(t, mul(ans, sub(_const(x, 1), ans))))
jvp.defjvp(sin_p, lambda t, ans, x: mul(t, cos(x)))
jvp.defjvp(cos_p, lambda t, ans, x: neg(mul(t, sin(x))))
jvp.defjvp(tan_p, lambda t, ans, x: mul(t, add(_const(x, 1), mul(ans, ans))))
jvp.defjvp(asin_p, lambda t, ans, x: mul(t, rsqrt(sub(_const(x, 1), mul(x, x)))))
jvp.defjvp(acos_p, lambda t, ans, x: neg(mul(t, rsqrt(sub(_const(x, 1), mul(x, x))))))
jvp.defjvp(atan_p, lambda t, ans, x: div(t, add(_const(x, 1), mul(x, x))))
jvp.defjvp(sinh_p, lambda t, ans, x: mul(t, cosh(x)))
jvp.defjvp(cosh_p, lambda t, ans, x: mul(t, sinh(x)))
jvp.defjvp(asinh_p, lambda t, ans, x: mul(t, rsqrt(add(mul(x, x), _const(x, 1)))))
# Two square roots, not one of the product: the same for real x > 1, and the principal branch
# for complex x.
jvp.defjvp(
    acosh_p,
    lambda t, ans, x: mul(t, mul(rsqrt(sub(x, _const(x, 1))), rsqrt(add(x, _const(x, 1))))),
)
jvp.defjvp(atanh_p, lambda t, ans, x: div(t, sub(_const(x, 1), mul(x, x))))
def _integer_pow_jvp(t, ans, x, *, y):
    if y == 0:
        return mul(t, _const(x, 0))
    if y == 1:
        return t
    lower = x if y == 2 else integer_pow(x, y - 1)
    return mul(t, mul(_const(x, y), lower))


jvp.defjvp(integer_pow_p, _integer_pow_jvp)

jvp.defjvp(add_p, lambda t, ans, x, y: t, lambda t, ans, x, y: t)
jvp.defjvp(sub_p, lambda t, ans, x, y: t, lambda t, ans, x, y: neg(t))
jvp.defjvp(mul_p, lambda t, ans, x, y: mul(t, y), lambda t, ans, x, y: mul(x, t))
jvp.defjvp(
    div_p,
    lambda t, ans, x, y: div(t, y),
    lambda t, ans, x, y: neg(mul(t, div(ans, y))),
)
jvp.defjvp(
    rem_p,
    lambda t, ans, x, y: t,
    lambda t, ans, x, y: neg(mul(t, round(div(sub(x, ans), y), 0))),
)


def _pow_jvp_x(t, ans, x, y):
    # d/dx x^y = y x^(y-1), defined as 0 where y == 0 (so 0^0 has derivative 0, like jax).
    safe = mul(y, pow(x, sub(y, _const(y, 1))))
    return mul(t, select_n(eq(y, _const(y, 0)), safe, full_like(safe, 0)))


def _pow_jvp_y(t, ans, x, y):
    # d/dy x^y = log(x) x^y, taken as 0 where x == 0 (jax's convention).
    zero_x = eq(x, _const(x, 0))
    logx = log(select_n(zero_x, x, full_like(x, 1)))
    return mul(t, mul(select_n(zero_x, logx, full_like(logx, 0)), ans))


jvp.defjvp(pow_p, _pow_jvp_x, _pow_jvp_y)


def _balanced_eq(x, z, y):
    """1 where x == z != y, 0.5 where x == z == y, 0 elsewhere (splits gradient at ties)."""
    ones_or_halves = select_n(eq(y, z), full_like(z, 1), full_like(z, 0.5))
    return select_n(eq(x, z), full_like(z, 0), ones_or_halves)


jvp.defjvp(
    max_p,
    lambda t, ans, x, y: mul(t, _balanced_eq(x, ans, y)),
    lambda t, ans, x, y: mul(t, _balanced_eq(y, ans, x)),
)
jvp.defjvp(
    min_p,
    lambda t, ans, x, y: mul(t, _balanced_eq(x, ans, y)),
    lambda t, ans, x, y: mul(t, _balanced_eq(y, ans, x)),
)
jvp.defjvp(
    atan2_p,
    lambda t, ans, x, y: mul(t, div(y, add(mul(x, x), mul(y, y)))),
    lambda t, ans, x, y: mul(t, neg(div(x, add(mul(x, x), mul(y, y))))),
)


def _clamp_mask(cond, like):
    return select_n(cond, full_like(like, 0), full_like(like, 1))


jvp.defjvp(
    clamp_p,
    lambda t, ans, lo, x, hi: mul(t, _clamp_mask(gt(lo, x), ans)),
    lambda t, ans, lo, x, hi: mul(t, _clamp_mask(and_(gt(x, lo), lt(x, hi)), ans)),
    lambda t, ans, lo, x, hi: mul(t, _clamp_mask(lt(hi, x), ans)),
)


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


def _coerce(*args):
    """Python scalars take the dtype of the array operands (weakly typed)."""
    ref = next((a for a in args if not _is_python_scalar(a)), None)
    if ref is None:
        return args
    dt = get_aval(ref).dtype
    return tuple(
        Array(np.asarray(a, dtype=dt), weak_type=True) if _is_python_scalar(a) else a
        for a in args
    )


def _is_python_scalar(x) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)


def _unary(prim: Primitive) -> Callable:
    def f(x):
        return prim.bind(x)

    f.__name__ = prim.name
    f.__doc__ = f"Elementwise ``{prim.name}`` (the ``{prim.name}`` primitive)."
    return f


def _binary(prim: Primitive) -> Callable:
    def f(x, y):
        return prim.bind(*_coerce(x, y))

    f.__name__ = prim.name
    f.__doc__ = f"Elementwise ``{prim.name}`` (the ``{prim.name}`` primitive)."
    return f


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


def square(x):
    return integer_pow(x, 2)


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
