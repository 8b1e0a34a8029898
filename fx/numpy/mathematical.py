"""Elementwise ``fx.numpy`` functions beyond the ufunc core: the array API's spellings of
existing functions (``acos``, ``pow``, ``bitwise_left_shift`` ...), floating-point
decomposition (``frexp``, ``ldexp``, ``modf``, ``spacing``), integer number theory (``gcd``,
``lcm``, ``bitwise_count``), ``i0``, ``logaddexp2``, ``nan_to_num`` and the closeness tests
(``isclose``, ``allclose``, ``array_equal``, ``array_equiv``).

Every function takes array-likes, broadcasts and promotes as ``fx.numpy.ufuncs`` does, and is
built from ``fx.lax`` primitives, so it traces, differentiates (where the math does), vmaps
and compiles. Half-precision floats compute in float32 where a function does real arithmetic
(``i0``, ``frexp``, ``ldexp``) and round once at the end.
"""

from __future__ import annotations

import math

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy import ufuncs
from fx.numpy._promote import (
    asarray,
    broadcast_shapes,
    is_fx_value,
    promote_and_broadcast,
    promote_to_inexact,
    to_array,
)
from fx.numpy.ufuncs import _broadcast_all

__all__ = [
    "acos", "acosh", "allclose", "array_equal", "array_equiv", "asin", "asinh", "atan",
    "atan2", "atanh", "bitwise_count", "bitwise_invert", "bitwise_left_shift",
    "bitwise_right_shift", "divmod", "fabs", "frexp", "gcd", "i0", "isclose", "isneginf",
    "isposinf", "isscalar", "lcm", "ldexp", "logaddexp2", "modf", "nan_to_num", "pow",
    "spacing",
]

# The array API's names for functions numpy spells differently.
acos, acosh = ufuncs.arccos, ufuncs.arccosh
asin, asinh = ufuncs.arcsin, ufuncs.arcsinh
atan, atanh, atan2 = ufuncs.arctan, ufuncs.arctanh, ufuncs.arctan2
pow = ufuncs.power  # noqa: A001
bitwise_invert = ufuncs.invert
bitwise_left_shift = ufuncs.left_shift
bitwise_right_shift = ufuncs.right_shift

_HALF = (dtypes.float16, dtypes.bfloat16)


def _name(fn: str) -> str:
    return f"fx.numpy.{fn}"


def _float_layout(dt: np.dtype):
    """(integer dtype of the same width, mantissa bits, exponent bias) of float32/float64."""
    if dt == dtypes.float64:
        return dtypes.int64, 52, 1023
    return dtypes.int32, 23, 127


def _refuse_complex(name: str, exc: type, *arrs, why="is not defined for complex inputs"):
    """Raise ``exc`` (the exception type jax raises) when an operand is complex."""
    if any(dtypes.is_complex(get_aval(a).dtype) for a in arrs):
        raise exc(f"{_name(name)} {why}, got " + ", ".join(get_aval(a).str_short()
                                                           for a in arrs))


def _require_float_or_int(name: str, x) -> None:
    if get_aval(x).dtype == dtypes.bool_:
        return
    if not (dtypes.is_float(get_aval(x).dtype) or dtypes.is_int(get_aval(x).dtype)):
        raise TypeError(f"{_name(name)}: unsupported dtype {get_aval(x).dtype}")


def fabs(x, /):
    """``|x|`` as a float: integers and bools convert to a float dtype first, as in
    ``numpy.fabs`` and JAX. Example: ``fnp.fabs(fnp.array([-2, 3]))`` is ``[2., 3.]``."""
    (x,) = promote_and_broadcast(x, name=_name("fabs"), inexact=True)
    _refuse_complex("fabs", TypeError, x, why="does not support complex inputs (use abs)")
    return lax.abs(x)


