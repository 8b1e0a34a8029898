"""Float64 NumPy algorithms for the special functions ``fx.scipy.special`` computes as
primitives (``fx.lax.scipy_special``; jax writes each as a series or rational fit under a
custom jvp): erfcx, Dawson's integral, the exponential integrals Ei and E_n, Spence's
function, the sine and cosine integrals, the Fresnel integrals and the inverse normal CDF.

Each takes float64 arrays and returns float64 arrays of the broadcast shape, accurate to a few
ulps of float64 over the ranges tested; callers round to the operand dtype.
"""

from __future__ import annotations

import math

import numpy as np

from fx.lax import special_numerics

_EPS = np.finfo(np.float64).eps
_TINY = 1e-300
_EULER = 0.57721566490153286061
_PI2_6 = math.pi ** 2 / 6
_SQRT_PI = math.sqrt(math.pi)


def _f64(*xs):
    out = np.broadcast_arrays(*(np.asarray(x, np.float64) for x in xs))
    return out if len(out) > 1 else out[0]


def _sum_series(first, ratio, max_terms: int, start: int = 1):
    """sum_k t_k with t_k = t_{k-1} * ratio(k), stopped per element below eps."""
    term = first
    total = first.copy()
    live = np.ones(first.shape, bool)
    for k in range(start, start + max_terms):
        term = term * ratio(k)
        total = np.where(live, total + term, total)
        live &= np.abs(term) > _EPS * np.abs(total)
        if not live.any():
            break
    return total


def _two_square(x):
    """x * x as hi + lo exactly (Dekker's splitting)."""
    hi = x * x
    c = 134217729.0 * x
    xh = c - (c - x)
    xl = x - xh
    lo = ((xh * xh - hi) + 2 * xh * xl) + xl * xl
    return hi, np.where(np.isfinite(lo), lo, 0.0)


def erfcx(x):
    """exp(x^2) erfc(x); its asymptotic series from x = 25 on, where erfc underflows."""
    x = _f64(x)
    with np.errstate(all="ignore"):
        hi, lo = _two_square(x)
        direct = np.exp(hi) * (1.0 + lo) * special_numerics.erfc(x)
        xl = np.where(x >= 25, x, 25.0)
        inv = 1.0 / (2.0 * xl * xl)
        series = _sum_series(np.ones_like(xl), lambda k: -(2 * k - 1) * inv, 30)
        asymptotic = series / (xl * _SQRT_PI)
        return np.where(x >= 25, asymptotic, np.where(x == -np.inf, np.inf, direct))


_RYBICKI_H = 0.2
_RYBICKI_C = np.exp(-(((2 * np.arange(1, 19) - 1) * _RYBICKI_H) ** 2))


def dawsn(x):
    """Dawson's integral exp(-x^2) int_0^x exp(t^2) dt: Taylor series below 0.5, Rybicki's
    exponentially convergent sum (step 0.2, error ~exp(-(pi/0.4)^2)) up to 10, the asymptotic
    series above."""
    x = _f64(x)
    ax = np.abs(x)
    with np.errstate(all="ignore"):
        xs = np.where(ax < 0.5, x, 0.0)
        x2 = xs * xs
        taylor = _sum_series(xs, lambda k: -2.0 * x2 / (2 * k + 1), 40)

        xm = np.where((ax >= 0.5) & (ax < 10), ax, 1.0)
        n0 = 2.0 * np.round(0.5 * xm / _RYBICKI_H)
        xp = xm - n0 * _RYBICKI_H
        e1 = np.exp(2.0 * xp * _RYBICKI_H)
        e2 = e1 * e1
        d1, d2 = n0 + 1.0, n0 - 1.0
        total = np.zeros_like(xm)
        for c in _RYBICKI_C:
            total = total + c * (e1 / d1 + 1.0 / (d2 * e1))
            d1, d2, e1 = d1 + 2.0, d2 - 2.0, e1 * e2
        rybicki = np.sign(x) * np.exp(-xp * xp) * total / _SQRT_PI

        xl = np.where(ax >= 10, x, 10.0)
        inv = 1.0 / (2.0 * xl * xl)
        asymptotic = _sum_series(np.ones_like(xl), lambda k: (2 * k - 1) * inv, 60) / (2 * xl)
        out = np.where(ax < 0.5, taylor, np.where(ax < 10, rybicki, asymptotic))
        out = np.where(np.isinf(x), 0.0 * np.sign(x), out)
        return np.where(np.isnan(x), np.nan, out)


