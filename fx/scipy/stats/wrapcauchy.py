"""The wrapped Cauchy distribution (jax.scipy.stats.wrapcauchy) of ``(x, c)`` on [0, 2 pi];
NaN unless 0 < c < 1."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx.scipy.stats._common import promote


def logpdf(x, c):
    x, c = promote("wrapcauchy.logpdf", x, c)
    val = fnp.log(1 - c * c) - np.log(2 * np.pi) - fnp.log(1 + c * c - 2 * c * fnp.cos(x))
    inside = fnp.where((x >= 0) & (x <= np.pi * 2), val, -np.inf)
    return fnp.where((c > 0) & (c < 1), inside, np.nan)


def pdf(x, c):
    return fnp.exp(logpdf(x, c))
