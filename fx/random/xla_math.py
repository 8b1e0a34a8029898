"""XLA CPU's elementwise math, bit for bit, for the samplers of ``fx.random``.

Takes and returns fx values (any shape; float16/bfloat16 are computed in float32 and rounded
once, as XLA does). These are private composites of exactly rounded fx.lax operations
(add/mul/div/sqrt/select/compare/bitcast/shift/floor/convert), so they trace, compile, batch
and give the same bits eagerly (NumPy) and under ``fx.jit`` (C kernels are built with
``-ffp-contract=off``). They are not ``fx.lax.log`` etc. and do not replace them.

What XLA CPU (jaxlib 0.10.2) emits, read off its optimized LLVM IR and object code:

* float32 ``log``, ``log1p``, ``exp``, ``expm1``, ``erf`` and both float types' ``exp``/
  ``expm1``, ``erf_inv`` and ``lgamma`` (Lanczos) are inline polynomials (Cephes-style for
  float32 ``log``/``exp``; ``log1p`` a rational function below ``|x| < sqrt(2) - 1``;
  ``expm1`` through ``tanh(x/2)``; ``erf_inv`` Giles' approximation, two branches in float32,
  three in float64). The LLVM backend fuses a multiply whose only use is an add or subtract
  into one ``fma`` (x86 with FMA), so each such pair here is ``fma`` (exact: see ``fma``);
  every other operation rounds on its own.
* float64 ``log`` (and the ``log`` inside float64 ``log1p``/``erf_inv``) and ``erf``, and
  ``tan`` and ``pow`` of both types are calls into the process's libm (glibc's ``log``,
  ``erf``, ``tan``, ``tanf``, ``pow``, ``powf``). fx's compiled kernels call the same
  functions, so these go through a small ``fx.jit``-compiled function (``_libm``), also when
  called eagerly.
* XLA's CPU threads run with denormals-are-zero and flush-to-zero set: subnormal inputs and
  results are zeros here too (``flush_denormals``).
* ``rsqrt`` comes from the CPU's approximation instruction, which no exactly rounded
  composition reproduces: ``xla_rsqrt`` runs the instruction itself.

The match is to jaxlib's XLA on x86-64 with FMA (AVX2/AVX-512) and the process's glibc: on a
CPU without FMA XLA would not fuse, and another libm gives other ``log``/``tan``/``pow`` bits.

Derivatives are those of the true functions (``custom_jvp``), computed by the fx.lax
primitives' own jvp rules, as jax differentiates its primitives.
"""

from __future__ import annotations

import functools

import numpy as np

from fx import dtypes, lax
from fx.array import Array
from fx.autodiff import jvp
from fx.core import get_aval
from fx.custom_derivatives import custom_jvp
from fx.jit_function import jit
from fx.lax.convert import to_dtype
from fx.random.xla_rsqrt import float16_fma_fused, flush_denormals

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)

# --- exact fused multiply-add --------------------------------------------------------------------
# Error-free transformations: TwoSum (Knuth), TwoProduct (Dekker/Veltkamp) and rounding to odd
# (Boldo & Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using
# rounding to odd", IEEE TC 2008), which makes a second rounding to nearest come out as if there
# had been only one.


def _const(value, dtype) -> Array:
    return Array(np.asarray(value, dtype=dtype))


def _two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e = a + b`` exactly."""
    s = lax.add(a, b)
    b_part = lax.sub(s, a)
    a_part = lax.sub(s, b_part)
    return s, lax.add(lax.sub(a, a_part), lax.sub(b, b_part))


def _split(x):
    """Veltkamp's split of a float64 into two halves of at most 26 significant bits."""
    t = lax.mul(x, _const(2.0**27 + 1, F64))
    hi = lax.sub(t, lax.sub(t, x))
    return hi, lax.sub(x, hi)


