"""``fx.nn``'s normalizing reductions: ``softmax``, ``log_softmax``, ``logsumexp``,
``logmeanexp`` and ``standardize``.

Reductions subtract a ``stop_gradient``-ed maximum before exponentiating, so large inputs do
not overflow and the derivatives stay finite without custom rules.
"""

from __future__ import annotations

import numpy as np

from fx import lax
from fx import numpy as fnp
from fx.core import get_aval
from fx.nn._common import inexact
from fx.numpy._promote import canonical_axes, promote_to_inexact, to_array

__all__ = ["log_softmax", "logmeanexp", "logsumexp", "softmax", "standardize"]


def softmax(x, axis=-1, where=None):
    """``exp(x) / sum(exp(x))`` along ``axis`` (an int, a tuple of ints, or None for all).

    ``where`` masks entries out: they get 0 and do not count in the sum. The maximum is
    subtracted first (under ``stop_gradient``: softmax does not depend on it), so large inputs
    do not overflow. As in JAX, an input containing ``+inf`` gives NaN.

    Example::

        >>> fx.nn.softmax(fnp.array([1.0, 2.0, 3.0]))
        Array([0.09003057, 0.24472848, 0.66524094], dtype=float32)
    """
    x = inexact(x, "softmax")
    x_max = fnp.max(x, axis, keepdims=True, initial=-np.inf, where=where)
    if where is not None:
        x = fnp.where(where, x, -np.inf)
    unnormalized = fnp.exp(fnp.subtract(x, lax.stop_gradient(x_max)))
    result = fnp.divide(unnormalized, fnp.sum(unnormalized, axis, keepdims=True, where=where))
    if where is not None:
        result = fnp.where(where, result, 0.0)
    return result


def log_softmax(x, axis=-1, where=None):
    """``log(softmax(x))`` along ``axis``, computed as ``x - logsumexp(x)`` without forming
    the softmax. Masked-out entries (``where`` False) give ``-inf``."""
    x = inexact(x, "log_softmax")
    x_max = fnp.max(x, axis, keepdims=True, initial=-np.inf, where=where)
    if where is not None:
        x = fnp.where(where, x, -np.inf)
    shifted = fnp.subtract(x, lax.stop_gradient(x_max))
    lse = fnp.log(fnp.sum(fnp.exp(shifted), axis, keepdims=True, where=where))
    result = fnp.subtract(shifted, lse)
    if where is not None:
        result = fnp.where(where, result, -np.inf)
    return result


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False,
              where=None):
    """``log(sum(b * exp(a)))`` over ``axis``, without overflow (as ``jax.nn.logsumexp``).

    ``b`` (broadcastable to ``a``) scales the exponentials; if the scaled sum is negative the
    result is NaN, unless ``return_sign=True``, which returns ``(log|sum|, sign(sum))``.
    All ``-inf`` inputs give ``-inf``; a ``+inf`` input gives ``+inf``; NaN propagates. The
    derivative is the softmax of ``a`` (weighted by ``b``).

    Example::

        >>> fx.nn.logsumexp(fnp.array([1000.0, 1000.0]))
        Array(1000.6931, dtype=float32)
    """
    name = "fx.nn.logsumexp"
    if where is not None:
        a = fnp.where(where, a, 0.0)
    if b is not None:
        a, b = promote_to_inexact(a, b, name=name)
        a = fnp.where(fnp.not_equal(b, 0), a, -np.inf)  # exp(a) * 0 must not be inf * 0
    else:
        a = inexact(a, "logsumexp")
    shape = get_aval(a).shape
    axes = canonical_axes(axis, len(shape), name)
    amax = fnp.max(a, axes, keepdims=True, initial=-np.inf, where=where)
    # A non-finite maximum (all -inf, or some +inf) must not be subtracted: inf - inf is NaN.
    amax = lax.stop_gradient(fnp.where(fnp.isfinite(amax), amax, 0.0))
    exp_a = fnp.exp(fnp.subtract(a, amax))
    if b is not None:
        exp_a = fnp.multiply(exp_a, b)
    sumexp = fnp.sum(exp_a, axes, keepdims=True, where=where)
    sign = fnp.sign(sumexp)
    out = fnp.add(fnp.log(fnp.absolute(sumexp)), amax)
    if not keepdims:
        out_shape = tuple(d for i, d in enumerate(shape) if i not in axes)
        out, sign = lax.reshape(out, out_shape), lax.reshape(sign, out_shape)
    if return_sign:
        return out, sign
    if b is not None:
        out = fnp.where(fnp.less(sign, 0), np.nan, out)
    return out


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm: str = "fast"):
    """``(x - mean) / sqrt(variance + epsilon)`` over ``axis`` (int, tuple or None).

    Missing ``mean``/``variance`` are computed over ``axis`` (restricted to ``where``).
    ``algorithm="fast"`` (the default, as in JAX) takes the variance as
    ``mean(x**2) - mean(x)**2`` clipped at 0; ``"stable"`` uses ``mean((x - mean)**2)``.
    """
    x = inexact(x, "standardize")
    # Given statistics (and epsilon) compute in x's precision, even as Python floats.
    dt = get_aval(x).dtype
    mean, variance = (None if v is None else lax.convert_element_type(to_array(v), dt)
                      for v in (mean, variance))
    epsilon = lax.convert_element_type(to_array(epsilon), dt)
    if mean is None:
        mean = fnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = fnp.mean(fnp.square(fnp.subtract(x, mean)), axis, keepdims=True,
                                where=where)
        elif algorithm == "fast":
            variance = fnp.subtract(fnp.mean(fnp.square(x), axis, keepdims=True, where=where),
                                    fnp.square(mean))
            variance = fnp.maximum(variance, 0.0)
        else:
            raise ValueError(f"fx.nn.standardize: unknown algorithm {algorithm!r}; expected "
                             "'fast' or 'stable'")
    return fnp.multiply(fnp.subtract(x, mean), lax.rsqrt(fnp.add(variance, epsilon)))


def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
    """``logsumexp(x) - log(n)`` over ``axis``, ``n`` the number of entries (where ``where``
    is True)."""
    x = inexact(x, "logmeanexp")
    lse = logsumexp(x, axis=axis, keepdims=keepdims, where=where)
    ones = fnp.ones_like(x) if where is None else fnp.where(where, 1.0, 0.0).astype(
        get_aval(x).dtype)
    if where is not None:
        ones = fnp.broadcast_to(ones, get_aval(x).shape)
    count = fnp.sum(ones, axis=axis, keepdims=keepdims)
    return fnp.subtract(lse, fnp.log(count))
