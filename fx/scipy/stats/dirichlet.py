"""The Dirichlet distribution (jax.scipy.stats.dirichlet): logpdf/pdf of ``(x, alpha)``, the
categories on x's first axis; x may omit the last category (then 1 - sum(x)). -inf off the
simplex (a non-positive entry or a sum more than 1e-6 from 1)."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx import lax
from fx.scipy.special import gammaln, xlogy
from fx.scipy.stats._common import promote_dtypes_inexact


def _is_simplex(x):
    return fnp.all(x > 0, axis=0) & (abs(fnp.sum(x, axis=0) - 1) < 1e-6)


def logpdf(x, alpha):
    x, alpha = promote_dtypes_inexact("dirichlet.logpdf", x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
    if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError(
            "`x` must have either the same number of entries as `alpha` or one entry fewer; "
            f"got x.shape={x.shape}, alpha.shape={alpha.shape}")
    if x.shape[0] != alpha.shape[0]:
        x = fnp.concatenate([x, 1 - x.sum(0, keepdims=True)], axis=0)
    normalize_term = fnp.sum(gammaln(alpha)) - gammaln(fnp.sum(alpha))
    if x.ndim > 1:
        alpha = lax.broadcast_in_dim(alpha, alpha.shape + (1,) * (x.ndim - 1), (0,))
    log_probs = fnp.sum(xlogy(alpha - 1, x), axis=0) - normalize_term
    return fnp.where(_is_simplex(x), log_probs, -np.inf)


def pdf(x, alpha):
    return fnp.exp(logpdf(x, alpha))
