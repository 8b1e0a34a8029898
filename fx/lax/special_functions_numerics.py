"""Float64 NumPy algorithms for the incomplete gamma and beta functions, Hurwitz's zeta and the
exponentially scaled Bessel functions I0 and I1 (the impls of ``fx.lax.special_functions``).

Every function takes float64 arrays of one shape and returns a float64 array of that shape;
callers round to the operand dtype. The algorithms are the classical ones jax and Cephes use
(power series and continued fractions with a convergence mask per element, Euler-Maclaurin
summation), so the edge cases (domain errors, zeros, infinities) come out as in jax.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from fx.lax import special_numerics

_EPS = np.finfo(np.float64).eps
_LOG_MAX = math.log(np.finfo(np.float64).max)


def _iterate(state: dict, active: np.ndarray, step: Callable, max_iter: int) -> dict:
    """Run ``step(state) -> (new_state, still_unconverged)`` on the active elements only."""
    for _ in range(max_iter):
        if not active.any():
            break
        new, unconverged = step(state)
        state = {k: np.where(active, new[k], state[k]) for k in state}
        active = active & unconverged
    return state


# --- incomplete gamma ---------------------------------------------------------------------------


def _igamma_series(ax, x, a, enabled, derivative: bool):
    """P(a, x) = ax / a * sum_n x^n / ((a+1)...(a+n)), or its derivative in ``a``."""
    state = dict(r=a.copy(), c=np.ones_like(a), ans=np.ones_like(a), dc=np.zeros_like(a),
                 dans=np.zeros_like(a))

    def step(s):
        r = s["r"] + 1.0
        dc = s["dc"] * (x / r) - s["c"] * x / (r * r)
        c = s["c"] * (x / r)
        new = dict(r=r, c=c, ans=s["ans"] + c, dc=dc, dans=s["dans"] + dc)
        test = np.abs(dc / new["dans"]) if derivative else c / new["ans"]
        return new, test > _EPS

    s = _iterate(state, enabled, step, 2000)
    if not derivative:
        return s["ans"] * ax / a
    dlogax_da = np.log(x) - special_numerics.digamma(a + 1.0)
    return ax * (s["ans"] * dlogax_da + s["dans"]) / a


def _igammac_fraction(ax, x, a, enabled, derivative: bool):
    """Q(a, x) by Legendre's continued fraction (Cephes' igamc), or its derivative in ``a``."""
    y = 1.0 - a
    z = x + y + 1.0
    pkm1, qkm1 = x + 1.0, z * x
    ans = pkm1 / qkm1
    zeros = np.zeros_like(x)
    dqkm1 = -x
    state = dict(ans=ans, y=y, z=z, c=zeros, pkm1=pkm1, qkm1=qkm1, pkm2=np.ones_like(x),
                 qkm2=x.copy(), dpkm2=zeros, dqkm2=zeros, dpkm1=zeros, dqkm1=dqkm1,
                 dans=(zeros - ans * dqkm1) / qkm1)

    def step(s):
        c, y, z = s["c"] + 1.0, s["y"] + 1.0, s["z"] + 2.0
        yc = y * c
        pk = s["pkm1"] * z - s["pkm2"] * yc
        qk = s["qkm1"] * z - s["qkm2"] * yc
        nonzero = qk != 0
        r = pk / np.where(nonzero, qk, 1.0)
        t = np.where(nonzero, np.abs((s["ans"] - r) / r), 1.0)
        ans = np.where(nonzero, r, s["ans"])
        dpk = s["dpkm1"] * z - s["pkm1"] - s["dpkm2"] * yc + s["pkm2"] * c
        dqk = s["dqkm1"] * z - s["qkm1"] - s["dqkm2"] * yc + s["qkm2"] * c
        dans = np.where(nonzero, (dpk - ans * dqk) / np.where(nonzero, qk, 1.0), s["dans"])
        grad_change = np.where(nonzero, np.abs(dans - s["dans"]), 1.0)
        scale = np.where(np.abs(pk) > 1.0 / _EPS, _EPS, 1.0)  # rescale to avoid overflow
        new = dict(ans=ans, y=y, z=z, c=c, pkm1=pk * scale, qkm1=qk * scale,
                   pkm2=s["pkm1"] * scale, qkm2=s["qkm1"] * scale, dpkm2=s["dpkm1"] * scale,
                   dqkm2=s["dqkm1"] * scale, dpkm1=dpk * scale, dqkm1=dqk * scale, dans=dans)
        return new, (grad_change if derivative else t) > _EPS

    s = _iterate(state, enabled, step, 2000)
    if not derivative:
        return s["ans"] * ax
    dlogax_da = np.log(x) - special_numerics.digamma(a)
    return ax * (s["ans"] * dlogax_da + s["dans"])


def _log_ax(a, x):
    """log(x^a e^-x / Gamma(a)) and whether it underflows."""
    log_ax = a * np.log(x) - x - special_numerics.lgamma(a)
    return np.exp(log_ax), log_ax < -_LOG_MAX


def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    with np.errstate(all="ignore"):
        x_inf, a_zero, x_zero = x == np.inf, a == 0, x == 0
        domain = (x < 0) | (a < 0) | (a_zero & x_zero) | np.isnan(a) | np.isnan(x)
        use_q = (x >= 1) & (x > a)
        ax, underflow = _log_ax(a, x)
        enabled = ~(x_zero | domain | underflow | x_inf)
        out = np.where(use_q, 1.0 - _igammac_fraction(ax, x, a, enabled & use_q, False),
                       _igamma_series(ax, x, a, enabled & ~use_q, False))
        out = np.where(x_zero, 0.0, out)
        out = np.where(x_inf, 1.0, out)
        return np.where(domain, np.nan, out)


def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    with np.errstate(all="ignore"):
        x_inf, a_zero, x_zero = x == np.inf, a == 0, x == 0
        domain = (x < 0) | (a < 0) | (a_zero & x_zero) | np.isnan(a) | np.isnan(x)
        use_p = (x < 1) | (x < a)
        ax, underflow = _log_ax(a, x)
        enabled = ~(domain | underflow | x_inf | a_zero)
        out = np.where(use_p, 1.0 - _igamma_series(ax, x, a, enabled & use_p, False),
                       _igammac_fraction(ax, x, a, enabled & ~use_p, False))
        out = np.where(x_inf | a_zero, 0.0, out)
        return np.where(domain, np.nan, out)


def igamma_grad_a(a, x):
    """dP(a, x)/da, by differentiating the series and the continued fraction term by term."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    with np.errstate(all="ignore"):
        nan = np.isnan(a) | np.isnan(x)
        x_zero = x == 0
        domain = (x < 0) | (a <= 0)
        use_q = (x > 1) & (x > a)
        ax, underflow = _log_ax(a, x)
        enabled = ~(x_zero | domain | underflow | nan)
        out = np.where(use_q, -_igammac_fraction(ax, x, a, enabled & use_q, True),
                       _igamma_series(ax, x, a, enabled & ~use_q, True))
        out = np.where(x_zero, 0.0, out)
        return np.where(domain | nan, np.nan, out)