def _two_product(a, b):
    """``(p, e)`` with ``p = fl(a * b)`` and ``p + e = a * b`` exactly (float64, barring
    overflow and underflow)."""
    p = lax.mul(a, b)
    (ah, al), (bh, bl) = _split(a), _split(b)
    e = lax.add(lax.add(lax.sub(lax.mul(ah, bh), p), lax.mul(ah, bl)), lax.mul(al, bh))
    return p, lax.add(e, lax.mul(al, bl))


def _round_to_odd(s, e):
    """``s + e`` (``s = fl(s + e)``) rounded to odd: ``s`` if exact or its last bit is odd,
    else the float next to ``s`` on the side of ``e``."""
    word = lax.bitcast_convert_type(s, dtypes.int64)
    even = lax.eq(lax.and_(word, _const(1, dtypes.int64)), _const(0, dtypes.int64))
    inexact = lax.and_(lax.ne(e, _const(0, F64)), lax.is_finite(s))
    toward = lax.select(lax.gt(e, _const(0, F64)), lax.full_like(s, np.inf),
                        lax.full_like(s, -np.inf))
    return lax.select(lax.and_(inexact, even), lax.nextafter(s, toward), s)


def _scalars_as_vectors(fn):
    """Rank-0 operands go through shape ``(1,)``: bitcast_convert_type's eager impl mis-shapes
    rank 0, and under vmap select_n cannot batch a scalar selector with constant scalar cases."""

    @functools.wraps(fn)
    def wrapped(*args):
        if get_aval(args[0]).shape:
            return fn(*args)
        out = fn(*(lax.reshape(a, (1,)) for a in args))
        return lax.reshape(out, ())

    return wrapped


@_scalars_as_vectors
def fma(a, b, c):
    """``a * b + c`` rounded once, as XLA's contracted multiply-add (operands of one shape).
    float16 follows XLA CPU on this machine: where float16 arithmetic is native (AVX512-FP16)
    the multiply-add is contracted, computed here in float32 (the product is exact there) and
    rounded to float16 once; elsewhere XLA rounds the product and the sum separately, as
    bfloat16 always does. Differentiates as ``a * b + c``."""
    dtype = get_aval(c).dtype
    if dtype == dtypes.float16 and float16_fma_fused():
        wide = [lax.convert_element_type(v, F32) for v in (a, b, c)]
        return lax.convert_element_type(lax.add(lax.mul(wide[0], wide[1]), wide[2]), dtype)
    plain = lax.add(lax.mul(a, b), c)
    if dtype not in (F32, F64):
        return plain
    a, b, c = (lax.stop_gradient(v) for v in (a, b, c))
    if dtype == F32:
        # The float64 product of two float32s is exact; only the sum needs care.
        a, b, c = (to_dtype(v, F64) for v in (a, b, c))
        fused = lax.convert_element_type(_round_to_odd(*_two_sum(lax.mul(a, b), c)), dtype)
    else:
        hi, lo = _two_product(a, b)
        head, tail = _two_sum(c, hi)
        fused = lax.add(head, _round_to_odd(*_two_sum(tail, lo)))
    # The two roundings are within an ulp or so of each other, so the correction is exact and
    # ``plain + correction`` is ``fused``; equal values (infinities too) need none.
    # (``plain`` itself where they agree: adding a zero correction would turn -0 into +0.)
    correction = lax.stop_gradient(lax.sub(fused, plain))
    return lax.select(lax.eq(fused, plain), plain, lax.add(plain, correction))


# --- small helpers -------------------------------------------------------------------------------


def _k(x, v):
    """The constant ``v`` (a number, or the float bits given as ``('bits', int)``) like ``x``."""
    if isinstance(v, tuple):
        word = np.asarray(v[1], np.uint32 if get_aval(x).dtype == F32 else np.uint64)
        v = word.view(get_aval(x).dtype)
    return lax.full_like(x, v)


def _b(word: int):
    return ("bits", word)


