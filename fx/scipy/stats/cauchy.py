"""The Cauchy distribution (jax.scipy.stats.cauchy) of ``(x, loc=0, scale=1)``."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx.scipy.stats._common import promote


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("cauchy.logpdf", x, loc, scale)
    scaled_x = (x - loc) / scale
    return -(fnp.log(np.pi * scale) + fnp.log1p(scaled_x * scaled_x))


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote("cauchy.cdf", x, loc, scale)
    return 0.5 + (1 / np.pi) * fnp.arctan((x - loc) / scale)


def logcdf(x, loc=0, scale=1):
    return fnp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    x, loc, scale = promote("cauchy.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote("cauchy.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def isf(q, loc=0, scale=1):
    q, loc, scale = promote("cauchy.isf", q, loc, scale)
    return fnp.tan(np.pi / 2 - np.pi * q) * scale + loc


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote("cauchy.ppf", q, loc, scale)
    return fnp.tan(np.pi * q - np.pi / 2) * scale + loc
