"""Special functions: ``erf``, ``erfc``, ``erf_inv``, ``lgamma``, ``digamma`` and
``polygamma``, declared like the other unary elementwise primitives (values computed in float64
by ``special_numerics`` and rounded to the operand's dtype), with their derivatives.
"""

from __future__ import annotations

import numpy as np

from fx.core import Primitive
from fx.interpreters import batching, jvp
from fx.lax import special_numerics as special
from fx.lax.elementwise import FLOAT, _check_kind, _const, _unary, _via_f64, exp, mul, neg, unop

erf_p = unop("erf", _via_f64(special.erf))
erfc_p = unop("erfc", _via_f64(special.erfc))
erf_inv_p = unop("erf_inv", _via_f64(special.erf_inv))
lgamma_p = unop("lgamma", _via_f64(special.lgamma))
digamma_p = unop("digamma", _via_f64(special.digamma))

polygamma_p = Primitive("polygamma")  # params: m (the derivative order of digamma)


@polygamma_p.def_abstract_eval
def _polygamma_abstract_eval(x, *, m):
    _check_kind("polygamma", FLOAT, x)
    if int(m) < 0:
        raise ValueError(f"polygamma: the order m must be a non-negative integer, got {m}")
    return x


polygamma_p.def_impl(lambda x, *, m: special.polygamma(m, x).astype(x.dtype))
batching.vectorized_batcher(polygamma_p)

# --- derivatives ------------------------------------------------------------------------------

jvp.defjvp(
    erf_p, lambda t, ans, x: mul(t, mul(_const(x, 2 / np.sqrt(np.pi)), exp(neg(mul(x, x)))))
)
jvp.defjvp(
    erfc_p, lambda t, ans, x: mul(t, mul(_const(x, -2 / np.sqrt(np.pi)), exp(neg(mul(x, x)))))
)
jvp.defjvp(
    erf_inv_p, lambda t, ans, x: mul(t, mul(_const(x, np.sqrt(np.pi) / 2), exp(mul(ans, ans))))
)
jvp.defjvp(lgamma_p, lambda t, ans, x: mul(t, digamma(x)))
jvp.defjvp(digamma_p, lambda t, ans, x: mul(t, polygamma(x, 1)))
jvp.defjvp(polygamma_p, lambda t, ans, x, *, m: mul(t, polygamma(x, m + 1)))


erf, erfc, erf_inv, lgamma, digamma = map(_unary, (erf_p, erfc_p, erf_inv_p, lgamma_p,
                                                   digamma_p))


def polygamma(x, m: int):
    """The ``m``-th derivative of digamma (``m`` a static integer; 0 is digamma itself)."""
    return polygamma_p.bind(x, m=int(m))
