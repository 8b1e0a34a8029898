"""The right-skewed Gumbel distribution (jax.scipy.stats.gumbel_r) of ``(x, loc=0, scale=1)``;
NaN unless scale > 0."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx.nn import log1mexp
from fx.scipy.special import xlogy
from fx.scipy.stats._common import promote


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("gumbel_r.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return fnp.where(scale > 0, xlogy(-1, scale) - (z + fnp.exp(-z)), np.nan)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    x, loc, scale = promote("gumbel_r.logcdf", x, loc, scale)
    z = (x - loc) / scale
    return fnp.where(scale > 0, -fnp.exp(-z), np.nan)


def cdf(x, loc=0, scale=1):
    return fnp.exp(logcdf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
    quantile = loc - scale * fnp.log(xlogy(-1, p))
    return fnp.where((p > 0) & (p < 1), quantile, np.nan)


def sf(x, loc=0, scale=1):
    x, loc, scale = promote("gumbel_r.sf", x, loc, scale)
    neg_z = (loc - x) / scale
    return fnp.where(scale > 0, 1 - fnp.exp(-fnp.exp(neg_z)), np.nan)


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote("gumbel_r.logsf", x, loc, scale)
    neg_z = (loc - x) / scale
    return fnp.where(scale > 0, log1mexp(fnp.exp(neg_z)), np.nan)
