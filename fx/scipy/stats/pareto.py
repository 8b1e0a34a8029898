"""The Pareto distribution (jax.scipy.stats.pareto) of ``(x, b, loc=0, scale=1)``."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx.scipy.stats._common import const, promote


def logpdf(x, b, loc=0, scale=1):
    x, b, loc, scale = promote("pareto.logpdf", x, b, loc, scale)
    scaled_x = (x - loc) / scale
    log_probs = -(fnp.log(scale / b) + (b + 1) * fnp.log(scaled_x))
    return fnp.where(x < loc + scale, -np.inf, log_probs)


def pdf(x, b, loc=0, scale=1):
    return fnp.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    x, b, loc, scale = promote("pareto.cdf", x, b, loc, scale)
    val = 1 - fnp.power((x - loc) / scale, -b)
    return fnp.where(x < loc + scale, const(x, 0), val)


def logcdf(x, b, loc=0, scale=1):
    x, b, loc, scale = promote("pareto.logcdf", x, b, loc, scale)
    val = fnp.log1p(-fnp.power((x - loc) / scale, -b))
    return fnp.where(x < loc + scale, -np.inf, val)


def logsf(x, b, loc=0, scale=1):
    x, b, loc, scale = promote("pareto.logsf", x, b, loc, scale)
    val = -(b * fnp.log((x - loc) / scale))
    return fnp.where(x < loc + scale, const(x, 0), val)


def sf(x, b, loc=0, scale=1):
    return fnp.exp(logsf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
    q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
    val = loc + scale * fnp.power(1 - q, -(1 / b))
    return fnp.where(fnp.isnan(q) | (q < 0) | (q > 1), np.nan, val)
