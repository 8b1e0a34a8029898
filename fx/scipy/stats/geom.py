"""The geometric distribution on 1, 2, ... (jax.scipy.stats.geom) of ``(k, p, loc=0)``."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx.scipy.special import xlog1py
from fx.scipy.stats._common import promote


def logpmf(k, p, loc=0):
    k, p, loc = promote("geom.logpmf", k, p, loc)
    x = k - loc
    log_probs = xlog1py(x - 1, -p) + fnp.log(p)
    return fnp.where(x <= 0, -np.inf, log_probs)


def pmf(k, p, loc=0):
    return fnp.exp(logpmf(k, p, loc))
