"""Bit-level functions of ``jax.lax``, composed from fx's shifts, masks and bitcasts.

``shift_right_arithmetic``, ``population_count``, ``clz``, ``mulhi`` (integers) and
``reduce_precision`` (floats) have XLA's exact semantics; being compositions, they need no
primitive and no lowering of their own, and ``jit`` gives the same bits as eager.

Signed arithmetic here never overflows: C leaves signed overflow undefined, so every sum and
product that can wrap is done in the unsigned integer type of the same width (reached by a
bitcast), and population counts of signed values count the sign bit separately.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes
from fx.core import get_aval
from fx.lax import elementwise as ew
from fx.lax.base import as_array

_c = np.asarray


def _int_operand(x, name: str):
    x = as_array(x, name)
    aval = get_aval(x)
    if not dtypes.is_int(aval.dtype):
        raise TypeError(f"fx.lax.{name}: needs an integer operand, got {aval.str_short()}")
    return x, aval.dtype


def _unsigned(dt: np.dtype) -> np.dtype:
    return np.dtype(f"u{dt.itemsize}")


def _signed(dt: np.dtype) -> np.dtype:
    return np.dtype(f"i{dt.itemsize}")


def shift_right_arithmetic(x, y):
    """``x >> y`` filling with copies of the sign bit (the top bit, for unsigned types too,
    as XLA); a shift by a negative amount or by the width or more gives all sign bits."""
    x, y = ew._coerce(x, y)
    x, dt = _int_operand(x, "shift_right_arithmetic")
    if get_aval(y).dtype != dt:
        raise TypeError(f"fx.lax.shift_right_arithmetic: operands must have one dtype, got "
                        f"{dt} and {get_aval(y).dtype}")
    sdt = _signed(dt)
    xs = ew.bitcast_convert_type(x, sdt) if sdt != dt else x
    ys = ew.bitcast_convert_type(y, sdt) if sdt != dt else y
    # For a negative x, shift its complement logically and complement back: the vacated bits
    # become ones. Out-of-range shifts give 0 from the logical shift, hence 0 or -1.
    negative = ew.lt(xs, _c(0, sdt))
    out = ew.select(negative, ew.bitwise_not(ew.shift_right_logical(ew.bitwise_not(xs), ys)),
                    ew.shift_right_logical(xs, ys))
    return ew.bitcast_convert_type(out, dt) if sdt != dt else out


def _swar_popcount(x, dt: np.dtype):
    """The number of one bits of each non-negative (or unsigned) ``x``, in ``dt``."""
    bits = dt.itemsize * 8

    def mask(byte: int):
        return _c(int.from_bytes(bytes([byte]) * dt.itemsize, "little") & np.iinfo(dt).max, dt)

    def srl(v, s: int):
        return ew.shift_right_logical(v, _c(s, dt))

    x = ew.sub(x, ew.and_(srl(x, 1), mask(0x55)))
    x = ew.add(ew.and_(x, mask(0x33)), ew.and_(srl(x, 2), mask(0x33)))
    x = ew.and_(ew.add(x, srl(x, 4)), mask(0x0F))
    shift = 8
    while shift < bits:  # sum the byte counts: each partial sum stays below 2**7
        x = ew.add(x, srl(x, shift))
        shift *= 2
    return ew.and_(x, _c(0x7F if bits < 128 else 0xFF, dt))


def population_count(x):
    """The number of set bits of each element, in ``x``'s integer dtype.

    Example::

        >>> fx.lax.population_count(fx.numpy.array([0, 7, -1]))
        Array([ 0,  3, 32], dtype=int32)
    """
    x, dt = _int_operand(x, "population_count")
    if not dtypes.is_signed_int(dt):
        return _swar_popcount(x, dt)
    top = _c(np.iinfo(dt).max, dt)
    rest = _swar_popcount(ew.and_(x, top), dt)
    sign = ew.convert_element_type(ew.lt(x, _c(0, dt)), dt)
    return ew.add(rest, sign)


def clz(x):
    """The number of leading zero bits of each element (the width for 0), in ``x``'s dtype."""
    x, dt = _int_operand(x, "clz")
    bits = dt.itemsize * 8
    shift = 1
    while shift < bits:  # smear the highest set bit into every lower position
        x = ew.or_(x, ew.shift_right_logical(x, _c(shift, dt)))
        shift *= 2
    return ew.sub(_c(bits, dt), population_count(x))


