"""The confluent and Gauss hypergeometric functions ``hyp1f1(a, b, x)`` and
``hyp2f1(a, b, c, x)`` for real arguments, with jax's algorithms, special values and
derivatives (Pearson, Olver and Porter, *Numerical methods for the computation of the
confluent and Gauss hypergeometric functions*, 2014, arXiv:1407.7786).

1F1 is its Taylor series for |x| < 100 and its large-x asymptotic series beyond. 2F1 is its
Taylor series, a terminating sum when a or b is a non-positive integer, Euler's transformation
for c - a - b <= -1, and for x > 0.9 with an integer c - a - b the digamma form of the
1 - x connection (AMS 55, 15.3.10-12). Both are custom jvps: the derivatives in the
parameters are their own series (d/da (a)_k = (a)_k (psi(a + k) - psi(a))), in x the
contiguous relation d/dx F = (ab / c) F(a + 1, b + 1, c + 1, x).

Every series is one ``while_loop`` over whole arrays whose finished elements are frozen (as
jax's vectorised per-element loops), so the functions batch and jit; all branches are
computed and selected, as in jax.
"""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx import lax
from fx.core import get_aval
from fx.custom_derivatives import custom_jvp
from fx.scipy.special._common import promote_inexact, reject_complex
from fx.scipy.special.gamma_functions import gamma

_MAX_TERMS = 250


def _eps(x) -> float:
    return float(np.finfo(get_aval(x).dtype).eps)


def _broadcast(*args):
    """One shape for all (the series' loop carries are per element)."""
    shape = np.broadcast_shapes(*(get_aval(a).shape for a in args))
    return [fnp.broadcast_to(a, shape) for a in args]


def _masked_while(going, step, state, start: float = 1.0):
    """``k = start; while going(k, *state): state = step(k, *state); k += 1`` per element, for
    all elements in one loop: an element stops changing once its ``going`` is False, and the
    loop ends when none goes on (the counter ``k`` is shared, as every element starts at
    ``start``)."""
    k0 = fnp.asarray(start, get_aval(state[0]).dtype)

    def body(carry):
        k, values, live = carry
        new = step(k, *values)
        values = tuple(fnp.where(live, n, v) for n, v in zip(new, values))
        return k + 1.0, values, live & going(k + 1.0, *values)

    carry = (k0, tuple(state), going(k0, *state))
    return lax.while_loop(lambda c: fnp.any(c[2]), body, carry)[1]


def _series(total, term, ratio, weight=None):
    """``total + sum_(k >= 1) w(k) t_k`` with ``t_1 = term`` and ``t_(k+1) = t_k ratio(k)``,
    per element until a term falls below eps of the sum, at most 250 terms."""
    eps = _eps(total)

    def going(k, s, t):
        return (k < _MAX_TERMS) & (fnp.abs(t) / fnp.abs(s) > eps)

    def step(k, s, t):
        return s + (t if weight is None else t * weight(k)), t * ratio(k)

    return _masked_while(going, step, (total, term))[0]


# --- 1F1 ---------------------------------------------------------------------------------------


def _hyp1f1_ratio(a, b, x):
    return lambda k: (a + k) / (b + k) * x / (k + 1)


def _hyp1f1_value(a, b, x):
    one = fnp.ones_like(x)
    taylor = _series(one, a / b * x, _hyp1f1_ratio(a, b, x))
    # Large |x|: Gamma(b) / Gamma(a) e^x x^(a - b) sum_k (b - a)_k (1 - a)_k / (k! x^k).
    asym = _series(one, (b - a) * (1 - a) / x,
                   lambda k: (b - a + k) * (1 - a + k) / (k + 1) / x)
    asym = gamma(b) / gamma(a) * fnp.exp(x) * x ** (a - b) * asym
    value = fnp.where(fnp.abs(x) < 100, taylor, asym)
    # jax's conventions: 1 at a == 0 (also a == b == 0, where scipy differs), e^x at a == b,
    # inf at b == 0.
    return fnp.where(a == 0, 1.0, fnp.where(a == b, fnp.exp(x),
                                            fnp.where(b == 0, fnp.inf, value)))


_hyp1f1 = custom_jvp(_hyp1f1_value)


def _hyp1f1_da(t, ans, a, b, x):
    zero = fnp.zeros_like(x)
    d = _series(zero, a / b * x, _hyp1f1_ratio(a, b, x),
                lambda k: lax.digamma(a + k) - lax.digamma(a))
    return d * t


def _hyp1f1_db(t, ans, a, b, x):
    zero = fnp.zeros_like(x)
    d = _series(zero, a / b * x, _hyp1f1_ratio(a, b, x),
                lambda k: lax.digamma(b) - lax.digamma(b + k))
    return d * t