def _fma_k(a, b, c):
    """``fma`` where ``b`` and/or ``c`` may be Python constants."""
    b = b if not isinstance(b, (int, float, tuple)) else _k(a, b)
    c = c if not isinstance(c, (int, float, tuple)) else _k(a, c)
    return fma(a, b, c)


def _horner(p, x, coefs):
    """``p = fma(p, x, c)`` for each ``c`` (XLA's contracted Horner steps)."""
    for c in coefs:
        p = _fma_k(p, x, c)
    return p


def _sel(pred, a, b):
    return lax.select(pred, a, b)


def _int(x):
    return dtypes.int32 if get_aval(x).dtype == F32 else dtypes.int64


# --- glibc, through compiled kernels ------------------------------------------------------------


@functools.cache
def _libm(name: str):
    return jit(getattr(lax, name))


# --- float32 -------------------------------------------------------------------------------------


def _log_f32_finish(u, f, e):
    """XLA's float32 log body: ``u`` the argument (for the special cases), ``f`` the reduced
    mantissa in ``[sqrt(1/2) - 1, sqrt(2) - 1)``, ``e`` the exponent (float)."""
    x2 = lax.mul(f, f)
    x3 = lax.mul(x2, f)
    y1 = _horner(_fma_k(f, _b(0x3D9021BB), _b(0xBDEBD1B8)), f, [_b(0x3DEF251A)])
    y2 = _horner(_fma_k(f, _b(0xBDFE5D4F), _b(0x3E11E9BF)), f, [_b(0xBE2AAE50)])
    y3 = _horner(_fma_k(f, _b(0x3E4CCEAC), _b(0xBE7FFFFC)), f, [_b(0x3EAAAAAA)])
    y = fma(fma(y1, x3, y2), x3, y3)
    y = fma(y, x3, lax.mul(e, _k(e, _b(0xB95E8083))))
    r = fma(x2, _k(x2, -0.5), f)
    r = fma(e, _k(e, _b(0x3F318000)), lax.add(r, y))
    bad = lax.bitwise_not(lax.gt(u, _k(u, 0)))  # u <= 0 or NaN
    r = _sel(bad, _k(r, np.nan), r)
    r = _sel(lax.eq(u, _k(u, np.inf)), _k(r, np.inf), r)
    return _sel(lax.eq(u, _k(u, 0)), _k(r, -np.inf), r)


def _log_f32(u):
    # Subnormals (and NaN) are replaced by the smallest normal before the bits are read.
    tiny = _k(u, _b(0x00800000))
    v = _sel(lax.gt(u, tiny), u, tiny)
    bits = lax.bitcast_convert_type(v, dtypes.int32)
    e = lax.convert_element_type(
        lax.sub(lax.shift_right_logical(bits, _const(23, dtypes.int32)),
                _const(127, dtypes.int32)), F32)
    e = lax.add(e, _k(e, 1.0))
    m = lax.bitcast_convert_type(
        lax.or_(lax.and_(bits, _const(-2139095041, dtypes.int32)),
                _const(0x3F000000, dtypes.int32)), F32)  # mantissa in [0.5, 1)
    low = lax.lt(m, _k(m, _b(0x3F3504F3)))
    f = lax.add(lax.sub(m, _k(m, 1.0)), _sel(low, m, _k(m, 0)))
    e = lax.sub(e, _sel(low, _k(e, 1.0), _k(e, 0)))
    return _log_f32_finish(u, f, e)


