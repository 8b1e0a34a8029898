"""The gamma distribution (jax.scipy.stats.gamma) of ``(x, a, loc=0, scale=1)``."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx import lax
from fx.scipy.special import gammainc, gammaincc, gammaln, xlogy
from fx.scipy.stats._common import const, promote


def logpdf(x, a, loc=0, scale=1):
    """xlogy(a - 1, y) - y - gammaln(a) - log(scale) with y = (x - loc) / scale; -inf below loc.
    y is 1 off the support so the masked branch stays finite (its gradient too)."""
    x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
    ok = x >= loc
    y = fnp.where(ok, (x - loc) / scale, const(x, 1))
    log_probs = xlogy(a - 1, y) - y - (gammaln(a) + fnp.log(scale))
    return fnp.where(ok, log_probs, -np.inf)


def pdf(x, a, loc=0, scale=1):
    return fnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote("gamma.cdf", x, a, loc, scale)
    return gammainc(a, lax.clamp(const(x, 0), (x - loc) / scale, const(x, np.inf)))


def logcdf(x, a, loc=0, scale=1):
    return fnp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote("gamma.sf", x, a, loc, scale)
    y = (x - loc) / scale
    return fnp.where(y < 0, 1, gammaincc(a, y))


def logsf(x, a, loc=0, scale=1):
    return fnp.log(sf(x, a, loc, scale))
