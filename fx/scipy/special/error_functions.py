"""The error function family and the normal distribution's functions: erf, erfc, erfinv,
erfcx, dawsn, ndtr, ndtri, log_ndtr, the Fresnel integrals, the complex Faddeeva function
wofz and Owen's T, with jax's semantics.

erf/erfc/erfinv are ``fx.lax`` primitives; erfcx, dawsn, ndtri and fresnel are primitives declared
for it in ``fx.lax.scipy_special``; ndtr and log_ndtr are composites written as jax's
(log_ndtr's asymptotic series of ``series_order`` terms below -20, or -10 in float32).
wofz (Weideman's rational approximation) and owens_t (a 13-point quadrature) are composites
under custom jvps with their exact derivatives, as jax's.
"""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx import dtypes, lax
from fx.core import get_aval
from fx.custom_derivatives import custom_jvp
from fx.lax import scipy_special as prims
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


# Weideman (1994), N = 32: w(z) = 2 p(Z) / (L - iz)^2 + 1 / (sqrt(pi) (L - iz)) with
# Z = (L + iz) / (L - iz), for Im z >= 0. The coefficients of p, highest degree first.
_WOFZ_L = 4.7568284600108841
_WOFZ_P = (
    -1.3034426067909105e-12, 3.7411838373738471e-12, 8.030427700497756e-12,
    -2.1543593557490879e-11, -5.5442449963237932e-11, 1.165824698850374e-10,
    4.1537441121999766e-10, -5.2310202114920615e-10, -3.2080151339721323e-09,
    8.1248864216535907e-10, 2.3797556530014025e-08, 2.2930438438915445e-08,
    -1.4813078929137642e-07, -4.1840763750512053e-07, 4.2558331397138446e-07,
    4.4015317312832251e-06, 6.8210319443575151e-06, -2.1409619201999998e-05,
    -0.00013075449254579421, -0.00024532980270038237, 0.00039259136070109705,
    0.0045195411053493093, 0.019006155784845501, 0.057304403529837282,
    0.14060716226893755, 0.29544451071508743, 0.54601397206393376, 0.9019254893648001,
    1.3455441692345449, 1.8256696296324815, 2.2635372999002676, 2.5722534081245696,
)
_INV_SQRT_PI = float(1 / np.sqrt(np.pi))


def _wofz_upper_half(z):
    iz = lax.complex(-lax.imag(z), lax.real(z))
    denom = _WOFZ_L - iz
    big_z = (_WOFZ_L + iz) / denom
    p = fnp.zeros_like(z) + _WOFZ_P[0]
    for c in _WOFZ_P[1:]:
        p = p * big_z + c
    return 2 * p / (denom * denom) + _INV_SQRT_PI / denom


@custom_jvp
def _wofz(z):
    # The lower half plane by the reflection w(z) = 2 exp(-z^2) - w(-z).
    upper = lax.imag(z) >= 0
    w = _wofz_upper_half(fnp.where(upper, z, -z))
    return fnp.where(upper, w, 2 * fnp.exp(-z * z) - w)


_wofz.defjvps(lambda t, ans, z: t * (-2 * z * ans + 2j * _INV_SQRT_PI))


def wofz(z):
    """The Faddeeva function w(z) = exp(-z^2) erfc(-iz), complex-valued (real input becomes
    complex); w'(z) = -2 z w(z) + 2i / sqrt(pi).

        >>> fnp.round(fx.scipy.special.wofz(fnp.array([0.0, 1.0 + 1.0j])), 4)
        Array([1.    +0.j    , 0.3047+0.2082j], dtype=complex64)
    """
    (z,) = promote_inexact("wofz", z)
    dt = get_aval(z).dtype
    if not dtypes.is_complex(dt):
        z = lax.convert_element_type(z, dtypes.complex_dtype(dt))
    return _wofz(z)