def _log1p_small(x):
    """XLA's log1p for ``|x| < sqrt(2) - 1``: ``x - x**2/2 + x**3 P(x)/Q(x)``."""
    f32 = get_aval(x).dtype == F32
    z = lax.mul(x, _k(x, 0))  # two uses: not fused
    if f32:
        q = [_b(w) for w in (0x417101AD, 0x42A6185B, 0x435DC32D, 0x439A8CA3, 0x43586D8A,
                             0x42707982)]
        p0, p = 4.527e-05, [_b(w) for w in (0x3EFF40C5, 0x40D284FA, 0x41EF4B9C, 0x4273CC76,
                                            0x426473AD, 0x41A05101)]
    else:
        q = [_b(w) for w in (0x402E20359E903E37, 0x4054C30B52213498, 0x406BB86590FCFB56,
                             0x407351945DC908A5, 0x406B0DB13E48E066, 0x404E0F304466448E)]
        p0, p = (_b(0x3F07BC0962B395CA),
                 [_b(w) for w in (0x3FDFE818A0FE1A83, 0x401A509F46F4FA53, 0x403DE9738B8CB9C9,
                                  0x404E798EB86C3351, 0x404C8E7597479A10, 0x40340A202D99830A)])
    den = _horner(lax.add(z, _k(x, 1.0)), x, q)
    num = _horner(lax.add(z, _k(x, p0)), x, p)
    x2 = lax.mul(x, x)
    t = lax.mul(lax.mul(x, x2), lax.div(num, den))
    return lax.add(x, fma(x2, _k(x2, -0.5), t))


def _log1p_f32(x):
    u = lax.add(x, _k(x, 1.0))
    small = lax.lt(lax.abs(x), _k(x, _b(0x3ED413CD)))
    return _sel(small, _log1p_small(x), _log_f32(u))


def _exp_f32_parts(x):
    """``(p, k)``: XLA's float32 exp is ``p * 2**k`` (``x`` clamped to [-87.8, 88.8])."""
    x = _sel(lax.lt(x, _k(x, -87.8)), _k(x, -87.8), x)
    x = _sel(lax.gt(x, _k(x, 88.8)), _k(x, 88.8), x)
    k = lax.floor(_fma_k(x, _b(0x3FB8AA3B), 0.5))
    k = _sel(lax.lt(k, _k(k, -127.0)), _k(k, -127.0), k)
    k = _sel(lax.gt(k, _k(k, 127.0)), _k(k, 127.0), k)
    r = fma(lax.neg(k), _k(k, _b(0x3F318000)), x)
    r = fma(lax.neg(k), _k(k, _b(0xB95E8083)), r)
    p = _horner(_fma_k(r, _b(0x39506967), _b(0x3AB743CE)), r,
                [_b(0x3C088908), _b(0x3D2AA9C1), _b(0x3E2AAAAA), 0.5])
    p = lax.add(fma(p, lax.mul(r, r), r), _k(r, 1.0))
    # (a NaN k is replaced before the conversion: p is NaN then anyway)
    ki = lax.convert_element_type(_sel(lax.ne(k, k), _k(k, 0), k), dtypes.int32)
    two_k = lax.bitcast_convert_type(
        lax.shift_left(lax.add(ki, _const(127, dtypes.int32)), _const(23, dtypes.int32)), F32)
    return lax.mul(p, two_k)


