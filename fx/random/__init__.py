"""``fx.random``: pseudo-random numbers from explicit keys, bit-identical to ``jax.random``.

Keys are raw ``uint32[2]`` arrays (``fx.random.key(s)`` equals
``jax.random.key_data(jax.random.key(s))``); every function is a pure function of its key, so
the same key gives the same numbers, and ``split``/``fold_in`` derive independent keys. The
generator is jax's default, threefry2x32 with ``jax_threefry_partitionable=True``.
Everything is built from ``fx.lax`` operations: it traces under ``make_jaxpr``, batches under
``vmap`` (map over a ``split`` key array) and differentiates where that makes sense.

Example::

    >>> import fx, fx.random
    >>> key = fx.random.key(0)
    >>> key, sub = fx.random.split(key)
    >>> x = fx.random.normal(sub, (3,))
    >>> xs = fx.vmap(lambda k: fx.random.uniform(k, (2,)))(fx.random.split(key, 4))
"""

from fx.random.continuous import (
    cauchy,
    double_sided_maxwell,
    exponential,
    laplace,
    logistic,
    lognormal,
    maxwell,
    pareto,
    rayleigh,
    triangular,
    wald,
    weibull_min,
)
from fx.random.discrete import binomial, geometric, multinomial, poisson, rademacher
from fx.random.distributions import (
    bernoulli,
    categorical,
    gumbel,
    normal,
    randint,
    truncated_normal,
    uniform,
)
from fx.random.gamma import (
    ball,
    beta,
    chisquare,
    dirichlet,
    f,
    gamma,
    generalized_normal,
    loggamma,
    t,
)
from fx.random.keys import clone, key_data, key_impl, wrap_key_data
from fx.random.multivariate import multivariate_normal, orthogonal
from fx.random.permutations import choice, permutation, shuffle
from fx.random.threefry import PRNGKey, bits, fold_in, key, split

__all__ = [
    "PRNGKey",
    "ball",
    "bernoulli",
    "beta",
    "binomial",
    "bits",
    "categorical",
    "cauchy",
    "chisquare",
    "choice",
    "clone",
    "dirichlet",
    "double_sided_maxwell",
    "exponential",
    "f",
    "fold_in",
    "gamma",
    "generalized_normal",
    "geometric",
    "gumbel",
    "key",
    "key_data",
    "key_impl",
    "laplace",
    "loggamma",
    "logistic",
    "lognormal",
    "maxwell",
    "multinomial",
    "multivariate_normal",
    "normal",
    "orthogonal",
    "pareto",
    "permutation",
    "poisson",
    "rademacher",
    "randint",
    "rayleigh",
    "shuffle",
    "split",
    "t",
    "triangular",
    "truncated_normal",
    "uniform",
    "wald",
    "weibull_min",
    "wrap_key_data",
]
