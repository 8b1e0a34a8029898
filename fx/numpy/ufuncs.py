"""Elementwise ``fx.numpy`` functions: numpy's broadcasting and JAX's promotion over
``fx.lax``'s strictly typed primitives."""

from __future__ import annotations

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.custom_derivatives import custom_jvp
from fx.lax.elementwise_record import INEXACT, records
from fx.numpy._promote import (
    broadcast_shapes,
    broadcast_to_shape,
    promote_and_broadcast,
    promote_dtypes,
    to_array,
)
from fx.numpy.compaction import nonzero

__all__ = [  # and the functions derived from records, below
    "abs", "absolute", "add", "arctan2", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor",
    "cbrt", "ceil", "clip", "copysign", "deg2rad", "degrees", "divide", "equal", "fix",
    "float_power", "floor", "floor_divide", "fmax", "fmin", "fmod", "greater", "greater_equal",
    "heaviside", "hypot", "invert", "isfinite", "isinf", "isnan", "left_shift", "less",
    "less_equal", "log10", "log2", "logaddexp", "logical_and", "logical_not", "logical_or",
    "logical_xor", "maximum", "minimum", "mod", "multiply", "negative", "nextafter", "not_equal",
    "positive", "power", "rad2deg", "radians", "reciprocal", "remainder", "right_shift", "rint",
    "round", "sign", "signbit", "sinc", "square", "subtract", "true_divide", "trunc", "where",
    "around",
]


_NUMERIC = frozenset(dtypes.FLOATING + dtypes.INTEGER + dtypes.COMPLEX)
_INT_OR_BOOL = frozenset(dtypes.INTEGER + (dtypes.bool_,))
_KIND_NAMES = {_NUMERIC: "numeric (not bool)", _INT_OR_BOOL: "integer or bool"}


def _check_kind(name, kinds, *arrs):
    """Reject operand dtypes the function does not accept, naming the function."""
    for a in arrs:
        aval = get_aval(a)
        if aval.dtype not in kinds:
            raise TypeError(
                f"fx.numpy.{name} requires {_KIND_NAMES[kinds]} operands, got "
                + ", ".join(get_aval(b).str_short() for b in arrs)
            )


def _refuse_complex(name, exc, *arrs, why="is not defined for complex inputs"):
    """Raise ``exc`` (the exception type jax raises) when an operand is complex."""
    if any(dtypes.is_complex(get_aval(a).dtype) for a in arrs):
        raise exc(f"fx.numpy.{name} {why}, got "
                  + ", ".join(get_aval(a).str_short() for a in arrs))


def _real_only_unary(lax_fn, name, exc=TypeError, inexact=True):
    def f(x, /):
        (x,) = promote_and_broadcast(x, name=f"fx.numpy.{name}", inexact=inexact)
        _refuse_complex(name, exc, x)
        return lax_fn(x)

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}``, as ``numpy.{name}`` (integers compute in float)."
    return f


def _lexicographic(lax_fn, name):
    """A comparison that orders complex numbers by real part, then imaginary part (jax's)."""

    def f(x, y, /):
        x, y = promote_and_broadcast(x, y, name=f"fx.numpy.{name}")
        if dtypes.is_complex(get_aval(x).dtype):
            rx, ry = lax.real(x), lax.real(y)
            return lax.select(lax.eq(rx, ry), lax_fn(lax.imag(x), lax.imag(y)), lax_fn(rx, ry))
        return lax_fn(x, y)

    f.__name__ = name
    f.__doc__ = (f"Elementwise ``{name}`` with broadcasting, as ``numpy.{name}``; complex "
                 "numbers compare lexicographically (real part first), as in jax.")
    return f


def _bool_to_int(*arrs):
    """Bools become int32 for integer arithmetic (``True // True``), as in JAX."""
    return [
        lax.convert_element_type(a, dtypes.int32, get_aval(a).weak_type)
        if get_aval(a).dtype == dtypes.bool_ else a
        for a in arrs
    ]


def _unary_float(lax_fn, name):
    def f(x, /):
        (x,) = promote_and_broadcast(x, name=f"fx.numpy.{name}", inexact=True)
        return lax_fn(x)

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}``, as ``numpy.{name}`` (integers compute in float)."
    return f


def _unary_same(lax_fn, name, kinds=None):
    def f(x, /):
        (x,) = promote_and_broadcast(x, name=f"fx.numpy.{name}")
        if kinds is not None:
            _check_kind(name, kinds, x)
        return lax_fn(x)

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}``, as ``numpy.{name}``."
    return f


