"""Counting distributions: ``rademacher``, ``geometric``, ``poisson``, ``binomial`` and
``multinomial``, each jax's algorithm with jax's key splits.

* ``poisson``: Knuth's multiplication method for ``lam < 10`` (and NaN), Hörmann's transformed
  rejection ("PTRS") otherwise; both run over the whole array (with a harmless ``lam`` where
  the other is used) and ``lam == 0`` gives 0. ``lam`` is float32, as in jax.
* ``binomial``: inversion by geometric waiting times when ``n q <= 10`` (``q = min(p, 1-p)``),
  else Hörmann's BTRS with jax's Stirling tail table (including its clamp of ``k`` to 9
  before the asymptotic formula); jax's NaN/inf conventions for bad ``n`` and ``p``.
* ``multinomial``: a ``scan`` of conditional binomials over the categories.

The rejection loops are ``while_loop``s that draw for every element until all have accepted.
``rademacher`` and ``geometric`` are bit-identical to jax, and ``poisson``'s float arithmetic
is XLA's (``xla_math``'s ``log``/``lgamma``, the fused multiply-adds), so its counts match (no
difference in 21,000 draws checked). ``binomial``'s BTRS arithmetic has not been matched
operation by operation (its counts agree for the tested keys): a draw sitting within an ulp
of a threshold could differ.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fx import dtypes, lax
from fx.array import Array
from fx.core import get_aval
from fx.random import xla_math as xm
from fx.random.distributions import sample_uniform
from fx.random.sampling import broadcast_to, const, int_or_float_dtype, shape_of, value
from fx.random.threefry import canonical_shape, check_key, split

Shape = int | Sequence[int]


def _keys(key, n: int):
    ks = split(key, n)
    return [lax.reshape(lax.slice(ks, (i, 0), (i + 1, 2)), (2,)) for i in range(n)]


def _any(pred):
    return lax.reduce_or(pred, tuple(range(get_aval(pred).ndim)))


def _c(x, v):
    return lax.full_like(x, v)


def _loop_cap(limit) -> Array:
    """jax's ``max_iters`` (the dtype's maximum), as an int32 counter can hold it."""
    return const(min(int(limit), 2**31 - 1), dtypes.int32)


def _inexact(name: str, what: str, x):
    """jax's ``promote_dtypes_inexact`` of one parameter."""
    x = value(name, what, x)
    dt = get_aval(x).dtype
    if not dtypes.is_inexact(dt):
        x = lax.convert_element_type(x, dtypes.to_inexact_dtype(dt))
    return x


# --- rademacher and geometric --------------------------------------------------------------------


def sample_rademacher(key, shape: tuple[int, ...], dtype):
    # bernoulli(key, 0.5): a Python float p is the mode's default float, as in jax.
    fdt = dtypes.default_float_dtype()
    b = lax.lt(sample_uniform("rademacher", key, shape, fdt, 0.0, 1.0), lax.full(shape, 0.5, fdt))
    b = lax.convert_element_type(b, dtype)
    return lax.sub(lax.mul(_c(b, 2), b), _c(b, 1))


def rademacher(key, shape: Shape = (), dtype=None) -> Array:
    """Random signs, -1 or +1 with equal probability (``2 * bernoulli(0.5) - 1``), as
    ``jax.random.rademacher``; ``dtype`` by default the mode's integer type.

    Example::

        >>> fx.random.rademacher(fx.random.key(0), (4,))
    """
    key = check_key("rademacher", key)
    dtype = int_or_float_dtype("rademacher", dtype)
    return sample_rademacher(key, canonical_shape("rademacher", shape), dtype)


