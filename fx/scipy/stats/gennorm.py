"""The generalized normal distribution (jax.scipy.stats.gennorm) of ``(x, beta)``."""

from __future__ import annotations

import fx.numpy as fnp
from fx import lax
from fx.scipy.stats._common import promote


def logpdf(x, beta):
    x, beta = promote("gennorm.logpdf", x, beta)
    return fnp.log(0.5 * beta) - lax.lgamma(1 / beta) - fnp.abs(x) ** beta


def cdf(x, beta):
    x, beta = promote("gennorm.cdf", x, beta)
    return 0.5 * (1 + fnp.sign(x) * lax.igamma(1 / beta, fnp.abs(x) ** beta))


def pdf(x, beta):
    return fnp.exp(logpdf(x, beta))