def divmod(x1, x2, /):  # noqa: A001
    """``(x1 // x2, x1 % x2)``, the floored quotient and the remainder with the divisor's
    sign, as Python's ``divmod`` elementwise.

    Example: ``fnp.divmod(fnp.array(7.0), -2.0)`` is ``(-4., -1.)``.
    """
    x1, x2 = promote_and_broadcast(x1, x2, name=_name("divmod"))
    _refuse_complex("divmod", TypeError, x1, x2, why="does not support complex inputs")
    return ufuncs.floor_divide(x1, x2), ufuncs.remainder(x1, x2)


# --- floating-point decomposition --------------------------------------------------------------


def frexp(x, /):
    """Split ``x`` into a mantissa in ``[0.5, 1)`` (with ``x``'s sign) and an int32 exponent
    with ``x == mantissa * 2**exponent``. Zeros, infinities and NaNs give ``(x, 0)``.

    Subnormal inputs are decomposed exactly (as numpy does; XLA flushes them to zero).

    Example: ``fnp.frexp(fnp.array([8.0, -3.0]))`` is ``([0.5, -0.75], [4, 2])``.
    """
    (x,) = promote_and_broadcast(x, name=_name("frexp"), inexact=True)
    _refuse_complex("frexp", TypeError, x, why="does not support complex inputs")
    out_dt = get_aval(x).dtype
    xc = lax.convert_element_type(x, dtypes.float32) if out_dt in _HALF else x
    dt = get_aval(xc).dtype
    int_dt, mant, bias = _float_layout(dt)
    # Subnormals are scaled into the normal range first; the scale comes off the exponent.
    boost = mant + 2
    tiny = float(np.finfo(dt).tiny)
    sub = lax.lt(lax.abs(xc), tiny)
    scaled = lax.select(sub, lax.mul(xc, float(2.0**boost)), xc)
    bits = lax.bitcast_convert_type(scaled, int_dt)
    field_mask = (1 << (int_dt.itemsize * 8 - 1 - mant)) - 1
    field = lax.and_(lax.shift_right_logical(bits, mant), field_mask)
    exponent = lax.sub(field, bias - 1)
    exponent = lax.select(sub, lax.sub(exponent, boost), exponent)
    keep = np.array(~(field_mask << mant), int_dt).item()
    mant_bits = lax.or_(lax.and_(bits, keep), (bias - 1) << mant)
    mantissa = lax.bitcast_convert_type(mant_bits, dt)
    special = lax.or_(lax.eq(xc, 0), lax.bitwise_not(lax.is_finite(xc)))
    mantissa = lax.select(special, xc, mantissa)
    exponent = lax.select(special, lax.full_like(exponent, 0), exponent)
    exponent = lax.convert_element_type(exponent, dtypes.int32)
    return lax.convert_element_type(mantissa, out_dt), exponent


def _pow2(k, dt: np.dtype):
    """``2.0**k`` in ``dt`` for integers ``k`` within the normal exponent range, exactly."""
    int_dt, mant, bias = _float_layout(dt)
    return lax.bitcast_convert_type(lax.shift_left(lax.add(k, bias), mant), dt)