def geometric(key, p, shape: Shape | None = None, dtype=None) -> Array:
    """Geometric samples (trials until the first success, >= 1):
    ``floor(log(u) / log1p(-p)) + 1``, as ``jax.random.geometric``.

    Example::

        >>> fx.random.geometric(fx.random.key(0), 0.3, (4,))
    """
    name = "geometric"
    key = check_key(name, key)
    dtype = int_or_float_dtype(name, dtype, "int")
    p = _inexact(name, "p", p)
    shape = shape_of(name, shape, p)
    u = sample_uniform(name, key, shape, get_aval(p).dtype, 0.0, 1.0)
    u = lax.select(lax.eq(u, _c(u, 0)), _c(u, 1), u)
    log_q = broadcast_to(xm.log1p(lax.neg(p)), shape)
    g = lax.add(lax.floor(lax.div(xm.log(u), log_q)), _c(u, 1))
    return lax.convert_element_type(g, dtype)


# --- poisson -------------------------------------------------------------------------------------


def _poisson_knuth(key, lam, shape, dtype, cap):
    def body(carry):
        i, k, rng, log_prod = carry
        rng, subkey = _keys(rng, 2)
        k = lax.select(lax.gt(log_prod, lax.neg(lam)), lax.add(k, _c(k, 1)), k)
        u = sample_uniform("poisson", subkey, shape, dtypes.float32, 0.0, 1.0)
        return lax.add(i, _c(i, 1)), k, rng, lax.add(log_prod, xm.log(u))

    def cond(carry):
        i, _, _, log_prod = carry
        return lax.and_(_any(lax.gt(log_prod, lax.neg(lam))), lax.lt(i, cap))

    init = (const(0, dtypes.int32), lax.full(shape, 0, dtype), key,
            lax.full(shape, 0, dtypes.float32))
    k = lax.while_loop(cond, body, init)[1]
    return lax.sub(k, _c(k, 1))


def _poisson_rejection(key, lam, shape, dtype, cap):
    # Hörmann, "The transformed rejection method for generating Poisson random variables".
    f32 = lambda v: _c(lam, v)  # noqa: E731
    log_lam = xm.log(lam)
    # (XLA fuses each multiply feeding an add into one fma.)
    b = xm.fma(f32(2.53), lax.sqrt(lam), f32(0.931))
    a = xm.fma(f32(0.02483), b, f32(-0.059))
    inv_alpha = lax.add(f32(1.1239), lax.div(f32(1.1328), lax.sub(b, f32(3.4))))
    v_r = lax.sub(f32(0.9277), lax.div(f32(3.6224), lax.sub(b, f32(2))))

    def body(carry):
        i, k_out, accepted, key = carry
        key, k0, k1 = _keys(key, 3)
        u = lax.sub(sample_uniform("poisson", k0, shape, dtypes.float32, 0.0, 1.0), f32(0.5))
        v = sample_uniform("poisson", k1, shape, dtypes.float32, 0.0, 1.0)
        us = lax.sub(f32(0.5), lax.abs(u))
        k = lax.floor(lax.add(xm.fma(lax.add(lax.div(lax.mul(f32(2), a), us), b), u, lam),
                              f32(0.43)))
        s = xm.log(lax.div(lax.mul(v, inv_alpha), lax.add(lax.div(a, lax.mul(us, us)), b)))
        t = lax.sub(xm.fma(k, log_lam, lax.neg(lam)), xm.lgamma(lax.add(k, f32(1))))
        accept1 = lax.and_(lax.ge(us, f32(0.07)), lax.le(v, v_r))
        reject = lax.or_(lax.lt(k, f32(0)), lax.and_(lax.lt(us, f32(0.013)), lax.gt(v, us)))
        accept = lax.or_(accept1, lax.and_(lax.bitwise_not(reject), lax.le(s, t)))
        return (lax.add(i, _c(i, 1)), lax.select(accept, k, k_out), lax.or_(accepted, accept),
                key)

    def cond(carry):
        i, _, accepted, _ = carry
        return lax.and_(_any(lax.bitwise_not(accepted)), lax.lt(i, cap))

    init = (const(0, dtypes.int32), lax.full(shape, -1, dtypes.float32),
            lax.full(shape, False, dtypes.bool_), key)
    return lax.convert_element_type(lax.while_loop(cond, body, init)[1], dtype)


