"""The beta distribution (jax.scipy.stats.beta) of ``(x, a, b, loc=0, scale=1)``."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx import lax
from fx.scipy.special import betainc, betaln, xlog1py, xlogy
from fx.scipy.stats._common import const, promote


def logpdf(x, a, b, loc=0, scale=1):
    """-inf outside [loc, loc + scale]; NaN unless a, b and scale are positive."""
    x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
    y = (x - loc) / scale
    log_linear_term = xlogy(a - 1, y) + xlog1py(b - 1, -y)
    log_probs = -betaln(a, b) + log_linear_term - fnp.log(scale)
    result = fnp.where((x > loc + scale) | (x < loc), -np.inf, log_probs)
    return fnp.where((a <= 0) | (b <= 0) | (scale <= 0), np.nan, result)


def pdf(x, a, b, loc=0, scale=1):
    return fnp.exp(logpdf(x, a, b, loc, scale))


def _y(x, loc, scale):
    return lax.clamp(const(x, 0), (x - loc) / scale, const(x, 1))


def cdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("beta.cdf", x, a, b, loc, scale)
    return betainc(a, b, _y(x, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    return fnp.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("beta.sf", x, a, b, loc, scale)
    return betainc(b, a, 1 - _y(x, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    return fnp.log(sf(x, a, b, loc, scale))
