"""The chi-squared distribution (jax.scipy.stats.chi2) of ``(x, df, loc=0, scale=1)``."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx import lax
from fx.scipy.special import gammainc, gammaincc
from fx.scipy.stats._common import const, promote


def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("chi2.logpdf", x, df, loc, scale)
    y = (x - loc) / scale
    df_on_two = df / 2
    kernel = (df_on_two - 1) * fnp.log(y) - y / 2
    nrml_cnst = -(lax.lgamma(df_on_two) + np.log(2.0) * df / 2)
    log_probs = nrml_cnst - fnp.log(scale) + kernel
    return fnp.where(x < loc, -np.inf, log_probs)


def pdf(x, df, loc=0, scale=1):
    return fnp.exp(logpdf(x, df, loc, scale))


def _half_y(x, df, loc, scale):
    return lax.clamp(const(x, 0), (x - loc) / (scale * 2), const(x, np.inf))


def cdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("chi2.cdf", x, df, loc, scale)
    return gammainc(df / 2, _half_y(x, df, loc, scale))


def logcdf(x, df, loc=0, scale=1):
    return fnp.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("chi2.sf", x, df, loc, scale)
    return gammaincc(df / 2, _half_y(x, df, loc, scale))


def logsf(x, df, loc=0, scale=1):
    return fnp.log(sf(x, df, loc, scale))
