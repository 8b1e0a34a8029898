"""Samplers: uniform, normal, truncated normal, Bernoulli, integers, Gumbel and categorical.

Each takes a key (``uint32[2]``), a static ``shape`` and a dtype, and returns an fx Array.
They use the same bits and the same arithmetic as ``jax.random`` (threefry2x32, partitionable
counters), so ``uniform``, ``bernoulli`` and ``randint`` are bit-identical to jax's, and the
samplers that go through transcendental functions (``normal`` via ``erf_inv``, ``gumbel`` via
``log``) agree with jax to floating-point tolerance.

Default dtypes are fx's (float32, int32), which are jax's defaults without
``jax_enable_x64``; pass dtypes explicitly to compare with jax in 64-bit mode. Likewise a
Python float ``p`` or ``logits`` is float32 here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fx import dtypes, lax
from fx.array import Array
from fx.core import get_aval
from fx.lax.convert import to_dtype
from fx.random import xla_math as xm
from fx.random.sampling import broadcast_shapes, broadcast_to, const, converted_param
from fx.random.threefry import (
    as_value,
    bits32,
    bits64,
    canonical_shape,
    check_key,
    split_pair,
)

# --- argument helpers ----------------------------------------------------------------------------


def _dtype(name: str, dtype, kind: str) -> np.dtype:
    """Canonicalize a user dtype and check that it is of ``kind`` ('float' or 'integer');
    ``None`` is the mode's default of that kind (float64/int64 with x64 enabled), as jax's."""
    if dtype is None:
        return dtypes.default_float_dtype() if kind == "float" else dtypes.default_int_dtype()
    dt = dtypes.requested(dtype, f"fx.random.{name}")
    ok = dtypes.is_float(dt) if kind == "float" else dtypes.is_int(dt)
    if not ok:
        raise TypeError(
            f"fx.random.{name}: dtype must be a{'n' if kind == 'integer' else ''} {kind} dtype, "
            f"got {dt}"
        )
    return dt


def _check_shape(name: str, shape: tuple[int, ...], *param_shapes: tuple[int, ...]) -> None:
    """Parameters must broadcast to exactly ``shape`` (they may not enlarge it)."""
    if param_shapes and broadcast_shapes(name, shape, *param_shapes) != shape:
        raise ValueError(
            f"fx.random.{name}: parameter shapes {', '.join(map(str, param_shapes))} must "
            f"broadcast to the requested shape {shape} without enlarging it"
        )


# --- uniform ------------------------------------------------------------------------------------


def _unit_floats(name: str, key, shape: tuple[int, ...], dtype: np.dtype):
    """Floats in ``[0, 1)`` from random mantissa bits.

    jax writes ``nmant`` random bits into the mantissa of 1.0 (bitcasting an unsigned word)
    and subtracts 1. That difference is exactly ``m * 2**-nmant`` for the mantissa integer
    ``m``, which is what is computed here, so 16-bit floats need no 16-bit integer type.
    Like jax, float64 takes 64 bits per value, 16-bit floats the low 16 bits of a 32-bit draw
    and types with fewer than 8 mantissa bits (bfloat16) only the low 8.
    """
    info = dtypes.finfo(dtype)
    nbits, nmant = info.bits, info.nmant
    if nbits == 64:
        m = lax.shift_right_logical(bits64(name, key, shape), 64 - nmant)
    else:
        width = 8 if nmant < 8 else nbits
        m = bits32(name, key, shape)
        if width < 32:
            m = lax.and_(m, const(2**width - 1, dtypes.uint32))
        m = lax.shift_right_logical(m, const(width - nmant, dtypes.uint32))
    return lax.mul(lax.convert_element_type(m, dtype), const(2.0**-nmant, dtype))


def sample_uniform(name: str, key, shape: tuple[int, ...], dtype: np.dtype, minval, maxval):
    minval = converted_param(name, "minval", minval, dtype)
    maxval = converted_param(name, "maxval", maxval, dtype)
    _check_shape(name, shape, get_aval(minval).shape, get_aval(maxval).shape)
    floats = _unit_floats(name, key, shape, dtype)
    # jax's operations, in its order and dtype, so that every rounding is the same.
    lo, hi = broadcast_to(minval, shape), broadcast_to(maxval, shape)
    return lax.max(lo, xm.fma(floats, lax.sub(hi, lo), lo))


def uniform(key, shape: int | Sequence[int] = (), dtype=None, minval=0.0,
            maxval=1.0) -> Array:
    """Uniform floats in ``[minval, maxval)``; bit-identical to ``jax.random.uniform``.

    ``minval`` and ``maxval`` broadcast to ``shape``. ``dtype`` is float16, bfloat16, float32
    (the default) or float64.

    Example::

        >>> fx.random.uniform(fx.random.key(0), (2,))
        Array([0.947667 , 0.9785799], dtype=float32)
    """
    key = check_key("uniform", key)
    shape = canonical_shape("uniform", shape)
    dtype = _dtype("uniform", dtype, "float")
    return sample_uniform("uniform", key, shape, dtype, minval, maxval)


# --- normal and truncated normal ----------------------------------------------------------------


def _sqrt2(dtype) -> Array:
    return const(np.sqrt(2.0), dtype)


def normal(key, shape: int | Sequence[int] = (), dtype=None) -> Array:
    """Standard normal samples, by inverting the CDF of a uniform draw (as jax does):
    ``sqrt(2) * erf_inv(u)`` with ``u`` uniform in ``(-1, 1)``.

    Agrees with ``jax.random.normal`` to floating-point tolerance (the uniform draws are
    bit-identical; ``erf_inv`` is computed differently).

    Example::

        >>> fx.random.normal(fx.random.key(0), (3,))
    """
    key = check_key("normal", key)
    shape = canonical_shape("normal", shape)
    dtype = _dtype("normal", dtype, "float")
    return lax.mul(_sqrt2(dtype), _normal_erf_inv(key, shape, dtype))


def _normal_erf_inv(key, shape: tuple[int, ...], dtype):
    """``normal(key, shape, dtype) / sqrt(2)`` exactly: the ``erf_inv`` of its uniform draw."""
    # The smallest float above -1, so that erf_inv never sees -1 (which would give -inf).
    lo = -1.0 + 2.0 ** -(dtypes.finfo(dtype).nmant + 1)
    return xm.erf_inv(sample_uniform("normal", key, shape, dtype, lo, 1.0))


def truncated_normal(key, lower, upper, shape: int | Sequence[int] | None = None,
                     dtype=None) -> Array:
    """Standard normal samples conditioned on the open interval ``(lower, upper)``.

    ``lower`` and ``upper`` broadcast to ``shape`` (by default, to their broadcast shape).
    A uniform draw between ``erf(lower/sqrt2)`` and ``erf(upper/sqrt2)`` goes through
    ``sqrt2 * erf_inv``, then is clipped strictly inside the bounds, as in jax.
    Differentiable in ``lower`` and ``upper``.

    Example::

        >>> fx.random.truncated_normal(fx.random.key(0), -1.0, 1.0, (3,))
    """
    name = "truncated_normal"
    key = check_key(name, key)
    dtype = _dtype(name, dtype, "float")
    lower = converted_param(name, "lower", lower, dtype)
    upper = converted_param(name, "upper", upper, dtype)
    bounds = (get_aval(lower).shape, get_aval(upper).shape)
    if shape is None:
        shape = broadcast_shapes(name, *bounds)
    else:
        shape = canonical_shape(name, shape)
        _check_shape(name, shape, *bounds)
    sqrt2 = _sqrt2(dtype)
    # XLA divides by the constant sqrt(2) as a multiplication by its reciprocal (rounded).
    inv_sqrt2 = const(np.asarray(1, dtype) / np.asarray(np.sqrt(2.0), dtype), dtype)
    a = xm.erf(lax.mul(lower, inv_sqrt2))
    b = xm.erf(lax.mul(upper, inv_sqrt2))
    u = sample_uniform(name, key, shape, dtype, a, b)
    out = lax.mul(sqrt2, xm.erf_inv(u))
    lo = lax.nextafter(lax.stop_gradient(lower), const(np.inf, dtype))
    hi = lax.nextafter(lax.stop_gradient(upper), const(-np.inf, dtype))
    return lax.min(lax.max(out, broadcast_to(lo, shape)), broadcast_to(hi, shape))


# --- Bernoulli ----------------------------------------------------------------------------------


def bernoulli(key, p=0.5, shape: int | Sequence[int] | None = None) -> Array:
    """Booleans that are True with probability ``p``: ``uniform(key, shape, p.dtype) < p``,
    bit-identical to ``jax.random.bernoulli`` for the same dtype of ``p``.

    ``p`` is a float (a Python float is float32 in fx, float64 in jax's 64-bit mode) and
    broadcasts to ``shape`` (by default, ``p``'s shape).

    Example::

        >>> fx.random.bernoulli(fx.random.key(0), 0.3, (4,))
    """
    key = check_key("bernoulli", key)
    if isinstance(p, float):
        p = const(p, dtypes.float32)
    p = as_value(p, "bernoulli", "p")
    aval = get_aval(p)
    if not dtypes.is_float(aval.dtype):
        raise TypeError(
            f"fx.random.bernoulli: the probability p must have a floating dtype, got "
            f"{aval.str_short()}"
        )
    if shape is None:
        shape = aval.shape
    else:
        shape = canonical_shape("bernoulli", shape)
        _check_shape("bernoulli", shape, aval.shape)
    u = sample_uniform("bernoulli", key, shape, aval.dtype, 0.0, 1.0)
    return lax.lt(u, broadcast_to(p, shape))


# --- integers -----------------------------------------------------------------------------------

_INT64_MIN = -(2**63)


def _int_bound(name: str, what: str, value):
    """An integer bound: Python ints as int64 (exact), integer arrays as they are, others
    truncated to int64 (as jax does in 64-bit mode)."""
    if isinstance(value, (bool, int)) and not isinstance(value, np.generic):
        if not -(2**63) <= int(value) < 2**63:
            raise OverflowError(f"fx.random.{name}: {what}={value} does not fit in int64")
        return const(int(value), dtypes.int64)
    x = as_value(value, name, what)
    if not dtypes.is_int(get_aval(x).dtype):
        x = to_dtype(x, dtypes.int64)
    return x


def _clip_convert(x, dtype: np.dtype):
    """``x`` converted to integer ``dtype``, saturating at its bounds instead of wrapping."""
    src = dtypes.iinfo(get_aval(x).dtype)
    dst = dtypes.iinfo(dtype)
    lo, hi = max(src.min, dst.min), min(src.max, dst.max)
    src_dt = get_aval(x).dtype
    x = lax.clamp(const(lo, src_dt), x, const(hi, src_dt))
    return lax.convert_element_type(x, dtype)


def _ult(x, y):
    """Unsigned ``x < y`` for int64 values holding uint64 bits."""
    flip = const(_INT64_MIN, dtypes.int64)
    return lax.lt(lax.xor(x, flip), lax.xor(y, flip))


def _urem(x, n):
    """Unsigned remainder ``x mod n`` (``x`` when ``n == 0``, as XLA's rem). uint32 operands
    use ``rem``; int64 operands hold uint64 bits (fx has no uint64) and are reduced in halves."""
    if get_aval(x).dtype != dtypes.int64:
        return lax.rem(x, n)
    zero, one = const(0, dtypes.int64), const(1, dtypes.int64)
    huge = lax.lt(n, zero)  # n >= 2**63 as unsigned: x mod n is x or x - n
    huge_rem = lax.select(_ult(x, n), x, lax.sub(x, n))
    # n < 2**63: x = 2h + b with h >= 0 a signed int, so (2 (h mod n) + b) mod n works.
    safe = lax.select(lax.le(n, zero), lax.full_like(n, 1), n)
    t = lax.add(lax.shift_left(lax.rem(lax.shift_right_logical(x, one), safe), one),
                lax.and_(x, one))
    small_rem = lax.select(_ult(t, safe), t, lax.sub(t, safe))
    return lax.select(lax.eq(n, zero), x, lax.select(huge, huge_rem, small_rem))


def randint(key, shape: int | Sequence[int], minval, maxval, dtype=None) -> Array:
    """Uniform integers in ``[minval, maxval)``; bit-identical to ``jax.random.randint``.

    As in jax, two draws of twice the dtype's width are reduced modulo the span (no
    rejection loop, so a small bias when the span is not a power of two). Bounds broadcast to
    ``shape`` and are clipped to the dtype's range (``maxval`` one past the dtype's maximum is
    allowed); where ``maxval <= minval`` the result is ``minval``. ``dtype`` is int32, int64
    or uint32 (by default the mode's int: int64 with x64 enabled, as jax's). Python int
    bounds are read as int64, as in jax's 64-bit mode.

    Example::

        >>> fx.random.randint(fx.random.key(0), (4,), 0, 10)
    """
    name = "randint"
    key = check_key(name, key)
    shape = canonical_shape(name, shape)
    dtype = _dtype(name, dtype, "integer")
    minval = _int_bound(name, "minval", minval)
    maxval = _int_bound(name, "maxval", maxval)
    _check_shape(name, shape, get_aval(minval).shape, get_aval(maxval).shape)
    info = dtypes.iinfo(dtype)
    max_dt = get_aval(maxval).dtype
    # maxval = dtype.max + 1 (e.g. 2**32 for uint32) must still reach dtype.max.
    beyond = lax.gt(maxval, const(min(info.max, dtypes.iinfo(max_dt).max), max_dt))
    minval = broadcast_to(_clip_convert(minval, dtype), shape)
    maxval = broadcast_to(_clip_convert(maxval, dtype), shape)
    beyond = broadcast_to(beyond, shape)

    wide = info.bits == 64
    # fx has no uint64: 64-bit unsigned values live in int64, with unsigned compares and rem.
    udt = dtypes.int64 if wide else dtypes.uint32
    draw = bits64 if wide else bits32
    k1, k2 = split_pair(key)
    higher, lower = draw(name, k1, shape), draw(name, k2, shape)

    one = const(1, udt)
    span = lax.convert_element_type(lax.sub(maxval, minval), udt)
    span = lax.select(lax.le(maxval, minval), lax.full_like(span, 1), span)
    span = lax.select(lax.and_(beyond, lax.gt(maxval, minval)), lax.add(span, one), span)
    # 2**nbits mod span, without overflow: (2**(nbits/2) mod span)**2 mod span.
    multiplier = _urem(lax.full_like(span, 2 ** (info.bits // 2)), span)
    multiplier = _urem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(_urem(higher, span), multiplier), _urem(lower, span))
    offset = _urem(offset, span)
    return lax.add(minval, lax.convert_element_type(offset, dtype))


# --- Gumbel and categorical ---------------------------------------------------------------------


def gumbel(key, shape: int | Sequence[int] = (), dtype=None) -> Array:
    """Standard Gumbel samples ``-log(-log(u))``, ``u`` uniform in ``[tiny, 1)`` (jax's
    default "low" mode); agrees with ``jax.random.gumbel`` to floating-point tolerance."""
    key = check_key("gumbel", key)
    shape = canonical_shape("gumbel", shape)
    dtype = _dtype("gumbel", dtype, "float")
    return _gumbel("gumbel", key, shape, dtype)


def _gumbel(name: str, key, shape, dtype):
    u = sample_uniform(name, key, shape, dtype, float(dtypes.finfo(dtype).tiny), 1.0)
    return lax.neg(xm.log(lax.neg(xm.log(u))))


def categorical(key, logits, axis: int = -1, shape: int | Sequence[int] | None = None) -> Array:
    """Indices drawn from the categorical distributions ``softmax(logits, axis)``, by the
    Gumbel-max trick (``argmax(logits + gumbel)``), as ``jax.random.categorical``.

    The result has ``shape`` (by default, ``logits``' shape without ``axis``), which must end
    in that batch shape; leading dimensions draw independent samples. Indices are int32
    (jax's 64-bit mode gives int64).

    Example::

        >>> fx.random.categorical(fx.random.key(0), fnp.log(fnp.array([0.1, 0.9])), shape=(5,))
    """
    name = "categorical"
    key = check_key(name, key)
    logits = as_value(logits, name, "logits")
    aval = get_aval(logits)
    if not dtypes.is_float(aval.dtype):
        raise TypeError(f"fx.random.categorical: logits must be floating, got {aval.str_short()}")
    if aval.ndim == 0:
        raise ValueError("fx.random.categorical: logits must have at least one dimension")
    if not -aval.ndim <= axis < aval.ndim:
        raise ValueError(
            f"fx.random.categorical: axis {axis} is out of range for logits of rank {aval.ndim}"
        )
    axis %= aval.ndim
    batch = aval.shape[:axis] + aval.shape[axis + 1:]
    shape = batch if shape is None else canonical_shape(name, shape)
    _check_shape(name, shape, batch)
    lead = len(shape) - len(batch)
    # The categories axis goes back in at its place within the batch part of ``shape``.
    full_shape = shape[: lead + axis] + (aval.shape[axis],) + shape[lead + axis :]
    g = _gumbel(name, key, full_shape, aval.dtype)
    return lax.argmax(lax.add(g, broadcast_to(logits, full_shape)), lead + axis, dtypes.int32)

