"""The Bernoulli distribution (jax.scipy.stats.bernoulli): logpmf/pmf of ``(k, p, loc=0)``,
cdf and ppf of ``(k, p)``."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx.scipy.special import xlog1py, xlogy
from fx.scipy.stats._common import const, promote


def logpmf(k, p, loc=0):
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)
    x = k - loc
    log_probs = xlogy(x, p) + xlog1py(1 - x, -p)
    return fnp.where((x < 0) | (x > 1), -np.inf, log_probs)


def pmf(k, p, loc=0):
    return fnp.exp(logpmf(k, p, loc))


def cdf(k, p):
    k, p = promote("bernoulli.cdf", k, p)
    zero, one = const(k, 0), const(k, 1)
    conds = [fnp.isnan(k) | fnp.isnan(p) | (p < zero) | (p > one), k < zero,
             (k >= zero) & (k < one), k >= one]
    return fnp.select(conds, [np.nan, zero, one - p, one])


def ppf(q, p):
    q, p = promote("bernoulli.ppf", q, p)
    bad = fnp.isnan(q) | fnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    return fnp.where(bad, np.nan, fnp.where(q <= 1 - p, const(q, 0), const(q, 1)))
