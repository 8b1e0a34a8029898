"""Exponential, trigonometric and logarithmic integrals, and the modified Bessel functions
of orders 0 and 1: expi, exp1, expn, sici, spence, i0, i0e, i1, i1e (jax's semantics).

expi, expn, sici and spence are primitives (``fx.lax.scipy_special``) with the
exact derivatives jax's custom jvps give; the Bessel functions go through ``fx.lax``'s
``bessel_i0e``/``bessel_i1e``.
"""

from __future__ import annotations

import fx.numpy as fnp
from fx import lax
from fx.lax import scipy_special as prims
from fx.scipy.special._common import promote_inexact, reject_complex, require_float


def expi(x):
    """The exponential integral Ei(x) = -E_1(-x) (principal value)."""
    (x,) = promote_inexact("expi", x)
    reject_complex("expi", x)
    return prims.expi_p.bind(x)


def expn(n, x):
    """The generalized exponential integral E_n(x) = int_1^inf exp(-x t) / t^n dt for
    integer n >= 0; differentiable in x (d/dx E_n = -E_(n-1))."""
    n, x = promote_inexact("expn", n, x, equal_rank_error=ValueError)
    reject_complex("expn", x)
    return prims.expn_p.bind(n, x)


def exp1(x):
    """E_1(x) = expn(1, x).

        >>> fx.scipy.special.exp1(fnp.array([1.0]))
        Array([0.21938393], dtype=float32)
    """
    (x,) = promote_inexact("exp1", x)
    reject_complex("exp1", x)
    return prims.expn_p.bind(fnp.ones_like(x), x)


def sici(x):
    """The sine and cosine integrals (Si(x), Ci(x)); Ci of a negative x is Ci(|x|)."""
    (x,) = promote_inexact("sici", x)
    if fnp.iscomplexobj(x):
        raise ValueError(f"Argument `x` to sici must be real-valued. Got dtype {x.dtype}.")
    return prims.si_p.bind(x), prims.ci_p.bind(x)


def spence(x):
    """Spence's function int_1^x log(t) / (1 - t) dt for x >= 0 (float32/float64 only)."""
    return prims.spence_p.bind(require_float("spence", x))


def i0e(x):
    """exp(-|x|) I0(x)."""
    (x,) = promote_inexact("i0e", x)
    return lax.bessel_i0e(x)


def i0(x):
    """The modified Bessel function of the first kind of order 0."""
    (x,) = promote_inexact("i0", x)
    return lax.exp(lax.abs(x)) * lax.bessel_i0e(x)


def i1e(x):
    """exp(-|x|) I1(x)."""
    (x,) = promote_inexact("i1e", x)
    return lax.bessel_i1e(x)


def i1(x):
    """The modified Bessel function of the first kind of order 1."""
    (x,) = promote_inexact("i1", x)
    return lax.exp(lax.abs(x)) * lax.bessel_i1e(x)
