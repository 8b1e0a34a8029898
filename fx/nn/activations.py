"""``fx.nn``'s activation functions: the elementwise ones (``relu``, ``gelu``, ``silu``…,
``squareplus``, ``sparse_plus``, ``log1mexp``) and ``glu``.

Each follows ``jax.nn``'s values, NaN/inf behaviour and derivative conventions (for example
``relu``'s derivative at 0 is 0); branches use ``where`` on safe inputs so an unused branch
never produces NaN gradients.
"""

from __future__ import annotations

import numpy as np

from fx import lax
from fx import numpy as fnp
from fx.core import get_aval
from fx.custom_derivatives import custom_jvp
from fx.nn._common import inexact
from fx.numpy._promote import canonical_axis, promote_to_inexact, to_array

__all__ = [
    "celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
    "identity", "leaky_relu", "log1mexp", "log_sigmoid", "mish", "relu", "relu6", "selu",
    "sigmoid", "silu", "soft_sign", "softplus", "sparse_plus", "sparse_sigmoid", "squareplus",
    "swish", "tanh",
]


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
    return lax.logistic(inexact(x, "sigmoid"))


def log_sigmoid(x):
    """``log(sigmoid(x))``, computed as ``-softplus(-x)`` (no overflow for large ``|x|``)."""
    x = inexact(x, "log_sigmoid")
    return fnp.negative(softplus(fnp.negative(x)))


def softplus(x):
    """``log(1 + exp(x))``, computed stably as ``logaddexp(x, 0)``."""
    return fnp.logaddexp(inexact(x, "softplus"), 0.0)


def soft_sign(x):
    """``x / (|x| + 1)``."""
    x = inexact(x, "soft_sign")
    return fnp.divide(x, fnp.add(fnp.absolute(x), 1.0))


def silu(x):
    """Sigmoid linear unit (swish): ``x * sigmoid(x)``."""
    x = inexact(x, "silu")
    return fnp.multiply(x, sigmoid(x))


swish = silu


def mish(x):
    """``x * tanh(softplus(x))``."""
    x = inexact(x, "mish")
    return fnp.multiply(x, fnp.tanh(softplus(x)))


def gelu(x, approximate: bool = True):
    """Gaussian error linear unit.

    ``approximate=True`` (the default, as in JAX) uses the tanh approximation
    ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x**3)))``; ``approximate=False`` computes
    ``x/2 * erfc(-x / sqrt(2))`` exactly.
    """
    x = inexact(x, "gelu")
    if approximate:
        inner = fnp.multiply(float(np.sqrt(2 / np.pi)),
                             fnp.add(x, fnp.multiply(0.044715, fnp.power(x, 3))))
        cdf = fnp.multiply(0.5, fnp.add(1.0, fnp.tanh(inner)))
        return fnp.multiply(x, cdf)
    return fnp.multiply(fnp.multiply(0.5, x), lax.erfc(fnp.multiply(x, -float(np.sqrt(0.5)))))


def elu(x, alpha=1.0):
    """Exponential linear unit: ``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    x = inexact(x, "elu")
    positive = fnp.greater(x, 0)
    # expm1 sees 0 where x > 0, so a huge positive x cannot overflow into a NaN gradient.
    safe = fnp.where(positive, 0.0, x)
    return fnp.where(positive, x, fnp.multiply(alpha, fnp.expm1(safe)))


def celu(x, alpha=1.0):
    """Continuously differentiable ELU: ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
    x = inexact(x, "celu")
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
    x = inexact(x, "hard_sigmoid")
    return fnp.divide(relu6(fnp.add(x, 3.0)), 6.0)


def hard_silu(x):
    """``x * hard_sigmoid(x)``."""
    x = inexact(x, "hard_silu")
    return fnp.multiply(x, hard_sigmoid(x))


hard_swish = hard_silu


def glu(x, axis: int = -1):
    """Gated linear unit: split ``x`` in two halves along ``axis``, ``a * sigmoid(b)``."""
    x = inexact(x, "glu")
    aval = get_aval(x)
    axis = canonical_axis(axis, aval.ndim, "fx.nn.glu")
    size = aval.shape[axis]
    if size % 2:
        raise ValueError(f"fx.nn.glu: axis {axis} of {aval.str_short()} has odd size {size}; "
                         "it must split into two equal halves")
    a = lax.slice_in_dim(x, 0, size // 2, 1, axis)
    b = lax.slice_in_dim(x, size // 2, size, 1, axis)
    return fnp.multiply(a, sigmoid(b))


def identity(x):
    """The identity activation: ``x`` unchanged, as an fx array."""
    return to_array(x, "fx.nn.identity")


def tanh(x):
    """The hyperbolic tangent (``fx.numpy.tanh``), as ``jax.nn.tanh``."""
    return fnp.tanh(x)


def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``, a smooth ReLU (Barron 2021).

    Example::

        >>> fx.nn.squareplus(fx.numpy.array([-2.0, 0.0, 2.0]))
        Array([0.41421354, 1.        , 2.4142137 ], dtype=float32)
    """
    x, b = promote_to_inexact(x, b, name="fx.nn.squareplus")
    return fnp.divide(fnp.add(x, fnp.sqrt(fnp.add(fnp.square(x), b))), 2.0)


def sparse_plus(x):
    """0 for ``x <= -1``, ``(x + 1)**2 / 4`` for ``-1 < x < 1``, ``x`` for ``x >= 1``: a
    softplus with exact zeros and an exact linear part."""
    x = inexact(x, "sparse_plus")
    # Each branch is evaluated only where it is finite and cheap, so gradients stay clean.
    middle = fnp.multiply(0.25, fnp.square(fnp.add(x, 1.0)))
    return fnp.where(fnp.less_equal(x, -1.0), 0.0, fnp.where(fnp.greater_equal(x, 1.0), x,
                                                            middle))


def sparse_sigmoid(x):
    """``clip((x + 1) / 2, 0, 1)``: the derivative of :func:`sparse_plus`."""
    x = inexact(x, "sparse_sigmoid")
    return fnp.multiply(0.5, fnp.clip(fnp.add(x, 1.0), 0.0, 2.0))


@custom_jvp
def _log1mexp(x):
    # log(-expm1(-x)) is accurate for small x, log1p(-exp(-x)) for large (Maechler 2012).
    c = float(np.log(2.0))
    return fnp.where(fnp.less(x, c), fnp.log(fnp.negative(fnp.expm1(fnp.negative(x)))),
                     fnp.log1p(fnp.negative(fnp.exp(fnp.negative(x)))))


_log1mexp.defjvps(lambda t, ans, x: fnp.divide(t, fnp.expm1(x)))


def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x >= 0``, accurate at both ends; the derivative is
    ``1 / expm1(x)`` (as jax's custom rule)."""
    return _log1mexp(inexact(x, "log1mexp"))
