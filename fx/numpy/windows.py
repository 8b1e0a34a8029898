"""Window functions of ``fx.numpy`` (``bartlett``, ``blackman``, ``hamming``, ``hanning``,
``kaiser``) and the constant ``euler_gamma``.

Each window takes a static length ``M`` (a Python int: the result's shape depends on it) and
returns a 1-d array of the mode's default float dtype (float32, float64 in x64 mode), with
numpy's conventions: ``M <= 0`` gives an empty array (jax 0.10 raises for negative ``M``),
``M == 1`` gives ``[1.]``. ``kaiser``'s ``beta`` may be traced and is differentiable.
"""

from __future__ import annotations

import operator

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy._promote import asarray
from fx.numpy.mathematical import i0

__all__ = ["bartlett", "blackman", "euler_gamma", "hamming", "hanning", "kaiser"]

euler_gamma = 0.5772156649015329


def _length(M, name: str) -> int:
    try:
        return operator.index(M)
    except TypeError:
        raise TypeError(f"fx.numpy.{name}: M must be a Python int (the window's length is "
                        f"static), got {type(M).__name__} {M!r}") from None


def _centered(M: int):
    """``n = 1 - M, 3 - M, ..., M - 1`` over ``M - 1`` (the window's positions in [-1, 1]),
    in the default float dtype."""
    dt = dtypes.default_float_dtype()
    n = lax.convert_element_type(lax.iota(dtypes.default_int_dtype(), M), dt)
    return lax.div(lax.add(lax.mul(n, 2.0), float(1 - M)), float(M - 1))


def _cosine_window(name: str, M, coeffs):
    M = _length(M, name)
    dt = dtypes.default_float_dtype()
    if M <= 1:
        return lax.full((max(M, 0),), 1.0, dt)
    t = lax.mul(_centered(M), np.pi)
    out = lax.full((M,), coeffs[0], dt)
    for k, c in enumerate(coeffs[1:], start=1):
        out = lax.add(out, lax.mul(lax.cos(lax.mul(t, float(k))), c))
    return out


def bartlett(M: int):
    """The triangular (Bartlett) window of ``M`` points, 0 at both ends and 1 in the middle.

    Example: ``fnp.bartlett(5)`` is ``[0., 0.5, 1., 0.5, 0.]``.
    """
    M = _length(M, "bartlett")
    dt = dtypes.default_float_dtype()
    if M <= 1:
        return lax.full((max(M, 0),), 1.0, dt)
    return lax.sub(1.0, lax.abs(_centered(M)))


def blackman(M: int):
    """The Blackman window, ``0.42 + 0.5 cos(pi n) + 0.08 cos(2 pi n)`` over ``n`` in [-1, 1].

    Example: ``fnp.blackman(3)`` is ``[0., 1., 0.]`` (up to rounding).
    """
    return _cosine_window("blackman", M, (0.42, 0.5, 0.08))


def hamming(M: int):
    """The Hamming window, ``0.54 + 0.46 cos(pi n)`` over ``n`` in [-1, 1].

    Example: ``fnp.hamming(3)`` is ``[0.08, 1., 0.08]``.
    """
    return _cosine_window("hamming", M, (0.54, 0.46))


def hanning(M: int):
    """The Hann window, ``0.5 + 0.5 cos(pi n)`` over ``n`` in [-1, 1].

    Example: ``fnp.hanning(3)`` is ``[0., 1., 0.]``.
    """
    return _cosine_window("hanning", M, (0.5, 0.5))


def kaiser(M: int, beta):
    """The Kaiser window, ``i0(beta * sqrt(1 - n**2)) / i0(beta)`` over ``n`` in [-1, 1];
    ``beta`` (a scalar, possibly traced) sets the trade-off between main-lobe width and side
    lobes (0 is rectangular, about 8.6 is close to Blackman).

    Example: ``fnp.kaiser(3, 0.0)`` is ``[1., 1., 1.]``.
    """
    M = _length(M, "kaiser")
    dt = dtypes.default_float_dtype()
    beta = asarray(beta, dt)
    if get_aval(beta).shape:
        raise ValueError(f"fx.numpy.kaiser: beta must be a scalar, got shape "
                         f"{get_aval(beta).shape}")
    if M <= 1:
        return lax.full((max(M, 0),), 1.0, dt)
    n = _centered(M)
    # 1 - n**2 can round just below zero at the ends; the window is exactly 1/i0(beta) there.
    arg = lax.max(lax.sub(1.0, lax.mul(n, n)), lax.full_like(n, 0))
    return lax.div(i0(lax.mul(beta, lax.sqrt(arg))), i0(beta))
