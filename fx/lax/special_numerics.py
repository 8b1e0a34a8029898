"""NumPy implementations of the special functions NumPy lacks (erf, lgamma, digamma, ...).

All work elementwise in float64 (callers round to the operand's dtype). ``erf``, ``erfc`` and
``lgamma`` use the C library through ``math``; ``digamma``, ``polygamma`` and ``erf_inv`` are
computed here by recurrence plus asymptotic series (digamma, polygamma) and by Newton steps on
an initial rational approximation (erf_inv), accurate to a few ulps of float64.
"""

from __future__ import annotations

import math

import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _lgamma_scalar(x: float) -> float:
    try:
        return math.lgamma(x)
    except ValueError:  # poles at non-positive integers
        return math.inf
    except OverflowError:
        return math.inf


_lgamma = np.frompyfunc(_lgamma_scalar, 1, 1)


def _f64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def erf(x):
    return np.asarray(_erf(_f64(x)), dtype=np.float64)


def erfc(x):
    return np.asarray(_erfc(_f64(x)), dtype=np.float64)


def lgamma(x):
    x = _f64(x)
    out = np.asarray(_lgamma(x), dtype=np.float64)
    return np.where(np.isnan(x), np.nan, out)


# Bernoulli numbers B_2k for the asymptotic series.
_B2K = np.array(
    [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798]
)
_SHIFT = 12.0


def digamma(x):
    x = _f64(x)
    with np.errstate(all="ignore"):
        reflect = x < 0.5
        xr = np.where(reflect, 1.0 - x, x)
        acc = np.zeros_like(xr)
        z = xr.copy()
        for _ in range(int(_SHIFT)):
            small = z < _SHIFT
            acc = acc - np.where(small, 1.0 / z, 0.0)
            z = np.where(small, z + 1.0, z)
        inv2 = 1.0 / (z * z)
        series = np.zeros_like(z)
        power = inv2.copy()
        for k, b in enumerate(_B2K, start=1):
            series = series + b / (2 * k) * power
            power = power * inv2
        out = acc + np.log(z) - 0.5 / z - series
        out = np.where(reflect, out - np.pi / np.tan(np.pi * x), out)
        poles = (x <= 0) & (x == np.floor(x))
        out = np.where(poles, np.nan, out)
        return np.where(np.isposinf(x), np.inf, out)


def polygamma(m: int, x):
    """The m-th derivative of digamma, for integer m >= 1."""
    if m == 0:
        return digamma(x)
    x = _f64(x)
    sign = -1.0 if m % 2 == 0 else 1.0  # (-1)^(m+1)
    fact = math.factorial(m)
    with np.errstate(all="ignore"):
        # Shift x up: psi_m(x) = psi_m(x + n) + sign * m! * sum_k (x + k)^-(m+1).
        acc = np.zeros_like(x)
        z = x.copy()
        for _ in range(60):
            small = z < 20.0
            if not small.any():
                break
            acc = acc + np.where(small, z ** -(m + 1.0), 0.0)
            z = np.where(small, z + 1.0, z)
        # Asymptotic series of zeta(m + 1, z) for large z.
        s = m + 1.0
        zeta = z ** (1 - s) / (s - 1) + 0.5 * z**-s
        rising = s  # s (s+1) ... (s+2k-2)
        power = z ** -(s + 1)
        for k, b in enumerate(_B2K, start=1):
            zeta = zeta + b / math.factorial(2 * k) * rising * power
            rising = rising * (s + 2 * k - 1) * (s + 2 * k)
            power = power / (z * z)
        out = sign * fact * (acc + zeta)
        poles = (x <= 0) & (x == np.floor(x))
        return np.where(poles, np.nan, out)


def erf_inv(y):
    y = _f64(y)
    with np.errstate(all="ignore"):
        # Giles' approximation ("Approximating the erfinv function", 2010) as a starting point.
        w = -np.log((1.0 - y) * (1.0 + y))
        small = w < 6.25
        ws = w - 3.125
        p_small = _horner(ws, [
            -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
            1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
            6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
            2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
            1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
            4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
            0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
            0.24015818242558961693, 1.6536545626831027356,
        ])
        wl = np.sqrt(np.maximum(w, 0.0)) - 3.25
        p_large = _horner(wl, [
            2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
            1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
            2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
            6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
            0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
            -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
            3.0838856104922207635,
        ])
        x = np.where(small, p_small, p_large) * y
        for _ in range(2):  # Newton on erf(x) = y
            err = erf(x) - y
            x = x - err / (2.0 / np.sqrt(np.pi) * np.exp(-x * x))
        x = np.where(y == 1.0, np.inf, np.where(y == -1.0, -np.inf, x))
        return np.where(np.abs(y) > 1.0, np.nan, x)


def _horner(x, coeffs):
    out = np.full_like(x, coeffs[0])
    for c in coeffs[1:]:
        out = out * x + c
    return out
