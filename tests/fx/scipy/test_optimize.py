"""fx.scipy.optimize.minimize (BFGS with jax's zoom line search) against
jax.scipy.optimize.minimize: the same iterates, counts and status on Rosenbrock and a
quadratic, eagerly and under jit (and vmap); SciPy's BFGS finds the same minimum."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.optimize as jso
import numpy as np
import pytest
import scipy.optimize

import fx
import fx.numpy as fnp
import fx.scipy.optimize as fso
from tests.harness import assert_allclose

A = np.array([[3.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 1.0]])
B = np.array([1.0, -2.0, 0.5])


def rosenbrock(np_):
    return lambda x: np_.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def quadratic(np_):
    return lambda x, a, b: 0.5 * x @ (np_.asarray(a) @ x) - np_.asarray(b) @ x


CASES = {
    "rosenbrock": (rosenbrock, np.array([-1.2, 1.0]), ()),
    "quadratic": (quadratic, np.array([2.0, 1.0, -1.0]), (A, B)),
}


def _jax_result(name: str):
    make, x0, args = CASES[name]
    return jax.jit(lambda x: jso.minimize(make(jnp), x, args, method="BFGS"))(jnp.asarray(x0))


def _check(got, want, what: str):
    assert type(got).__name__ == "OptimizeResults" and got._fields == want._fields
    for field in ("nit", "nfev", "njev", "status", "success"):
        assert int(getattr(got, field)) == int(getattr(want, field)), f"{what}: {field}"
    for field in ("x", "fun", "jac", "hess_inv"):
        assert_allclose(getattr(got, field), getattr(want, field), rtol=1e-8, atol=1e-10,
                        what=f"{what}: {field}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_minimize_matches_jax_eager_and_jit(name):
    make, x0, args = CASES[name]
    want = _jax_result(name)
    eager = fso.minimize(make(fnp), fnp.asarray(x0), args, method="BFGS")
    _check(eager, want, f"{name} eager")
    jitted = fx.jit(lambda x: fso.minimize(make(fnp), x, args, method="bfgs"))(fnp.asarray(x0))
    _check(jitted, want, f"{name} jit")
    if bool(want.success):  # jax's zoom gives up on Rosenbrock from (-1.2, 1): status 3
        sp = scipy.optimize.minimize(make(np), x0, args, method="BFGS")
        np.testing.assert_allclose(np.asarray(eager.x), sp.x, atol=1e-4)


def test_minimize_options_vmap_and_float32():
    make, x0, _ = CASES["rosenbrock"]
    opts = {"maxiter": 5, "gtol": 1e-3, "line_search_maxiter": 6}
    got = fso.minimize(make(fnp), fnp.asarray(x0), method="BFGS", options=opts)
    want = jax.jit(lambda x: jso.minimize(make(jnp), x, method="BFGS", options=opts))(
        jnp.asarray(x0))
    _check(got, want, "maxiter")
    assert int(got.status) == 1 and not bool(got.success)
    bs = np.stack([B, -2 * B])  # batched over the quadratic's linear term
    quad = quadratic(fnp)
    batched = fx.vmap(lambda b: fso.minimize(quad, fnp.zeros(3), (A, b), method="BFGS").x)(
        fnp.asarray(bs))
    for row, b in zip(np.asarray(batched), bs):
        assert_allclose(row, fso.minimize(quad, fnp.zeros(3), (A, b), method="BFGS").x,
                        rtol=1e-8, atol=1e-10)
    r32 = fso.minimize(quadratic(fnp), fnp.asarray(CASES["quadratic"][1], np.float32),
                       (A.astype(np.float32), B.astype(np.float32)), method="BFGS")
    assert r32.x.dtype == np.float32 and r32.hess_inv.dtype == np.float32
    np.testing.assert_allclose(np.asarray(r32.x), np.linalg.solve(A, B), atol=1e-4)


def test_minimize_errors():
    with pytest.raises(TypeError, match="tuple"):
        fso.minimize(rosenbrock(fnp), fnp.zeros(2), [1], method="BFGS")
    with pytest.raises(ValueError, match="not recognized"):
        fso.minimize(rosenbrock(fnp), fnp.zeros(2), method="Nelder-Mead")
