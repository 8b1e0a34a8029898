"""The von Mises distribution (jax.scipy.stats.vonmises) of ``(x, kappa)``; NaN unless kappa > 0."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx import lax
from fx.scipy.stats._common import promote


def logpdf(x, kappa):
    x, kappa = promote("vonmises.logpdf", x, kappa)
    val = kappa * (fnp.cos(x) - 1) - fnp.log(2 * np.pi * lax.bessel_i0e(kappa))
    return fnp.where(kappa > 0, val, np.nan)


def pdf(x, kappa):
    return fnp.exp(logpdf(x, kappa))