def expn(n, x):
    """E_n(x) = int_1^inf exp(-x t) / t^n dt for integer n >= 0: the power series for
    x <= 1, Legendre's continued fraction (modified Lentz) above. NaN for n < 0 or x < 0."""
    n, x = _f64(n, x)
    with np.errstate(all="ignore"):
        nm1 = n - 1.0
        # Continued fraction, x > 1.
        xc = np.where(x > 1, x, 2.0)
        b = xc + n
        c = np.full_like(xc, 1 / _TINY)
        d = 1.0 / b
        h = d.copy()
        live = x > 1
        for i in range(1, 2000):
            if not live.any():
                break
            an = -i * (nm1 + i)
            b = b + 2.0
            d = 1.0 / (an * d + b)
            c = b + an / c
            delta = c * d
            h = np.where(live, h * delta, h)
            live &= np.abs(delta - 1.0) > _EPS
        fraction = h * np.exp(-xc)
        # Series, 0 < x <= 1.
        xs = np.where((x > 0) & (x <= 1), x, 0.5)
        log_xs = np.log(xs)
        psi = special_numerics.digamma(np.maximum(n, 1.0))  # psi(n) = -gamma + H_(n-1)
        ans = np.where(nm1 != 0, 1.0 / np.where(nm1 != 0, nm1, 1.0), -log_xs - _EULER)
        fact = np.ones_like(xs)
        live = (x > 0) & (x <= 1)
        for i in range(1, 200):
            if not live.any():
                break
            fact = fact * (-xs / i)
            at_pole = i == nm1
            term = np.where(at_pole, fact * (-log_xs + psi),
                            -fact / np.where(at_pole, 1.0, i - nm1))
            ans = np.where(live, ans + term, ans)
            live &= np.abs(term) > _EPS * np.abs(ans)
        out = np.where(x > 1, fraction, ans)
        out = np.where(x == np.inf, 0.0, out)
        out = np.where(n == 0, np.exp(-x) / x, out)
        out = np.where(x == 0, np.where(n < 2, np.inf, 1.0 / np.where(n < 2, 1.0, nm1)), out)
        return np.where((n < 0) | (x < 0) | np.isnan(n) | np.isnan(x), np.nan, out)


def expi(x):
    """Ei(x) = -E_1(-x) for x < 0; its power series up to 40 and asymptotic series above."""
    x = _f64(x)
    with np.errstate(all="ignore"):
        xs = np.where((x > 0) & (x <= 40), x, 1.0)
        series = _sum_series(xs, lambda k: xs * (k - 1) / (k * k), 400, start=2)
        small = _EULER + np.log(xs) + series
        xl = np.where(x > 40, x, 41.0)
        large = np.exp(xl) / xl * _sum_series(np.ones_like(xl), lambda k: k / xl, 60)
        out = np.where(x > 40, large, small)
        out = np.where(x < 0, -expn(1.0, -x), out)
        out = np.where(x == 0, -np.inf, out)
        out = np.where(x == np.inf, np.inf, out)
        return np.where(np.isnan(x), np.nan, out)


def _dilog_series(z):
    """Li2(z) = sum z^k / k^2 for |z| <= 1/2."""
    return _sum_series(z, lambda k: z * ((k - 1) / k) ** 2, 80, start=2)


def spence(x):
    """Spence's function int_1^x log(t) / (1 - t) dt = Li2(1 - x) for x >= 0, by the
    dilogarithm's series after a reflection or Landen transformation into |z| <= 1/2."""
    x = _f64(x)
    with np.errstate(all="ignore"):
        lx = np.log(x)
        s_lo = np.where(x < 0.5, x, 0.0)
        lo = _PI2_6 - np.log1p(-s_lo) * np.log(s_lo) - _dilog_series(s_lo)
        mid = _dilog_series(np.where((x >= 0.5) & (x <= 1.5), 1.0 - x, 0.0))
        u = np.where((x > 1.5) & (x <= 2), (x - 1.0) / x, 0.0)
        high = -_dilog_series(u) - 0.5 * lx * lx
        r = np.where(x > 2, 1.0 / x, 0.25)
        li_u = _PI2_6 - np.log1p(-r) * np.log(r) - _dilog_series(r)
        top = -li_u - 0.5 * lx * lx
        out = np.where(x < 0.5, lo, np.where(x <= 1.5, mid, np.where(x <= 2, high, top)))
        out = np.where(x == 0, _PI2_6, out)
        return np.where(x < 0, np.nan, out)


def _lentz_complex(b0, step, max_iter: int = 1000):
    """A complex continued fraction h by modified Lentz, ``step(i) -> (a_i, b_i)``."""
    c = np.full_like(b0, 1 / _TINY)
    d = 1.0 / b0
    h = d.copy()
    live = np.ones(b0.shape, bool)
    for i in range(2, max_iter):
        a, b = step(i)
        d = 1.0 / (a * d + b)
        c = b + a / c
        delta = c * d
        h = np.where(live, h * delta, h)
        live &= np.abs(delta - 1.0) > _EPS
        if not live.any():
            break
    return h