def _expm1_tail(x, e, lim, small):
    """XLA's expm1 from ``e = exp(x)``: ``e - 1`` for ``|x| > 1/2``, else
    ``tanh(x/2) (e + 1)`` with tanh a rational function of ``h = x/2`` clamped to ``lim``."""
    f32 = get_aval(x).dtype == F32
    h = flush_denormals(lax.mul(x, _k(x, 0.5)))
    hc = _sel(lax.lt(h, _k(h, _neg_bits(lim))), _k(h, _neg_bits(lim)), h)
    hc = _sel(lax.gt(hc, _k(h, _b(lim))), _k(h, _b(lim)), hc)
    h2 = lax.mul(hc, hc)
    if f32:
        num = _fma_h2(h2, _fma_k(h2, _b(0xA59F25C0), _b(0x2A61337E)),
                      [0xAEBD37FF, 0x335C0041, 0x3779434A, 0x3A270DED, 0x3BA059DC])
        den = _fma_h2(h2, _fma_k(h2, _b(0x35A0D3D8), _b(0x38F895D6)), [0x3B14AA05, 0x3BA059DD])
    else:
        num = _fma_h2(h2, _fma_k(h2, _b(0x3B3F9F82E5D782DF), _b(0x3C2C3C836C04B4C8)),
                      [0x3CEC3379F905E662, 0x3D929AFF6C8EDD96, 0x3E2525A389DCE7C2,
                       0x3EA708819BE51CD9, 0x3F18996F4026A7FA, 0x3F787F80B957ED00,
                       0x3FC36FBA9B450E5A, 1.0])
        den = _fma_h2(h2, _fma_k(h2, _b(0x3BBE8630CF903250), _b(0x3C90AABCA9A5FEA0)),
                      [0x3D4232981AA2BBA8, 0x3DDEE2F015EA8065, 0x3E681F1947C52304,
                       0x3EE26C82AB46D140, 0x3F4B2E7C4D488C04, 0x3FA1998830265B50,
                       0x3FDF0D32A2F7DC79, 1.0])
    th = lax.div(lax.mul(hc, num), den)
    if small:
        th = _sel(lax.lt(lax.abs(h), _k(h, 4e-4)), h, th)
    one = _sel(lax.lt(h, _k(h, 0)), _k(h, -1.0), _k(h, 1.0))
    th = _sel(lax.ge(lax.abs(h), _k(h, 20.0)), one, th)
    near = lax.mul(th, lax.add(e, _k(e, 1.0)))
    out = _sel(lax.gt(lax.abs(x), _k(x, 0.5)), lax.add(e, _k(e, -1.0)), near)
    return _sel(lax.eq(h, _k(h, 0)), x, out)


def _neg_bits(word: int):
    """The float bits of ``-bits(word)`` (flip the sign bit) as a ``_b`` constant."""
    sign = 1 << 31 if word < 2**32 else 1 << 63
    return _b(word ^ sign)


def _fma_h2(h2, p, coefs):
    """``p = fma(h2, p, c)`` for each ``c`` (an int is float bits, a float a value)."""
    for c in coefs:
        p = fma(h2, p, _k(h2, _b(c) if isinstance(c, int) else c))
    return p


def _erf_inv_f32(x):
    w = lax.neg(_log1p_f32(lax.mul(x, lax.neg(x))))
    lt = lax.lt(w, _k(w, 5.0))
    pairs = [(2.81022636e-08, -0.000200214257), (3.43273939e-07, 0.000100950558),
             (-3.5233877e-06, 0.00134934322), (-4.39150654e-06, -0.00367342844),
             (0.00021858087, 0.00573950773), (-0.00125372503, -0.0076224613),
             (-0.00417768164, 0.00943887047), (0.246640727, 1.00167406),
             (1.50140941, 2.83297682)]
    c = [_sel(lt, _k(w, a), _k(w, b)) for a, b in pairs]
    t = _sel(lt, lax.add(w, _k(w, -2.5)), lax.add(lax.sqrt(w), _k(w, -3.0)))
    p = c[0]
    for ci in c[1:]:
        p = fma(p, t, ci)
    return _erf_inv_end(x, p)


def _erf_f32(x):
    """XLA's float32 erf: ``x P(x**2) / Q(x**2)`` (explicit fmas), +-1 from ``|x| >= 3.83``."""
    x2 = lax.mul(x, x)
    num = lax.mul(x, _fma_h2(x2, _fma_k(x2, _b(0x39702D51), _b(0x3B5F5DA2)),
                             [0x3D50B6EB, 0x3E3DA740, 0x3F906EBA]))
    den = _fma_h2(x2, _fma_k(x2, _b(0xB3FD3906), _b(0x37C588DF)),
                  [0x3A856D28, 0x3C6687D4, 0x3DE34C21, 0x3EFEB44A, 1.0])
    one = _sel(lax.lt(x, _k(x, 0)), _k(x, -1.0), _k(x, 1.0))
    return _sel(lax.ge(lax.abs(x), _k(x, _b(0x407547CB))), one, lax.div(num, den))