def ldexp(x1, x2, /):
    """``x1 * 2**x2`` for an integer ``x2``, rounded once (subnormal results are exact or
    correctly rounded; overflow gives +-inf). Integer ``x1`` converts to a float dtype.

    Example: ``fnp.ldexp(fnp.array([0.75, 1.0]), fnp.array([2, -1]))`` is ``[3., 0.5]``.
    """
    name = _name("ldexp")
    x2 = to_array(x2, name)
    _refuse_complex("ldexp", ValueError, to_array(x1, name), x2,
                    why="does not support complex inputs")
    n_dt = get_aval(x2).dtype
    if not (dtypes.is_int(n_dt) or n_dt == dtypes.bool_):
        raise TypeError(f"{name}: the exponent x2 must be an integer array, got "
                        f"{get_aval(x2).str_short()}; round and convert it with .astype(int)")
    (x1,) = promote_to_inexact(x1, name=name)
    # jax's ldexp leaves equal ranks to the lax primitives, which raise TypeError
    broadcast_shapes(get_aval(x1).shape, get_aval(x2).shape, name=name, equal_rank_error=TypeError)
    x1, x2 = _broadcast_all(x1, x2, name=name)
    out_dt = get_aval(x1).dtype
    x = lax.convert_element_type(x1, dtypes.float32) if out_dt in _HALF else x1
    dt = get_aval(x).dtype
    int_dt, mant, bias = _float_layout(dt)
    # Beyond +-(2 * bias + mant) every finite result is 0 or inf already.
    limit = 2 * bias + mant + 2
    if n_dt == dtypes.bool_:
        n = lax.convert_element_type(x2, int_dt)
    elif n_dt == dtypes.uint32:
        n = lax.convert_element_type(lax.min(x2, np.uint32(limit)), int_dt)
    else:
        n = lax.convert_element_type(lax.clamp(-limit, x2, limit), int_dt)
    # Three exact power-of-two factors; the last one carries the most, so that when the
    # result is subnormal every earlier product is still normal and only the last rounds.
    lo, hi = -(bias - 1), bias
    c = lax.clamp(lo, n, hi)
    rest = lax.sub(n, c)
    b = lax.clamp(lo, rest, hi)
    a = lax.sub(rest, b)
    out = lax.mul(lax.mul(lax.mul(x, _pow2(a, dt)), _pow2(b, dt)), _pow2(c, dt))
    return lax.convert_element_type(out, out_dt, get_aval(x1).weak_type)


def modf(x, /, out=None):
    """``(fractional part, integral part)`` of ``x``, both with ``x``'s sign, as
    ``numpy.modf`` (the fractional part of +-inf is NaN, as in JAX).

    Example: ``fnp.modf(fnp.array([2.5, -1.25]))`` is ``([0.5, -0.25], [2., -1.])``.
    """
    if out is not None:
        raise NotImplementedError("fx.numpy.modf: out= is not supported (fx arrays are "
                                  "immutable); use the returned arrays")
    (x,) = promote_and_broadcast(x, name=_name("modf"), inexact=True)
    _refuse_complex("modf", TypeError, x, why="does not support complex inputs")
    whole = ufuncs.trunc(x)
    return lax.sub(x, whole), whole


def spacing(x, /):
    """The distance from ``x`` to the next float away from zero (toward -inf for negative
    ``x`` and ``-0.0``), as ``numpy.spacing``; NaN for infinities and NaN.

    Example: ``fnp.spacing(fnp.float32(1.0))`` is ``2**-23``.
    """
    (x,) = promote_and_broadcast(x, name=_name("spacing"), inexact=True)
    _refuse_complex("spacing", ValueError, x)
    away = lax.select(ufuncs.signbit(x), lax.full_like(x, -np.inf), lax.full_like(x, np.inf))
    return lax.sub(lax.nextafter(x, away), x)


# --- integers ------------------------------------------------------------------------------


def _integer_operands(name: str, *args) -> list:
    # jax broadcasts gcd's and lcm's operands with broadcast_arrays: a ValueError at any rank
    arrs = promote_and_broadcast(*args, name=_name(name), equal_rank_error=ValueError)
    _refuse_complex(name, ValueError, *arrs, why="requires integer arguments")
    for a in arrs:
        if not dtypes.is_int(get_aval(a).dtype):
            raise TypeError(
                f"{_name(name)}: arguments must be integers, got "
                + ", ".join(get_aval(b).str_short() for b in arrs)
                + "; convert floats with .astype(int) first")
    return _broadcast_all(*arrs, name=_name(name))


def _abs_int(x):
    return x if get_aval(x).dtype == dtypes.uint32 else lax.abs(x)


def _gcd(a, b):
    # Euclid's algorithm on all entries at once, until every remainder is zero.
    axes = tuple(range(get_aval(a).ndim))

    def cond(carry):
        return lax.reduce_or(lax.ne(carry[1], 0), axes)

    def body(carry):
        a, b = carry
        nonzero = lax.ne(b, 0)
        safe = lax.select(nonzero, b, lax.full_like(b, 1))
        return lax.select(nonzero, b, a), lax.select(nonzero, lax.rem(a, safe),
                                                     lax.full_like(b, 0))

    return lax.while_loop(cond, body, (_abs_int(a), _abs_int(b)))[0]


