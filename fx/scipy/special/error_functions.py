"""The error function family and the normal distribution's functions: erf, erfc, erfinv,
erfcx, dawsn, ndtr, ndtri, log_ndtr and the Fresnel integrals, with jax's semantics.

erf/erfc/erfinv are ``fx.lax`` primitives; erfcx, dawsn, ndtri and fresnel are primitives of
``fx.scipy.special`` (``_primitives``); ndtr and log_ndtr are composites written as jax's
(log_ndtr's asymptotic series of ``series_order`` terms below -20, or -10 in float32).
"""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx import dtypes, lax
from fx.core import get_aval
from fx.custom_derivatives import custom_jvp
from fx.scipy.special import _primitives as prims
from fx.scipy.special._common import promote_inexact, reject_complex, require_float


def erf(x):
    """The error function 2/sqrt(pi) int_0^x exp(-t^2) dt.

        >>> fx.scipy.special.erf(fnp.array([0.0, 1.0]))
        Array([0.       , 0.8427008], dtype=float32)
    """
    (x,) = promote_inexact("erf", x)
    return lax.erf(x)


def erfc(x):
    """The complementary error function 1 - erf(x), accurate in the right tail."""
    (x,) = promote_inexact("erfc", x)
    return lax.erfc(x)


def erfinv(x):
    """The inverse of erf on (-1, 1) (+-inf at +-1, NaN outside)."""
    (x,) = promote_inexact("erfinv", x)
    return lax.erf_inv(x)


def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x) (no underflow for large x)."""
    (x,) = promote_inexact("erfcx", x)
    reject_complex("erfcx", x)
    return prims.erfcx_p.bind(x)


def dawsn(x):
    """Dawson's integral exp(-x^2) int_0^x exp(t^2) dt."""
    (x,) = promote_inexact("dawsn", x)
    reject_complex("dawsn", x)
    return prims.dawsn_p.bind(x)


def fresnel(x):
    """The Fresnel integrals (S(x), C(x)) = int_0^x (sin, cos)(pi t^2 / 2) dt."""
    (x,) = promote_inexact("fresnel", x)
    reject_complex("fresnel", x)
    return prims.fresnel_s_p.bind(x), prims.fresnel_c_p.bind(x)


def ndtr(x):
    """The standard normal CDF (float32 and float64 only, as jax).

        >>> fx.scipy.special.ndtr(fnp.array([0.0, 1.0]))
        Array([0.5      , 0.8413447], dtype=float32)
    """
    return _ndtr(require_float("ndtr", x))


def _ndtr(x):
    half_sqrt_2 = float(0.5 * np.sqrt(2.0))
    w = x * half_sqrt_2
    z = fnp.abs(w)
    y = fnp.where(z < half_sqrt_2, 1.0 + lax.erf(w),
                  fnp.where(w > 0, 2.0 - lax.erfc(z), lax.erfc(z)))
    return 0.5 * y


def ndtri(p):
    """The inverse of ndtr (float32 and float64 only): -inf at 0, inf at 1, NaN outside."""
    return prims.ndtri_p.bind(require_float("ndtri", p))


# (lower, upper) bounds of log_ndtr's middle segment, by dtype (jax's).
_LOG_NDTR_BOUNDS = {dtypes.float64: (-20.0, 8.0), dtypes.float32: (-10.0, 5.0)}


def log_ndtr(x, series_order: int = 3):
    """log(ndtr(x)), accurate far into both tails: -ndtr(-x) above the upper bound, an
    asymptotic series of ``series_order`` terms below the lower one."""
    if not isinstance(series_order, int):
        raise TypeError("series_order must be a Python integer.")
    if series_order < 0:
        raise ValueError("series_order must be non-negative.")
    if series_order > 30:
        raise ValueError("series_order must be <= 30.")
    x = fnp.asarray(x)
    if get_aval(x).dtype not in _LOG_NDTR_BOUNDS:
        raise TypeError(f"x.dtype={get_aval(x).dtype} is not supported.")
    return _log_ndtr(x, series_order)


def _log_ndtr_value(x, series_order: int):
    lower, upper = _LOG_NDTR_BOUNDS[get_aval(x).dtype]
    above = x > upper
    # One ndtr call for both outer segments; the clamps keep the unused branches finite, so
    # that their (masked) derivatives are not NaN.
    res = _ndtr(fnp.where(above, -x, fnp.maximum(x, lower)))
    return fnp.where(above, -res, fnp.where(x > lower, fnp.log(res),
                                             _log_ndtr_lower(fnp.minimum(x, lower),
                                                             series_order)))


def _log_ndtr_lower(x, series_order: int):
    x2 = x * x
    log_scale = -0.5 * x2 - fnp.log(-x) - float(0.5 * np.log(2 * np.pi))
    if series_order <= 0:
        return log_scale
    total = fnp.ones_like(x)
    x2n = x2
    for n in range(1, series_order + 1):
        term = float(np.prod(np.arange(2 * n - 1, 1, -2))) / x2n  # (2n-1)!! / x^(2n)
        total = total - term if n % 2 else total + term
        x2n = x2n * x2
    return log_scale + fnp.log(total)


def _log_ndtr_impl(x, series_order):
    return _log_ndtr_value(x, series_order)


_log_ndtr = custom_jvp(_log_ndtr_impl, nondiff_argnums=(1,))


def _log_ndtr_jvp(series_order, primals, tangents):
    (x,), (t,) = primals, tangents
    ans = _log_ndtr(x, series_order)
    log_pdf = -0.5 * x * x - float(0.5 * np.log(2 * np.pi))
    return ans, t * fnp.exp(log_pdf - ans)


_log_ndtr.defjvp(_log_ndtr_jvp)