def _erf_inv_end(x, p):
    inf = lax.mul(x, _k(x, np.inf))
    return _sel(lax.eq(lax.abs(x), _k(x, 1.0)), inf, lax.mul(p, x))


# --- float64 -------------------------------------------------------------------------------------


def _exp_f64(x):
    lo, hi = _k(x, _b(0xC086232BDD7ABCD2)), _k(x, _b(0x40862E42FEFA39EF))
    xc = lax.max(lax.min(x, hi), lo)  # NaN propagates, as llvm.minimum/maximum
    n = lax.floor(_fma_k(xc, _b(0x3FF71547652B82FE), 0.5))
    g = fma(lax.neg(n), _k(n, _b(0x3FE62E4000000000)), xc)
    g = fma(lax.neg(n), _k(n, _b(0x3EB7F7D1CF79ABCA)), g)
    g2 = lax.mul(g, g)
    pg = lax.mul(_horner(_fma_k(g2, _b(0x3F2089CDD5E44BE8), _b(0x3F9F06D10CCA2C7E)), g2,
                         [1.0]), g)
    q = _horner(_fma_k(g2, _b(0x3EC92EB6BC365FA0), _b(0x3F64AE39B508B6C0)), g2,
                [_b(0x3FCD17099887E074), 2.0])
    e = _fma_k(lax.div(pg, lax.sub(q, pg)), 2.0, 1.0)
    # 2**n applied as three factors 2**(n >> 2) and one 2**(n - 3 (n >> 2)), n in +-2099.
    i64 = dtypes.int64
    nan = lax.ne(n, n)
    ni = lax.convert_element_type(_sel(nan, _k(n, 0), n), dtypes.int32)
    ni = lax.convert_element_type(lax.clamp(_const(-2099, dtypes.int32), ni,
                                            _const(2099, dtypes.int32)), i64)
    b = lax.shift_right_arithmetic(ni, _const(2, i64))
    bias = _const(0x3FF0000000000000, i64)
    f1 = lax.bitcast_convert_type(lax.add(lax.shift_left(b, _const(52, i64)), bias), F64)
    rest = lax.sub(ni, lax.mul(b, _const(3, i64)))
    f2 = lax.bitcast_convert_type(lax.add(lax.shift_left(rest, _const(52, i64)), bias), F64)
    r = lax.mul(lax.mul(lax.mul(lax.mul(e, f1), f1), f1), f2)
    r = _sel(lax.lt(x, lo), _k(r, 0), r)
    return _sel(lax.gt(x, hi), _k(r, np.inf), r)


def _log1p_f64(x):
    u = lax.add(x, _k(x, 1.0))
    small = lax.lt(lax.abs(x), _k(x, _b(0x3FDA827999FCEF32)))
    return _sel(small, _log1p_small(x), _libm("log")(u))


