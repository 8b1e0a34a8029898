"""Bessel functions of the first kind of integer order: ``bessel_jn`` (jax's signature,
``bessel_jn(z, *, v, n_iter=50)``), J_0(z) .. J_v(z) for real z in one array.

The values come from Miller's backward recurrence (Zhang and Jin, *Computation of Special
Functions*, 1996): J_(k-1) = 2k/z J_k - J_(k+1) run down from k = n_iter with a tiny seed,
normalised by J_0 + 2 (J_2 + J_4 + ...) = 1. It is a ``scan`` over fx.lax primitives, so it
differentiates, batches and jits as jax's does; z = 0 gives NaN, as jax.
"""

from __future__ import annotations

import operator

import fx.numpy as fnp
from fx import dtypes, lax
from fx.core import get_aval
from fx.scipy.special._common import concrete_or_error, promote_inexact


def _recurrence_step(carry, k):
    j_above, j_k1, norm, z = carry  # J_(k+2), J_(k+1) (unnormalised), the running norm
    j_k = 2.0 * (k + 1.0) * j_k1 / z - j_above
    norm = fnp.where(fnp.mod(k, 2) == 0, norm + 2.0 * j_k, norm)
    return (j_k1, j_k, norm, z), j_k


def bessel_jn(z, *, v: int, n_iter: int = 50):
    """The Bessel functions of the first kind J_0(z), ..., J_v(z) of real ``z``, stacked on
    a new leading axis (shape ``(v + 1, *z.shape)``, ``z``'s floating dtype).

    ``n_iter`` is where the backward recurrence starts; it must exceed ``v`` and grow with
    ``|z|`` (the smallest n with ``0.5 log10(6.28 + n) - n log10(1.36 + |z| / n) > 20``
    suffices; 50 covers ``|z|`` up to about 25). Too large an ``n_iter`` for a small ``|z|``
    overflows the recurrence (NaN), in float32 from about n_iter = 20 at z = 1, as in jax.

        >>> fnp.round(fx.scipy.special.bessel_jn(fnp.array([1.0, 2.0]), v=1, n_iter=15), 5)
        Array([[0.7652 , 0.22389],
               [0.44005, 0.57672]], dtype=float32)
    """
    (z,) = promote_inexact("bessel_jn", z)
    if dtypes.is_complex(get_aval(z).dtype):
        raise ValueError("complex input not supported.")
    v = concrete_or_error(operator.index, v, "Argument v of bessel_jn.")
    n_iter = concrete_or_error(int, n_iter, "Argument n_iter of bessel_jn.")
    dt = get_aval(z).dtype
    zero = fnp.zeros_like(z)
    init = (zero, fnp.full_like(z, 1e-16), zero, z)
    ks = lax.convert_element_type(lax.iota(dtypes.int32, n_iter + 1), dt)
    (_, _, norm, _), js = lax.scan(_recurrence_step, init, ks, reverse=True)
    return js[: v + 1] / (norm - js[0])
