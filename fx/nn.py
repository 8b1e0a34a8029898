"""``fx.nn``: activation functions, softmax and friends, one-hot encoding and standardization.

Every function takes arrays (fx arrays, tracers, numpy data or Python scalars) and returns fx
arrays, and is written with ``fx.numpy`` / ``fx.lax`` functions, so it traces, differentiates
and vectorizes like any other fx code. Values, NaN/inf behaviour and derivative conventions
follow ``jax.nn`` (for example ``relu``'s derivative at 0 is 0). Without custom derivative rules,
numerical stability of the derivatives comes from the forward formulas themselves: reductions
subtract a ``stop_gradient``-ed maximum before exponentiating, and branches use ``where`` on
safe inputs so an unused branch never produces NaN gradients.

Differences from jax.nn: ``one_hot`` defaults to float32 (fx's default float; jax-x64 uses
float64), and integer inputs become float32 where jax-x64 gives float64 (``relu6``) or raises
(``sigmoid``); ``relu`` and ``hard_tanh`` keep integers, as in jax.
"""

from __future__ import annotations

import operator

import numpy as np

from fx import dtypes, lax
from fx import numpy as fnp
from fx.core import get_aval
from fx.numpy._promote import canonical_axes, canonical_axis, promote_to_inexact, to_array

__all__ = [
    "celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
    "leaky_relu", "log_sigmoid", "log_softmax", "logsumexp", "mish", "one_hot", "relu",
    "relu6", "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus", "standardize",
    "swish",
]


def _inexact(x, name: str):
    (x,) = promote_to_inexact(x, name=f"fx.nn.{name}")
    return x


# --- elementwise activations ----------------------------------------------------------------------


def relu(x):
    """Rectified linear unit, ``max(x, 0)``, with derivative 0 at 0 (as ``jax.nn.relu``).

    Example::

        >>> fx.nn.relu(fnp.array([-1.0, 0.0, 2.0]))
        Array([0., 0., 2.], dtype=float32)
    """
    x = to_array(x, "fx.nn.relu")
    # One select: the derivative is 1 where x > 0 and 0 elsewhere (including 0); NaN passes.
    return fnp.where(fnp.less_equal(x, 0), 0, x)


def relu6(x):
    """``min(max(x, 0), 6)``, with derivative 0 at 0 and at 6 (as ``jax.nn.relu6``)."""
    x = to_array(x, "fx.nn.relu6")
    # 6.0 is a Python float, so integers become float as in jax.
    return fnp.where(fnp.less_equal(x, 0), 0, fnp.where(fnp.greater_equal(x, 6), 6.0, x))


def sigmoid(x):
    """The logistic function ``1 / (1 + exp(-x))``."""
    return lax.logistic(_inexact(x, "sigmoid"))


def log_sigmoid(x):
    """``log(sigmoid(x))``, computed as ``-softplus(-x)`` (no overflow for large ``|x|``)."""
    x = _inexact(x, "log_sigmoid")
    return fnp.negative(softplus(fnp.negative(x)))


def softplus(x):
    """``log(1 + exp(x))``, computed stably as ``logaddexp(x, 0)``."""
    return fnp.logaddexp(_inexact(x, "softplus"), 0.0)


def soft_sign(x):
    """``x / (|x| + 1)``."""
    x = _inexact(x, "soft_sign")
    return fnp.divide(x, fnp.add(fnp.absolute(x), 1.0))


def silu(x):
    """Sigmoid linear unit (swish): ``x * sigmoid(x)``."""
    x = _inexact(x, "silu")
    return fnp.multiply(x, sigmoid(x))


swish = silu


def mish(x):
    """``x * tanh(softplus(x))``."""
    x = _inexact(x, "mish")
    return fnp.multiply(x, fnp.tanh(softplus(x)))


def gelu(x, approximate: bool = True):
    """Gaussian error linear unit.

    ``approximate=True`` (the default, as in JAX) uses the tanh approximation
    ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x**3)))``; ``approximate=False`` computes
    ``x/2 * erfc(-x / sqrt(2))`` exactly.
    """
    x = _inexact(x, "gelu")
    if approximate:
        inner = fnp.multiply(float(np.sqrt(2 / np.pi)),
                             fnp.add(x, fnp.multiply(0.044715, fnp.power(x, 3))))
        cdf = fnp.multiply(0.5, fnp.add(1.0, fnp.tanh(inner)))
        return fnp.multiply(x, cdf)
    return fnp.multiply(fnp.multiply(0.5, x), lax.erfc(fnp.multiply(x, -float(np.sqrt(0.5)))))


def elu(x, alpha=1.0):
    """Exponential linear unit: ``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    x = _inexact(x, "elu")
    positive = fnp.greater(x, 0)
    # expm1 sees 0 where x > 0, so a huge positive x cannot overflow into a NaN gradient.
    safe = fnp.where(positive, 0.0, x)
    return fnp.where(positive, x, fnp.multiply(alpha, fnp.expm1(safe)))


def celu(x, alpha=1.0):
    """Continuously differentiable ELU: ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
    x = _inexact(x, "celu")
    neg = fnp.expm1(fnp.divide(fnp.minimum(x, 0.0), alpha))
    return fnp.add(fnp.maximum(x, 0.0), fnp.multiply(alpha, neg))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """Scaled ELU: ``scale * elu(x, alpha)`` with the self-normalizing constants."""
    return fnp.multiply(_SELU_SCALE, elu(x, _SELU_ALPHA))