# --- incomplete beta ----------------------------------------------------------------------------


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b), by the continued fraction of
    DLMF 8.17.22 (evaluated with the modified Lentz method), on the side of x where it
    converges fast (DLMF 8.17.4 for the other)."""
    a, b, x = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, x)))
    with np.errstate(all="ignore"):
        a_zero = (a == 0) | (b == np.inf)
        b_zero = (b == 0) | (a == np.inf)
        x_zero, x_one = x == 0, x == 1
        nan = np.isnan(a) | np.isnan(b) | np.isnan(x)
        is_zero = (b_zero & ~x_one) | (a_zero & x_zero)
        is_one = (a_zero & ~x_zero) | (b_zero & x_one)
        is_nan = (a < 0) | (b < 0) | (x < 0) | (x > 1) | (a_zero & b_zero) | nan

        fast = x < (a + 1.0) / (a + b + 2.0)
        a, b = np.where(fast, a, b), np.where(fast, b, a)
        x = np.where(fast, x, 1.0 - x)
        tiny = _EPS / 2

        def numerator(n: int):
            if n == 1:
                return np.ones_like(x)
            m = (n - 1) // 2
            if n % 2 == 0:
                if m == 0:
                    return -(a + b) * x / (a + 1.0)
                return -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1.0))
            return m * (b - m) * x / ((a + 2 * m - 1.0) * (a + 2 * m))

        h = np.full_like(x, tiny)  # the zeroth partial denominator is 0
        state = dict(c=h.copy(), d=np.zeros_like(x), h=h)
        active = np.ones(x.shape, bool)
        for n in range(1, 601):
            if not active.any():
                break
            num = numerator(n)
            c = 1.0 + num / state["c"]
            c = np.where(np.abs(c) < tiny, tiny, c)
            d = 1.0 + num * state["d"]
            d = 1.0 / np.where(np.abs(d) < tiny, tiny, d)
            delta = c * d
            new = dict(c=c, d=d, h=state["h"] * delta)
            state = {k: np.where(active, new[k], state[k]) for k in state}
            active = active & (np.abs(delta - 1.0) >= tiny)
        lgamma = special_numerics.lgamma
        lbeta_small_a = lgamma(b) - lgamma(a + b)
        small_a = a < 2 * np.finfo(np.float64).tiny
        factor = np.where(small_a, np.exp(np.log1p(-x) * b - lbeta_small_a),
                          np.exp(np.log(x) * a + np.log1p(-x) * b - lgamma(a) - lbeta_small_a)
                          / a)
        out = state["h"] * factor
        out = np.where(fast, out, 1.0 - out)
        out = np.where(is_zero, 0.0, out)
        out = np.where(is_one, 1.0, out)
        return np.where(is_nan, np.nan, out)


# --- Hurwitz zeta -------------------------------------------------------------------------------

# (2k)! / B_2k: the Euler-Maclaurin correction terms' denominators.
_EM_DENOMINATORS = [
    math.factorial(2 * k) / b for k, b in enumerate(
        [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
         43867 / 798, -174611 / 330, 854513 / 138, -236364091 / 2730], start=1)
]


def zeta(x, q):
    """Hurwitz's zeta function sum_k (k + q)^-x, by Euler-Maclaurin summation after at
    least nine terms (Cephes' algorithm). Inf at x == 1 and at the poles q = 0, -1, ...;
    NaN for x < 1 and for negative q with non-integer x."""
    x, q = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(q, np.float64))
    with np.errstate(all="ignore"):
        s = q ** -x
        a = q.copy()
        b = np.zeros_like(s)
        done = np.zeros(s.shape, bool)
        i = 0
        while i < 9 or ((a <= 9) & ~done).any():
            i += 1
            step = (i <= 9) | (a <= 9)
            step &= ~done
            a = np.where(step, a + 1.0, a)
            b = np.where(step, a ** -x, b)
            s = np.where(step, s + b, s)
            done |= step & (np.abs(b / s) < _EPS)
            if i > 100:
                break
        w = a
        tail = s + b * w / (x - 1.0) - 0.5 * b
        fac = np.ones_like(s)
        k = 0.0
        bb = b.copy()
        converged = done.copy()
        for denom in _EM_DENOMINATORS:
            fac = fac * (x + k)
            bb = bb / w
            t = fac * bb / denom
            tail = np.where(converged, tail, tail + t)
            converged |= np.abs(t / tail) < _EPS
            k += 1.0
            fac = fac * (x + k)
            bb = bb / w
            k += 1.0
        out = np.where(done, s, tail)
        out = np.where(x == 1, np.inf, out)
        out = np.where(x < 1, np.nan, out)
        pole = (q <= 0) & (q == np.floor(q))
        out = np.where(pole & (x >= 1), np.inf, out)
        out = np.where((q < 0) & ~pole & (x != np.floor(x)), np.nan, out)
        return np.where((q == np.inf) & (x > 1), 0.0, out)


# --- exponentially scaled Bessel functions ------------------------------------------------------

_BESSEL_SERIES_MAX = 20.0


def _bessel_ie(nu: int, x):
    """exp(-|x|) I_nu(|x|) for nu in (0, 1): the power series below 20 (terms all positive),
    Hankel's asymptotic expansion above (its smallest term is about exp(-40) there)."""
    ax = np.abs(x)
    with np.errstate(all="ignore"):
        small = ax <= _BESSEL_SERIES_MAX
        xs = np.where(small, ax, 0.0)
        q = 0.25 * xs * xs
        term = (0.5 * xs) ** nu / math.factorial(nu)
        total = term.copy()
        for k in range(1, 80):
            term = term * q / (k * (k + nu))
            total = total + term
        series = total * np.exp(-xs)

        xl = np.where(small, 1.0, ax)
        mu = 4.0 * nu * nu
        term = np.ones_like(xl)
        total = term.copy()
        live = np.ones(xl.shape, bool)  # stop at the smallest term: the series diverges
        for k in range(1, 60):
            term = -term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * xl)
            total = np.where(live, total + term, total)
            live &= np.abs(term) > _EPS * np.abs(total)
        asymptotic = total / np.sqrt(2 * np.pi * xl)
        out = np.where(small, series, asymptotic)
        out = np.where(ax == np.inf, 0.0, out)
        return np.where(np.isnan(x), np.nan, out)


def bessel_i0e(x):
    """exp(-|x|) I0(x)."""
    return _bessel_ie(0, np.asarray(x, np.float64))


def bessel_i1e(x):
    """exp(-|x|) I1(x) (odd in x)."""
    x = np.asarray(x, np.float64)
    return np.copysign(_bessel_ie(1, x), x)
