"""Composition stress tests: transformations of transformations agree with each other and with
jax — nested grads to third order, jvp-of-grad against Hessian-vector products, jacfwd against
jacrev, grad/jit/vmap in every order, and ``check_grads`` at order 2 on composite functions.

All in float64 with explicit numpy dtypes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_allclose
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.numpy as fnp
from fx.test_util import check_grads

A = np.array([[1.0, -0.5, 0.25], [0.3, 2.0, -1.0], [0.0, 0.7, 1.5]])

# Scalar -> scalar composites (np_ is fx.numpy or jax.numpy), evaluated away from kinks.
SCALAR = {
    "sin_gauss": lambda np_, x: np_.sin(x) * np_.exp(-x * x),
    "tanh_log1p": lambda np_, x: np_.tanh(x) ** 2 + np_.log1p(x * x),
    "rational_pow": lambda np_, x: x / (1.0 + x * x) ** 1.5,
    "logaddexp": lambda np_, x: np_.logaddexp(x, 2.0 * x),
    "sqrt_cos": lambda np_, x: np_.sqrt(1.0 + x**2) * np_.cos(x),
    "where": lambda np_, x: np_.where(x > 0, x**3, np_.sin(x)),
    "softplus": lambda np_, x: np_.log(1.0 + np_.exp(x)),
    "reuse": lambda np_, x: x * x + np_.sin(x) * x,
}

# Vector -> scalar composites.
VEC_SCALAR = {
    "softmax_dot": lambda np_, x: np_.sum(np_.exp(x) / np_.sum(np_.exp(x)) * x),
    "norm": lambda np_, x: np_.sqrt(np_.sum(x**2)),
    "quadratic_tanh": lambda np_, x: np_.tanh(x) @ np_.asarray(A) @ np_.tanh(x),
    "prod_sin": lambda np_, x: np_.prod(np_.sin(x) + 2.0),
    "max_mix": lambda np_, x: np_.max(x * x) + np_.mean(np_.cos(x)),
}

# Vector -> vector composites.
VEC_VEC = {
    "matvec_sin": lambda np_, x: np_.sin(np_.asarray(A) @ x),
    "outer_sum": lambda np_, x: np_.sum(np_.outer(x, np_.exp(x)), axis=0),
    "cumulative": lambda np_, x: np_.cumsum(x * x),
    "normalize": lambda np_, x: x / np_.sqrt(np_.sum(x * x)),
}

X0 = np.float64(0.7)
XV = np.array([0.4, -1.1, 0.9])


def _fx(table, name):
    return lambda *a: table[name](fnp, *a)


def _jax(table, name):
    return lambda *a: table[name](jnp, *a)


def jit_oracle(f):
    """The jax oracle, compiled once: op-by-op jax compiles every primitive separately, which
    is far slower than fx on small inputs."""
    return jax.jit(f)


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_nested_grads_to_third_order_match_jax(name):
    g, gj = _fx(SCALAR, name), _jax(SCALAR, name)
    for order in range(1, 4):
        g, gj = fx.grad(g), jax.grad(gj)
        oracle = jit_oracle(gj)
        for x in (X0, np.float64(-1.3)):
            assert_allclose(g(x), oracle(x), rtol=1e-10, atol=1e-12, what=f"order {order} at {x}")


V = np.array([0.5, -2.0, 1.0])


@pytest.mark.parametrize("name", sorted(VEC_SCALAR))
def test_jvp_of_grad_matches_jax_and_reverse_over_forward(name):
    f, fj = _fx(VEC_SCALAR, name), _jax(VEC_SCALAR, name)
    _, hvp = fx.jvp(fx.grad(f), (XV,), (V,))
    want = jit_oracle(lambda x: jax.jvp(jax.grad(fj), (x,), (V,))[1])(XV)
    assert_allclose(hvp, want, rtol=1e-10, atol=1e-12, what="jvp(grad) vs jax")
    rof = fx.grad(lambda x: fx.jvp(f, (x,), (V,))[1])(XV)
    assert_allclose(rof, hvp, rtol=1e-10, atol=1e-12, what="grad(jvp) vs jvp(grad)")


@pytest.mark.parametrize("name", sorted(VEC_SCALAR))
def test_jvp_of_grad_is_hessian_vector_product(name):
    f, fj = _fx(VEC_SCALAR, name), _jax(VEC_SCALAR, name)
    _, hvp = fx.jvp(fx.grad(f), (XV,), (V,))
    h = fx.hessian(f)(XV)
    assert_allclose(hvp, np.asarray(h) @ V, rtol=1e-10, atol=1e-12, what="jvp(grad) vs H v")
    assert_allclose(h, jit_oracle(jax.hessian(fj))(XV), rtol=1e-10, atol=1e-12,
                    what="hessian vs jax")


@pytest.mark.parametrize("name", sorted(VEC_VEC))
def test_jacfwd_equals_jacrev_equals_jax(name):
    f, fj = _fx(VEC_VEC, name), _jax(VEC_VEC, name)
    fwd, rev = fx.jacfwd(f)(XV), fx.jacrev(f)(XV)
    want = jit_oracle(jax.jacfwd(fj))(XV)
    assert_allclose(fwd, rev, rtol=1e-12, atol=1e-14, what="jacfwd vs jacrev")
    assert_allclose(fwd, want, rtol=1e-10, atol=1e-12, what="jacfwd vs jax")


def test_jacobian_of_jacobian_matches_jax():
    f, fj = _fx(VEC_VEC, "matvec_sin"), _jax(VEC_VEC, "matvec_sin")
    for a, b in [("jacfwd", "jacrev"), ("jacrev", "jacfwd"), ("jacrev", "jacrev")]:
        got = getattr(fx, a)(getattr(fx, b)(f))(XV)
        want = jit_oracle(getattr(jax, a)(getattr(jax, b)(fj)))(XV)
        assert_allclose(got, want, rtol=1e-10, atol=1e-12, what=f"{a}({b})")


# --- jit / vmap / grad in every order -----------------------------------------------------------
# Few functions: each distinct jaxpr costs a C compile.

JIT_CASES = ["softmax_dot", "quadratic_tanh"]


@pytest.mark.parametrize("name", JIT_CASES)
def test_grad_jit_orders_agree(name):
    f, fj = _fx(VEC_SCALAR, name), _jax(VEC_SCALAR, name)
    want = jit_oracle(jax.grad(fj))(XV)
    variants = {
        "grad(f)": fx.grad(f),
        "grad(jit(f))": fx.grad(fx.jit(f)),
        "jit(grad(f))": fx.jit(fx.grad(f)),
        "jit(grad(jit(f)))": fx.jit(fx.grad(fx.jit(f))),
    }
    for what, g in variants.items():
        assert_allclose(g(XV), want, rtol=1e-10, atol=1e-12, what=what)


def test_vmap_grad_jit_compositions_agree():
    f, fj = _fx(VEC_SCALAR, "quadratic_tanh"), _jax(VEC_SCALAR, "quadratic_tanh")
    xs = np.stack([XV, XV[::-1], XV * 2.0, -XV])
    want = jit_oracle(jax.vmap(jax.grad(fj)))(xs)
    variants = {
        "vmap(grad(f))": fx.vmap(fx.grad(f)),
        "vmap(grad(jit(f)))": fx.vmap(fx.grad(fx.jit(f))),
        "jit(vmap(grad(f)))": fx.jit(fx.vmap(fx.grad(f))),
        "vmap(jit(grad(f)))": fx.vmap(fx.jit(fx.grad(f))),
    }
    for what, g in variants.items():
        assert_allclose(g(xs), want, rtol=1e-10, atol=1e-12, what=what)
    # grad of a vmapped (batched) loss: the sum of per-example gradients.
    total = fx.grad(lambda xs: fnp.sum(fx.vmap(f)(xs)))(xs)
    assert_allclose(total, want, rtol=1e-10, atol=1e-12, what="grad(vmap(f))")


def test_second_order_through_jit():
    f, fj = _fx(SCALAR, "sin_gauss"), _jax(SCALAR, "sin_gauss")
    want = jit_oracle(jax.grad(jax.grad(fj)))(X0)
    assert_allclose(fx.grad(fx.grad(fx.jit(f)))(X0), want, rtol=1e-10, what="grad(grad(jit))")
    assert_allclose(fx.jit(fx.grad(fx.grad(f)))(X0), want, rtol=1e-10, what="jit(grad(grad))")


# --- numerical gradient checks ------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_check_grads_order2_scalar(name):
    check_grads(_fx(SCALAR, name), (X0,), order=2)


@pytest.mark.parametrize("name", sorted(VEC_SCALAR))
def test_check_grads_order2_vector_to_scalar(name):
    check_grads(_fx(VEC_SCALAR, name), (XV,), order=2)


@pytest.mark.parametrize("name", sorted(VEC_VEC))
def test_check_grads_order2_vector_to_vector(name):
    check_grads(_fx(VEC_VEC, name), (XV,), order=2)


def test_check_grads_order2_pytree_arguments():
    def f(p, x):
        return {"y": fnp.tanh(p["w"] @ x + p["b"]), "s": fnp.sum(p["b"] ** 2)}

    p = {"w": A * 0.5, "b": np.array([0.1, -0.2, 0.3])}
    check_grads(f, (p, XV), order=2)


_PROPERTY = ("sin_gauss", "tanh_log1p", "softplus", "reuse")
_PROPERTY_ORACLES: dict = {}


@given(x=st.floats(-2.0, 2.0))
def test_grad_of_composites_matches_jax_everywhere(x):
    x = np.float64(x)
    for name in _PROPERTY:
        if name not in _PROPERTY_ORACLES:
            _PROPERTY_ORACLES[name] = jit_oracle(jax.grad(_jax(SCALAR, name)))
        g = fx.grad(_fx(SCALAR, name))(x)
        assert_allclose(g, _PROPERTY_ORACLES[name](x), rtol=1e-10, atol=1e-12, what=name)