_hyp1f1.defjvps(_hyp1f1_da, _hyp1f1_db,
                lambda t, ans, a, b, x: a / b * _hyp1f1(a + 1, b + 1, x) * t)


def hyp1f1(a, b, x):
    """Kummer's confluent hypergeometric function 1F1(a; b; x) = sum_k (a)_k x^k / ((b)_k k!)
    for real arguments (jax's: positive ones are the supported domain; large values lose
    accuracy in float32). 1 at a == 0, including a == b == 0 where scipy gives NaN.

        >>> fnp.round(fx.scipy.special.hyp1f1(1.0, 2.0, fnp.array([0.0, 1.0])), 5)
        Array([1.     , 1.71828], dtype=float32)
    """
    a, b, x = _broadcast(*promote_inexact("hyp1f1", a, b, x, equal_rank_error=ValueError))
    reject_complex("hyp1f1", x)
    return _hyp1f1(a, b, x)


# --- 2F1 ---------------------------------------------------------------------------------------


def _hyp2f1_taylor(a, b, c, x, use):
    eps = _eps(x)

    def going(k, s, t):
        return use & (k < _MAX_TERMS) & (fnp.abs(t) > eps * fnp.abs(s))

    def step(k, s, t):
        return s + t, t * ((a + k - 1) * (b + k - 1) / (c + k - 1) / k * x)

    return _masked_while(going, step, (fnp.zeros_like(x), fnp.ones_like(x)))[0]


def _hyp2f1_terminating(a, b, c, x, use):
    """The finite sum for a (or b) a non-positive integer -n: n + 1 terms (jax's choice of
    which of a, b bounds it)."""
    eps50 = 50 * _eps(x)
    swap = (b < a) & (fnp.abs(b - fnp.round(b)) < eps50) & ~(
        (fnp.mod(c, 1.0) == 0) & (c <= 0) & (c > b))
    a, b = fnp.abs(fnp.where(swap, b, a)), fnp.where(swap, a, b)
    n = fnp.where(use, a, 0.0)

    def step(i, s, t):
        t = t * (-(a - i + 1) / (c + i - 1) * (b + i - 1) / i * x)
        return s + t, t

    one = fnp.ones_like(x)
    return _masked_while(lambda i, s, t: i < n + 1, step, (one, one))[0]


def _hyp2f1_digamma_form(a, b, c, x, use):
    """2F1 for x near 1 with d = c - a - b an integer, by the series in 1 - x with digamma
    coefficients (AMS 55, 15.3.10-12)."""
    eps = _eps(x)
    d = c - a - b
    s = 1 - x
    rd = fnp.round(d)
    e = fnp.where(rd >= 0, d, -d)
    d1 = fnp.where(rd >= 0, d, 0.0)
    d2 = fnp.where(rd >= 0, 0.0, d)
    log_s = fnp.log(s)
    y = (lax.digamma(fnp.ones_like(x)) + lax.digamma(1.0 + e) - lax.digamma(a + d1)
         - lax.digamma(b + d1) - log_s)
    y = y / gamma(e + 1.0)
    p = (a + d1) * (b + d1) * s / gamma(e + 2.0)

    def log_terms(t, p, q, y):
        r = (lax.digamma(1.0 + t) + lax.digamma(1.0 + t + e) - lax.digamma(a + t + d1)
             - lax.digamma(b + t + d1) - log_s)
        q = p * r
        p = p * (s * (a + t + d1) / (t + 1.0))
        p = p * ((b + t + d1) / (t + 1.0 + e))
        return p, q, y + q

    def going(t, p, q, y):
        return use & (t < _MAX_TERMS) & (fnp.abs(q) >= eps * fnp.abs(y))

    _, _, y = _masked_while(going, log_terms, (p, y, y))

    # The |d| - 1 finite terms, and the two parts put together with their gamma factors.
    n = fnp.where(use & (rd != 0), fnp.abs(rd), 0.0)

    def finite_terms(k, p, y1):
        t = k - 1.0
        p = p * (s * (a + t + d2) * (b + t + d2) / (1.0 - e + t))
        p = p / (t + 1.0)
        return p, y1 + p

    one = fnp.ones_like(x)
    _, y1 = _masked_while(lambda k, p, y1: k < n, finite_terms, (one, one))
    gc = gamma(c)
    y1 = y1 * (gamma(e) * gc / (gamma(a + d1) * gamma(b + d1)))
    y_sum = y * (gc / (gamma(a + d2) * gamma(b + d2)))
    y_sum = fnp.where(fnp.mod(fnp.abs(rd), 2.0) == 1, -y_sum, y_sum)
    q = s ** rd
    summed = fnp.where(rd > 0, y_sum * q + y1, y_sum + y1 * q)
    return fnp.where(rd == 0, y * gc / (gamma(a) * gamma(b)), summed)


