"""Spherical harmonics: ``sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None)`` with jax's
signature and semantics, over a table of normalised associated Legendre functions.

``_legendre_table(l_max, x)`` holds P̄_l^m(x) (orthonormal on the sphere together with
exp(i m phi), Condon-Shortley phase included) for 0 <= m, l <= l_max, indexed ``[m, l, point]``
(zero where m > l). It is built degree by degree: the diagonal
P̄_l^l = -sqrt(1 + 1/2l) sqrt(1 - x^2) P̄_(l-1)^(l-1) from P̄_0^0 = 1 / (2 sqrt(pi)), then for m < l
P̄_l^m = d0 x P̄_(l-1)^m - d1 P̄_(l-2)^m with the normalised three-term coefficients
d0 = sqrt((4l^2 - 1) / (l^2 - m^2)) and
d1 = sqrt((2l + 1)((l - 1)^2 - m^2) / ((2l - 3)(l^2 - m^2))).
Everything is fx.numpy, so it differentiates in theta and phi, batches and jits.
"""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx import lax
from fx.core import get_aval
from fx.scipy.special._common import concrete_or_error


def _recurrence_coefficients(l_max: int) -> tuple[np.ndarray, np.ndarray]:
    """d0[m, l] (m < l) and d1[m, l] (m < l - 1), zero elsewhere, in float64."""
    m, deg = np.meshgrid(np.arange(l_max + 1.0), np.arange(l_max + 1.0), indexing="ij")
    with np.errstate(all="ignore"):
        d0 = np.sqrt((4 * deg * deg - 1) / (deg * deg - m * m))
        d1 = np.sqrt((2 * deg + 1) * ((deg - 1) ** 2 - m * m)
                     / ((2 * deg - 3) * (deg * deg - m * m)))
    return np.where(m < deg, d0, 0.0), np.where(m < deg - 1, d1, 0.0)


def _legendre_table(l_max: int, x):
    """P̄_l^m(x) for a 1-D ``x``, shape ``(l_max + 1, l_max + 1, len(x))`` as ``[m, l, i]``."""
    dt = get_aval(x).dtype
    d0, d1 = _recurrence_coefficients(l_max)
    sin = fnp.sqrt(1.0 - x * x)
    diag = fnp.full_like(x, 0.5 / np.sqrt(np.pi))
    rows = []  # rows[l][m, i] = P̄_l^m(x_i)
    for deg in range(l_max + 1):
        if deg > 0:
            diag = diag * float(-np.sqrt(1.0 + 0.5 / deg)) * sin
        at_diag = fnp.asarray(np.arange(l_max + 1) == deg, dt)[:, None]
        row = at_diag * diag
        if deg >= 1:
            row = row + fnp.asarray(d0[:, deg], dt)[:, None] * x * rows[deg - 1]
        if deg >= 2:
            row = row - fnp.asarray(d1[:, deg], dt)[:, None] * rows[deg - 2]
        rows.append(row)
    return fnp.stack(rows, axis=1)


def sph_harm_y(n, m, theta, phi, diff_n: int | None = None, n_max: int | None = None):
    """The spherical harmonics Y_n^m(theta, phi) = N_n^m P_n^m(cos theta) exp(i m phi), with
    N_n^m = sqrt((2n + 1) (n - m)! / (4 pi (n + m)!)): degree ``n >= 0``, order ``|m| <= n``
    (other values are undefined), colatitude ``theta`` in [0, pi], longitude ``phi``.

    ``n``, ``m`` and ``theta`` are 1-D (a scalar ``theta`` is one point); ``n_max`` is the
    largest degree (static; by default ``max(n)``, which needs a concrete ``n``), and degrees
    above it are clipped to it, as in jax. ``diff_n`` is not supported.

        >>> Y = fx.scipy.special.sph_harm_y(fnp.array([1, 1]), fnp.array([0, 1]),
        ...                                 fnp.array([0.5, 0.5]), fnp.array([0.0, 0.0]))
        >>> fnp.round(Y.real, 4)
        Array([ 0.4288, -0.1656], dtype=float32)
    """
    if diff_n is not None:
        raise NotImplementedError(
            "The 'diff_n' argument to fx.scipy.special.sph_harm_y is not supported.")
    n, m, theta, phi = (fnp.asarray(a) for a in (n, m, theta, phi))
    if theta.ndim == 0:
        theta = theta[None]
    if n_max is None:
        n_max = concrete_or_error(lambda v: int(np.max(v)), n,
                                  "The `n_max` argument of `fx.scipy.special.sph_harm_y` must "
                                  "be statically specified to use it within transformations.")
    n_max = concrete_or_error(int, n_max, "Argument n_max of sph_harm_y.")
    table = _legendre_table(n_max, fnp.cos(theta))
    abs_m = fnp.abs(m)
    points = fnp.minimum(fnp.arange(n.shape[0]), theta.shape[0] - 1)
    value = table[fnp.clip(abs_m, 0, n_max), fnp.clip(n, 0, n_max), points]
    angle = abs_m * phi
    y = lax.complex(value * fnp.cos(angle), value * fnp.sin(angle))
    return fnp.where(m < 0, fnp.where(abs_m % 2 == 1, -1.0, 1.0) * fnp.conj(y), y)
