"""The truncated normal distribution (jax.scipy.stats.truncnorm) of ``(x, a, b, loc=0,
scale=1)``, a and b in standard units; NaN where a >= b. The masses are logs of normal
tail differences, computed in the tail that keeps them accurate (jax's and scipy's scheme)."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx.scipy.special import log_ndtr, logsumexp, ndtr
from fx.scipy.stats import norm
from fx.scipy.stats._common import promote


def _log_diff(x, y):
    """log(exp(x) - exp(y))."""
    return logsumexp(fnp.stack([x, y]), b=fnp.stack([fnp.ones_like(x), -fnp.ones_like(y)]),
                     axis=0)


def _log_gauss_mass(a, b):
    """log(Phi(b) - Phi(a))."""
    a, b = fnp.broadcast_arrays(fnp.asarray(a), fnp.asarray(b))
    case_left = b <= 0
    case_right = a > 0
    case_central = ~(case_left | case_right)
    a_tail = fnp.where(case_right, -b, a)
    b_tail = fnp.where(case_right, -a, b)
    mass_tail = _log_diff(log_ndtr(b_tail), log_ndtr(a_tail))
    mass_central = fnp.log1p(-ndtr(a) - ndtr(-b))
    return fnp.where(case_central, mass_central, mass_tail)


def logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("truncnorm.logpdf", x, a, b, loc, scale,
                                  equal_rank_error=ValueError)  # as jax's
    val = norm.logpdf(x, loc, scale) - _log_gauss_mass(a, b)
    x_scaled = (x - loc) / scale
    val = fnp.where((x_scaled < a) | (x_scaled > b), -np.inf, val)
    return fnp.where(a >= b, np.nan, val)


def pdf(x, a, b, loc=0, scale=1):
    return fnp.exp(logpdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("truncnorm.logsf", x, a, b, loc, scale,
                                  equal_rank_error=ValueError)  # as jax's
    return logcdf(-x, -b, -a, -loc, scale)


def sf(x, a, b, loc=0, scale=1):
    return fnp.exp(logsf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("truncnorm.logcdf", x, a, b, loc, scale,
                                  equal_rank_error=ValueError)  # as jax's
    x, a, b = fnp.broadcast_arrays(x, a, b)
    x = (x - loc) / scale
    lgm_ab = _log_gauss_mass(a, b)
    log_cdf = _log_gauss_mass(a, x) - lgm_ab
    log_sf = _log_gauss_mass(x, b) - lgm_ab
    log_cdf = fnp.select([x >= b, x <= a, log_cdf > -0.1, x > a],
                         [0, -np.inf, fnp.log1p(-fnp.exp(log_sf)), log_cdf])
    return fnp.where(a >= b, np.nan, log_cdf)


def cdf(x, a, b, loc=0, scale=1):
    return fnp.exp(logcdf(x, a, b, loc, scale))