def poisson(key, lam, shape: Shape | None = None, dtype=None) -> Array:
    """Poisson samples of rate ``lam`` (converted to float32, as in jax), as
    ``jax.random.poisson``; ``dtype`` is an integer type (by default the mode's).

    Example::

        >>> fx.random.poisson(fx.random.key(0), 3.0, (4,))
    """
    name = "poisson"
    key = check_key(name, key)
    dtype = int_or_float_dtype(name, dtype)
    lam = value(name, "lam", lam)
    shape = get_aval(lam).shape if shape is None else canonical_shape(name, shape)
    try:
        lam = broadcast_to(lam, tuple(shape))
    except Exception:
        raise ValueError(f"fx.random.poisson: lam of shape {get_aval(lam).shape} does not "
                         f"broadcast to the shape {shape}") from None
    lam = lax.convert_element_type(lam, dtypes.float32)
    cap = _loop_cap(dtypes.iinfo(dtype).max if dtypes.is_int(dtype) else 2**31 - 1)
    use_knuth = lax.or_(lax.ne(lam, lam), lax.lt(lam, _c(lam, 10)))
    lam_knuth = lax.select(use_knuth, lam, _c(lam, 0.0))
    lam_rejection = lax.select(use_knuth, _c(lam, 1e5), lam)
    result = lax.select(use_knuth, _poisson_knuth(key, lam_knuth, shape, dtype, cap),
                        _poisson_rejection(key, lam_rejection, shape, dtype, cap))
    return lax.select(lax.eq(lam, _c(lam, 0)), lax.full_like(result, 0), result)


# --- binomial ------------------------------------------------------------------------------------

_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_approx_tail(k):
    """jax's table for ``k <= 9``, else the asymptotic series, evaluated (as jax does) at
    ``k`` clamped to ``[0, 9]``."""
    use_table = lax.le(k, _c(k, 9))
    k = lax.clamp(_c(k, 0.0), k, _c(k, 9.0))
    kp1 = lax.add(k, _c(k, 1))
    kp1sq = lax.mul(kp1, kp1)
    approx = lax.div(lax.sub(_c(k, 1.0 / 12),
                             lax.div(lax.sub(_c(k, 1.0 / 360), lax.div(_c(k, 1.0 / 1260), kp1sq)),
                                     kp1sq)), kp1)
    idx = lax.convert_element_type(lax.floor(k), dtypes.int32)
    table = _c(k, _STIRLING_TAIL[-1])
    for i in range(len(_STIRLING_TAIL) - 2, -1, -1):
        table = lax.select(lax.eq(idx, lax.full_like(idx, i)), _c(k, _STIRLING_TAIL[i]), table)
    return lax.select(use_table, table, approx)


def _binomial_inversion(key, count, prob, shape, cap):
    log1mp = xm.log1p(lax.neg(prob))
    dt = get_aval(prob).dtype

    def body(carry):
        i, num_geom, geom_sum, key = carry
        subkey, key = _keys(key, 2)
        num_geom_out = lax.select(lax.le(geom_sum, count), lax.add(num_geom, _c(num_geom, 1)),
                                  num_geom)
        u = sample_uniform("binomial", subkey, shape, dt, 0.0, 1.0)
        geom = lax.ceil(lax.div(xm.log(u), log1mp))
        return lax.add(i, _c(i, 1)), num_geom_out, lax.add(geom_sum, geom), key

    def cond(carry):
        i, _, geom_sum, _ = carry
        return lax.and_(_any(lax.le(geom_sum, count)), lax.lt(i, cap))

    init = (const(0, dtypes.int32), lax.full(shape, 0, dt), lax.full(shape, 0, dt), key)
    k = lax.while_loop(cond, body, init)[1]
    return lax.sub(k, _c(k, 1))


