"""The multinomial distribution (jax.scipy.stats.multinomial): logpmf/pmf of counts ``x``
(integers, last axis the categories), ``n`` trials and probabilities ``p``."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx import dtypes
from fx.numpy._promote import promote_dtypes
from fx.scipy.special import gammaln, xlogy
from fx.scipy.stats._common import promote


def logpmf(x, n, p):
    (p,) = promote("multinomial.logpmf", p)
    x, n = promote_dtypes(x, n, name="fx.scipy.stats.multinomial.logpmf")
    if not dtypes.is_int(x.dtype):
        raise ValueError(
            f"x and n must be of integer type; got x.dtype={x.dtype}, n.dtype={n.dtype}")
    x = x.astype(p.dtype)
    n = n.astype(p.dtype)
    logprobs = gammaln(n + 1) + fnp.sum(xlogy(x, p) - gammaln(x + 1), axis=-1)
    return fnp.where(fnp.equal(fnp.sum(x), n), logprobs, -np.inf)


def pmf(x, n, p):
    return fnp.exp(logpmf(x, n, p))