# Owen's T by a 13-point Gauss-type rule on T(h, a) = a sum_i w_i exp(-h^2 (1 + a^2 t_i) / 2)
# / (1 + a^2 t_i) (the 1 / 2 pi and the substitution u^2 = a^2 t in the weights), for |a| <= 1;
# Patefield and Tandy (2000), method T5. Larger |a| by T(h, a) = ndtr terms - T(ah, 1/a).
_OWENS_T_NODES = np.array([
    0.0035082039676451715, 0.031279042338030754, 0.085266826283219451, 0.16245071730812277,
    0.25851196049125435, 0.36807553840697534, 0.48501092905604697, 0.60277514152618577,
    0.71477884217753227, 0.81475510988760099, 0.89711029755948966, 0.95723808085944262,
    0.99178832974629704,
])
_OWENS_T_WEIGHTS = np.array([
    0.018831438115323503, 0.018567086243977649, 0.018042093461223386, 0.017263829606398753,
    0.016243219975989857, 0.014994592034116705, 0.013535474469662088, 0.011886351605820165,
    0.010070377242777432, 0.0081130545742299587, 0.0060419009528470239,
    0.0038862217010742058, 0.0016793031084546090,
])
_SQRT_2 = float(np.sqrt(2.0))


def _owens_t_rule(h, a):
    dt = get_aval(h).dtype
    r = (a * a)[..., None] * fnp.asarray(_OWENS_T_NODES, dt)
    f = fnp.exp(-0.5 * (h * h)[..., None] * (1.0 + r)) / (1.0 + r)
    return a * fnp.matmul(f, fnp.asarray(_OWENS_T_WEIGHTS, dt))


@custom_jvp
def _owens_t(h, a):
    h, abs_a = fnp.abs(h), fnp.abs(a)
    small = abs_a <= 1.0
    ma = fnp.where(small, abs_a, 1.0 / abs_a)
    mh = fnp.where(small, h, abs_a * h)
    t = _owens_t_rule(mh, ma)
    t = fnp.where(mh == 0.0, fnp.arctan(ma) / (2 * np.pi), t)
    t = fnp.where(ma == 1.0, 0.125 * lax.erfc(-mh / _SQRT_2) * lax.erfc(mh / _SQRT_2), t)
    # |a| > 1: T(h, a) = (Phi(h) + Phi(ah)) / 2 - Phi(h) Phi(ah) - [h < 0] / 2 - T(ah, 1/a),
    # written with erf near the origin and erfc away from it.
    c_h, c_ah = lax.erfc(h / _SQRT_2), lax.erfc(abs_a * h / _SQRT_2)
    near = 0.25 - 0.25 * lax.erf(h / _SQRT_2) * lax.erf(abs_a * h / _SQRT_2) - t
    far = 0.25 * (c_h + c_ah - c_h * c_ah) - t
    t = fnp.where(abs_a > 1.0, fnp.where(abs_a * h <= 0.67, near, far), t)
    t = lax.sign(a) * t
    return fnp.where(fnp.isnan(a) | fnp.isnan(h), fnp.nan, t)


def _owens_t_jvp(primals, tangents):
    (h, a), (h_dot, a_dot) = primals, tangents
    ans = _owens_t(h, a)
    d_h = -fnp.exp(-0.5 * h * h) * lax.erf(a * h / _SQRT_2) / float(2 * np.sqrt(2 * np.pi))
    d_a = fnp.exp(-0.5 * (a * a + 1.0) * h * h) / (2 * np.pi * (a * a + 1.0))
    return ans, (d_h * h_dot + d_a * a_dot).astype(ans.dtype)


_owens_t.defjvp(_owens_t_jvp)


def owens_t(h, a):
    """Owen's T function (1 / 2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx, by jax's
    13-point quadrature (to ~1e-13 in float64 against scipy).

        >>> fx.scipy.special.owens_t(fnp.array([0.0, 1.0]), fnp.array([1.0, 0.5]))
        Array([0.125     , 0.04306469], dtype=float32)
    """
    h, a = promote_inexact("owens_t", h, a)
    return _owens_t(h, a)