def leaky_relu(x, negative_slope=1e-2):
    """``x`` where ``x >= 0``, else ``negative_slope * x``."""
    x = to_array(x, "fx.nn.leaky_relu")
    return fnp.where(fnp.greater_equal(x, 0), x, fnp.multiply(negative_slope, x))


def hard_tanh(x):
    """``x`` clipped to ``[-1, 1]`` (derivative 0 outside, 1 inside and at the ends)."""
    x = to_array(x, "fx.nn.hard_tanh")
    return fnp.where(fnp.greater(x, 1), 1, fnp.where(fnp.less(x, -1), -1, x))


def hard_sigmoid(x):
    """``relu6(x + 3) / 6``."""
    x = _inexact(x, "hard_sigmoid")
    return fnp.divide(relu6(fnp.add(x, 3.0)), 6.0)


def hard_silu(x):
    """``x * hard_sigmoid(x)``."""
    x = _inexact(x, "hard_silu")
    return fnp.multiply(x, hard_sigmoid(x))


hard_swish = hard_silu


def glu(x, axis: int = -1):
    """Gated linear unit: split ``x`` in two halves along ``axis``, ``a * sigmoid(b)``."""
    x = _inexact(x, "glu")
    aval = get_aval(x)
    axis = canonical_axis(axis, aval.ndim, "fx.nn.glu")
    size = aval.shape[axis]
    if size % 2:
        raise ValueError(f"fx.nn.glu: axis {axis} of {aval.str_short()} has odd size {size}; "
                         "it must split into two equal halves")
    a = lax.slice_in_dim(x, 0, size // 2, 1, axis)
    b = lax.slice_in_dim(x, size // 2, size, 1, axis)
    return fnp.multiply(a, sigmoid(b))


# --- normalizing reductions -----------------------------------------------------------------------


def softmax(x, axis=-1, where=None):
    """``exp(x) / sum(exp(x))`` along ``axis`` (an int, a tuple of ints, or None for all).

    ``where`` masks entries out: they get 0 and do not count in the sum. The maximum is
    subtracted first (under ``stop_gradient``: softmax does not depend on it), so large inputs
    do not overflow. As in JAX, an input containing ``+inf`` gives NaN.

    Example::

        >>> fx.nn.softmax(fnp.array([1.0, 2.0, 3.0]))
        Array([0.09003057, 0.24472848, 0.66524094], dtype=float32)
    """
    x = _inexact(x, "softmax")
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
    x = _inexact(x, "log_softmax")
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
        a = _inexact(a, "logsumexp")
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
    x = _inexact(x, "standardize")
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


# --- encodings -----------------------------------------------------------------------------------


def one_hot(x, num_classes: int, *, dtype=None, axis: int = -1):
    """One-hot encode the integer array ``x``: a new axis ``axis`` of size ``num_classes``
    holds 1 at index ``x`` and 0 elsewhere. Out-of-range indices (negative ones included)
    encode as all zeros. ``dtype`` defaults to float32 (jax-x64: float64).

    Example::

        >>> fx.nn.one_hot(fnp.array([0, 2, 5]), 3)
        Array([[1., 0., 0.],
               [0., 0., 1.],
               [0., 0., 0.]], dtype=float32)
    """
    try:
        num_classes = operator.index(num_classes)
    except TypeError:
        raise TypeError(
            f"fx.nn.one_hot: num_classes must be a concrete integer, got {num_classes!r} "
            "(the output shape depends on it)"
        ) from None
    if num_classes < 0:
        raise ValueError(f"fx.nn.one_hot: num_classes must be non-negative, got {num_classes}")
    x = to_array(x, "fx.nn.one_hot")
    aval = get_aval(x)
    if aval.dtype == dtypes.bool_:
        x = lax.convert_element_type(x, dtypes.int32)
        aval = get_aval(x)
    out_dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize(dtype)
    axis = canonical_axis(axis, aval.ndim + 1, "fx.nn.one_hot")
    lhs = lax.reshape(x, aval.shape[:axis] + (1,) + aval.shape[axis:])
    rhs_shape = [1] * aval.ndim
    rhs_shape.insert(axis, num_classes)
    classes = lax.broadcasted_iota(aval.dtype, tuple(rhs_shape), axis)
    return lax.convert_element_type(fnp.equal(lhs, classes), out_dt)

# The rest of jax.nn (fx/nn_functions.py), the initializers and the losses (fx.nn.losses).
import sys as _sys  # noqa: E402

from fx import nn_initializers as initializers  # noqa: E402, F401
from fx import nn_losses as losses  # noqa: E402, F401
from fx.nn_functions import (  # noqa: E402, F401
    dot_product_attention,
    identity,
    log1mexp,
    logmeanexp,
    sparse_plus,
    sparse_sigmoid,
    squareplus,
    tanh,
)

_sys.modules.setdefault("fx.nn.initializers", initializers)  # `import fx.nn.initializers`
_sys.modules.setdefault("fx.nn.losses", losses)  # `import fx.nn.losses`
