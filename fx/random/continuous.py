"""Continuous distributions that transform uniform or normal draws: ``exponential``,
``laplace``, ``logistic``, ``lognormal``, ``cauchy``, ``pareto``, ``weibull_min``,
``maxwell``, ``double_sided_maxwell``, ``rayleigh``, ``wald`` and ``triangular``.

Each is jax's formula with jax's operations in jax's order (``lax`` ops where jax uses
``lax``, NumPy-style promotion and broadcasting where jax uses ``jnp`` operators), on the same
uniform bits. ``triangular`` uses only correctly rounded operations and is bit-identical to
jax; the others go through ``log``/``exp``/``tan``/``pow``/``erf_inv``, whose fx
implementations are not XLA's, and agree with jax to a few ulps. All are differentiable in
their location/scale-type parameters.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fx import dtypes, lax
from fx.array import Array
from fx.core import get_aval
from fx.random import xla_math as xm
from fx.random.distributions import _normal_erf_inv, normal, sample_uniform
from fx.random.sampling import (
    broadcast_to,
    check_cast,
    converted_param,
    float_dtype,
    shape_of,
    value,
)
from fx.random.threefry import canonical_shape, check_key, split_pair

Shape = int | Sequence[int]
_ONE_F32 = np.float32(1)  # jax's default sigma


def _fnp():
    import fx.numpy as fnp  # fx.numpy sits above fx.random's imports

    return fnp


def _start(name: str, key, dtype):
    return check_key(name, key), float_dtype(name, dtype)


def _exponential(key, shape, dtype):
    u = sample_uniform("exponential", key, shape, dtype, 0.0, 1.0)
    # 1 - u moves log's argument to (0, 1].
    return lax.neg(xm.log1p(lax.neg(u)))


def exponential(key, shape: Shape = (), dtype=None) -> Array:
    """Standard exponential samples, ``-log1p(-u)``, as ``jax.random.exponential``.

    Example::

        >>> fx.random.exponential(fx.random.key(0), (3,))
    """
    key, dtype = _start("exponential", key, dtype)
    return _exponential(key, canonical_shape("exponential", shape), dtype)


def laplace(key, shape: Shape = (), dtype=None) -> Array:
    """Standard Laplace samples, ``sign(u) log1p(-|u|)`` for ``u`` uniform in
    ``(-1, 1)``, as ``jax.random.laplace``.

    Example::

        >>> fx.random.laplace(fx.random.key(0), (3,))
    """
    key, dtype = _start("laplace", key, dtype)
    shape = canonical_shape("laplace", shape)
    lo = -1.0 + float(dtypes.finfo(dtype).epsneg)
    u = sample_uniform("laplace", key, shape, dtype, lo, 1.0)
    return lax.mul(lax.sign(u), xm.log1p(lax.neg(lax.abs(u))))


def logistic(key, shape: Shape = (), dtype=None) -> Array:
    """Standard logistic samples, ``log(u) - log1p(-u)``, as ``jax.random.logistic``.

    Example::

        >>> fx.random.logistic(fx.random.key(0), (3,))
    """
    key, dtype = _start("logistic", key, dtype)
    shape = canonical_shape("logistic", shape)
    x = sample_uniform("logistic", key, shape, dtype, float(dtypes.finfo(dtype).tiny), 1.0)
    return lax.sub(xm.log(x), xm.log1p(lax.neg(x)))


def lognormal(key, sigma=_ONE_F32, shape: Shape | None = None, dtype=None) -> Array:
    """Log-normal samples, ``exp(sigma * normal)``, as ``jax.random.lognormal``.
    Differentiable in ``sigma``.

    Example::

        >>> fx.random.lognormal(fx.random.key(0), 0.5, (3,))
    """
    name = "lognormal"
    key, dtype = _start(name, key, dtype)
    shape = shape_of(name, shape, value(name, "sigma", sigma))
    check_cast(name, dtype, sigma)
    sigma = converted_param(name, "sigma", sigma, dtype)
    return xm.exp(lax.mul(normal(key, shape, dtype), broadcast_to(sigma, shape)))


def cauchy(key, shape: Shape = (), dtype=None) -> Array:
    """Standard Cauchy samples, ``tan(pi (u - 1/2))`` for ``u`` uniform in ``[eps, 1)``, as
    ``jax.random.cauchy``.

    Example::

        >>> fx.random.cauchy(fx.random.key(0), (3,))
    """
    key, dtype = _start("cauchy", key, dtype)
    shape = canonical_shape("cauchy", shape)
    u = sample_uniform("cauchy", key, shape, dtype, float(dtypes.finfo(dtype).eps), 1.0)
    pi, half = lax.full_like(u, np.pi), lax.full_like(u, 0.5)
    return xm.tan(lax.mul(pi, lax.sub(u, half)))


def pareto(key, b, shape: Shape | None = None, dtype=None) -> Array:
    """Pareto samples of shape ``b`` (support ``[1, inf)``), ``exp(exponential / b)``, as
    ``jax.random.pareto``. Differentiable in ``b``.

    Example::

        >>> fx.random.pareto(fx.random.key(0), 3.0, (3,))
    """
    name = "pareto"
    key, dtype = _start(name, key, dtype)
    shape = shape_of(name, shape, value(name, "b", b))
    check_cast(name, dtype, b)
    b = converted_param(name, "b", b, dtype)
    e = _exponential(key, shape, dtype)
    if get_aval(b).shape == shape:
        return xm.exp(lax.div(e, b))
    # XLA divides by a broadcast value as a multiplication by the broadcast reciprocal.
    return xm.exp(lax.mul(e, broadcast_to(lax.div(lax.full_like(b, 1), b), shape)))


def weibull_min(key, scale, concentration, shape: Shape = (), dtype=None) -> Array:
    """Weibull samples by the inverse CDF, ``(-log1p(-u)) ** (1 / concentration) * scale``,
    as ``jax.random.weibull_min`` (the parameters broadcast against the draw of ``shape``,
    with NumPy promotion). Differentiable in ``scale`` and ``concentration``.

    Example::

        >>> fx.random.weibull_min(fx.random.key(0), 1.0, 2.0, (3,))
    """
    name = "weibull_min"
    key, dtype = _start(name, key, dtype)
    shape = canonical_shape(name, shape)
    fnp = _fnp()
    u = sample_uniform(name, key, shape, dtype, 0.0, 1.0)
    if isinstance(concentration, (int, float)) and not isinstance(concentration, bool):
        inv = 1.0 / concentration
    else:
        inv = fnp.divide(1.0, value(name, "concentration", concentration))
    base = lax.neg(xm.log1p(lax.neg(u)))
    # jnp.power: NumPy promotion and broadcasting, then lax.pow (XLA's is libm's pow).
    dt = fnp.result_type(base, inv)
    b, e = fnp.broadcast_arrays(fnp.asarray(base, dt), fnp.asarray(inv, dt))
    return fnp.multiply(xm.pow(b, e), scale)


def _maxwell(key, shape, dtype):
    x = normal(key, (*shape, 3), dtype)
    # jnp.linalg.norm: XLA's reduction accumulates each square with one fma, starting from the
    # first square in float64 and from the second in float32 (measured, all shapes tried).
    last = len(shape)
    parts = [lax.squeeze(lax.slice_in_dim(x, i, i + 1, axis=last), (last,)) for i in range(3)]
    if dtype == dtypes.float32:
        parts[0], parts[1] = parts[1], parts[0]
    total = lax.mul(parts[0], parts[0])
    for p in parts[1:]:
        total = xm.fma(p, p, total)
    return lax.sqrt(total)


def maxwell(key, shape: Shape = (), dtype=None) -> Array:
    """Maxwell samples, the norm of three standard normals (along a trailing axis of 3),
    as ``jax.random.maxwell``.

    Example::

        >>> fx.random.maxwell(fx.random.key(0), (3,))
    """
    key, dtype = _start("maxwell", key, dtype)
    return _maxwell(key, canonical_shape("maxwell", shape), dtype)


def double_sided_maxwell(key, loc, scale, shape: Shape = (), dtype=None) -> Array:
    """Double-sided Maxwell samples, ``sign * maxwell * scale + loc``, as
    ``jax.random.double_sided_maxwell``: the result has shape ``shape + params_shape``, where
    an empty ``shape`` means the parameters' broadcast shape (so a vector ``loc`` with the
    default ``shape=()`` gives a square array, as in jax). Differentiable in ``loc`` and
    ``scale``.

    Example::

        >>> fx.random.double_sided_maxwell(fx.random.key(0), 0.0, 1.0, (3,))
    """
    from fx.random.discrete import sample_rademacher

    name = "double_sided_maxwell"
    key, dtype = _start(name, key, dtype)
    shape = canonical_shape(name, shape)
    fnp = _fnp()
    loc, scale = value(name, "loc", loc), value(name, "scale", scale)
    params = tuple(np.broadcast_shapes(get_aval(loc).shape, get_aval(scale).shape))
    if not shape:
        shape = params
    shape = shape + params
    maxwell_key, sign_key = split_pair(key)
    m = _maxwell(maxwell_key, shape, dtype)
    sign = sample_rademacher(sign_key, shape, dtype)
    return fnp.add(fnp.multiply(fnp.multiply(sign, m), scale), loc)


def rayleigh(key, scale, shape: Shape | None = None, dtype=None) -> Array:
    """Rayleigh samples, ``scale * sqrt(-2 log u)``, as ``jax.random.rayleigh``.
    Differentiable in ``scale``.

    Example::

        >>> fx.random.rayleigh(fx.random.key(0), 2.0, (3,))
    """
    name = "rayleigh"
    key, dtype = _start(name, key, dtype)
    shape = shape_of(name, shape, value(name, "scale", scale))
    check_cast(name, dtype, scale)
    u = sample_uniform(name, key, shape, dtype, 0.0, 1.0)
    scale = broadcast_to(converted_param(name, "scale", scale, dtype), shape)
    root = lax.sqrt(lax.mul(xm.log(u), lax.full_like(u, -2)))
    return lax.mul(scale, root)


def wald(key, mean, shape: Shape | None = None, dtype=None) -> Array:
    """Wald (inverse Gaussian) samples of ``mean`` and unit shape, by Michael, Schucany and
    Haas's transformation with rejection, as ``jax.random.wald``. Differentiable in ``mean``.

    Example::

        >>> fx.random.wald(fx.random.key(0), 1.5, (3,))
    """
    name = "wald"
    key, dtype = _start(name, key, dtype)
    shape = shape_of(name, shape, value(name, "mean", mean))
    check_cast(name, dtype, mean)
    k1, k2 = split_pair(key)
    mean = broadcast_to(converted_param(name, "mean", mean, dtype), shape)
    z = sample_uniform(name, k2, shape, dtype, 0.0, 1.0)
    c = lambda x: lax.full_like(mean, x)  # noqa: E731
    mean_sq = lax.integer_pow(mean, 2)
    if shape or _batched(k1, mean):
        y = lax.integer_pow(normal(k1, shape, dtype), 2)
        four_mean_y = (lax.mul(c(4), mean), y)  # the factors of 4 mean y
        mean_sq_y_sq = lax.mul(mean_sq, lax.integer_pow(y, 2))
    else:
        # On rank-0 arrays (not under vmap, where XLA sees the batch) XLA's simplifier
        # regroups (c1 a) (c2 b) into (a b) (c1 c2): with the normal's sqrt(2) e,
        # y = (e e) fl(2), y**2 = (e e)**2 fl(2)**2 and 4 mean y = (mean e e) (4 fl(2)).
        e = _normal_erf_inv(k1, shape, dtype)
        two = np.asarray(np.sqrt(2.0), dtype) * np.asarray(np.sqrt(2.0), dtype)
        e2 = lax.mul(e, e)
        y = lax.mul(e2, c(two))
        four_mean_y = (lax.mul(mean, e2), c(np.asarray(4, dtype) * two))
        mean_sq_y_sq = lax.mul(mean_sq, lax.mul(lax.mul(e2, e2), c(two * two)))
    # XLA multiplies by 1/2 for the divisions and fuses the multiply-adds.
    sqrt_term = lax.sqrt(xm.fma(*four_mean_y, mean_sq_y_sq))
    x = xm.fma(lax.neg(lax.div(mean, c(2))), sqrt_term, xm.fma(lax.mul(mean_sq, y), c(0.5), mean))
    return lax.select(lax.le(z, lax.div(mean, lax.add(mean, x))), x, lax.div(mean_sq, x))


def _batched(*values) -> bool:
    """Whether any value is being batched by ``fx.vmap`` (jax's vmap then gives XLA arrays of
    higher rank, whose rewrites differ from a rank-0 computation's)."""
    from fx.interpreters.batching import BatchTracer

    return any(isinstance(v, BatchTracer) for v in values)


def triangular(key, left, mode, right, shape: Shape | None = None, dtype=None) -> Array:
    """Triangular samples on ``[left, right]`` with peak ``mode``, by the inverse CDF, as
    ``jax.random.triangular`` (bit-identical to it). Differentiable in the three parameters.

    Example::

        >>> fx.random.triangular(fx.random.key(0), 0.0, 0.3, 1.0, (3,))
    """
    name = "triangular"
    key, dtype = _start(name, key, dtype)
    vals = [value(name, w, x) for w, x in (("left", left), ("mode", mode), ("right", right))]
    shape = shape_of(name, shape, *vals)
    check_cast(name, dtype, left, mode, right)
    left, mode, right = (broadcast_to(converted_param(name, w, x, dtype), shape)
                         for w, x in (("left", left), ("mode", mode), ("right", right)))
    fc = lax.div(lax.sub(mode, left), lax.sub(right, left))
    u = sample_uniform(name, key, shape, dtype, 0.0, 1.0)
    span = lax.sub(right, left)
    out1 = lax.add(left, lax.sqrt(lax.mul(lax.mul(u, span), lax.sub(mode, left))))
    out2 = lax.sub(right, lax.sqrt(lax.mul(lax.mul(lax.sub(lax.full_like(u, 1), u), span),
                                           lax.sub(right, mode))))
    return lax.select(lax.lt(u, fc), out1, out2)
