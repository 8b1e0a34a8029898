"""Logarithms, entropies and the logistic family: logsumexp, softmax/log_softmax, xlogy,
xlog1py, entr, rel_entr, kl_div, expit, logit, boxcox and boxcox1p, with jax's semantics
and custom jvps (xlogy's and xlog1py's derivatives stay finite where x == 0).
"""

from __future__ import annotations

import fx.numpy as fnp
from fx import lax, nn
from fx.custom_derivatives import custom_jvp
from fx.scipy.special._common import promote_inexact, reject_complex

logsumexp = nn.logsumexp


def softmax(x, /, *, axis=None):
    """exp(x) / sum(exp(x)) over ``axis`` (None: all axes, scipy's default)."""
    return nn.softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
    """x - logsumexp(x) over ``axis`` (None: all axes)."""
    return nn.log_softmax(x, axis=axis)


@custom_jvp
def logit(x):
    """log(x / (1 - x)), the inverse of expit."""
    (x,) = promote_inexact("logit", x)
    return lax.log(lax.div(x, lax.sub(fnp.ones_like(x), x)))


logit.defjvps(lambda t, ans, x: t / (x * (1 - x)))


def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x)).

        >>> fx.scipy.special.expit(fnp.array([0.0, 2.0]))
        Array([0.5      , 0.8807971], dtype=float32)
    """
    (x,) = promote_inexact("expit", x)
    return lax.logistic(x)


def _x_log(x, y, log):
    """x * log(y), 0 where x == 0 unless y is NaN (scipy's convention)."""
    return fnp.where((x != 0) | fnp.isnan(y), x * log(y), fnp.zeros_like(x))


def _x_log_jvp(fn, log, log_arg):
    """The jvp of ``fn(x, y) = x * log(y)``: finite at x == 0, d/dy = x / log_arg(y)."""

    def rule(primals, tangents):
        (x, y), (x_dot, y_dot) = primals, tangents
        out = fn(x, y)
        return out, (x_dot * log(y) + y_dot * x / log_arg(y)).astype(out.dtype)

    return rule


@custom_jvp
def xlogy(x, y):
    """x * log(y), 0 where x == 0 (unless y is NaN), as scipy."""
    x, y = promote_inexact("xlogy", x, y)
    return _x_log(x, y, lax.log)


xlogy.defjvp(_x_log_jvp(xlogy, fnp.log, lambda y: y))


@custom_jvp
def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0 (unless y is NaN), as scipy."""
    x, y = promote_inexact("xlog1py", x, y)
    return _x_log(x, y, lax.log1p)


xlog1py.defjvp(_x_log_jvp(xlog1py, fnp.log1p, lambda y: 1 + y))


@custom_jvp
def _xlogx(x):
    return xlogy(x, x)


_xlogx.defjvps(lambda t, ans, x: t * (fnp.log(x) + 1))


def entr(x):
    """-x log x for x >= 0 (0 at 0), -inf for x < 0."""
    (x,) = promote_inexact("entr", x)
    reject_complex("entr", x)
    return fnp.where(x < 0, -fnp.inf, -_xlogx(x))


def rel_entr(p, q):
    """p log(p / q) for p, q > 0; 0 at p == 0 <= q; inf otherwise."""
    p, q = promote_inexact("rel_entr", p, q)
    reject_complex("rel_entr", p)
    both = (p > 0) & (q > 0)
    p_zero = (p == 0) & (q >= 0)
    safe_p, safe_q = fnp.where(both, p, 1.0), fnp.where(both, q, 1.0)
    value = _xlogx(safe_p) - xlogy(safe_p, safe_q)
    return fnp.where(both, value, fnp.where(p_zero, 0.0, fnp.inf))


def kl_div(p, q):
    """rel_entr(p, q) - p + q (the elementwise Kullback-Leibler term)."""
    p, q = promote_inexact("kl_div", p, q)
    reject_complex("kl_div", p)
    return rel_entr(p, q) - p + q


def _box_cox(log_x, lmbda):
    """expm1(lmbda log_x) / lmbda, log_x at lmbda == 0."""
    zero = lmbda == 0
    safe = fnp.where(zero, 1.0, lmbda)
    return fnp.where(zero, log_x, fnp.expm1(safe * log_x) / safe)


def boxcox(x, lmbda):
    """The Box-Cox transform (x^lmbda - 1) / lmbda, log(x) at lmbda == 0."""
    x, lmbda = promote_inexact("boxcox", x, lmbda)
    return _box_cox(fnp.log(x), lmbda)


def boxcox1p(x, lmbda):
    """boxcox(1 + x, lmbda), accurate for small x."""
    x, lmbda = promote_inexact("boxcox1p", x, lmbda)
    return _box_cox(fnp.log1p(x), lmbda)
