"""The Poisson distribution (jax.scipy.stats.poisson): logpmf/pmf/cdf of ``(k, mu, loc=0)``
and entropy of ``(mu, loc=0)``; non-integer k has zero mass."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx.scipy.special import entr, gammaincc, gammaln, xlogy
from fx.scipy.stats._common import const, promote, promote_dtypes_inexact


def logpmf(k, mu, loc=0):
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    x = k - loc
    log_probs = xlogy(x, mu) - gammaln(x + 1) - mu
    return fnp.where((x < 0) | (fnp.round(k) != k), -np.inf, log_probs)


def pmf(k, mu, loc=0):
    return fnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    k, mu, loc = promote("poisson.cdf", k, mu, loc)
    x = k - loc
    return fnp.where(x < 0, const(k, 0), gammaincc(fnp.floor(1 + x), mu))


def entropy(mu, loc=0):
    """-sum pmf log pmf: summed over k < 35 (mu < 10) or k < 250 (mu < 100) as jax, the
    asymptotic series above; 0 at mu == 0. Broadcast to mu and loc's shape (loc does not
    change the entropy)."""
    mu, loc = promote_dtypes_inexact("poisson.entropy", mu, loc)
    shape = fnp.broadcast_shapes(mu.shape, loc.shape)
    flat = fnp.ravel(mu)
    result = fnp.where(
        flat == 0, fnp.zeros_like(flat),
        fnp.where(flat < 10, _entropy_summed(flat, 35, lambda m: m + 20),
                  fnp.where(flat < 100,
                            _entropy_summed(flat, 250, lambda m: m + 10 * fnp.sqrt(m) + 20),
                            _entropy_large_mu(flat))))
    return fnp.broadcast_to(fnp.reshape(result, mu.shape), shape)


def _entropy_summed(mu, max_k, upper):
    k = fnp.arange(max_k, dtype=mu.dtype)[:, None]
    probs = pmf(k, mu, 0)
    mask = k < fnp.ceil(upper(mu)).astype(k.dtype)[None, :]
    return fnp.sum(entr(fnp.where(mask, probs, 0.0)), axis=0)


def _entropy_large_mu(mu):
    return 0.5 * fnp.log(2 * np.pi * np.e * mu) - 1.0 / (12 * mu)
