"""Reference test: fx.grad of a small MLP loss over a dict of parameters matches jax.grad —
to 1e-5 in float32 and 1e-10 in float64 — for a regression and a classification loss, written
with fx.numpy (matmul, mean, sum) and with fx.lax.dot_general; also value_and_grad, jit(grad)
and a few SGD steps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_allclose

import fx
import fx.lax as flax
import fx.numpy as fnp

TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}
SIZES = [5, 16, 8, 3]


def init(seed, dtype):
    rng = np.random.default_rng(seed)
    return {
        f"layer{i}": {
            "w": (rng.standard_normal((m, n)) / np.sqrt(m)).astype(dtype),
            "b": (0.1 * rng.standard_normal(n)).astype(dtype),
        }
        for i, (m, n) in enumerate(zip(SIZES[:-1], SIZES[1:]))
    }


def data(seed, dtype, n=7):
    rng = np.random.default_rng(seed + 100)
    x = rng.standard_normal((n, SIZES[0])).astype(dtype)
    y = rng.standard_normal((n, SIZES[-1])).astype(dtype)
    labels = rng.integers(0, SIZES[-1], n)
    return x, y, np.eye(SIZES[-1], dtype=dtype)[labels]


def forward(np_, matmul, params, x):
    h = x
    for i in range(len(params)):
        layer = params[f"layer{i}"]
        h = matmul(h, layer["w"]) + layer["b"]
        if i < len(params) - 1:
            h = np_.tanh(h)
    return h


def mse(np_, matmul):
    def loss(params, x, y):
        return np_.mean((forward(np_, matmul, params, x) - y) ** 2)

    return loss


def cross_entropy(np_, matmul, stop_gradient):
    def loss(params, x, onehot):
        logits = forward(np_, matmul, params, x)
        m = stop_gradient(np_.max(logits, axis=-1, keepdims=True))
        lse = np_.log(np_.sum(np_.exp(logits - m), axis=-1, keepdims=True)) + m
        return -np_.mean(np_.sum(onehot * (logits - lse), axis=-1))

    return loss


def _dot_general(a, b):
    # (n, k) x (k, m): contract a's last axis with b's first, no batch dimensions.
    return flax.dot_general(a, b, (((a.ndim - 1,), (0,)), ((), ())))


FX = {
    "mse/matmul": mse(fnp, fnp.matmul),
    "mse/dot_general": mse(fnp, _dot_general),
    "xent/matmul": cross_entropy(fnp, fnp.matmul, fx.stop_gradient),
}
JAX = {
    "mse/matmul": mse(jnp, jnp.matmul),
    "mse/dot_general": mse(jnp, jnp.matmul),
    "xent/matmul": cross_entropy(jnp, jnp.matmul, jax.lax.stop_gradient),
}


def _target(name, x, y, onehot):
    return onehot if name.startswith("xent") else y


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(FX))
def test_mlp_grad_matches_jax(name, dtype):
    params = init(0, dtype)
    x, y, onehot = data(0, dtype)
    t = _target(name, x, y, onehot)
    value, grads = fx.value_and_grad(FX[name])(params, x, t)
    want_value, want = jax.jit(jax.value_and_grad(JAX[name]))(params, x, t)
    assert_allclose(value, want_value, **TOL[dtype], what="loss")
    assert_allclose(grads, want, **TOL[dtype], what="grads")
    assert sorted(grads) == sorted(params) and sorted(grads["layer0"]) == ["b", "w"]
    assert all(g.dtype == dtype for g in jax.tree_util.tree_leaves(grads))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_mlp_jit_grad_matches_jax(dtype):
    params = init(1, dtype)
    x, y, _ = data(1, dtype)
    got = fx.jit(fx.grad(FX["mse/matmul"]))(params, x, y)
    want = jax.jit(jax.grad(JAX["mse/matmul"]))(params, x, y)
    assert_allclose(got, want, **TOL[dtype], what="jit(grad)")


def test_mlp_input_gradient_and_argnums():
    params = init(2, np.float64)
    x, y, _ = data(2, np.float64)
    got = fx.grad(FX["mse/matmul"], argnums=(0, 1))(params, x, y)
    want = jax.jit(jax.grad(JAX["mse/matmul"], argnums=(0, 1)))(params, x, y)
    assert_allclose(got, want, **TOL[np.float64], what="d/dparams, d/dx")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_sgd_trajectory_matches_jax(dtype):
    lr = dtype(0.1)

    def steps(value_and_grad, loss, tree_map, params, x, y):
        losses, vg = [], value_and_grad(loss)
        for _ in range(5):
            value, g = vg(params, x, y)
            losses.append(float(value))
            params = tree_map(lambda p, d: p - lr * d, params, g)
        return params, losses

    params = init(3, dtype)
    x, y, _ = data(3, dtype)
    p_fx, l_fx = steps(fx.value_and_grad, FX["mse/matmul"], fx.tree_util.tree_map, params, x, y)
    p_jx, l_jx = steps(lambda f: jax.jit(jax.value_and_grad(f)), JAX["mse/matmul"],
                       jax.tree_util.tree_map, params, x, y)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else TOL[np.float64]
    np.testing.assert_allclose(l_fx, l_jx, **tol)
    assert l_fx[-1] < l_fx[0], "the loss goes down"
    assert_allclose(p_fx, p_jx, **tol, what="parameters after 5 steps")
