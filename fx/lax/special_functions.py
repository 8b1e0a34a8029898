"""The special-function primitives jax.lax has beyond ``fx.lax.special``: the regularized
incomplete gamma functions ``igamma``/``igammac`` and ``igamma_grad_a`` (dP/da), the
regularized incomplete beta function ``betainc`` (jax's ``regularized_incomplete_beta_p``),
Hurwitz's ``zeta`` and the exponentially scaled Bessel functions ``bessel_i0e``/``bessel_i1e``.

Each is elementwise over operands of one shape and one floating dtype (Python scalars take the
array operands' dtype), computed in float64 by ``special_functions_numerics`` and rounded to
that dtype. Derivatives are jax's: ``igamma``/``igammac`` in both arguments (``a`` through
``igamma_grad_a``), ``betainc`` in ``x`` only, ``zeta`` in ``q`` only (jax's primitive has
none; ``fx.scipy.special.zeta`` differentiates both arguments), ``igamma_grad_a`` in neither.
Each is an elementwise record (``fx.lax.elementwise_record``); under jit they fuse into generated
kernels (``lowering/render/prelude_special.h`` ports these algorithms to one element).
"""

from __future__ import annotations

import numpy as np

from fx.core import get_aval
from fx.lax import special_functions_numerics as numerics
from fx.lax.elementwise import (
    FLOAT,
    Kernel,
    _binary,
    _coerce,
    _const,
    _unary,
    _via_f64,
    add,
    call,
    div,
    elementwise,
    exp,
    full_like,
    gt,
    log,
    log1p,
    mul,
    neg,
    select,
    sign,
    sub,
)
from fx.lax.elementwise import abs as abs_
from fx.lax.special import lgamma


def _via_f64_nary(fn):
    def impl(*args):
        return np.asarray(fn(*(np.asarray(a, np.float64) for a in args))).astype(args[0].dtype)

    return impl


# --- derivatives (jax's) ------------------------------------------------------------------------


def _igamma_dx(t, ans, a, x):
    # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a)
    return mul(t, exp(sub(sub(mul(sub(a, _const(a, 1)), log(x)), x), lgamma(a))))


def _no_derivative(what: str):
    def rule(t, ans, *args):
        raise ValueError(f"{what} is not supported (as in jax)")

    return rule


def _betainc_dx(t, ans, a, b, x):
    one = _const(x, 1)
    log_beta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    return mul(t, exp(sub(add(mul(sub(b, one), log1p(neg(x))), mul(sub(a, one), log(x))),
                          log_beta)))


_betainc_ab = _no_derivative("Betainc gradient with respect to a and b")


def _bessel_i1e_dx(t, ans, x):
    # i1e' = i0e - i1e (sign(x) + 1/x), whose limit at 0 is 1/2.
    eps = float(np.finfo(get_aval(x).dtype).eps)
    not_tiny = gt(abs_(x), full_like(x, eps))
    safe_x = select(not_tiny, x, full_like(x, eps))
    dy = sub(bessel_i0e(safe_x), mul(ans, add(sign(safe_x), div(_const(x, 1), safe_x))))
    return mul(t, select(not_tiny, dy, full_like(x, 0.5)))


# --- the records ----------------------------------------------------------------------------------


def _prelude(name: str, nargs: int) -> Kernel:
    """Computed in double by ``fx_<name>`` of lowering/render/prelude_special.h."""
    return call(f"fx_{name}", nargs, key="f64") | Kernel(via_f64=True)


igamma_p = elementwise("igamma", _via_f64_nary(numerics.igamma), FLOAT, 2,
                       jvp=(lambda t, ans, a, x: mul(t, igamma_grad_a(a, x)), _igamma_dx),
                       kernel=_prelude("igamma", 2))
igammac_p = elementwise("igammac", _via_f64_nary(numerics.igammac), FLOAT, 2,
                        jvp=(lambda t, ans, a, x: neg(mul(t, igamma_grad_a(a, x))),
                             lambda t, ans, a, x: neg(_igamma_dx(t, ans, a, x))),
                        kernel=_prelude("igammac", 2))
igamma_grad_a_p = elementwise(
    "igamma_grad_a", _via_f64_nary(numerics.igamma_grad_a), FLOAT, 2,
    jvp=(_no_derivative("differentiating igamma_grad_a"),
         _no_derivative("differentiating igamma_grad_a")),
    kernel=_prelude("igamma_grad_a", 2))
regularized_incomplete_beta_p = elementwise(
    "regularized_incomplete_beta", _via_f64_nary(numerics.betainc), FLOAT, 3,
    jvp=(_betainc_ab, _betainc_ab, _betainc_dx), kernel=_prelude("betainc", 3),
    lax_name="betainc")
# d/dq zeta(x, q) = -x zeta(x + 1, q); jax's primitive has no rule for x.
zeta_p = elementwise(
    "zeta", _via_f64_nary(numerics.zeta), FLOAT, 2, kernel=_prelude("zeta", 2),
    jvp=(_no_derivative("the derivative of lax.zeta with respect to x (use "
                        "fx.scipy.special.zeta)"),
         lambda t, ans, x, q: neg(mul(t, mul(x, zeta(add(x, _const(x, 1)), q))))))
bessel_i0e_p = elementwise("bessel_i0e", _via_f64(numerics.bessel_i0e),
                           jvp=lambda t, ans, x: mul(t, sub(bessel_i1e(x), mul(sign(x), ans))),
                           kernel=_prelude("bessel_i0e", 1))
bessel_i1e_p = elementwise("bessel_i1e", _via_f64(numerics.bessel_i1e), jvp=_bessel_i1e_dx,
                           kernel=_prelude("bessel_i1e", 1))

igamma, igammac, igamma_grad_a, zeta = map(
    _binary, (igamma_p, igammac_p, igamma_grad_a_p, zeta_p)
)
bessel_i0e, bessel_i1e = map(_unary, (bessel_i0e_p, bessel_i1e_p))


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) (elementwise, equal dtypes)."""
    return regularized_incomplete_beta_p.bind(*_coerce(a, b, x))


igamma.__doc__ = "The regularized lower incomplete gamma function P(a, x)."
igammac.__doc__ = "The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."
igamma_grad_a.__doc__ = "The derivative of igamma(a, x) with respect to a."
zeta.__doc__ = "Hurwitz's zeta function: sum over k >= 0 of (k + q) ** -x."
bessel_i0e.__doc__ = "exp(-|x|) I0(x), the exponentially scaled modified Bessel function."
bessel_i1e.__doc__ = "exp(-|x|) I1(x), the exponentially scaled modified Bessel function."
