"""Elementwise ``fx.numpy`` functions: numpy's broadcasting and JAX's promotion over
``fx.lax``'s strictly typed primitives."""

from __future__ import annotations

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy._promote import (
    broadcast_shapes,
    broadcast_to_shape,
    promote_and_broadcast,
    promote_dtypes,
    to_array,
)

__all__ = [
    "abs", "absolute", "add", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2",
    "arctanh", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "cbrt", "ceil", "clip",
    "copysign", "cos", "cosh", "deg2rad", "degrees", "divide", "equal", "exp", "exp2", "expm1",
    "fix", "float_power", "floor", "floor_divide", "fmax", "fmin", "fmod", "greater",
    "greater_equal", "heaviside", "hypot", "invert", "isfinite", "isinf", "isnan", "left_shift",
    "less", "less_equal", "log", "log10", "log1p", "log2", "logaddexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "mod", "multiply",
    "negative", "nextafter", "not_equal", "positive", "power", "rad2deg", "radians",
    "reciprocal", "remainder", "right_shift", "rint", "round", "sign", "signbit", "sin", "sinc",
    "sinh", "sqrt", "square", "subtract", "tan", "tanh", "true_divide", "trunc", "where",
    "around",
]


def _unary_float(lax_fn, name):
    def f(x, /):
        (x,) = promote_and_broadcast(x, name=f"fx.numpy.{name}", inexact=True)
        return lax_fn(x)

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}``, as ``numpy.{name}`` (integers compute in float)."
    return f


def _unary_same(lax_fn, name):
    def f(x, /):
        (x,) = promote_and_broadcast(x, name=f"fx.numpy.{name}")
        return lax_fn(x)

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}``, as ``numpy.{name}``."
    return f


