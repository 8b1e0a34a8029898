"""The exponential distribution (jax.scipy.stats.expon) of ``(x, loc=0, scale=1)``."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx.scipy.stats._common import promote


def logpdf(x, loc=0, scale=1):
    """-(x - loc) / scale - log(scale) on x >= loc, -inf below."""
    x, loc, scale = promote("expon.logpdf", x, loc, scale)
    log_probs = -((x - loc) / scale + fnp.log(scale))
    return fnp.where(x < loc, -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote("expon.cdf", x, loc, scale)
    neg_scaled_x = (loc - x) / scale
    return fnp.where(x < loc, fnp.zeros_like(neg_scaled_x), -fnp.expm1(neg_scaled_x))


def logcdf(x, loc=0, scale=1):
    return fnp.log1p(-sf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote("expon.sf", x, loc, scale)
    neg_scaled_x = (loc - x) / scale
    return fnp.where(x < loc, fnp.zeros_like(neg_scaled_x), neg_scaled_x)


def sf(x, loc=0, scale=1):
    return fnp.exp(logsf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote("expon.ppf", q, loc, scale)
    bad = fnp.isnan(q) | (q < 0) | (q > 1)
    return fnp.where(bad, np.nan, loc - scale * fnp.log1p(-q))