def _hyp2f1_series(a, b, c, x, use):
    """jax's choice between the Taylor series, the digamma form and the terminating sum.
    Each loop runs only for the elements that take its branch and ``use`` it (jax runs every
    branch for every element; the others' values are discarded either way)."""
    eps50 = 50 * _eps(x)
    d = c - a - b
    neg_int = (((a <= 0) & (fnp.abs(a - fnp.round(a)) < eps50))
               | ((b <= 0) & (fnp.abs(b - fnp.round(b)) < eps50)))
    near_one = (x > 0.9) & ~neg_int
    by_digamma = near_one & ~(fnp.abs(d - fnp.round(d)) >= eps50)
    return fnp.where(by_digamma, _hyp2f1_digamma_form(a, b, c, x, use & by_digamma),
                     fnp.where(neg_int, _hyp2f1_terminating(a, b, c, x, use & neg_int),
                               _hyp2f1_taylor(a, b, c, x, use & ~neg_int & ~by_digamma)))


def _hyp2f1_value(a, b, c, x):
    eps50 = 50 * _eps(x)
    d, s, ca, cb = c - a - b, 1 - x, c - a, c - b
    # jax's cases, first match wins (NaN arguments fall through to the series).
    cases = [
        ((x == 0) | (((a == 0) | (b == 0)) & (c != 0)), "one"),
        ((c == 0) | ((c < 0) & (fnp.mod(c, 1.0) == 0)), "inf"),
        ((d <= -1) & ~((fnp.abs(d - fnp.round(d)) >= eps50) & (s < 0)), "euler"),
        ((d <= 0) & (x == 1), "inf"),
        ((x < 1) & (b == c), "b == c"),
        ((x < 1) & (a == c), "a == c"),
        (x > 1, "inf"),
        (x == 1, "gauss"),
    ]
    taken = fnp.zeros_like(x, dtype=bool)
    chosen = {}
    for cond, name in cases:
        cond = cond & ~taken
        chosen[name] = chosen[name] | cond if name in chosen else cond
        taken = taken | cond
    values = {
        "one": fnp.ones_like(x),
        "inf": fnp.full_like(x, np.inf),
        # Euler's transformation 2F1(a, b; c; x) = (1 - x)^(c - a - b) 2F1(c - a, c - b; c; x).
        "euler": s ** d * _hyp2f1_series(ca, cb, c, x, chosen["euler"]),
        "b == c": s ** (-a),
        "a == c": s ** (-b),
        "gauss": gamma(c) * gamma(d) / (gamma(ca) * gamma(cb)),  # Gauss's sum at x = 1
    }
    out = _hyp2f1_series(a, b, c, x, ~taken)
    for name, value in values.items():
        out = fnp.where(chosen[name], value, out)
    return out


_hyp2f1 = custom_jvp(_hyp2f1_value)


def _hyp2f1_parameter_jvp(weight):
    def jvp(t, ans, a, b, c, x):
        ratio = lambda k: (a + k) * (b + k) / (c + k) / (k + 1) * x  # noqa: E731
        return _series(fnp.zeros_like(x), a * b / c * x, ratio, weight(a, b, c)) * t
    return jvp


_hyp2f1.defjvps(
    _hyp2f1_parameter_jvp(lambda a, b, c: lambda k: lax.digamma(a + k) - lax.digamma(a)),
    _hyp2f1_parameter_jvp(lambda a, b, c: lambda k: lax.digamma(b + k) - lax.digamma(b)),
    _hyp2f1_parameter_jvp(lambda a, b, c: lambda k: lax.digamma(c) - lax.digamma(c + k)),
    lambda t, ans, a, b, c, x: a * b / c * _hyp2f1(a + 1, b + 1, c + 1, x) * t,
)


def hyp2f1(a, b, c, x):
    """Gauss's hypergeometric function 2F1(a, b; c; x) = sum_k (a)_k (b)_k x^k / ((c)_k k!)
    for real arguments and x <= 1 (inf for x > 1 and at the poles c = 0, -1, ..., as jax).

        >>> fnp.round(fx.scipy.special.hyp2f1(1.0, 1.0, 2.0, fnp.array([0.0, 0.5])), 5)
        Array([1.     , 1.38629], dtype=float32)
    """
    a, b, c, x = _broadcast(*promote_inexact("hyp2f1", a, b, c, x, equal_rank_error=ValueError))
    reject_complex("hyp2f1", x)
    return _hyp2f1(a, b, c, x)