def _btrs(key, count, prob, shape, cap):
    # Hörmann, "The generation of binomial random variates" (1993), transformed rejection.
    dt = get_aval(prob).dtype
    c_ = lambda v: _c(prob, v)  # noqa: E731
    one = c_(1)
    stddev = lax.sqrt(lax.mul(lax.mul(count, prob), lax.sub(one, prob)))
    b = lax.add(c_(1.15), lax.mul(c_(2.53), stddev))
    a = lax.add(lax.add(c_(-0.0873), lax.mul(c_(0.0248), b)), lax.mul(c_(0.01), prob))
    c = lax.add(lax.mul(count, prob), c_(0.5))
    v_r = lax.sub(c_(0.92), lax.div(c_(4.2), b))
    r = lax.div(prob, lax.sub(one, prob))
    alpha = lax.mul(lax.add(c_(2.83), lax.div(c_(5.1), b)), stddev)
    m = lax.floor(lax.mul(lax.add(count, one), prob))
    log_m = lax.mul(lax.add(m, c_(0.5)),
                    xm.log(lax.div(lax.add(m, one),
                                    lax.mul(r, lax.add(lax.sub(count, m), one)))))

    def body(carry):
        i, k_out, accepted, key = carry
        key, k0, k1 = _keys(key, 3)
        u = sample_uniform("binomial", k0, shape, dt, 0.0, 1.0)
        v = sample_uniform("binomial", k1, shape, dt, 0.0, 1.0)
        u = lax.sub(u, c_(0.5))
        us = lax.sub(c_(0.5), lax.abs(u))
        accept1 = lax.and_(lax.ge(us, c_(0.07)), lax.le(v, v_r))
        k = lax.floor(lax.add(lax.mul(lax.add(lax.div(lax.mul(c_(2), a), us), b), u), c))
        reject = lax.or_(lax.lt(k, c_(0)), lax.gt(k, count))
        v = xm.log(lax.div(lax.mul(v, alpha), lax.add(lax.div(a, lax.mul(us, us)), b)))
        nk1 = lax.add(lax.sub(count, k), one)
        ub = lax.add(log_m, lax.mul(lax.add(count, one),
                                    xm.log(lax.div(lax.add(lax.sub(count, m), one), nk1))))
        ub = lax.add(ub, lax.mul(lax.add(k, c_(0.5)),
                                 xm.log(lax.div(lax.mul(r, nk1), lax.add(k, one)))))
        ub = lax.add(ub, _stirling_approx_tail(m))
        ub = lax.add(ub, _stirling_approx_tail(lax.sub(count, m)))
        ub = lax.sub(ub, _stirling_approx_tail(k))
        ub = lax.sub(ub, _stirling_approx_tail(lax.sub(count, k)))
        accept = lax.or_(accept1, lax.and_(lax.bitwise_not(reject), lax.le(v, ub)))
        return (lax.add(i, _c(i, 1)), lax.select(accept, k, k_out), lax.or_(accepted, accept),
                key)

    def cond(carry):
        i, _, accepted, _ = carry
        return lax.and_(_any(lax.bitwise_not(accepted)), lax.lt(i, cap))

    init = (const(0, dtypes.int32), lax.full(shape, -1, dt), lax.full(shape, False, dtypes.bool_),
            key)
    return lax.while_loop(cond, body, init)[1]