def _binary(lax_fn, name, inexact=False, bool_fn=None):
    def f(x, y, /):
        x, y = promote_and_broadcast(x, y, name=f"fx.numpy.{name}", inexact=inexact)
        if bool_fn is not None and get_aval(x).dtype == dtypes.bool_:
            return bool_fn(x, y)
        return lax_fn(x, y)

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` with broadcasting, as ``numpy.{name}``."
    return f


sin, cos, tan = (_unary_float(getattr(lax, n), n) for n in ("sin", "cos", "tan"))
arcsin = _unary_float(lax.asin, "arcsin")
arccos = _unary_float(lax.acos, "arccos")
arctan = _unary_float(lax.atan, "arctan")
sinh, cosh, tanh = (_unary_float(getattr(lax, n), n) for n in ("sinh", "cosh", "tanh"))
arcsinh = _unary_float(lax.asinh, "arcsinh")
arccosh = _unary_float(lax.acosh, "arccosh")
arctanh = _unary_float(lax.atanh, "arctanh")
exp, exp2, expm1 = (_unary_float(getattr(lax, n), n) for n in ("exp", "exp2", "expm1"))
log, log1p = _unary_float(lax.log, "log"), _unary_float(lax.log1p, "log1p")
sqrt, cbrt = _unary_float(lax.sqrt, "sqrt"), _unary_float(lax.cbrt, "cbrt")
negative = _unary_same(lax.neg, "negative")
sign = _unary_same(lax.sign, "sign")
absolute = _unary_same(lax.abs, "absolute")
abs = absolute  # noqa: A001

# On bools, as in numpy and JAX, add is logical or and multiply is logical and.
add = _binary(lax.add, "add", bool_fn=lax.or_)
subtract = _binary(lax.sub, "subtract")
multiply = _binary(lax.mul, "multiply", bool_fn=lax.and_)
true_divide = _binary(lax.div, "true_divide", inexact=True)
divide = true_divide
maximum = _binary(lax.max, "maximum")
minimum = _binary(lax.min, "minimum")
arctan2 = _binary(lax.atan2, "arctan2", inexact=True)
nextafter = _binary(lax.nextafter, "nextafter", inexact=True)
equal = _binary(lax.eq, "equal")
not_equal = _binary(lax.ne, "not_equal")
less = _binary(lax.lt, "less")
less_equal = _binary(lax.le, "less_equal")
greater = _binary(lax.gt, "greater")
greater_equal = _binary(lax.ge, "greater_equal")
bitwise_and = _binary(lax.and_, "bitwise_and")
bitwise_or = _binary(lax.or_, "bitwise_or")
bitwise_xor = _binary(lax.xor, "bitwise_xor")
bitwise_not = _unary_same(lax.bitwise_not, "bitwise_not")
invert = bitwise_not
left_shift = _binary(lax.shift_left, "left_shift")


def positive(x, /):
    return to_array(x)


def log2(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.log2", inexact=True)
    return lax.div(lax.log(x), np.log(2))


def log10(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.log10", inexact=True)
    return lax.div(lax.log(x), np.log(10))


def square(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.square")
    return lax.integer_pow(x, 2)


def reciprocal(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.reciprocal")
    return lax.integer_pow(x, -1) if dtypes.is_float(get_aval(x).dtype) else lax.div(1, x)


def floor(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.floor")
    return lax.floor(x) if dtypes.is_float(get_aval(x).dtype) else x


def ceil(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.ceil")
    return lax.ceil(x) if dtypes.is_float(get_aval(x).dtype) else x


def trunc(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.trunc")
    if not dtypes.is_float(get_aval(x).dtype):
        return x
    return lax.select(lax.lt(x, 0), lax.ceil(x), lax.floor(x))


fix = trunc


def rint(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.rint")
    return lax.round(x, 1) if dtypes.is_float(get_aval(x).dtype) else x


def round(a, decimals: int = 0):  # noqa: A001
    """Round half to even, as ``numpy.round``."""
    (a,) = promote_and_broadcast(a, name="fx.numpy.round")
    if not dtypes.is_float(get_aval(a).dtype):
        return a
    if decimals == 0:
        return lax.round(a, 1)
    factor = 10.0**decimals
    return lax.div(lax.round(lax.mul(a, factor), 1), factor)


around = round


def deg2rad(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.deg2rad", inexact=True)
    return lax.mul(x, np.pi / 180)


def rad2deg(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.rad2deg", inexact=True)
    return lax.mul(x, 180 / np.pi)


radians, degrees = deg2rad, rad2deg


def isfinite(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.isfinite")
    if not dtypes.is_float(get_aval(x).dtype):
        return lax.full_like(x, True, dtypes.bool_)
    return lax.is_finite(x)


def isnan(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.isnan")
    if not dtypes.is_float(get_aval(x).dtype):
        return lax.full_like(x, False, dtypes.bool_)
    return lax.ne(x, x)


def isinf(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.isinf")
    if not dtypes.is_float(get_aval(x).dtype):
        return lax.full_like(x, False, dtypes.bool_)
    return lax.eq(lax.abs(x), np.inf)


def signbit(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.signbit")
    dt = get_aval(x).dtype
    if not dtypes.is_float(dt):
        return lax.lt(x, 0)
    int_dt = {2: dtypes.int32, 4: dtypes.int32, 8: dtypes.int64}[dt.itemsize]
    if dt.itemsize == 2:
        x = lax.convert_element_type(x, dtypes.float32)
    return lax.lt(lax.bitcast_convert_type(x, int_dt), 0)


def floor_divide(x, y, /):
    x, y = promote_and_broadcast(x, y, name="fx.numpy.floor_divide")
    if dtypes.is_float(get_aval(x).dtype):
        return lax.floor(lax.div(x, y))
    if get_aval(x).dtype == dtypes.bool_:
        raise TypeError("fx.numpy.floor_divide: bool operands are not supported")
    q = lax.div(x, y)
    # C division truncates; floor differs when the signs differ and the division is inexact.
    adjust = lax.and_(lax.ne(lax.lt(x, 0), lax.lt(y, 0)), lax.ne(lax.mul(q, y), x))
    return lax.select(adjust, lax.sub(q, 1), q)


def remainder(x, y, /):
    """The remainder with the sign of the divisor, as ``numpy.remainder``."""
    x, y = promote_and_broadcast(x, y, name="fx.numpy.remainder")
    r = lax.rem(x, y)
    fix_sign = lax.and_(lax.ne(r, 0), lax.ne(lax.lt(r, 0), lax.lt(y, 0)))
    return lax.select(fix_sign, lax.add(r, y), r)


mod = remainder


def fmod(x, y, /):
    x, y = promote_and_broadcast(x, y, name="fx.numpy.fmod")
    return lax.rem(x, y)


def power(x, y, /):
    """``x ** y``; an integer Python exponent uses exact repeated multiplication."""
    if isinstance(y, int) and not isinstance(y, bool):
        (x,) = promote_and_broadcast(x, name="fx.numpy.power")
        if y >= 0 or dtypes.is_float(get_aval(x).dtype):
            return lax.integer_pow(x, y)
    x, y = promote_and_broadcast(x, y, name="fx.numpy.power")
    dt = get_aval(x).dtype
    if dtypes.is_float(dt):
        return lax.pow(x, y)
    # Integer base and exponent: exact in float64 for results below 2**53.
    f = lax.pow(lax.convert_element_type(x, dtypes.float64),
                lax.convert_element_type(y, dtypes.float64))
    return lax.convert_element_type(lax.round(f, 1), dt)


def float_power(x, y, /):
    x, y = promote_and_broadcast(x, y, name="fx.numpy.float_power")
    x, y = (lax.convert_element_type(v, dtypes.float64) for v in (x, y))
    return lax.pow(x, y)


def right_shift(x, y, /):
    x, y = promote_and_broadcast(x, y, name="fx.numpy.right_shift")
    dt = get_aval(x).dtype
    if dt == dtypes.uint32:
        return lax.shift_right_logical(x, y)
    # Arithmetic shift for signed integers: floor division by 2**y.
    bits = dt.itemsize * 8
    y = lax.clamp(0, y, bits - 1)
    pow2 = lax.shift_left(lax.full_like(y, 1), y)
    return floor_divide(x, pow2)


def logical_and(x, y, /):
    return lax.and_(*_as_bool(x, y, name="logical_and"))


def logical_or(x, y, /):
    return lax.or_(*_as_bool(x, y, name="logical_or"))


def logical_xor(x, y, /):
    return lax.xor(*_as_bool(x, y, name="logical_xor"))


def logical_not(x, /):
    (x,) = _as_bool(x, name="logical_not")
    return lax.bitwise_not(x)


def _as_bool(*args, name):
    args = promote_and_broadcast(*args, name=f"fx.numpy.{name}")
    return [lax.ne(a, 0) if get_aval(a).dtype != dtypes.bool_ else a for a in args]


def hypot(x, y, /):
    x, y = promote_and_broadcast(x, y, name="fx.numpy.hypot", inexact=True)
    ax, ay = lax.abs(x), lax.abs(y)
    big, small = lax.max(ax, ay), lax.min(ax, ay)
    safe = lax.select(lax.eq(big, 0), lax.full_like(big, 1), big)
    r = lax.div(small, safe)
    out = lax.mul(big, lax.sqrt(lax.add(1, lax.mul(r, r))))
    return lax.select(lax.eq(big, np.inf), big, out)


def logaddexp(x, y, /):
    x, y = promote_and_broadcast(x, y, name="fx.numpy.logaddexp", inexact=True)
    big = lax.max(x, y)
    delta = lax.sub(x, y)
    out = lax.add(big, lax.log1p(lax.exp(lax.neg(lax.abs(delta)))))
    # Equal infinities give inf - inf = nan above; the answer is the infinity itself.
    return lax.select(lax.ne(delta, delta), lax.add(x, y), out)


def copysign(x, y, /):
    x, y = promote_and_broadcast(x, y, name="fx.numpy.copysign", inexact=True)
    return lax.select(signbit(y), lax.neg(lax.abs(x)), lax.abs(x))


def fmax(x, y, /):
    x, y = promote_and_broadcast(x, y, name="fx.numpy.fmax")
    return where(isnan(x), y, where(isnan(y), x, lax.max(x, y)))


def fmin(x, y, /):
    x, y = promote_and_broadcast(x, y, name="fx.numpy.fmin")
    return where(isnan(x), y, where(isnan(y), x, lax.min(x, y)))


def heaviside(x1, x2, /):
    x1, x2 = promote_and_broadcast(x1, x2, name="fx.numpy.heaviside", inexact=True)
    zero_or_one = lax.select(lax.gt(x1, 0), lax.full_like(x1, 1), lax.full_like(x1, 0))
    return lax.select(lax.eq(x1, 0), broadcast_to_shape(x2, get_aval(x1).shape), zero_or_one)


def sinc(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.sinc", inexact=True)
    pix = lax.mul(x, np.pi)
    safe = lax.select(lax.eq(x, 0), lax.full_like(x, 1), pix)
    return lax.select(lax.eq(x, 0), lax.full_like(x, 1), lax.div(lax.sin(safe), safe))


def where(condition, x=None, y=None, /):
    """``x`` where ``condition`` holds, else ``y`` (the one-argument form is not supported:
    its output shape depends on the data)."""
    if x is None or y is None:
        raise TypeError(
            "fx.numpy.where(condition) with one argument is not supported (its shape depends "
            "on the data); pass both x and y"
        )
    (c,) = _as_bool(condition, name="where")
    x, y = promote_dtypes(x, y, name="fx.numpy.where")
    c, x, y = _broadcast_all(c, x, y)
    return lax.select(c, x, y)


def _broadcast_all(*args):
    shape = broadcast_shapes(*(get_aval(a).shape for a in args), name="fx.numpy.where")
    return [broadcast_to_shape(a, shape) for a in args]


def clip(a, a_min=None, a_max=None, /, *, min=None, max=None):  # noqa: A002
    """Clip ``a`` to ``[a_min, a_max]`` (either may be None)."""
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    out = to_array(a)
    if lo is not None:
        out = maximum(out, lo)
    if hi is not None:
        out = minimum(out, hi)
    return out
