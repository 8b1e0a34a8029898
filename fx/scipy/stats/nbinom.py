"""The negative binomial distribution (jax.scipy.stats.nbinom) of ``(k, n, p, loc=0)``."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx.scipy.special import gammaln, xlogy
from fx.scipy.stats._common import promote


def logpmf(k, n, p, loc=0):
    k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
    y = k - loc
    comb_term = gammaln(y + n) - gammaln(n) - gammaln(y + 1)
    log_linear_term = xlogy(n, p) + xlogy(y, 1 - p)
    return fnp.where(k < loc, -np.inf, comb_term + log_linear_term)


def pmf(k, n, p, loc=0):
    return fnp.exp(logpmf(k, n, p, loc))
