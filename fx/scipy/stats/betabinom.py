"""The beta-binomial distribution (jax.scipy.stats.betabinom) of ``(k, n, a, b, loc=0)``;
k is floored as scipy; NaN for n < 0 or non-positive a, b."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx.scipy.special import betaln
from fx.scipy.stats._common import promote


def logpmf(k, n, a, b, loc=0):
    k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
    y = fnp.floor(k) - loc
    combiln = -(fnp.log1p(n) + betaln(n - y + 1, y + 1))
    beta_lns = betaln(y + a, n - y + b) - betaln(a, b)
    log_probs = combiln + beta_lns
    log_probs = fnp.where((y == 0) & (n == 0), 0.0, log_probs)
    y_cond = (y < -loc) | (y > n) | (y + a <= 0)
    log_probs = fnp.where(y_cond, -np.inf, log_probs)
    return fnp.where((n < 0) | (a <= 0) | (b <= 0), np.nan, log_probs)


def pmf(k, n, a, b, loc=0):
    return fnp.exp(logpmf(k, n, a, b, loc))
