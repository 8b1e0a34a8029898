"""LoRA/QLoRA stax layers: the adapted layer and its gradients against a jax reference (float
and NF4 bases), the zero-initialized update, the frozen base (no gradient, no float copy of
an NF4 weight in the program) and the errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fx
from fx.example_libraries import lora, stax
from fx.quant import nf4


def _arrays(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _reference(w, bias, scale):
    def f(params, x, c):
        a, b = params
        y = x @ w + bias + scale * (x @ a) @ b
        return jnp.sum(jnp.tanh(y) * c)
    return f


@pytest.mark.parametrize("quantized", [False, True])
def test_gradients_match_jax_on_a_reference(quantized):
    w, bias, a, b, x, c = _arrays(0, (32, 16), (16,), (32, 4), (4, 16), (5, 32), (5, 16))
    base = nf4.quantize(w, block_size=16) if quantized else w
    w_ref = nf4.dequantize(base) if quantized else w
    init, apply = lora.Dense(base, bias, rank=4, alpha=8.0)
    params = (fx.numpy.asarray(a), fx.numpy.asarray(b))

    def loss(params, x):
        return fx.numpy.sum(fx.numpy.tanh(apply(params, x)) * c)

    ref = _reference(w_ref, bias, 2.0)
    tol = dict(rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(float(loss(params, x)), float(ref((a, b), x, c)), rtol=1e-5)
    got = fx.grad(loss, argnums=(0, 1))(params, x)
    want = jax.jit(jax.grad(ref, argnums=(0, 1)))((a, b), x, c)
    for g_, w_ in zip(tree_leaves(got), tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g_), np.asarray(w_), **tol)
    if quantized:  # the fused kernel's product under jit, and its gradient
        jitted = fx.jit(fx.grad(loss, argnums=(0, 1)))(params, x)
        for g_, w_ in zip(tree_leaves(jitted), tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g_), np.asarray(w_), **tol)


def tree_leaves(t):
    return jax.tree_util.tree_leaves(jax.tree_util.tree_map(np.asarray, t))


def test_starts_as_the_base_and_counts_only_adapters():
    (w,) = _arrays(1, (24, 8))
    q = nf4.quantize(w, block_size=8)
    init, apply = stax.serial(lora.Dense(q, rank=3), stax.Relu)
    out_shape, params = init(fx.random.key(0), (-1, 24))
    assert out_shape == (-1, 8)
    a, b = params[0]
    assert a.shape == (24, 3) and b.shape == (3, 8) and not np.any(np.asarray(b))
    assert np.asarray(a).std() > 0
    assert lora.count_parameters(params) == 3 * (24 + 8)
    (x,) = _arrays(2, (4, 24))
    np.testing.assert_allclose(np.asarray(apply(params, x)),
                               np.maximum(x @ nf4.dequantize(q), 0), rtol=1e-5, atol=1e-5)
    assert lora.base_bytes([q]) == q.nbytes == w.size // 2 + 4 * (w.size // 8)


def test_the_nf4_base_gets_no_gradient_and_no_float_copy():
    (w, x) = _arrays(3, (64, 32), (2, 64))
    q = nf4.quantize(w, block_size=32)
    _, apply = lora.Dense(q, rank=2)
    params = tuple(fx.numpy.asarray(p) for p in _arrays(4, (64, 2), (2, 32)))

    def loss(params, x):
        return fx.numpy.sum(apply(params, x) ** 2)

    grads = fx.grad(loss, argnums=(0, 1))(params, x)
    assert [g.shape for g in tree_leaves(grads[0])] == [(64, 2), (2, 32)]
    assert grads[1].shape == (2, 64)
    # No value of the weight's shape in the gradient program: no dequantized copy, no weight
    # gradient (the input's cotangent is the transposed NF4 product).
    closed = fx.make_jaxpr(fx.grad(loss, argnums=(0, 1)))(params, x)
    shapes = {tuple(v.aval.shape) for e in closed.jaxpr.eqns for v in e.outvars}
    assert (64, 32) not in shapes
    assert sum(e.primitive is nf4.nf4_dot_p for e in closed.jaxpr.eqns) == 2


def test_bad_configurations_get_clear_errors():
    (w,) = _arrays(5, (8, 4))
    with pytest.raises(ValueError, match=r"rank must be an integer in \[1, 4\]"):
        lora.Dense(w, rank=5)
    with pytest.raises(ValueError, match="must be 2-D"):
        lora.Dense(w.reshape(2, 4, 4), rank=1)
    with pytest.raises(ValueError, match=r"bias \(3,\) must be \(4,\)"):
        lora.Dense(w, np.zeros(3, np.float32), rank=1)
    init, _ = lora.Dense(w, rank=2)
    with pytest.raises(ValueError, match="input dimension 8"):
        init(fx.random.key(0), (-1, 7))