def sici(x):
    """(Si(x), Ci(x)): power series up to |x| = 2, the continued fraction of E_1(i x) above.
    Ci(x) for x < 0 is Ci(|x|) (the real part, as scipy)."""
    x = _f64(x)
    t = np.abs(x)
    with np.errstate(all="ignore"):
        ts = np.where(t <= 2, t, 1.0)
        t2 = ts * ts
        si_s = _sum_series(ts, lambda k: -t2 * (2 * k - 1) / ((2 * k) * (2 * k + 1) ** 2), 40)
        ci_terms = _sum_series(-t2 / 4, lambda k: -t2 * (2 * k - 2) / ((2 * k - 1) * (2 * k) ** 2),
                               40, start=2)
        ci_s = _EULER + np.log(ts) + ci_terms
        tl = np.where(t > 2, t, 3.0).astype(np.complex128)
        bstate = {"b": 1.0 + 1j * tl}

        def step(i):
            bstate["b"] = bstate["b"] + 2.0
            return -float((i - 1) ** 2), bstate["b"]

        h = _lentz_complex(1.0 + 1j * tl, step) * np.exp(-1j * tl)
        si_l = np.pi / 2 + h.imag
        ci_l = -h.real
        si = np.where(t <= 2, si_s, si_l)
        ci = np.where(t <= 2, ci_s, ci_l)
        si = np.where(t == np.inf, np.pi / 2, si)
        ci = np.where(t == np.inf, 0.0, np.where(t == 0, -np.inf, ci))
        nan = np.isnan(x)
        return np.where(nan, np.nan, np.copysign(si, x)), np.where(nan, np.nan, ci)


def fresnel(x):
    """(S(x), C(x)) = int_0^x (sin, cos)(pi t^2 / 2) dt: power series below 1.5, a complex
    continued fraction above (both odd in x)."""
    x = _f64(x)
    t = np.abs(x)
    with np.errstate(all="ignore"):
        ts = np.where(t < 1.5, t, 1.0)
        p = (np.pi / 2) * ts * ts
        # C = sum (-1)^k p^(2k) t / ((4k+1) (2k)!), S = sum (-1)^k p^(2k+1) t / ((4k+3) (2k+1)!)
        c_s = _sum_series(ts, lambda k: -p * p * (4 * k - 3)
                          / ((2 * k - 1) * (2 * k) * (4 * k + 1)), 40)
        s_s = _sum_series(p * ts / 3, lambda k: -p * p * (4 * k - 1)
                          / ((2 * k) * (2 * k + 1) * (4 * k + 3)), 40)
        tl = np.where(t >= 1.5, t, 2.0)
        pix2 = np.pi * tl * tl
        bstate = {"b": (1.0 - 1j * pix2), "n": -1.0}

        def step(i):
            bstate["n"] += 2.0
            bstate["b"] = bstate["b"] + 4.0
            n = bstate["n"]
            return -n * (n + 1.0), bstate["b"]

        h = _lentz_complex((1.0 - 1j * pix2).astype(np.complex128), step) * (tl - 1j * tl)
        cs = (0.5 + 0.5j) * (1.0 - np.exp(0.5j * pix2) * h)
        s = np.where(t < 1.5, s_s, cs.imag)
        c = np.where(t < 1.5, c_s, cs.real)
        s = np.where(t == np.inf, 0.5, s)
        c = np.where(t == np.inf, 0.5, c)
        nan = np.isnan(x)
        return (np.where(nan, np.nan, np.copysign(s, x)),
                np.where(nan, np.nan, np.copysign(c, x)))


def ndtri(p):
    """The inverse of the standard normal CDF: a rational first guess (Abramowitz-Stegun
    26.2.23), then Halley steps on the lower tail's CDF 0.5 erfc(-x / sqrt 2)."""
    p = _f64(p)
    with np.errstate(all="ignore"):
        q = np.where(p > 0.5, 1.0 - p, p)  # exact for p >= 1/2
        qs = np.where((q > 0) & (q <= 0.5), q, 0.25)
        t = np.sqrt(-2.0 * np.log(qs))
        x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
              / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t ** 3))
        for _ in range(4):
            cdf = 0.5 * special_numerics.erfc(-x / math.sqrt(2.0))
            pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
            u = (cdf - qs) / pdf
            x = x - u / (1.0 + 0.5 * x * u)
        out = np.where(p > 0.5, -x, x)
        # Near the median 2p - 1 is exact and erf_inv keeps the relative accuracy near 0.
        central = (p >= 0.25) & (p <= 0.75)
        out = np.where(central, math.sqrt(2.0) * special_numerics.erf_inv(
            np.where(central, 2.0 * p - 1.0, 0.0)), out)
        out = np.where(p == 0, -np.inf, np.where(p == 1, np.inf, out))
        return np.where((p < 0) | (p > 1) | np.isnan(p), np.nan, out)
