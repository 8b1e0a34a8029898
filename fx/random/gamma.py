"""The gamma family: ``gamma``, ``loggamma``, ``beta``, ``dirichlet``, ``chisquare``, ``f``,
``t``, ``generalized_normal`` and ``ball``.

Gamma samples use jax's algorithm step for step: Marsaglia and Tsang's squeeze-and-reject
method ("A simple method for generating gamma variables", 2000) on one element at a time,
each element with its own key from ``split(key, size)``, the same key splits inside the
rejection loop (an inner loop redraws the normal until ``1 + c x > 0``), the boost
``Gamma(a) = Gamma(a + 1) U**(1/a)`` for ``a < 1`` and jax's ``log_space`` variant of it. The
elements run side by side under ``vmap`` (a batched ``while_loop`` keeps iterating until every
element has accepted, each keeping its accepted draw), which gives jax's numbers.

Samples are bit-identical to jax's (XLA CPU's) on x86-64: the arithmetic is XLA's, its
``log``/``exp``/``pow`` and fused multiply-adds from ``xla_math``, and ``c = (1/3) / sqrt(d)``
is computed as XLA rewrites it, ``(1/3) * rsqrt(d)`` with XLA's ``rsqrt`` (``xla_rsqrt``: the
CPU's approximation instruction and two Newton steps where XLA uses it, float32 with AVX and
float64 with AVX-512F, else ``1 / sqrt(d)``), and ``dirichlet``, ``f`` and ``ball`` follow
XLA's rewrites of their divisions. Exceptions: in float32, ``dirichlet`` (its softmax
normalization rounds differently from XLA's for some rows), ``generalized_normal`` and ``ball``
(their powers of the gamma samples differ in the last bit), and ``f`` under ``vmap`` (XLA
groups its divisions otherwise when batched). Where XLA's arithmetic differs
(another libm, another XLA), samples agree to a few ulps, and an element whose acceptance test
sits within an ulp of its threshold may take another draw than jax's.

Gradients with respect to the shape parameter are implicit (``d sample / d a`` from the CDF,
``fx.lax.random_gamma_grad``), as jax's jvp of ``random_gamma_p``, so ``beta``, ``dirichlet``,
``chisquare``, ``f`` and ``t`` differentiate through their parameters too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

import numpy as np

from fx import dtypes, lax
from fx.array import Array
from fx.core import get_aval
from fx.custom_derivatives import custom_jvp
from fx.random import xla_math as xm
from fx.random.distributions import normal, sample_uniform
from fx.random.sampling import (
    broadcast_to,
    check_cast,
    const,
    converted_param,
    float_dtype,
    shape_of,
    value,
)
from fx.random.threefry import canonical_shape, check_key, split, split_pair
from fx.random.xla_rsqrt import rsqrt

Shape = int | Sequence[int]

# --- Marsaglia-Tsang, one element ----------------------------------------------------------------


def _scalar(x, dtype) -> Array:
    return const(x, dtype)


def _gamma_one(key, alpha, log_space: bool):
    """One sample of ``Gamma(alpha, 1)`` (``alpha`` a scalar), or its log."""
    dtype = get_aval(alpha).dtype
    zero, one, minus_one = (_scalar(v, dtype) for v in (0, 1, -1))
    two, half = _scalar(2, dtype), _scalar(0.5, dtype)
    one_third, squeeze = _scalar(1.0 / 3.0, dtype), _scalar(0.0331, dtype)

    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, one_third)
    # XLA rewrites jax's (1/3) / sqrt(d) into (1/3) * rsqrt(d), its rsqrt XLA CPU's own.
    c = lax.mul(one_third, rsqrt(d))

    def cond(state):
        _, x, v, u = state
        # Both tests are evaluated, as in jax (its lax.cond would not batch).
        # XLA fuses each multiply feeding an add or subtract into one fma.
        return lax.and_(
            lax.ge(u, xm.fma(lax.neg(squeeze), lax.mul(x, x), one)),
            lax.ge(xm.log(u), xm.fma(x, half, lax.mul(d, lax.add(lax.sub(one, v), xm.log(v))))))

    def next_xv(state):
        key, _, _ = state
        key, subkey = split_pair(key)
        x = normal(subkey, (), dtype)
        return key, x, xm.fma(x, c, one)

    def body(state):
        key = state[0]
        keys = split(key, 3)
        key, x_key, u_key = (lax.reshape(lax.slice(keys, (i, 0), (i + 1, 2)), (2,))
                             for i in range(3))
        _, x, v = lax.while_loop(lambda s: lax.le(s[2], zero), next_xv, (x_key, zero, minus_one))
        u = sample_uniform("gamma", u_key, (), dtype, 0.0, 1.0)
        return key, lax.mul(x, x), lax.mul(lax.mul(v, v), v), u

    key, subkey = split_pair(key)
    _, _, v, _ = lax.while_loop(cond, body, (key, zero, one, two))
    if log_space:
        log_samples = lax.neg(_exponential(subkey, (), dtype))
        log_boost = lax.select(lax.or_(boost_mask, lax.eq(log_samples, zero)), zero,
                               lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(xm.log(d), xm.log(v)), log_boost)
    samples = lax.sub(one, sample_uniform("gamma", subkey, (), dtype, 0.0, 1.0))
    boost = lax.select(boost_mask, one, xm.pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, v), boost)


def _exponential(key, shape: tuple[int, ...], dtype):
    u = sample_uniform("exponential", key, shape, dtype, 0.0, 1.0)
    return lax.neg(xm.log1p(lax.neg(u)))


def _gamma_impl(key, a, log_space: bool):
    """Samples for every element of ``a`` (already of the sample shape and dtype)."""
    shape = get_aval(a).shape
    size = math.prod(shape)
    if size == 0:
        return lax.full(shape, 0, get_aval(a).dtype)
    from fx.vectorize import vmap

    keys = split(key, size)
    flat = lax.reshape(a, (size,))
    return lax.reshape(vmap(partial(_gamma_one, log_space=log_space))(keys, flat), shape)


@partial(custom_jvp, nondiff_argnums=(2,))
def _random_gamma(key, a, log_space: bool):
    return _gamma_impl(key, a, log_space)


@_random_gamma.defjvp
def _random_gamma_jvp(log_space, primals, tangents):
    key, a = primals
    _, a_dot = tangents
    ans = _random_gamma(key, a, log_space)
    return ans, lax.mul(a_dot, _gamma_grad(ans, a, log_space))


def _gamma_grad(sample, a, log_space: bool):
    """``d sample / d a`` (jax's ``_gamma_grad``): in log space ``d log x = dx / x``, with an
    ``x`` that underflowed to 0 replaced by the smallest normal float."""
    if not log_space:
        return lax.random_gamma_grad(a, sample)
    x = xm.exp(sample)
    tiny = lax.full_like(x, float(dtypes.finfo(get_aval(x).dtype).tiny))
    x = lax.select(lax.eq(x, lax.full_like(x, 0)), tiny, x)
    return lax.div(lax.random_gamma_grad(a, x), x)


def _gamma(name: str, key, a, shape, dtype, log_space: bool):
    shape = _shape_param(name, shape, a)
    a = broadcast_to(converted_param(name, "a", a, dtype), shape)
    return _random_gamma(key, a, log_space)


def _shape_param(name: str, shape, a) -> tuple[int, ...]:
    """jax's gamma: ``shape`` by default ``a``'s shape, else ``a`` must broadcast to it."""
    a_shape = tuple(get_aval(value(name, "a", a)).shape)
    if shape is None:
        return a_shape
    return shape_of(name, canonical_shape(name, shape), np.empty(a_shape))


def gamma(key, a, shape: Shape | None = None, dtype=None) -> Array:
    """Gamma samples of shape parameter ``a`` (scale 1), as ``jax.random.gamma``.

    ``a`` broadcasts to ``shape`` (by default ``a``'s shape); ``dtype`` is a float type (by
    default the mode's). Differentiable in ``a`` by implicit reparameterization.

    Example::

        >>> fx.random.gamma(fx.random.key(0), 2.0, (3,))
    """
    key = check_key("gamma", key)
    dtype = float_dtype("gamma", dtype)
    return _gamma("gamma", key, a, shape, dtype, log_space=False)


def loggamma(key, a, shape: Shape | None = None, dtype=None) -> Array:
    """The logarithm of gamma samples, computed in log space so that small ``a`` does not
    underflow, as ``jax.random.loggamma``. Differentiable in ``a``.

    Example::

        >>> fx.random.loggamma(fx.random.key(0), 0.01, (3,))
    """
    key = check_key("loggamma", key)
    dtype = float_dtype("loggamma", dtype)
    return _gamma("loggamma", key, a, shape, dtype, log_space=True)


# --- built on gamma ------------------------------------------------------------------------------


def beta(key, a, b, shape: Shape | None = None, dtype=None) -> Array:
    """Beta samples, ``Ga / (Ga + Gb)`` from two log-gamma draws (keys from ``split``), as
    ``jax.random.beta``. Differentiable in ``a`` and ``b``.

    Example::

        >>> fx.random.beta(fx.random.key(0), 2.0, 3.0, (3,))
    """
    name = "beta"
    key = check_key(name, key)
    dtype = float_dtype(name, dtype)
    check_cast(name, dtype, a, b)
    shape = shape_of(name, shape, value(name, "a", a), value(name, "b", b))
    a = broadcast_to(converted_param(name, "a", a, dtype), shape)
    b = broadcast_to(converted_param(name, "b", b, dtype), shape)
    key_a, key_b = split_pair(key)
    log_a = _random_gamma(key_a, a, True)
    log_b = _random_gamma(key_b, b, True)
    log_max = lax.max(log_a, log_b)
    ga, gb = xm.exp(lax.sub(log_a, log_max)), xm.exp(lax.sub(log_b, log_max))
    return lax.div(ga, lax.add(ga, gb))


def dirichlet(key, alpha, shape: Shape | None = None, dtype=None) -> Array:
    """Dirichlet samples: a softmax of log-gamma draws along the last axis, as
    ``jax.random.dirichlet``. The result has shape ``shape + alpha.shape[-1:]`` (``shape`` by
    default ``alpha.shape[:-1]``). Differentiable in ``alpha``.

    Example::

        >>> fx.random.dirichlet(fx.random.key(0), fx.numpy.array([1.0, 2.0, 3.0]))
    """
    name = "dirichlet"
    key = check_key(name, key)
    dtype = float_dtype(name, dtype)
    alpha = value(name, "alpha", alpha)
    a_shape = get_aval(alpha).shape
    if len(a_shape) < 1:
        raise ValueError(f"fx.random.dirichlet requires alpha.ndim >= 1, got alpha.ndim == "
                         f"{len(a_shape)}")
    if shape is None:
        shape = a_shape[:-1]
    else:
        shape = shape_of(name, shape, np.empty(a_shape[:-1]))
    full = tuple(shape) + a_shape[-1:]
    alpha = broadcast_to(lax.convert_element_type(alpha, dtype), full)
    log_g = _random_gamma(key, alpha, True)
    # jax.nn.softmax: exp(x - max) / sum, the max outside the derivative; XLA divides by the
    # broadcast sum as a multiplication by the broadcast 1 / sum.
    axis = len(full) - 1
    top = lax.stop_gradient(lax.reduce_max(log_g, (axis,)))
    e = xm.exp(lax.sub(log_g, lax.broadcast_in_dim(top, full, tuple(range(axis)))))
    inv_total = lax.div(lax.full(shape, 1, dtype), lax.reduce_sum(e, (axis,)))
    return lax.mul(e, lax.broadcast_in_dim(inv_total, full, tuple(range(axis))))


def _chisquare(name: str, key, df, shape, dtype):
    df = broadcast_to(converted_param(name, "df", df, dtype), shape)
    half = lax.div(df, lax.full_like(df, 2))
    return lax.mul(xm.exp(_random_gamma(key, half, True)), lax.full_like(df, 2))


def chisquare(key, df, shape: Shape | None = None, dtype=None) -> Array:
    """Chi-square samples, ``2 exp(loggamma(df / 2))``, as ``jax.random.chisquare``.
    Differentiable in ``df``.

    Example::

        >>> fx.random.chisquare(fx.random.key(0), 3.0, (2,))
    """
    name = "chisquare"
    key = check_key(name, key)
    dtype = float_dtype(name, dtype)
    shape = shape_of(name, shape, value(name, "df", df))
    check_cast(name, dtype, df)
    return _chisquare(name, key, df, shape, dtype)


def f(key, dfnum, dfden, shape: Shape | None = None, dtype=None) -> Array:
    """F-distribution samples, ``(chi2(dfnum) / dfnum) / (chi2(dfden) / dfden)``, as
    ``jax.random.f`` (the denominator's key is the first of the split).

    Example::

        >>> fx.random.f(fx.random.key(0), 2.0, 5.0, (2,))
    """
    name = "f"
    key = check_key(name, key)
    dtype = float_dtype(name, dtype)
    shape = shape_of(name, shape, value(name, "dfnum", dfnum), value(name, "dfden", dfden))
    check_cast(name, dtype, dfnum, dfden)
    key_dfd, key_dfn = split_pair(key)
    chi_n = _chisquare(name, key_dfn, dfnum, shape, dtype)
    chi_d = _chisquare(name, key_dfd, dfden, shape, dtype)
    dfnum = broadcast_to(converted_param(name, "dfnum", dfnum, dtype), shape)
    dfden = broadcast_to(converted_param(name, "dfden", dfden, dtype), shape)
    # XLA rewrites jax's (chi_n / dfnum) / (chi_d / dfden) into (chi_n dfden) / (dfnum chi_d).
    return lax.div(lax.mul(chi_n, dfden), lax.mul(dfnum, chi_d))


def t(key, df, shape: Shape | None = None, dtype=None) -> Array:
    """Student's t samples, ``normal * sqrt((df / 2) / gamma(df / 2))``, as ``jax.random.t``.
    Differentiable in ``df``.

    Example::

        >>> fx.random.t(fx.random.key(0), 4.0, (2,))
    """
    name = "t"
    key = check_key(name, key)
    dtype = float_dtype(name, dtype)
    shape = shape_of(name, shape, value(name, "df", df))
    check_cast(name, dtype, df)
    df = broadcast_to(converted_param(name, "df", df, dtype), shape)
    key_n, key_g = split_pair(key)
    n = normal(key_n, shape, dtype)
    half = lax.div(df, lax.full_like(df, 2))
    g = _random_gamma(key_g, half, False)
    return lax.mul(n, lax.sqrt(lax.div(half, g)))


def _generalized_normal(key, p: float, shape: tuple[int, ...], dtype):
    from fx.random.discrete import sample_rademacher

    k1, k2 = split_pair(key)
    g = _random_gamma(k1, lax.full(shape, 1 / p, dtype), False)
    r = sample_rademacher(k2, shape, dtype)
    return lax.mul(r, _power(g, 1 / p))


def _power(x, y):
    """``x ** y`` for a Python number ``y``, as jnp.power: an int exponent is ``integer_pow``."""
    if isinstance(y, int) and not isinstance(y, bool):
        return lax.integer_pow(x, y)
    return xm.pow(x, lax.full_like(x, y))


def _static_p(name: str, p) -> float:
    try:
        return float(p) if not isinstance(p, int) else p
    except TypeError:
        raise TypeError(f"fx.random.{name}: p must be a Python number, got {p!r}") from None


def generalized_normal(key, p: float, shape: Shape = (), dtype=None) -> Array:
    """Samples of the generalized normal distribution with density proportional to
    ``exp(-|x|**p)``: ``sign * gamma(1/p) ** (1/p)``, as ``jax.random.generalized_normal``.

    Example::

        >>> fx.random.generalized_normal(fx.random.key(0), 1.5, (3,))
    """
    name = "generalized_normal"
    shape = canonical_shape(name, shape)
    key = check_key(name, key)
    dtype = float_dtype(name, dtype)
    return _generalized_normal(key, _static_p(name, p), shape, dtype)


def ball(key, d: int, p: float = 2, shape: Shape = (), dtype=None) -> Array:
    """Points uniformly distributed in the unit ``p``-norm ball of dimension ``d``
    (Barthe et al.'s method, as ``jax.random.ball``): shape ``shape + (d,)``.

    Example::

        >>> fx.random.ball(fx.random.key(0), 3, shape=(2,))
    """
    name = "ball"
    shape = canonical_shape(name, shape)
    key = check_key(name, key)
    dtype = float_dtype(name, dtype)
    try:
        d = int(d)
    except TypeError:
        raise TypeError(f"fx.random.ball: d must be a static integer, got {d!r}") from None
    p = _static_p(name, p)
    k1, k2 = split_pair(key)
    g = _generalized_normal(k1, p, (*shape, d), dtype)
    e = _exponential(k2, shape, dtype)
    total = lax.add(lax.reduce_sum(_power(lax.abs(g), p), (len(shape),)), e)
    # XLA rewrites jax's g / total ** (1 / p) into g * total ** -(1 / p).
    inv_r = xm.pow(total, lax.full_like(total, -(1 / p)))
    return lax.mul(g, lax.broadcast_in_dim(inv_r, (*shape, d), tuple(range(len(shape)))))
