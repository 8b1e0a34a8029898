"""The primitives behind ``fx.scipy.special``'s erfcx, dawsn, expi, expn, spence, ndtri, sici
and fresnel (jax has none of these in lax: it writes each as a series or rational fit under a
custom jvp). They are declared here, below the compiler, so that ``fx.lowering`` can fuse them
without importing ``fx.scipy``. Values are computed in float64 by ``scipy_special_numerics`` and
rounded to the operand's dtype; each rule is the function's exact derivative, as jax's custom
jvps give. Batching is elementwise; under jit they fuse into generated kernels
(``lowering/render/prelude_special.h`` ports the algorithms to one element).
"""

from __future__ import annotations

import numpy as np

from fx import lax
from fx.interpreters import jvp
from fx.lax import scipy_special_numerics as numerics
from fx.lax.elementwise import FLOAT, _const, _via_f64, naryop, unop

erfcx_p = unop("erfcx", _via_f64(numerics.erfcx))
dawsn_p = unop("dawsn", _via_f64(numerics.dawsn))
expi_p = unop("expi", _via_f64(numerics.expi))
spence_p = unop("spence", _via_f64(numerics.spence))
ndtri_p = unop("ndtri", _via_f64(numerics.ndtri))
si_p = unop("sici_si", _via_f64(lambda x: numerics.sici(x)[0]))
ci_p = unop("sici_ci", _via_f64(lambda x: numerics.sici(x)[1]))
fresnel_s_p = unop("fresnel_s", _via_f64(lambda x: numerics.fresnel(x)[0]))
fresnel_c_p = unop("fresnel_c", _via_f64(lambda x: numerics.fresnel(x)[1]))
expn_p = naryop(
    "expn",
    lambda n, x: numerics.expn(np.asarray(n, np.float64), np.asarray(x, np.float64)).astype(
        x.dtype
    ),
    FLOAT,
)


def _sinc(x):
    """sin(x) / x, 1 at 0."""
    zero = lax.eq(x, lax.full_like(x, 0))
    safe = lax.select(zero, lax.full_like(x, 1), x)
    return lax.select(zero, lax.full_like(x, 1), lax.div(lax.sin(safe), safe))


def _half_pi_x2(x):
    return lax.mul(_const(x, np.pi / 2), lax.mul(x, x))


def _spence_dx(t, ans, x):
    one = lax.eq(x, lax.full_like(x, 1))
    safe = lax.select(one, lax.full_like(x, 2), x)
    d = lax.div(lax.log(safe), lax.sub(_const(x, 1), safe))
    return lax.mul(t, lax.select(one, lax.full_like(x, -1), d))


jvp.defjvp(erfcx_p, lambda t, ans, x: lax.mul(
    t, lax.sub(lax.mul(_const(x, 2), lax.mul(x, ans)), _const(x, 2 / np.sqrt(np.pi)))))
jvp.defjvp(dawsn_p, lambda t, ans, x: lax.mul(
    t, lax.sub(_const(x, 1), lax.mul(_const(x, 2), lax.mul(x, ans)))))
jvp.defjvp(expi_p, lambda t, ans, x: lax.mul(t, lax.div(lax.exp(x), x)))
jvp.defjvp(spence_p, _spence_dx)
jvp.defjvp(ndtri_p, lambda t, ans, x: lax.mul(
    t, lax.mul(_const(x, np.sqrt(2 * np.pi)), lax.exp(lax.mul(_const(x, 0.5),
                                                               lax.mul(ans, ans))))))
jvp.defjvp(si_p, lambda t, ans, x: lax.mul(t, _sinc(x)))
jvp.defjvp(ci_p, lambda t, ans, x: lax.mul(t, lax.div(lax.cos(x), x)))
jvp.defjvp(fresnel_s_p, lambda t, ans, x: lax.mul(t, lax.sin(_half_pi_x2(x))))
jvp.defjvp(fresnel_c_p, lambda t, ans, x: lax.mul(t, lax.cos(_half_pi_x2(x))))
# d/dx E_n(x) = -E_(n-1)(x); n is an order, not differentiable (as jax's nondiff_argnums).
jvp.defjvp(expn_p, None, lambda t, ans, n, x: lax.neg(
    lax.mul(t, expn_p.bind(lax.sub(n, _const(n, 1)), x))))
