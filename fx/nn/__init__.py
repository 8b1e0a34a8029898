"""``fx.nn``: activation functions, softmax and friends, one-hot encoding, standardization,
attention, parameter initializers (``fx.nn.initializers``) and losses (``fx.nn.losses``).

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

Modules: ``activations`` (elementwise activations and ``glu``), ``normalization`` (softmax,
logsumexp, standardize), ``encoding`` (one_hot), ``attention`` (dot_product_attention),
``initializers`` and ``losses``.
"""

from fx.nn import initializers, losses
from fx.nn.activations import (
    celu,
    elu,
    gelu,
    glu,
    hard_sigmoid,
    hard_silu,
    hard_swish,
    hard_tanh,
    identity,
    leaky_relu,
    log1mexp,
    log_sigmoid,
    mish,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    soft_sign,
    softplus,
    sparse_plus,
    sparse_sigmoid,
    squareplus,
    swish,
    tanh,
)
from fx.nn.attention import dot_product_attention
from fx.nn.encoding import one_hot
from fx.nn.normalization import log_softmax, logmeanexp, logsumexp, softmax, standardize

# `from fx.nn import *` gives the activations, softmax and friends, one_hot and standardize, as
# before the package split; the other names are reached as fx.nn.<name>.
__all__ = [
    "celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
    "leaky_relu", "log_sigmoid", "log_softmax", "logsumexp", "mish", "one_hot", "relu",
    "relu6", "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus", "standardize",
    "swish",
]