def mulhi(x, y, /):
    """The high half of the double-width product ``x * y`` (signed or unsigned, as XLA).

    Example::

        >>> fx.lax.mulhi(fx.numpy.array([2**31], "uint32"), fx.numpy.array([6], "uint32"))
        Array([3], dtype=uint32)
    """
    x, y = ew._coerce(x, y)
    x, dt = _int_operand(x, "mulhi")
    if get_aval(y).dtype != dt or get_aval(y).shape != get_aval(x).shape and get_aval(y).shape:
        raise TypeError(f"fx.lax.mulhi: operands must have one dtype and shape, got "
                        f"{get_aval(x).str_short()} and {get_aval(y).str_short()}")
    udt = _unsigned(dt)
    ux = ew.bitcast_convert_type(x, udt) if udt != dt else x
    uy = ew.bitcast_convert_type(y, udt) if udt != dt else y
    half = dt.itemsize * 4
    lo_mask, h = _c((1 << half) - 1, udt), _c(half, udt)

    def split(v):
        return ew.and_(v, lo_mask), ew.shift_right_logical(v, h)

    # Schoolbook on half-width limbs; every partial sum below fits the full width.
    (a0, a1), (b0, b1) = split(ux), split(uy)
    p00, p10, p01, p11 = ew.mul(a0, b0), ew.mul(a1, b0), ew.mul(a0, b1), ew.mul(a1, b1)
    cross = ew.add(ew.add(ew.shift_right_logical(p00, h), ew.and_(p10, lo_mask)), p01)
    hi = ew.add(ew.add(p11, ew.shift_right_logical(p10, h)), ew.shift_right_logical(cross, h))
    if udt == dt:
        return hi
    # Signed: hi(x*y) = hi(ux*uy) - (x < 0 ? uy : 0) - (y < 0 ? ux : 0), modulo 2**width.
    zero = ew.full_like(ux, 0)
    hi = ew.sub(hi, ew.select(ew.lt(x, _c(0, dt)), uy, zero))
    hi = ew.sub(hi, ew.select(ew.lt(y, _c(0, dt)), ux, zero))
    return ew.bitcast_convert_type(hi, dt)


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """Round each float to the nearest value of a float format with ``exponent_bits`` and
    ``mantissa_bits`` (ties to even), in the operand's dtype: values beyond that format's
    range become infinities, values below its smallest normal become (signed) zeros, NaNs
    stay NaN (XLA's ``ReducePrecision``; ``(8, 7)`` is bfloat16, ``(5, 10)`` float16).

    Example::

        >>> fx.lax.reduce_precision(fx.numpy.array([1.0 + 2.0**-12, 70000.0]), 5, 10)
        Array([ 1., inf], dtype=float32)
    """
    x = as_array(operand, "reduce_precision")
    aval = get_aval(x)
    if not dtypes.is_float(aval.dtype):
        raise TypeError(f"fx.lax.reduce_precision: needs a floating operand, got "
                        f"{aval.str_short()}")
    exponent_bits, mantissa_bits = int(exponent_bits), int(mantissa_bits)
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError(f"fx.lax.reduce_precision: exponent_bits must be >= 1 and "
                         f"mantissa_bits >= 0, got {exponent_bits} and {mantissa_bits}")
    dt = aval.dtype
    info = dtypes.finfo(dt)
    src_m, src_e = int(info.nmant), int(info.nexp)
    udt = _unsigned(dt)
    bits = ew.bitcast_convert_type(x, udt)
    width = dt.itemsize * 8

    def u(v: int):
        return _c(v & ((1 << width) - 1), udt)

    if mantissa_bits < src_m:
        drop = src_m - mantissa_bits
        last = ew.shift_right_logical(ew.and_(bits, u(1 << drop)), u(drop))
        bias = ew.add(last, u((1 << (drop - 1)) - 1))
        bits = ew.and_(ew.add(bits, bias), u(~((1 << drop) - 1)))
    if exponent_bits < src_e:
        exp_mask = u(((1 << src_e) - 1) << src_m)
        bias, reduced_bias = (1 << (src_e - 1)) - 1, (1 << (exponent_bits - 1)) - 1
        exponent = ew.and_(bits, exp_mask)
        sign = ew.and_(bits, u(1 << (width - 1)))
        overflows = ew.gt(exponent, u((bias + reduced_bias) << src_m))
        underflows = ew.le(exponent, u((bias - reduced_bias) << src_m))
        bits = ew.select(overflows, ew.or_(sign, exp_mask), ew.select(underflows, sign, bits))
    # A NaN stays NaN even where rounding its payload away would leave an infinity.
    return ew.select(ew.ne(x, x), x, ew.bitcast_convert_type(bits, dt))
