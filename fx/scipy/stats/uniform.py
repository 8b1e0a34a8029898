"""The uniform distribution on [loc, loc + scale] (jax.scipy.stats.uniform)."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx.scipy.stats._common import const, promote


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("uniform.logpdf", x, loc, scale)
    log_probs = -fnp.log(scale)
    return fnp.where((x > loc + scale) | (x < loc), -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote("uniform.cdf", x, loc, scale)
    zero, one = const(x, 0), const(x, 1)
    conds = [x < loc, x > loc + scale, (x >= loc) & (x <= loc + scale)]
    return fnp.select(conds, [zero, one, (x - loc) / scale])


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote("uniform.ppf", q, loc, scale)
    return fnp.where(fnp.isnan(q) | (q < 0) | (q > 1), np.nan, loc + scale * q)
