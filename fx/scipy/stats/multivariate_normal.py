"""The multivariate normal distribution (jax.scipy.stats.multivariate_normal): logpdf/pdf of
``(x, mean, cov)``. A scalar mean is the univariate case; a scalar cov is isotropic; a matrix
cov is factored by Cholesky (batched over leading axes)."""

from __future__ import annotations

from functools import partial

import numpy as np

import fx.numpy as fnp
from fx import lax
from fx.scipy.stats._common import promote_dtypes_inexact


def logpdf(x, mean, cov, allow_singular=None):
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = promote_dtypes_inexact("multivariate_normal.logpdf", x, mean, cov)
    if not mean.shape:
        return (-1 / 2 * fnp.square(x - mean) / cov
                - 1 / 2 * (np.log(2 * np.pi) + fnp.log(cov)))
    n = mean.shape[-1]
    if not np.shape(cov):
        y = x - mean
        return (-1 / 2 * fnp.einsum("...i,...i->...", y, y) / cov
                - n / 2 * (np.log(2 * np.pi) + fnp.log(cov)))
    # checked before x - mean, as jax: a wrong cov is its ValueError whatever x is
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError("multivariate_normal.logpdf got incompatible shapes")
    y = x - mean
    L = lax.linalg.cholesky(cov)
    solve = partial(lax.linalg.triangular_solve, lower=True, transpose_a=True)
    y = fnp.vectorize(solve, signature="(n,n),(n)->(n)")(L, y)
    return (-1 / 2 * fnp.einsum("...i,...i->...", y, y) - n / 2 * np.log(2 * np.pi)
            - fnp.log(fnp.diagonal(L, axis1=-1, axis2=-2)).sum(-1))


def pdf(x, mean, cov):
    return fnp.exp(logpdf(x, mean, cov))
