"""The Laplace distribution (jax.scipy.stats.laplace) of ``(x, loc=0, scale=1)``."""

from __future__ import annotations

import fx.numpy as fnp
from fx.scipy.stats._common import promote


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("laplace.logpdf", x, loc, scale)
    return -(fnp.abs(x - loc) / scale + fnp.log(2 * scale))


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote("laplace.cdf", x, loc, scale)
    diff = (x - loc) / scale
    return fnp.where(diff <= 0, 0.5 * fnp.exp(diff), 1 - 0.5 * fnp.exp(-diff))
