"""The normal distribution (jax.scipy.stats.norm): log/pdf, log/cdf, log/sf, ppf and isf of
``(x, loc=0, scale=1)``, promoted to one inexact dtype as jax."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx.scipy import special
from fx.scipy.stats._common import const, promote


def logpdf(x, loc=0, scale=1):
    """log N(x; loc, scale**2).

        >>> fx.scipy.stats.norm.logpdf(0.0)
        Array(-0.9189386, dtype=float32)
    """
    x, loc, scale = promote("norm.logpdf", x, loc, scale)
    scale_sqrd = scale * scale
    log_normalizer = fnp.log(const(x, 2 * np.pi) * scale_sqrd)
    quadratic = (x - loc) * (x - loc) / scale_sqrd
    return (log_normalizer + quadratic) / const(x, -2)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote("norm.cdf", x, loc, scale)
    return special.ndtr((x - loc) / scale)


def logcdf(x, loc=0, scale=1):
    x, loc, scale = promote("norm.logcdf", x, loc, scale)
    return special.log_ndtr((x - loc) / scale)


def ppf(q, loc=0, scale=1):
    """The quantile: loc + scale * ndtri(q), in the default float dtype as jax."""
    return fnp.asarray(special.ndtri(q) * scale + loc, float)


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote("norm.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def sf(x, loc=0, scale=1):
    x, loc, scale = promote("norm.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def isf(q, loc=0, scale=1):
    return ppf(1 - fnp.asarray(q), loc, scale)
