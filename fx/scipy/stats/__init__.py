"""``fx.scipy.stats``: the distributions and statistics of ``jax.scipy.stats`` over fx.numpy and
fx.scipy.special, with jax's formulas, so values, dtypes (integer inputs become the default
float), edge cases (-inf log-densities off the support, NaN for invalid parameters) and
derivatives follow jax's.

    >>> import fx.numpy as fnp, fx.scipy.stats as fst
    >>> fst.norm.cdf(fnp.array([0.0, 1.0]))
    Array([0.5      , 0.8413447], dtype=float32)

One module per distribution, as jax (``fst.gamma.logpdf(x, a, loc, scale)``); ``gaussian_kde``,
``mode``, ``rankdata`` and ``sem`` at the top level.
"""

from fx.scipy.stats import (
    bernoulli,
    beta,
    betabinom,
    binom,
    cauchy,
    chi2,
    dirichlet,
    expon,
    gamma,
    gennorm,
    geom,
    gumbel_l,
    gumbel_r,
    laplace,
    logistic,
    multinomial,
    multivariate_normal,
    nbinom,
    norm,
    pareto,
    poisson,
    t,
    truncnorm,
    uniform,
    vonmises,
    wrapcauchy,
)
from fx.scipy.stats.descriptive import ModeResult, mode, rankdata, sem
from fx.scipy.stats.kde import gaussian_kde

__all__ = [
    "ModeResult", "bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet",
    "expon", "gamma", "gaussian_kde", "gennorm", "geom", "gumbel_l", "gumbel_r", "laplace",
    "logistic", "mode", "multinomial", "multivariate_normal", "nbinom", "norm", "pareto",
    "poisson", "rankdata", "sem", "t", "truncnorm", "uniform", "vonmises", "wrapcauchy",
]
