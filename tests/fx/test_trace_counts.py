"""How often a user's function is called (traced) under fx's transformations, against jax's
count for the same calls: programs that count or print in Python see the same numbers."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fx
import fx.numpy as fnp


def _counted_jit(lib, np_):
    calls = []

    def f(x):
        calls.append(1)
        return np_.sin(x) * 2.0

    return calls, f


def _counted_custom_jvp(lib, np_):
    calls = []

    @lib.custom_jvp
    def f(x):
        calls.append("f")
        return np_.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        calls.append("jvp")
        (x,), (t,) = primals, tangents
        return np_.sin(x), np_.cos(x) * t

    return calls, f


def _counted_custom_vjp(lib, np_):
    calls = []

    @lib.custom_vjp
    def f(x):
        calls.append("f")
        return np_.sin(x)

    def fwd(x):
        calls.append("fwd")
        return np_.sin(x), x

    def bwd(x, g):
        calls.append("bwd")
        return (np_.cos(x) * g,)

    f.defvjp(fwd, bwd)
    return calls, f


X = np.linspace(0.1, 1.0, 4).astype(np.float32)
Y = np.linspace(0.1, 1.0, 6).astype(np.float32)

# Each scenario: (maker of (calls, f), the calls made with lib (fx or jax) and np_).
SCENARIOS: dict[str, tuple[Callable, Callable]] = {
    "jit_repeat": (_counted_jit, lambda lib, np_, f: [lib.jit(f)(X) for _ in range(3)]),
    "jit_new_shape": (_counted_jit, lambda lib, np_, f: (
        lambda g: [g(X), g(Y), g(X), g(X[:2].astype(np.float64))])(lib.jit(f))),
    "jit_grad": (_counted_jit, lambda lib, np_, f: [
        lib.jit(lib.grad(lambda x: np_.sum(f(x))))(X) for _ in range(2)]),
    "jit_vmap": (_counted_jit, lambda lib, np_, f: lib.jit(lib.vmap(f))(X)),
    "custom_jvp_eager": (_counted_custom_jvp, lambda lib, np_, f: f(X)),
    "custom_jvp_jit": (_counted_custom_jvp, lambda lib, np_, f: lib.jit(f)(X)),
    "custom_jvp_grad": (_counted_custom_jvp, lambda lib, np_, f: lib.grad(
        lambda x: np_.sum(f(x)))(X)),
    "custom_jvp_jvp": (_counted_custom_jvp, lambda lib, np_, f: lib.jvp(f, (X,), (X,))),
    "custom_jvp_jit_grad": (_counted_custom_jvp, lambda lib, np_, f: lib.jit(lib.grad(
        lambda x: np_.sum(f(x))))(X)),
    "custom_jvp_vmap_grad": (_counted_custom_jvp, lambda lib, np_, f: lib.vmap(lib.grad(
        lambda x: f(x)))(X)),
    "custom_vjp_eager": (_counted_custom_vjp, lambda lib, np_, f: f(X)),
    "custom_vjp_grad": (_counted_custom_vjp, lambda lib, np_, f: lib.grad(
        lambda x: np_.sum(f(x)))(X)),
    "custom_vjp_jit_grad": (_counted_custom_vjp, lambda lib, np_, f: lib.jit(lib.grad(
        lambda x: np_.sum(f(x))))(X)),
    "custom_vjp_vmap_grad": (_counted_custom_vjp, lambda lib, np_, f: lib.vmap(lib.grad(
        lambda x: f(x)))(X)),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_calls_as_jax(name):
    make, run = SCENARIOS[name]
    fx_calls, f_fx = make(fx, fnp)
    jax_calls, f_jax = make(jax, jnp)
    run(fx, fnp, f_fx)
    run(jax, jnp, f_jax)
    assert fx_calls == jax_calls, f"{name}: fx called {fx_calls}, jax {jax_calls}"