_ERF_INV_F64 = [  # (w < 6.25, w < 16, otherwise) coefficients, highest degree first
    (-3.64441206401782e-21, 2.2137376921775787e-09, -2.7109920616438573e-11),
    (-1.6850591381820166e-19, 9.0756561938885391e-08, -2.5556418169965252e-10),
    (1.28584807152564e-18, -2.7517406297064545e-07, 1.5076572693500548e-09),
    (1.1157877678025181e-17, 1.8239629214389228e-08, -3.789465440126737e-09),
    (-1.3331716628546209e-16, 1.5027403968909828e-06, 7.61570120807834e-09),
    (2.0972767875968562e-17, -4.013867526981546e-06, -1.496002662714924e-08),
    (6.6376381343583238e-15, 2.9234449089955446e-06, 2.9147953450901081e-08),
    (-4.0545662729752069e-14, 1.2475304481671779e-05, -6.7711997758452339e-08),
    (-8.1519341976054722e-14, -4.7318229009055734e-05, 2.2900482228026655e-07),
    (2.6335093153082323e-12, 6.8284851459573175e-05, -9.9298272942317e-07),
    (-1.2975133253453532e-11, 2.4031110387097894e-05, 4.5260625972231537e-06),
    (-5.4154120542946279e-11, -0.00035503752036284748, -1.9681778105531671e-05),
    (1.0512122733215323e-09, 0.0009532893797373805, 7.5995277030017761e-05),
    (-4.1126339803469837e-09, -0.0016882755560235047, -0.00021503011930044477),
    (-2.9070369957882005e-08, 0.0024914420961078508, -0.00013871931833623122),
    (4.2347877827932404e-07, -0.0037512085075692412, 1.0103004648645344),
    (-1.3654692000834679e-06, 0.0053709145535900636, 4.8499064014085844),
    (-1.3882523362786469e-05, 1.0052589676941592, None),
    (0.00018673420803405714, 3.0838856104922208, None),
    (-0.000740702534166267, None, None),
    (-0.0060336708714301491, None, None),
    (0.24015818242558962, None, None),
    (1.6536545626831027, None, None),
]


def _erf_inv_f64(x):
    """Giles' three-branch erf_inv: the branches share one Horner loop whose coefficients are
    selected per element; a branch that has run out of coefficients keeps its value."""
    w = lax.neg(_log1p_f64(lax.mul(x, lax.neg(x))))
    lt6, lt16 = lax.lt(w, _k(w, 6.25)), lax.lt(w, _k(w, 16.0))
    t = _sel(lt6, lax.add(w, _k(w, -3.125)),
             lax.sub(lax.sqrt(w), _sel(lt16, _k(w, 3.25), _k(w, 5.0))))

    def coef(a, b, c):
        if c is None:
            return _k(w, a) if b is None else _sel(lt6, _k(w, a), _k(w, b))
        return _sel(lt6, _k(w, a), _sel(lt16, _k(w, b), _k(w, c)))

    p = coef(*_ERF_INV_F64[0])
    for a, b, c in _ERF_INV_F64[1:]:
        new = fma(p, t, coef(a, b, c))
        if c is None:  # the last branch is done; from here on, so is the middle one
            keep = lt16 if b is not None else lt6
            new = _sel(keep, new, p)
        p = new
    return _erf_inv_end(x, p)


# --- lgamma (both float types) -------------------------------------------------------------------

_LANCZOS = {  # jax's lgamma: Lanczos' series (g = 7, 9 terms), the first term by dtype
    F32: 1.0, F64: 0.99999999999980993}
_LANCZOS_TERMS = [676.5203681218851, -1259.1392167224028, 771.32342877765313,
                  -176.61502916214059, 12.507343278686905, -0.13857109526572012,
                  9.9843695780195716e-06, 1.5056327351493116e-07]