def _binary(lax_fn, name, inexact=False, bool_fn=None, kinds=None):
    def f(x, y, /):
        x, y = promote_and_broadcast(x, y, name=f"fx.numpy.{name}", inexact=inexact)
        if kinds is not None:
            _check_kind(name, kinds, x, y)
        if bool_fn is not None and get_aval(x).dtype == dtypes.bool_:
            return bool_fn(x, y)
        return lax_fn(x, y)

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` with broadcasting, as ``numpy.{name}``."
    return f


# The unary records over floating and complex operands (fx.lax.elementwise_record) under their
# NumPy names: integers promote to float, then the primitive applies. A new such record needs
# no line here; other records' functions are written below.
_FROM_RECORDS = [r for r in records() if r.numpy and r.nargs == 1 and r.kinds == INEXACT]
for _record in _FROM_RECORDS:
    globals()[_record.numpy] = _unary_float(_record.function, _record.numpy)
__all__ += [r.numpy for r in _FROM_RECORDS]
cbrt = _real_only_unary(lax.cbrt, "cbrt")
negative = _unary_same(lax.neg, "negative", kinds=_NUMERIC)
sign = _unary_same(lax.sign, "sign", kinds=_NUMERIC)


def absolute(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.absolute")
    return x if get_aval(x).dtype == dtypes.bool_ else lax.abs(x)


abs = absolute  # noqa: A001

# On bools, as in numpy and JAX, add is logical or and multiply is logical and.
add = _binary(lax.add, "add", bool_fn=lax.or_)
subtract = _binary(lax.sub, "subtract", kinds=_NUMERIC)
multiply = _binary(lax.mul, "multiply", bool_fn=lax.and_)
true_divide = _binary(lax.div, "true_divide", inexact=True)
divide = true_divide
maximum = _binary(lax.max, "maximum")
minimum = _binary(lax.min, "minimum")


def arctan2(x1, x2, /):
    """Elementwise ``arctan(x1 / x2)`` in the quadrant of ``(x2, x1)``, as ``numpy.arctan2``.
    Complex operands use XLA's (and so jax's) extension, ``-i log((x2 + i x1) /
    sqrt(x2**2 + x1**2))``, whose derivative is ``(x2 dx1 - x1 dx2) / (x1**2 + x2**2)``."""
    y, x = promote_and_broadcast(x1, x2, name="fx.numpy.arctan2", inexact=True)
    if not dtypes.is_complex(get_aval(y).dtype):
        return lax.atan2(y, x)
    y, x = _broadcast_all(y, x, name="fx.numpy.arctan2")
    # x + i y and -i log(.) through the parts, which multiplying by 1j would round alike.
    x_iy = lax.complex(lax.sub(lax.real(x), lax.imag(y)), lax.add(lax.imag(x), lax.real(y)))
    log = lax.log(lax.div(x_iy, lax.sqrt(lax.add(lax.mul(x, x), lax.mul(y, y)))))
    return lax.complex(lax.imag(log), lax.neg(lax.real(log)))


def nextafter(x, y, /):
    x, y = promote_and_broadcast(x, y, name="fx.numpy.nextafter", inexact=True)
    _refuse_complex("nextafter", TypeError, x, y)
    return lax.nextafter(x, y)


equal = _binary(lax.eq, "equal")
not_equal = _binary(lax.ne, "not_equal")
less = _lexicographic(lax.lt, "less")
less_equal = _lexicographic(lax.le, "less_equal")
greater = _lexicographic(lax.gt, "greater")
greater_equal = _lexicographic(lax.ge, "greater_equal")
bitwise_and = _binary(lax.and_, "bitwise_and", kinds=_INT_OR_BOOL)
bitwise_or = _binary(lax.or_, "bitwise_or", kinds=_INT_OR_BOOL)
bitwise_xor = _binary(lax.xor, "bitwise_xor", kinds=_INT_OR_BOOL)
bitwise_not = _unary_same(lax.bitwise_not, "bitwise_not", kinds=_INT_OR_BOOL)
invert = bitwise_not


def left_shift(x, y, /):
    x, y = _bool_to_int(*promote_and_broadcast(x, y, name="fx.numpy.left_shift"))
    _check_kind("left_shift", _INT_OR_BOOL, x, y)
    return lax.shift_left(x, y)


def positive(x, /):
    return to_array(x)


def log2(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.log2", inexact=True)
    return lax.div(lax.log(x), float(np.log(2)))


def log10(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.log10", inexact=True)
    return lax.div(lax.log(x), float(np.log(10)))


def square(x, /):
    (x,) = _bool_to_int(*promote_and_broadcast(x, name="fx.numpy.square"))
    return lax.integer_pow(x, 2)


def reciprocal(x, /):
    """``1 / x``; integers compute in float, as in JAX (numpy keeps integers)."""
    (x,) = promote_and_broadcast(x, name="fx.numpy.reciprocal", inexact=True)
    return lax.integer_pow(x, -1)


def floor(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.floor")
    _refuse_complex("floor", TypeError, x, why="does not accept complex inputs")
    return lax.floor(x) if dtypes.is_float(get_aval(x).dtype) else x


def ceil(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.ceil")
    _refuse_complex("ceil", TypeError, x, why="does not accept complex inputs")
    return lax.ceil(x) if dtypes.is_float(get_aval(x).dtype) else x


def trunc(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.trunc")
    _refuse_complex("trunc", TypeError, x, why="does not accept complex inputs")
    if not dtypes.is_float(get_aval(x).dtype):
        return x
    return lax.select(lax.lt(x, 0), lax.ceil(x), lax.floor(x))


fix = trunc


def rint(x, /):
    """Round half to even. Integers and bools become float, as in JAX (whose ``float_`` is
    float64 under x64; fx converts int64 to float64 and the others to float32)."""
    (x,) = promote_and_broadcast(x, name="fx.numpy.rint", inexact=True)
    if dtypes.is_complex(get_aval(x).dtype):  # the parts separately, as jax
        return lax.complex(lax.round(lax.real(x), 1), lax.round(lax.imag(x), 1))
    return lax.round(x, 1)


def round(a, decimals: int = 0):  # noqa: A001
    """Round half to even, as ``numpy.round``; complex numbers round their real and imaginary
    parts."""
    (a,) = promote_and_broadcast(a, name="fx.numpy.round")
    if dtypes.is_complex(get_aval(a).dtype):
        return lax.complex(round(lax.real(a), decimals), round(lax.imag(a), decimals))
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
    if dtypes.is_complex(get_aval(x).dtype):
        return lax.and_(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    if not dtypes.is_float(get_aval(x).dtype):
        return lax.full_like(x, True, dtypes.bool_)
    return lax.is_finite(x)


def isnan(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.isnan")
    if dtypes.is_complex(get_aval(x).dtype):
        return lax.or_(isnan(lax.real(x)), isnan(lax.imag(x)))
    if not dtypes.is_float(get_aval(x).dtype):
        return lax.full_like(x, False, dtypes.bool_)
    return lax.ne(x, x)


def isinf(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.isinf")
    if dtypes.is_complex(get_aval(x).dtype):
        return lax.or_(isinf(lax.real(x)), isinf(lax.imag(x)))
    if not dtypes.is_float(get_aval(x).dtype):
        return lax.full_like(x, False, dtypes.bool_)
    return lax.eq(lax.abs(x), np.inf)


def signbit(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.signbit")
    _refuse_complex("signbit", ValueError, x, why="is not well defined for complex inputs")
    dt = get_aval(x).dtype
    if not dtypes.is_float(dt):
        return lax.lt(x, 0)
    int_dt = {2: dtypes.int32, 4: dtypes.int32, 8: dtypes.int64}[dt.itemsize]
    if dt.itemsize == 2:
        x = lax.convert_element_type(x, dtypes.float32)
    return lax.lt(lax.bitcast_convert_type(x, int_dt), 0)


def floor_divide(x, y, /):
    """``x // y``: the quotient rounded toward minus infinity. For floats it is computed from
    ``fmod`` (exact) as in JAX, so ``x // 0.0`` is NaN (numpy gives +-inf)."""
    x, y = _bool_to_int(*promote_and_broadcast(x, y, name="fx.numpy.floor_divide"))
    _refuse_complex("floor_divide", TypeError, x, y, why="does not support complex inputs")
    if dtypes.is_float(get_aval(x).dtype):
        return _float_divmod(x, y)[0]
    q = lax.div(x, y)
    # C division truncates; floor differs when the signs differ and the division is inexact.
    adjust = lax.and_(lax.ne(lax.lt(x, 0), lax.lt(y, 0)), lax.ne(lax.mul(q, y), x))
    return lax.select(adjust, lax.sub(q, 1), q)


def _float_divmod(x, y):
    """Floored quotient and remainder of floats. ``fmod`` is exact, so ``(x - fmod) / y`` is an
    integer up to rounding; both are then moved by one where fmod's sign differs from y's.
    Division by zero gives ``x / 0`` (+-inf or NaN), as numpy and JAX do."""
    r = lax.rem(x, y)
    q = lax.div(lax.sub(x, r), y)
    fix = lax.and_(lax.ne(r, 0), lax.ne(lax.lt(r, 0), lax.lt(y, 0)))
    q = lax.select(fix, lax.sub(q, 1), q)
    r = lax.select(fix, lax.add(r, y), r)
    q = lax.select(lax.eq(y, 0), lax.div(x, y), lax.round(q, 0))
    return q, r


def remainder(x, y, /):
    """The remainder with the sign of the divisor, as ``numpy.remainder``."""
    x, y = _bool_to_int(*promote_and_broadcast(x, y, name="fx.numpy.remainder"))
    _refuse_complex("remainder", TypeError, x, y, why="does not support complex inputs")
    r = lax.rem(x, y)
    fix_sign = lax.and_(lax.ne(r, 0), lax.ne(lax.lt(r, 0), lax.lt(y, 0)))
    return lax.select(fix_sign, lax.add(r, y), r)


mod = remainder


def fmod(x, y, /):
    """The remainder with the sign of the dividend (C's ``fmod``)."""
    x, y = _bool_to_int(*promote_and_broadcast(x, y, name="fx.numpy.fmod"))
    _refuse_complex("fmod", TypeError, x, y, why="does not support complex inputs")
    return lax.rem(x, y)


def power(x, y, /):
    """``x ** y``. A Python int exponent uses repeated multiplication (``integer_pow``).

    Integer powers are exact with wrap-around on overflow, as numpy's and JAX's. A negative
    Python int exponent of an integer base raises ``TypeError`` (as in JAX); negative integer
    array exponents give JAX's wrapped result rather than numpy's error.
    """
    if isinstance(y, int) and not isinstance(y, bool):
        (x,) = _bool_to_int(*promote_and_broadcast(x, name="fx.numpy.power"))
        if y >= 0 or dtypes.is_inexact(get_aval(x).dtype):
            return lax.integer_pow(x, y)
        raise TypeError(
            f"fx.numpy.power: integers cannot be raised to negative powers (exponent {y}, base "
            f"{get_aval(x).str_short()}); convert the base to a float dtype first"
        )
    x, y = _bool_to_int(*promote_and_broadcast(x, y, name="fx.numpy.power"))
    if dtypes.is_inexact(get_aval(x).dtype):
        return lax.pow(x, y)
    return _integer_power(x, y)


def _integer_power(x, y):
    # Exponentiation by squaring over every bit of y, in x's own (wrapping) integer dtype.
    x, y = _broadcast_all(x, y, name="fx.numpy.power")
    acc = lax.full_like(x, 1)
    bits = get_aval(y).dtype.itemsize * 8
    for bit in range(bits):
        odd = lax.ne(lax.and_(lax.shift_right_logical(y, bit), 1), 0)
        acc = lax.select(odd, lax.mul(acc, x), acc)
        if bit < bits - 1:
            x = lax.mul(x, x)
    return acc


def float_power(x, y, /):
    """``x ** y`` computed in floating point. As in JAX, the operands are promoted to a float
    dtype as for other inexact functions (numpy always computes in float64)."""
    x, y = promote_and_broadcast(x, y, name="fx.numpy.float_power", inexact=True)
    return lax.pow(x, y)


def right_shift(x, y, /):
    """``x >> y``: arithmetic (sign-filling) for signed integers, logical for unsigned."""
    x, y = _bool_to_int(*promote_and_broadcast(x, y, name="fx.numpy.right_shift"))
    _check_kind("right_shift", _INT_OR_BOOL, x, y)
    dt = get_aval(x).dtype
    if dt == dtypes.uint32:
        return lax.shift_right_logical(x, y)
    # Shifting by the width or more (or by a negative amount, as an unsigned count is huge)
    # leaves only sign bits.
    top = dt.itemsize * 8 - 1
    y = lax.select(lax.lt(y, 0), lax.full_like(y, top), lax.min(y, top))
    # ~x is non-negative where x is negative, so a logical shift of it is arithmetic.
    filled = lax.bitwise_not(lax.shift_right_logical(lax.bitwise_not(x), y))
    return lax.select(lax.lt(x, 0), filled, lax.shift_right_logical(x, y))


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
    _refuse_complex("hypot", ValueError, x, y,
                    why="is not well defined for complex inputs (convert with abs first)")
    ax, ay = lax.abs(x), lax.abs(y)
    big, small = lax.max(ax, ay), lax.min(ax, ay)
    safe = lax.select(lax.eq(big, 0), lax.full_like(big, 1), big)
    r = lax.div(small, safe)
    out = lax.mul(big, lax.sqrt(lax.add(1, lax.mul(r, r))))
    # An infinite side wins over a NaN one (IEEE hypot), which max() would propagate.
    inf = lax.or_(lax.eq(ax, np.inf), lax.eq(ay, np.inf))
    return lax.select(inf, lax.full_like(out, np.inf), out)


def logaddexp(x, y, /):
    """``log(exp(x) + exp(y))``, stably: ``max(x, y) + log1p(exp(-|x - y|))``, as jax.

    >>> print(fx.numpy.round(fx.numpy.logaddexp(fx.numpy.float32(-20.0), 0.0) * 1e9, 3))
    2.061
    """
    x, y = promote_and_broadcast(x, y, name="fx.numpy.logaddexp", inexact=True)
    x, y = _broadcast_all(x, y, name="fx.numpy.logaddexp")
    if dtypes.is_complex(get_aval(x).dtype):
        return _complex_logaddexp(x, y, lax.exp, 1.0)
    return _real_logaddexp(x, y)


def _real_logaddexp_impl(x, y):
    # log1p keeps the small term: log(1 + exp(-20)) is 0 in float32, log1p of it 2.06e-9
    # (softplus of a very negative parameter).
    delta = lax.sub(x, y)
    out = lax.add(lax.max(x, y), lax.log1p(lax.exp(lax.neg(lax.abs(delta)))))
    # A NaN difference is a NaN operand or infinities of one sign: their sum is the answer.
    return lax.select(lax.ne(delta, delta), lax.add(x, y), out)


_real_logaddexp = custom_jvp(_real_logaddexp_impl)


def _finite_or_zero(v):
    return lax.select(lax.eq(v, np.inf), lax.full_like(v, 0), v)


@_real_logaddexp.defjvp
def _real_logaddexp_jvp(primals, tangents):
    # jax's rule: each tangent weighted by exp(operand - out) (its share of the sum), +inf read
    # as 0 so that inf - inf does not make the weights NaN; exact at ties and at every order.
    x, y = primals
    x_dot, y_dot = tangents
    out = _real_logaddexp(x, y)
    o = _finite_or_zero(out)
    weight = lambda v: lax.exp(lax.sub(_finite_or_zero(v), o))  # noqa: E731
    return out, lax.add(lax.mul(x_dot, weight(x)), lax.mul(y_dot, weight(y)))


def _complex_logaddexp(x, y, exp_fn, scale):
    """jax's complex logaddexp (``scale`` 1) or logaddexp2 (``scale`` 1/ln 2, ``exp_fn``
    exp2): ``m + scale * log1p(exp_fn(n - m))`` for ``m`` the (lexicographic) larger operand
    and ``n`` the other, the imaginary part wrapped into ``[-pi*scale, pi*scale)``. jax writes
    ``n - m`` as ``x + y - 2m``; here ``m`` and ``n`` are selected from x and y, so that the
    derivative is the weighted sum ``x_dot exp(x - out) + y_dot exp(y - out)``."""
    pick_x = lax.eq(lax.max(x, y), x)
    m, n = lax.select(pick_x, x, y), lax.select(pick_x, y, x)
    out = lax.add(m, lax.mul(lax.log1p(exp_fn(lax.sub(n, m))), scale))
    half = np.pi * scale
    im = lax.rem(lax.add(lax.imag(out), half), 2 * half)
    im = lax.select(lax.lt(im, 0), lax.add(im, 2 * half), im)
    return lax.complex(lax.real(out), lax.sub(im, half))


def copysign(x, y, /):
    x, y = promote_and_broadcast(x, y, name="fx.numpy.copysign", inexact=True,
                                 equal_rank_error=ValueError)  # jax's where: ValueError
    _refuse_complex("copysign", TypeError, x, y, why="does not support complex inputs")
    x, y = _broadcast_all(x, y, name="fx.numpy.copysign")
    return lax.select(signbit(y), lax.neg(lax.abs(x)), lax.abs(x))


def fmax(x, y, /):
    """The larger of ``x`` and ``y``, ignoring NaNs. At ties the derivative follows ``y``
    (as in JAX, unlike ``maximum``, which splits it)."""
    x, y = promote_and_broadcast(x, y, name="fx.numpy.fmax")
    return where(logical_or(greater(x, y), isnan(y)), x, y)


def fmin(x, y, /):
    """The smaller of ``x`` and ``y``, ignoring NaNs; see :func:`fmax`."""
    x, y = promote_and_broadcast(x, y, name="fx.numpy.fmin")
    return where(logical_or(less(x, y), isnan(y)), x, y)


def heaviside(x1, x2, /):
    """0 where ``x1 < 0``, ``x2`` where ``x1 == 0``, 1 where ``x1 > 0``, NaN where x1 is NaN."""
    x1, x2 = promote_and_broadcast(x1, x2, name="fx.numpy.heaviside", inexact=True,
                                   equal_rank_error=ValueError)  # jax's where: ValueError
    _refuse_complex("heaviside", TypeError, x1, x2)
    x1, x2 = _broadcast_all(x1, x2, name="fx.numpy.heaviside")
    zero_or_one = lax.select(lax.gt(x1, 0), lax.full_like(x1, 1), lax.full_like(x1, 0))
    out = lax.select(lax.eq(x1, 0), x2, zero_or_one)
    return lax.select(lax.ne(x1, x1), x1, out)


def sinc(x, /):
    (x,) = promote_and_broadcast(x, name="fx.numpy.sinc", inexact=True)
    pix = lax.mul(x, np.pi)
    safe = lax.select(lax.eq(x, 0), lax.full_like(x, 1), pix)
    return lax.select(lax.eq(x, 0), lax.full_like(x, 1), lax.div(lax.sin(safe), safe))


def where(condition, x=None, y=None, /, *, size: int | None = None, fill_value=None):
    """``x`` where ``condition`` holds, else ``y``; with ``condition`` alone,
    :func:`fx.numpy.nonzero` of it (``size``/``fill_value`` as there, and needed under
    ``jit`` because the result's length depends on the data).

    >>> c = fx.numpy.array([0, 3, 0, 5])
    >>> fx.numpy.where(c > 0, c, -1)
    Array([-1,  3, -1,  5], dtype=int32)
    >>> fx.numpy.where(c > 0, size=3, fill_value=-1)
    (Array([ 1,  3, -1], dtype=int32),)
    """
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if size is not None or fill_value is not None:
        raise ValueError("fx.numpy.where: size and fill_value apply only to the one-argument "
                         "form where(condition); the three-argument form has the shape of "
                         "its broadcast arguments")
    if x is None or y is None:
        raise TypeError("fx.numpy.where: pass both x and y, or neither (got only "
                        f"{'y' if x is None else 'x'})")
    (c,) = _as_bool(condition, name="where")
    x, y = promote_dtypes(x, y, name="fx.numpy.where")
    c, x, y = _broadcast_all(c, x, y)
    return lax.select(c, x, y)


def _broadcast_all(*args, name="fx.numpy.where"):
    shape = broadcast_shapes(*(get_aval(a).shape for a in args), name=name)
    return [broadcast_to_shape(a, shape, name) for a in args]


def clip(arr=None, /, min=None, max=None):  # noqa: A002
    """Clip ``arr`` to ``[min, max]`` (either may be None; where ``min > max`` the result is
    ``max``), as ``jax.numpy.clip`` and the Array API's ``clip(x, /, min, max)``.

    >>> fx.numpy.clip(fx.numpy.array([0, 3, 9]), 1, max=5)
    Array([1, 3, 5], dtype=int32)
    """
    if arr is None:
        raise ValueError("fx.numpy.clip: no input array was given")
    out = to_array(arr)
    _refuse_complex("clip", ValueError, *(to_array(v) for v in (out, min, max) if v is not None),
                    why="received a complex value; complex numbers have no ordering and "
                        "cannot be clipped")
    if min is not None:
        out = maximum(min, out)
    if max is not None:
        out = minimum(max, out)
    return out
