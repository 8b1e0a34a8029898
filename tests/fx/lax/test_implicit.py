"""custom_root (fx/lax/implicit.py) against jax.lax.custom_root: the root, its derivatives by
the implicit function theorem in forward and reverse mode, with respect to closed-over values,
under vmap and jit, with has_aux."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_allclose

import fx
import fx.lax as lax
import fx.numpy as fnp

F32 = np.float32


def _sqrt(lax_mod, custom_root, has_aux=False):
    def sqrt(a):
        def f(x):
            return x * x - a

        def newton(f, x):
            x = lax_mod.fori_loop(0, 30, lambda i, x: x - f(x) / (2 * x), x)
            return (x, x * 0 + 7) if has_aux else x

        return custom_root(f, F32(1.0), newton, lambda g, y: y / g(F32(1.0)), has_aux=has_aux)
    return sqrt


FX_SQRT, JAX_SQRT = _sqrt(lax, lax.custom_root), _sqrt(jax.lax, jax.lax.custom_root)


def test_scalar_root_and_derivatives():
    a = F32(4.0)
    assert_allclose(FX_SQRT(a), JAX_SQRT(a))
    assert_allclose(fx.grad(FX_SQRT)(a), jax.grad(JAX_SQRT)(a))
    assert_allclose(fx.jvp(FX_SQRT, (a,), (F32(1.0),)), jax.jvp(JAX_SQRT, (a,), (F32(1.0),)))
    av = np.array([1.0, 4.0, 9.0, 2.0], F32)
    assert_allclose(fx.vmap(fx.grad(FX_SQRT))(av), jax.vmap(jax.grad(JAX_SQRT))(av))
    assert_allclose(fx.jit(fx.grad(FX_SQRT))(a), jax.grad(JAX_SQRT)(a))
    assert_allclose(fx.grad(fx.grad(FX_SQRT))(a), jax.grad(jax.grad(JAX_SQRT))(a), rtol=1e-4)


def test_has_aux():
    f, g = _sqrt(lax, lax.custom_root, True), _sqrt(jax.lax, jax.lax.custom_root, True)
    a = F32(9.0)
    assert_allclose(f(a), g(a))
    assert_allclose(fx.grad(lambda a: f(a)[0])(a), jax.grad(lambda a: g(a)[0])(a))


@pytest.mark.parametrize("wrt", [0, 1])
def test_linear_system_closure(wrt):
    """Root of A x - b by gradient steps; derivatives in A and b against jax."""
    def make(lax_mod, np_mod, custom_root):
        def solve_for(A, b):
            def f(x):
                return A @ x - b

            def descent(f, x):
                return lax_mod.fori_loop(0, 300, lambda i, x: x - 0.2 * f(x), x)

            return custom_root(f, np_mod.zeros(2, F32), descent,
                               lambda g, y: y / g(np_mod.ones(2, F32))).sum()  # A diagonal
        return solve_for

    A = np.array([[2.0, 0.0], [0.0, 3.0]], F32)
    b = np.array([1.0, 2.0], F32)
    got = fx.grad(make(lax, fnp, lax.custom_root), wrt)(A, b)
    want = jax.grad(make(jax.lax, jnp, jax.lax.custom_root), wrt)(A, b)
    assert_allclose(got, want, rtol=1e-4, atol=1e-5)
