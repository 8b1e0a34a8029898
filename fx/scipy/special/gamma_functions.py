"""The gamma function and its relatives: gammaln, gamma, gammasgn, loggamma, digamma,
polygamma, zeta, the incomplete gamma and beta functions, beta/betaln, multigammaln,
factorial, comb, poch and the Bernoulli numbers, with jax's semantics and derivatives.

Composites of ``fx.lax`` primitives (lgamma, digamma, igamma, zeta, betainc, ...), so they
differentiate, batch and compile through those; ``zeta`` and ``poch`` carry jax's custom jvps.
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction

import numpy as np

import fx.numpy as fnp
from fx import dtypes, lax
from fx.autodiff import jvp as _jvp
from fx.core import get_aval
from fx.custom_derivatives import custom_jvp
from fx.scipy.special._common import concrete_or_error, promote_inexact, reject_complex


def gammaln(x):
    """log|Gamma(x)|.

        >>> fx.scipy.special.gammaln(fnp.array([0.5, 4.0]))
        Array([0.5723649, 1.7917595], dtype=float32)
    """
    (x,) = promote_inexact("gammaln", x)
    return lax.lgamma(x)


def gammasgn(x):
    """The sign of Gamma(x): NaN at the poles (non-positive integers), -inf and NaN; -1 at -0."""
    (x,) = promote_inexact("gammasgn", x)
    reject_complex("gammasgn", x)
    floor_x = fnp.floor(x)
    negative = x < 0
    return fnp.select(
        [(negative & (x == floor_x)) | fnp.isnan(x),
         (negative & (fnp.remainder(floor_x, 2) != 0)) | ((x == 0) & fnp.signbit(x))],
        [fnp.full_like(x, np.nan), fnp.full_like(x, -1.0)], fnp.full_like(x, 1.0))


def gamma(x):
    """Gamma(x) = gammasgn(x) * exp(gammaln(x)).

        >>> fx.scipy.special.gamma(fnp.array([0.5, 5.0]))
        Array([ 1.7724539, 24.000002 ], dtype=float32)
    """
    (x,) = promote_inexact("gamma", x)
    reject_complex("gamma", x)
    return gammasgn(x) * lax.exp(lax.lgamma(x))


def loggamma(x):
    """The principal branch of log Gamma: lgamma for x > 0, NaN for x <= 0 (real inputs)."""
    (x,) = promote_inexact("loggamma", x)
    reject_complex("loggamma", x)
    return fnp.where(x > 0, lax.lgamma(x), np.nan)


def digamma(x):
    """psi(x) = d/dx log Gamma(x)."""
    (x,) = promote_inexact("digamma", x)
    return lax.digamma(x)


def _stirling_tail(z):
    """log Gamma(z) - ((z - 1/2) log z - z + log(2 pi)/2), z >= 8 (ten Stirling terms)."""
    bernoulli = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30),
                 Fraction(5, 66), Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510),
                 Fraction(43867, 798), Fraction(-174611, 330)]
    inv2 = 1 / (z * z)
    total = fnp.zeros_like(z)
    for k in reversed(range(1, len(bernoulli) + 1)):
        total = total * inv2 + float(bernoulli[k - 1] / (2 * k * (2 * k - 1)))
    return total / z


def _log_gamma_ratio(a, b):
    """log(Gamma(b) / Gamma(a + b)) for b >= 8, without the cancellation of two lgammas."""
    c = a + b
    return (-(b - 0.5) * fnp.log1p(a / b) - a * fnp.log(c) + a
            + (_stirling_tail(b) - _stirling_tail(c)))


def betaln(a, b):
    """log|B(a, b)|; for max(a, b) >= 8 through the Stirling series of Gamma(b)/Gamma(a+b)
    (accurate for large arguments, as jax's and scipy's)."""
    a, b = promote_inexact("betaln", a, b)
    a, b = fnp.minimum(a, b), fnp.maximum(a, b)
    small_b = lax.lgamma(a) + (lax.lgamma(b) - lax.lgamma(a + b))
    safe_b = fnp.where(b < 8, 8.0, b)
    large_b = lax.lgamma(a) + _log_gamma_ratio(a, safe_b)
    return fnp.where(b < 8, small_b, large_b)


def beta(a, b):
    """B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b)."""
    a, b = promote_inexact("beta", a, b)
    reject_complex("beta", a)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * lax.exp(betaln(a, b))


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b); differentiable in x only (as jax)."""
    a, b, x = promote_inexact("betainc", a, b, x)
    reject_complex("betainc", x)
    return lax.betainc(a, b, x)


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x), differentiable in a and x.

        >>> fx.scipy.special.gammainc(2.0, fnp.array([1.0, 3.0]))
        Array([0.26424113, 0.80085176], dtype=float32)
    """
    a, x = promote_inexact("gammainc", a, x)
    return lax.igamma(a, x)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    a, x = promote_inexact("gammaincc", a, x)
    return lax.igammac(a, x)


@custom_jvp
def zeta(x, q=None):
    """Hurwitz's zeta function sum_k (k + q)^-x (``q`` is required, as in jax). The
    derivative, in both arguments, is that of a Euler-Maclaurin expansion (jax's rule)."""
    if q is None:
        raise NotImplementedError("Riemann zeta function not implemented; pass q != None to "
                                  "compute the Hurwitz Zeta function.")
    x, q = promote_inexact("zeta", x, q)
    return lax.zeta(x, q)


def _zeta_series(x, q):
    # Johansson (2015), formula (5): N direct terms, the integral, M Bernoulli corrections.
    s, a = promote_inexact("zeta", x, q)
    f32 = get_aval(a).dtype == dtypes.float32
    n = m = 8 if f32 else 16
    k = fnp.arange(n, dtype=get_aval(a).dtype)
    s_, a_ = fnp.expand_dims(s, -1), fnp.expand_dims(a, -1)
    direct = fnp.sum((a_ + k) ** -s_, -1)
    integral = (a + n) ** (1 - s) / (s - 1)
    t0 = (a + n) ** -s
    j = fnp.arange(2 * m, dtype=get_aval(a).dtype)
    ratios = fnp.cumprod((s_ + j) / (a_ + n), -1)[..., ::2]
    ratios = fnp.clip(ratios, max=float(np.finfo(get_aval(a).dtype).max))
    coefs = np.array([float(math.factorial(2 * i) / _bernoulli_exact(2 * i))
                      for i in range(1, m + 1)], dtype=get_aval(a).dtype)
    return direct + integral + t0 * (0.5 + fnp.sum(ratios / coefs, -1))


@zeta.defjvp
def _zeta_jvp(primals, tangents):
    _, tangent = _jvp(_zeta_series, primals, tangents)
    return zeta(*primals), tangent


def polygamma(n, x):
    """The n-th derivative of digamma, for integer ``n`` (an array: may vary per element);
    (-1)^(n+1) n! zeta(n + 1, x) for n >= 1."""
    if not dtypes.issubdtype(get_aval(fnp.asarray(n)).dtype, np.integer):
        raise ValueError("Argument `n` to polygamma must be of integer type. Got dtype "
                         f"{get_aval(fnp.asarray(n)).dtype}.")
    n, x = promote_inexact("polygamma", n, x)
    reject_complex("polygamma", x)
    return _polygamma(n, x)


@custom_jvp
def _polygamma(n, x):
    n1 = n + 1
    sign = fnp.where(fnp.remainder(n, 2) == 0, -1.0, 1.0)
    higher = sign * fnp.exp(lax.lgamma(n1)) * lax.zeta(n1, x)
    return fnp.where(n == 0, lax.digamma(x), higher)


@_polygamma.defjvp
def _polygamma_jvp(primals, tangents):
    n, x = primals
    _, x_dot = tangents
    return _polygamma(n, x), _polygamma(n + 1, x) * x_dot


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension ``d`` (a concrete integer)."""
    d = concrete_or_error(int, d, "d argument of multigammaln")
    a, d_ = promote_inexact("multigammaln", a, d)
    constant = 0.25 * d_ * (d_ - 1) * float(np.log(np.pi))
    b = fnp.arange(d, dtype=get_aval(d_).dtype) / 2
    res = fnp.sum(gammaln(fnp.expand_dims(a, -1) - b), axis=-1)
    return res + constant


def factorial(n, exact: bool = False):
    """n! = Gamma(n + 1) in floating point (0 for negative n); ``exact=True`` is refused."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    (n,) = promote_inexact("factorial", n)
    return fnp.where(n < 0, 0.0, lax.exp(lax.lgamma(n + 1)))


def comb(N, k, *, repetition: bool = False):
    """N choose k in floating point (0 outside 0 <= k <= N); with ``repetition``, the
    number of multisets."""
    N, k = promote_inexact("comb", N, k)
    if repetition:
        return fnp.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k))
    ok = (k <= N) & (N >= 0) & (k >= 0)
    safe_n, safe_k = fnp.where(ok, N, 0.0), fnp.where(ok, k, 0.0)
    out = lax.exp(gammaln(safe_n + 1) - gammaln(safe_k + 1) - gammaln(safe_n + 1 - safe_k))
    return fnp.where(ok, out, 0.0)


