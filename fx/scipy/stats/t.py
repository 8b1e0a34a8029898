"""Student's t distribution (jax.scipy.stats.t) of ``(x, df, loc=0, scale=1)``."""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx import lax
from fx.scipy.stats._common import promote


def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
    scaled_x = (x - loc) / scale
    df_over_two = df / 2
    df_plus_one_over_two = df_over_two + 0.5
    normalize_term_tmp = fnp.log(scale * scale * np.pi * df) / 2
    normalize_term = lax.lgamma(df_over_two) + normalize_term_tmp - lax.lgamma(df_plus_one_over_two)
    quadratic = scaled_x * scaled_x / df
    return -(normalize_term + df_plus_one_over_two * fnp.log1p(quadratic))


def pdf(x, df, loc=0, scale=1):
    return fnp.exp(logpdf(x, df, loc, scale))