def _binomial(name: str, key, count, prob, shape, dtype):
    prob = _inexact(name, "p", prob)
    count = value(name, "n", count)
    shape = shape_of(name, shape, count, prob)
    pdt = get_aval(prob).dtype
    count = broadcast_to(lax.convert_element_type(count, pdt), shape)
    prob = broadcast_to(prob, shape)
    c_ = lambda v: _c(prob, v)  # noqa: E731
    p_lt_half = lax.lt(prob, c_(0.5))
    q = lax.select(p_lt_half, prob, lax.sub(c_(1.0), prob))
    count_nan_or_neg = lax.or_(lax.ne(count, count), lax.lt(count, c_(0.0)))
    count_inf = lax.eq(lax.abs(count), c_(np.inf))
    q_is_nan = lax.ne(q, q)
    q_l_0 = lax.lt(q, c_(0.0))
    q = lax.select(lax.or_(q_is_nan, q_l_0), c_(0.01), q)
    use_inversion = lax.or_(count_nan_or_neg, lax.le(lax.mul(count, q), c_(10.0)))
    count = lax.floor(count)
    count_inv = lax.select(use_inversion, count, c_(0.0))
    count_btrs = lax.select(use_inversion, c_(1e4), count)
    q_btrs = lax.select(use_inversion, c_(0.5), q)
    cap = _loop_cap(dtypes.finfo(dtype).max)
    samples = lax.select(
        use_inversion,
        lax.convert_element_type(_binomial_inversion(key, count_inv, q, shape, cap), dtype),
        lax.convert_element_type(_btrs(key, count_btrs, q_btrs, shape, cap), dtype))
    invalid = lax.or_(lax.or_(q_l_0, q_is_nan), count_nan_or_neg)
    samples = lax.select(invalid, lax.full_like(samples, np.nan), samples)
    samples = lax.select(lax.and_(count_inf, lax.bitwise_not(invalid)),
                         lax.full_like(samples, np.inf), samples)
    keep = lax.or_(lax.or_(lax.or_(p_lt_half, count_nan_or_neg), q_is_nan), count_inf)
    return lax.select(keep, samples,
                      lax.sub(lax.convert_element_type(count, dtype), samples))


def binomial(key, n, p, shape: Shape | None = None, dtype=None) -> Array:
    """Binomial samples of ``n`` trials with success probability ``p``, as
    ``jax.random.binomial`` (float results, by default of the mode's float type; NaN where
    ``n`` is NaN or negative or ``p`` is NaN or negative, inf where ``n`` is inf).

    Example::

        >>> fx.random.binomial(fx.random.key(0), 20.0, 0.3, (4,))
    """
    name = "binomial"
    key = check_key(name, key)
    dtype = int_or_float_dtype(name, float if dtype is None else dtype)
    if not dtypes.is_float(dtype):
        raise ValueError(f"fx.random.binomial: dtype argument must be a float dtype, got "
                         f"{dtype}")
    return _binomial(name, key, n, p, None if shape is None else canonical_shape(name, shape),
                     dtype)


def multinomial(key, n, p, shape: Shape | None = None, dtype=None, unroll: int | bool = 1
                ) -> Array:
    """Multinomial counts of ``n`` trials over the categories of ``p``'s last axis (a
    ``scan`` of conditional binomials, each category with its own key), as
    ``jax.random.multinomial``; ``shape`` by default ``p``'s shape. ``unroll`` is accepted for
    jax's signature (the samples do not depend on it).

    Example::

        >>> fx.random.multinomial(fx.random.key(0), 10.0, fx.numpy.array([0.2, 0.3, 0.5]))
    """
    name = "multinomial"
    key = check_key(name, key)
    n, p = value(name, "n", n), value(name, "p", p)
    common = dtypes.to_inexact_dtype(dtypes.result_type(n, p))
    n, p = lax.convert_element_type(n, common), lax.convert_element_type(p, common)
    shape = get_aval(p).shape if shape is None else canonical_shape(name, shape)
    if not shape:
        raise ValueError("fx.random.multinomial: p must have at least one dimension")
    out_dtype = int_or_float_dtype(name, float if dtype is None else dtype)
    n = broadcast_to(n, tuple(shape[:-1]))
    p = broadcast_to(p, tuple(shape))
    nd = len(shape)
    p = lax.transpose(p, (nd - 1, *range(nd - 1)))
    remaining = lax.cumsum(p, 0, reverse=True)
    ratios = lax.div(p, lax.select(lax.eq(remaining, _c(remaining, 0)), _c(remaining, 1),
                                   remaining))
    keys = split(key, shape[-1])

    def step(remainder, ratio_key):
        ratio, k = ratio_key
        ratio = lax.clamp(_c(ratio, 0), ratio, _c(ratio, 1))
        count = _binomial(name, k, remainder, ratio, None, common)
        return lax.sub(remainder, count), count

    _, counts = lax.scan(step, n, (ratios, keys))
    counts = lax.transpose(counts, (*range(1, nd), 0))
    return lax.convert_element_type(counts, out_dtype)