@custom_jvp
def poch(z, m):
    """The Pochhammer symbol (z)_m = Gamma(z + m) / Gamma(z) (1 at m == 0)."""
    z, m = promote_inexact("poch", z, m)
    reject_complex("jnp.poch", z)
    return fnp.where(m == 0.0, 1.0, gamma(z + m) / gamma(z))


def _poch_jvp(primals, tangents):
    z, m = primals
    z_dot, m_dot = tangents
    out = poch(z, m)
    dz = (digamma(z + m) - digamma(z)) * out
    dm = digamma(z + m) * out
    return out, dz * z_dot + dm * m_dot


poch.defjvp(_poch_jvp)


def _bernoulli_exact(n: int) -> Fraction:
    return _bernoulli_table(n)[n]


def _bernoulli_table(n: int) -> list[Fraction]:
    """B_0 .. B_n (B_1 = -1/2), by the Akiyama-Tanigawa recurrence in exact rationals."""
    out, row = [], []
    for m in range(n + 1):
        row.append(Fraction(1, m + 1))
        for j in range(m, 0, -1):
            row[j - 1] = j * (row[j - 1] - row[j])
        out.append(row[0])
    if n >= 1:
        out[1] = Fraction(-1, 2)
    return out


def bernoulli(n: int):
    """The Bernoulli numbers B_0 .. B_n (``n`` a concrete integer; B_1 = -1/2), in the
    default float dtype."""
    n = concrete_or_error(operator.index, n, "Argument n of bernoulli")
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    return fnp.asarray([float(b) for b in _bernoulli_table(n)])
