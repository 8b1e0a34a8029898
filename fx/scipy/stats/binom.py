"""The binomial distribution (jax.scipy.stats.binom): logpmf/pmf of ``(k, n, p, loc=0)``."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx.scipy.special import gammaln, xlog1py, xlogy
from fx.scipy.stats._common import promote


def logpmf(k, n, p, loc=0):
    k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
    y = k - loc
    comb_term = gammaln(n + 1) - (gammaln(y + 1) + gammaln(n - y + 1))
    log_linear_term = xlogy(y, p) + xlog1py(n - y, -p)
    log_probs = comb_term + log_linear_term
    y_n_cond = ((y == 0) & (n == 0)) | (log_linear_term == 0)
    log_probs = fnp.where(y_n_cond, 0.0, log_probs)
    return fnp.where((k >= loc) & (k < loc + n + 1), log_probs, -np.inf)


def pmf(k, n, p, loc=0):
    return fnp.exp(logpmf(k, n, p, loc))