def gcd(x1, x2, /):
    """The greatest common divisor of ``|x1|`` and ``|x2|`` (``gcd(0, 0) == 0``), for
    integers. Example: ``fnp.gcd(fnp.array([12, 20]), 8)`` is ``[4, 4]``."""
    a, b = _integer_operands("gcd", x1, x2)
    return _gcd(a, b)


def lcm(x1, x2, /):
    """The least common multiple of ``|x1|`` and ``|x2|`` (0 if either is 0), for integers;
    it wraps on overflow. Example: ``fnp.lcm(fnp.array([4, 6]), 10)`` is ``[20, 30]``."""
    a, b = _integer_operands("lcm", x1, x2)
    d = _gcd(a, b)
    zero = lax.eq(d, 0)
    safe = lax.select(zero, lax.full_like(d, 1), d)
    out = _abs_int(lax.mul(a, lax.div(_abs_int(b), safe)))
    return lax.select(zero, lax.full_like(d, 0), out)


def bitwise_count(x, /):
    """The number of one bits in ``|x|``, as ``numpy.bitwise_count``, as uint8.

    Example: ``fnp.bitwise_count(fnp.array([7, -1]))`` is ``[3, 1]``.
    """
    (x,) = promote_and_broadcast(x, name=_name("bitwise_count"))
    dt = get_aval(x).dtype
    out_dt = dtypes.canonicalize(np.uint8)
    if dt == dtypes.bool_:
        return lax.convert_element_type(x, out_dt)
    if not dtypes.is_int(dt):
        raise TypeError(f"fx.numpy.bitwise_count: requires integer or bool input, got "
                        f"{get_aval(x).str_short()}")
    v = _abs_int(x)
    width = dt.itemsize * 8

    def mask(byte: int) -> int:
        m = int.from_bytes(bytes([byte]) * (width // 8), "little")
        return np.array(m, np.uint64).astype(dt).item()

    # Pairs, nibbles, then bytes of bit counts, each kept in place (SWAR).
    v = lax.sub(v, lax.and_(lax.shift_right_logical(v, 1), mask(0x55)))
    v = lax.add(lax.and_(v, mask(0x33)), lax.and_(lax.shift_right_logical(v, 2), mask(0x33)))
    v = lax.and_(lax.add(v, lax.shift_right_logical(v, 4)), mask(0x0F))
    total = lax.and_(v, 0xFF)
    for shift in range(8, width, 8):
        total = lax.add(total, lax.and_(lax.shift_right_logical(v, shift), 0xFF))
    return lax.convert_element_type(total, out_dt)


# --- special functions ---------------------------------------------------------------------

# Below this |x| the power series, above it the asymptotic series, both converge to better
# than float64 precision with the term counts below (checked in the tests against jax).
_I0_SPLIT = 20.0
_I0_SERIES = [1.0 / math.factorial(k) ** 2 for k in range(48)]
_I0_ASYMPTOTIC = [math.prod((2 * j - 1) ** 2 for j in range(1, k + 1)) / (math.factorial(k)
                                                                          * 8.0**k)
                  for k in range(30)]


def _horner(coeffs, t):
    acc = lax.full_like(t, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = lax.add(lax.mul(acc, t), c)
    return acc


def i0(x, /):
    """The modified Bessel function of the first kind of order zero, elementwise.

    ``sum_k (x/2)**(2k) / (k!)**2`` for ``|x| < 20``, ``exp|x| / sqrt(2 pi |x|)`` times the
    asymptotic series above; differentiable (its derivative is ``i1``).

    Example: ``fnp.i0(fnp.array([0.0, 1.0]))`` is ``[1., 1.2660659]``.
    """
    (x,) = promote_and_broadcast(x, name=_name("i0"), inexact=True)
    _refuse_complex("i0", ValueError, x, why="does not support complex inputs")
    out_dt = get_aval(x).dtype
    xc = lax.convert_element_type(x, dtypes.float32) if out_dt in _HALF else x
    ax = lax.abs(xc)
    big = lax.ge(ax, _I0_SPLIT)
    # Each branch sees only arguments in its own range, so the other branch's derivative
    # is finite where it is discarded.
    small_x = lax.select(big, lax.full_like(ax, 0), ax)
    big_x = lax.select(big, ax, lax.full_like(ax, _I0_SPLIT))
    series = _horner(_I0_SERIES, lax.mul(lax.mul(small_x, small_x), 0.25))
    tail = _horner(_I0_ASYMPTOTIC, lax.div(1.0, big_x))
    # exp(x/2) twice: the result stays finite as long as it is representable.
    half = lax.exp(lax.mul(big_x, 0.5))
    asym = lax.mul(half, lax.mul(half, lax.div(tail, lax.sqrt(lax.mul(big_x, 2 * np.pi)))))
    out = lax.select(big, asym, series)
    return lax.convert_element_type(out, out_dt)


def logaddexp2(x1, x2, /):
    """``log2(2**x1 + 2**x2)``, stably (see :func:`fx.numpy.logaddexp`).

    Example: ``fnp.logaddexp2(fnp.float32(1.0), 1.0)`` is ``2.0``.
    """
    x1, x2 = promote_and_broadcast(x1, x2, name=_name("logaddexp2"), inexact=True)
    if dtypes.is_complex(get_aval(x1).dtype):  # jax's complex branch, in base 2
        x1, x2 = _broadcast_all(x1, x2, name=_name("logaddexp2"))
        return ufuncs._complex_logaddexp(x1, x2, lax.exp2, float(1 / np.log(2)))
    ln2 = float(np.log(2))
    return lax.div(ufuncs.logaddexp(lax.mul(x1, ln2), lax.mul(x2, ln2)), ln2)


# --- classification and replacement --------------------------------------------------------


def isposinf(x, /):
    """Whether each entry is ``+inf`` (always False for integers and bools)."""
    (x,) = promote_and_broadcast(x, name=_name("isposinf"))
    _refuse_complex("isposinf", ValueError, x, why="is not well defined for complex inputs")
    if not dtypes.is_float(get_aval(x).dtype):
        return lax.full_like(x, False, dtypes.bool_)
    return lax.eq(x, np.inf)


def isneginf(x, /):
    """Whether each entry is ``-inf`` (always False for integers and bools)."""
    (x,) = promote_and_broadcast(x, name=_name("isneginf"))
    _refuse_complex("isneginf", ValueError, x, why="is not well defined for complex inputs")
    if not dtypes.is_float(get_aval(x).dtype):
        return lax.full_like(x, False, dtypes.bool_)
    return lax.eq(x, -np.inf)


def isscalar(element) -> bool:
    """Whether ``element`` is a scalar: a Python or numpy scalar, a string, or a 0-d array
    (fx's or numpy's), as ``jax.numpy.isscalar``. Lists and ``None`` are not."""
    if is_fx_value(element) or isinstance(element, np.ndarray):
        return get_aval(element).ndim == 0 if is_fx_value(element) else element.ndim == 0
    return bool(np.isscalar(element))


def nan_to_num(x, copy: bool = True, nan=0.0, posinf=None, neginf=None):
    """``x`` with NaN replaced by ``nan``, +inf by ``posinf`` and -inf by ``neginf``
    (defaults: 0 and the dtype's largest and most negative finite values). Integers and bools
    pass through unchanged; complex numbers have their real and imaginary parts replaced
    separately (as jax).

    Example: ``fnp.nan_to_num(fnp.array([nan, inf, 1.0]))`` is ``[0., 3.4028235e+38, 1.]``.
    """
    del copy  # fx arrays are immutable: there is nothing to copy into
    x = to_array(x, _name("nan_to_num"))
    dt = get_aval(x).dtype
    if dtypes.is_complex(dt):
        return lax.complex(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                           nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    if not dtypes.is_float(dt):
        return x
    info = dtypes.finfo(dt)
    out = x
    for value, default, hit in ((nan, 0.0, ufuncs.isnan(x)),
                                (posinf, float(info.max), isposinf(x)),
                                (neginf, float(info.min), isneginf(x))):
        value = default if value is None else value
        # Python numbers convert exactly to dt (float64's max is not a float32 inf).
        repl = lax.convert_element_type(asarray(value, dt), dt, get_aval(x).weak_type)
        out = ufuncs.where(hit, repl, out)
    return out


# --- closeness and equality ----------------------------------------------------------------


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether ``|a - b| <= atol + rtol * |b|`` elementwise. Infinities are close only to
    themselves; NaNs to each other only with ``equal_nan``. Integers and bools compare in
    float; complex numbers compare by the modulus of the difference, with real tolerances.

    Example: ``fnp.isclose(fnp.array([1.0, 1.1]), 1.0)`` is ``[True, False]``.
    """
    name = _name("isclose")
    a, b = promote_and_broadcast(a, b, name=name, inexact=True)
    a, b = _broadcast_all(a, b, name=name)
    dt = get_aval(a).dtype
    if dtypes.is_complex(dt):  # jax's rule: |a - b| <= atol + rtol |b| where b is finite
        rdt = dtypes.real_dtype(dt)
        rtol, atol = asarray(rtol, rdt), asarray(atol, rdt)
        in_range = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
        out = lax.or_(lax.eq(a, b), lax.and_(ufuncs.isfinite(b), in_range))
        if equal_nan:
            out = lax.or_(out, lax.and_(ufuncs.isnan(a), ufuncs.isnan(b)))
        return out
    rtol, atol = asarray(rtol, dt), asarray(atol, dt)
    close = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
    finite = lax.and_(lax.is_finite(a), lax.is_finite(b))
    out = lax.select(finite, close, lax.eq(a, b))
    if equal_nan:
        out = lax.or_(out, lax.and_(lax.ne(a, a), lax.ne(b, b)))
    return out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether every pair of entries is :func:`isclose` (a 0-d bool array)."""
    close = isclose(a, b, rtol, atol, equal_nan)
    return lax.reduce_and(close, tuple(range(get_aval(close).ndim)))


def array_equal(a1, a2, equal_nan: bool = False):
    """Whether ``a1`` and ``a2`` have the same shape and entries (a 0-d bool array); NaNs
    count as equal only with ``equal_nan``. Example: ``fnp.array_equal([1, 2], [1, 2])``."""
    name = _name("array_equal")
    a1, a2 = asarray(a1), asarray(a2)  # sequences too, as jax
    if get_aval(a1).shape != get_aval(a2).shape:
        return lax.full((), False, dtypes.bool_)
    return _all_equal(a1, a2, equal_nan, name)


def array_equiv(a1, a2):
    """Whether ``a1`` and ``a2`` broadcast together and are equal everywhere (a 0-d bool
    array); False when their shapes do not broadcast (as numpy; jax 0.10 raises there).
    Example: ``fnp.array_equiv([1, 2], [[1, 2], [1, 2]])`` is True."""
    name = _name("array_equiv")
    a1, a2 = asarray(a1), asarray(a2)  # sequences too, as jax
    try:
        broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape, name=name)
    except ValueError:
        return lax.full((), False, dtypes.bool_)
    return _all_equal(a1, a2, False, name)


def _all_equal(a1, a2, equal_nan: bool, name: str):
    a1, a2 = promote_and_broadcast(a1, a2, name=name)
    a1, a2 = _broadcast_all(a1, a2, name=name)
    eq = lax.eq(a1, a2)
    if equal_nan and dtypes.is_inexact(get_aval(a1).dtype):
        eq = lax.or_(eq, lax.and_(ufuncs.isnan(a1), ufuncs.isnan(a2)))
    return lax.reduce_and(eq, tuple(range(get_aval(eq).ndim)))
