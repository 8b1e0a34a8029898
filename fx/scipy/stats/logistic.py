"""The logistic distribution (jax.scipy.stats.logistic) of ``(x, loc=0, scale=1)``."""

from __future__ import annotations

import fx.numpy as fnp
from fx.scipy.special import expit, logit
from fx.scipy.stats._common import promote


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("logistic.logpdf", x, loc, scale)
    half_x = (x - loc) / scale / 2
    return -2 * fnp.logaddexp(half_x, -half_x) - fnp.log(scale)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def ppf(x, loc=0, scale=1):
    x, loc, scale = promote("logistic.ppf", x, loc, scale)
    return logit(x) * scale + loc


def sf(x, loc=0, scale=1):
    x, loc, scale = promote("logistic.sf", x, loc, scale)
    return expit(-((x - loc) / scale))


def isf(x, loc=0, scale=1):
    x, loc, scale = promote("logistic.isf", x, loc, scale)
    return -logit(x) * scale + loc


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote("logistic.cdf", x, loc, scale)
    return expit((x - loc) / scale)
