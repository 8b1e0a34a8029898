"""``fx.scipy.special``: the functions of ``jax.scipy.special``, with jax's values, dtypes
(integer inputs promoted to the default float) and derivatives.

    >>> import fx.numpy as fnp, fx.scipy.special as fss
    >>> fss.gammaln(fnp.array([1.0, 10.0]))
    Array([ 0.      , 12.801827], dtype=float32)

Each is a composite of primitives (``fx.lax``'s special functions, or the few declared for it in
``fx.lax.scipy_special``), so ``grad``, ``vmap`` and ``jit`` apply; what jax lacks derivatives for
(betainc in a and b, expn in n, polygamma in n) raises or is treated as constant as in jax.
"""

from fx.scipy.special.bessel import bessel_jn
from fx.scipy.special.error_functions import (
    dawsn,
    erf,
    erfc,
    erfcx,
    erfinv,
    fresnel,
    log_ndtr,
    ndtr,
    ndtri,
    owens_t,
    wofz,
)
from fx.scipy.special.gamma_functions import (
    bernoulli,
    beta,
    betainc,
    betaln,
    comb,
    digamma,
    factorial,
    gamma,
    gammainc,
    gammaincc,
    gammaln,
    gammasgn,
    loggamma,
    multigammaln,
    poch,
    polygamma,
    zeta,
)
from fx.scipy.special.hypergeometric import hyp1f1, hyp2f1
from fx.scipy.special.information import (
    boxcox,
    boxcox1p,
    entr,
    expit,
    kl_div,
    log_softmax,
    logit,
    logsumexp,
    rel_entr,
    softmax,
    xlog1py,
    xlogy,
)
from fx.scipy.special.integrals import (
    exp1,
    expi,
    expn,
    i0,
    i0e,
    i1,
    i1e,
    sici,
    spence,
)
from fx.scipy.special.spherical_harmonics import sph_harm_y

__all__ = [
    "bernoulli", "bessel_jn", "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb", "dawsn",
    "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp1", "expi", "expit", "expn",
    "factorial", "fresnel", "gamma", "gammainc", "gammaincc", "gammaln", "gammasgn", "hyp1f1",
    "hyp2f1", "i0", "i0e",
    "i1", "i1e", "kl_div", "log_ndtr", "log_softmax", "loggamma", "logit", "logsumexp",
    "multigammaln", "ndtr", "ndtri", "owens_t", "poch", "polygamma", "rel_entr", "sici", "softmax",
    "spence", "sph_harm_y", "wofz", "xlog1py", "xlogy", "zeta",
]