def _lgamma(x):
    """XLA's lgamma (jax's Lanczos approximation). Bit for bit for ``x >= 1/2``; the reflection
    used below 1/2 takes fx's ``sin``, not XLA's, so it agrees there to rounding only."""
    dt = get_aval(x).dtype
    small = lax.lt(x, _k(x, 0.5))
    z = _sel(small, lax.neg(x), lax.add(x, _k(x, -1.0)))
    # log(z + 7.5) = log(7.5) + log1p(z / 7.5), the division a multiplication by 1/7.5 (rounded).
    log_t = lax.add(log1p(lax.mul(z, _k(z, np.asarray(1, dt) / np.asarray(7.5, dt)))),
                    _k(z, 2.0149030205422647))
    t = lax.add(z, _k(z, 7.5))
    head = fma(lax.sub(lax.add(z, _k(z, 0.5)), lax.div(t, log_t)), log_t,
               _k(z, 0.91893853320467267))
    series = lax.add(lax.div(_k(z, _LANCZOS_TERMS[0]), lax.add(z, _k(z, 1.0))),
                     _k(z, _LANCZOS[dt]))
    for i, c in enumerate(_LANCZOS_TERMS[1:], start=2):
        series = lax.add(series, lax.div(_k(z, c), lax.add(z, _k(z, float(i)))))
    result = lax.add(head, log(series))
    # Reflection: lgamma(x) = log(pi) - log|sin(pi x)| - lgamma(1 - x).
    ax = lax.abs(x)
    frac = lax.sub(ax, lax.floor(ax))
    frac = _sel(lax.lt(_k(frac, 0.5), frac), lax.sub(_k(frac, 1.0), frac), frac)
    log_sin = log(lax.sin(lax.mul(frac, _k(frac, np.pi))))
    reflected = _sel(lax.is_finite(log_sin), lax.sub(lax.sub(_k(x, 1.1447298858494002), log_sin),
                                                     result), lax.neg(log_sin))
    out = _sel(small, reflected, result)
    return _sel(lax.eq(ax, _k(ax, np.inf)), _k(out, np.inf), out)


# --- dispatch with the true derivatives ----------------------------------------------------------


def _by_dtype(f32_impl, f64_impl, fallback, keep_zeros: bool):
    """Run the float32 or float64 version (on and to flushed denormals); 16-bit floats go
    through float32. ``keep_zeros``: the function returns a zero or subnormal ``x`` itself
    (XLA's expm1 selects ``x`` where ``x / 2 == 0``; glibc's tan returns a tiny ``x``)."""

    def flushed(f, x):
        xf = flush_denormals(x)
        out = flush_denormals(f(xf))
        return _sel(lax.eq(xf, _k(xf, 0)), x, out) if keep_zeros else out

    def impl(x):
        dt = get_aval(x).dtype
        if dt == F64:
            return flushed(f64_impl, x)
        if dt == F32:
            return flushed(f32_impl, x)
        if dt in (dtypes.float16, dtypes.bfloat16):
            return lax.convert_element_type(f32_impl(lax.convert_element_type(x, F32)), dt)
        return fallback(x)

    return _scalars_as_vectors(impl)


def _unary(name: str, f32_impl, f64_impl, keep_zeros: bool = False):
    lax_fn = getattr(lax, name)
    impl = _by_dtype(f32_impl, f64_impl, lax_fn, keep_zeros)
    fn = custom_jvp(impl)

    @fn.defjvp
    def _jvp(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return impl(x), jvp(lax_fn, (x,), (x_dot,))[1]

    fn.__doc__ = f"XLA CPU's ``{name}``, bit for bit (see the module docstring)."
    return fn


log = _unary("log", _log_f32, lambda x: _libm("log")(x))
log1p = _unary("log1p", _log1p_f32, _log1p_f64)
exp = _unary("exp", _exp_f32_parts, _exp_f64)
expm1 = _unary("expm1", lambda x: _expm1_tail(x, _exp_f32_parts(x), 0x40FFF644, True),
               lambda x: _expm1_tail(x, _exp_f64(x), 0x4031B6D58F246197, False), True)
erf_inv = _unary("erf_inv", _erf_inv_f32, _erf_inv_f64)
lgamma = _unary("lgamma", _lgamma, _lgamma)
erf = _unary("erf", _erf_f32, lambda x: _libm("erf")(x))
tan = _unary("tan", lambda x: _libm("tan")(x), lambda x: _libm("tan")(x), True)


def pow(x, y):  # noqa: A001  (jax's name)
    """XLA CPU's ``pow`` (glibc's ``powf``/``pow``, called from a compiled kernel)."""
    if get_aval(x).dtype not in (F32, F64):
        return _libm("pow")(x, y)
    return flush_denormals(_libm("pow")(flush_denormals(x), flush_denormals(y)))
