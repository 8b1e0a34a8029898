"""LoRA: low-rank adapters beside a frozen dense weight, as stax layers (Hu et al. 2021);
with an NF4 base, QLoRA (Dettmers et al. 2023).

A LoRA dense layer computes

    y = x @ W + b + (alpha / rank) · (x @ A) @ B

with ``W`` (``(in, out)``, a float array or an :class:`fx.quant.nf4.NF4Tensor`) and ``b``
frozen: they live in the layer's closure, constants of every traced program, so the layer's
parameters — what ``grad`` differentiates and an optimizer updates — are the adapters
``(A, B)`` alone. ``A`` (``(in, rank)``) starts Gaussian with variance ``1/in``, ``B``
(``(rank, out)``) at zero, so the adapted network starts as the base network. With an NF4
base the product runs on the fused dequantize-in-GEMM kernel under ``fx.jit``
(``fx.quant.nf4.matmul``) and its gradient reaches ``x``, never the 4-bit codes.

>>> import numpy as np, fx
>>> from fx.example_libraries import lora, stax
>>> from fx.quant import nf4
>>> w = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
>>> init, apply = stax.serial(lora.Dense(nf4.quantize(w, block_size=16), rank=2), stax.Relu)
>>> out_shape, params = init(fx.random.key(0), (-1, 16))
>>> out_shape, lora.count_parameters(params)
((-1, 8), 48)
"""

from __future__ import annotations

import numpy as np

import fx.numpy as fnp
from fx import random, tree_util
from fx.core import get_aval
from fx.quant import nf4

__all__ = ["Dense", "base_bytes", "count_parameters", "dense"]


def _shape(w) -> tuple[int, ...]:
    return tuple(w.shape)


def dense(x, base, adapters, scale: float, bias=None):
    """``x @ base + bias + scale · (x @ A) @ B`` with ``adapters = (A, B)``; ``base`` a float
    array or an ``NF4Tensor`` (its product the fused kernel's)."""
    a, b = adapters
    x = fnp.asarray(x)
    y = nf4.matmul(x, base) if isinstance(base, nf4.NF4Tensor) else fnp.dot(x, base)
    if bias is not None:
        y = y + bias
    return y + scale * fnp.dot(fnp.dot(x, a), b)


def Dense(base, bias=None, *, rank: int = 8, alpha: float | None = None):  # noqa: N802
    """A stax layer: the frozen dense layer ``(base, bias)`` plus a rank-``rank`` adapter
    scaled by ``alpha / rank`` (``alpha`` defaults to ``rank``: scale 1).

    Args:
      base: the ``(in, out)`` weight, a float array or an ``NF4Tensor``
        (``fx.quant.nf4.quantize(w)``).
      bias: ``(out,)`` or ``None``; frozen too.
      rank: the adapters' inner dimension, ``1 <= rank <= min(in, out)``.
      alpha: the LoRA scale's numerator.

    Returns:
      ``(init_fun, apply_fun)``; the parameters are ``(A, B)``.
    """
    shape = _shape(base)
    if len(shape) != 2:
        raise ValueError(f"lora.Dense: the base weight must be 2-D (in, out), got {shape}")
    k, n = shape
    if not isinstance(rank, (int, np.integer)) or not 1 <= rank <= min(k, n):
        raise ValueError(f"lora.Dense: rank must be an integer in [1, {min(k, n)}] for a "
                         f"({k}, {n}) weight, got {rank!r}")
    if bias is not None and _shape(bias) != (n,):
        raise ValueError(f"lora.Dense: bias {_shape(bias)} must be ({n},) for a ({k}, {n}) "
                         "weight")
    scale = float(rank if alpha is None else alpha) / rank
    if not isinstance(base, nf4.NF4Tensor):
        base = np.asarray(base)

    def init_fun(rng, input_shape):
        if input_shape[-1] != k:
            raise ValueError(f"lora.Dense: input shape {tuple(input_shape)} must end in the "
                             f"base weight's input dimension {k}")
        a = random.normal(rng, (k, rank), dtype=np.float32) * np.float32(1 / np.sqrt(k))
        b = fnp.zeros((rank, n), np.float32)
        return tuple(input_shape[:-1]) + (n,), (a, b)

    def apply_fun(params, inputs, **kwargs):
        return dense(inputs, base, params, scale, bias)

    return init_fun, apply_fun


def count_parameters(params) -> int:
    """The number of trainable values in a parameter pytree."""
    return sum(int(np.prod(get_aval(p).shape)) for p in tree_util.tree_leaves(params))


def base_bytes(bases) -> int:
    """Bytes of a sequence of frozen base weights (``NF4Tensor.nbytes`` or array bytes)."""
    return sum(b.nbytes if isinstance(b, nf4.NF4Tensor) else int(np.asarray(b).nbytes)
               for b in bases)
