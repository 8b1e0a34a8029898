"""Special functions: ``erf``, ``erfc``, ``erf_inv``, ``lgamma``, ``digamma`` and
``polygamma``, declared like the other unary elementwise primitives (values computed in float64
by ``special_numerics`` and rounded to the operand's dtype), with their derivatives.
"""

from __future__ import annotations

import numpy as np

from fx.core import Primitive
from fx.interpreters import batching, jvp
from fx.lax import special_numerics as special
from fx.lax.elementwise import (
    FLOAT,
    Kernel,
    _check_kind,
    _const,
    _unary,
    _via_f64,
    call,
    elementwise,
    exp,
    libm,
    mul,
    neg,
)

erf_p = elementwise(
    "erf", _via_f64(special.erf), kernel=libm("erf"), onnx="Erf",
    jvp=lambda t, ans, x: mul(t, mul(_const(x, 2 / np.sqrt(np.pi)), exp(neg(mul(x, x))))))
erfc_p = elementwise(
    "erfc", _via_f64(special.erfc), kernel=libm("erfc"),
    jvp=lambda t, ans, x: mul(t, mul(_const(x, -2 / np.sqrt(np.pi)), exp(neg(mul(x, x))))))
# erf_inv and digamma compute in double whatever the operand type, as their impls do (the
# prelude's fx_erf_inv and fx_digamma).
erf_inv_p = elementwise(
    "erf_inv", _via_f64(special.erf_inv), kernel=call("fx_erf_inv") | Kernel(via_f64=True),
    jvp=lambda t, ans, x: mul(t, mul(_const(x, np.sqrt(np.pi) / 2), exp(mul(ans, ans)))))
lgamma_p = elementwise("lgamma", _via_f64(special.lgamma), kernel=libm("lgamma"),
                       jvp=lambda t, ans, x: mul(t, digamma(x)))
digamma_p = elementwise("digamma", _via_f64(special.digamma),
                        kernel=call("fx_digamma") | Kernel(via_f64=True),
                        jvp=lambda t, ans, x: mul(t, polygamma(x, 1)))

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

jvp.defjvp(polygamma_p, lambda t, ans, x, *, m: mul(t, polygamma(x, m + 1)))


erf, erfc, erf_inv, lgamma, digamma = map(_unary, (erf_p, erfc_p, erf_inv_p, lgamma_p,
                                                   digamma_p))


def polygamma(x, m: int):
    """The ``m``-th derivative of digamma (``m`` a static integer; 0 is digamma itself)."""
    return polygamma_p.bind(x, m=int(m))
