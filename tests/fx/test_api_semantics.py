"""Semantics that fx shares with jax, each checked against jax itself (issue 13, part A).

Each case is a program ported from jax unchanged but for its imports, and what it does in fx
(values, errors, retracing) is compared with what it does in jax.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fx
import fx.numpy as fnp

X = np.linspace(0.1, 1.0, 4).astype(np.float32)


def close(a, b, rtol=2e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-7)


# --- A7: checkpoints nested under grad --------------------------------------------------------


def _nested_checkpoints(checkpoint, np_, depth: int):
    g = lambda x: np_.sin(x) * x  # noqa: E731
    for _ in range(depth):
        g = (lambda inner: checkpoint(lambda x: inner(x) * x))(g)
    return lambda x: np_.sum(g(x))


@pytest.mark.parametrize("depth", [2, 3, 4])
def test_grad_through_nested_checkpoints(depth):
    f_fx, f_jax = _nested_checkpoints(fx.checkpoint, fnp, depth), \
        _nested_checkpoints(jax.checkpoint, jnp, depth)
    want = jax.grad(f_jax)(X)
    close(fx.grad(f_fx)(X), want)
    close(fx.jit(fx.grad(f_fx))(X), want)
    close(fx.vmap(fx.grad(f_fx))(X), jax.vmap(jax.grad(f_jax))(X))
    second = lambda g, f: g(lambda x: g(f)(x).sum())  # noqa: E731
    close(second(fx.grad, f_fx)(X), second(jax.grad, f_jax)(X), rtol=1e-5)

