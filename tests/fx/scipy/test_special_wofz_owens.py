"""fx.scipy.special.wofz (the complex Faddeeva function) and owens_t against jax and scipy:
values and dtypes in x64 and the default mode, special values, jvp/grad against jax and finite
differences, vmap against a loop, jit against eager."""

from __future__ import annotations

import doctest
import warnings

import jax
import jax.numpy as jnp
import jax.scipy.special as jss
import numpy as np
import pytest
import scipy.special as sps

import fx
import fx.numpy as fnp
import fx.scipy.special as fss
from fx.scipy.special import error_functions
from fx.test_util import check_grads
from tests.harness import same_mode

warnings.filterwarnings("ignore", category=RuntimeWarning)

# jax's functions run jitted: one XLA compile per call instead of one per primitive.
J_WOFZ, J_OWENS_T = jax.jit(jss.wofz), jax.jit(jss.owens_t)
RNG = np.random.default_rng(0)
# Points spread over scales 1e-3 .. 20 in all four quadrants.
Z = (RNG.normal(size=120) * np.exp(RNG.uniform(-3, 3, 120))
     + 1j * RNG.normal(size=120) * np.exp(RNG.uniform(-3, 2, 120)))
H = np.r_[RNG.normal(size=80) * 3, 0.0, 0.0, 1.0, -2.0]
A = np.r_[RNG.normal(size=80) * np.exp(RNG.uniform(-3, 3, 80)), 1.0, -3.0, 0.0, 1.0]


def _rel(got, want):
    got, want = np.asarray(got), np.asarray(want)
    ok = np.isfinite(want) & (np.abs(want) > 1e-300)
    return np.max(np.abs(got[ok] - want[ok]) / np.abs(want[ok]))


# (x64, rtol vs jax, rtol vs scipy in the upper half plane); below the real axis jax's and
# fx's reflection 2 exp(-z^2) - w(-z) cancels, in float32 to ~2e-5 of scipy.
@pytest.mark.parametrize("x64, rtol_jax, rtol_scipy", [(True, 1e-13, 1e-12),
                                                       (False, 2e-6, 2e-6)])
def test_wofz_values_match_jax_and_scipy(x64, rtol_jax, rtol_scipy):
    with same_mode(x64):
        z = Z if x64 else Z.astype(np.complex64)
        got = fss.wofz(fnp.asarray(z))
        want = J_WOFZ(z)
        assert got.dtype == want.dtype
        got = np.asarray(got)
        assert np.array_equal(np.isfinite(got), np.isfinite(np.asarray(want)))
        assert _rel(got, want) < rtol_jax
        up = Z.imag >= 0
        assert _rel(got[up], sps.wofz(Z[up])) < rtol_scipy
        for x in (np.array([0.5, 2.0], np.float32), np.array([1, 2], np.int32)):
            assert fss.wofz(fnp.asarray(x)).dtype == jax.eval_shape(jss.wofz, x).dtype


def test_wofz_special_values_match_jax():
    z = np.array([0, 1j, -1j, 30, -30, 30j, 1e-300, np.nan, 5 - 5j, -5 + 5j])
    got, want = np.asarray(fss.wofz(fnp.asarray(z))), np.asarray(J_WOFZ(z))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-300, equal_nan=True)


# jax's 13-point quadrature is within ~5e-9 (absolute) of scipy's Owen's T in float64.
@pytest.mark.parametrize("x64, rtol_jax", [(True, 1e-13), (False, 2e-6)])
def test_owens_t_values_match_jax_and_scipy(x64, rtol_jax):
    with same_mode(x64):
        h, a = (H, A) if x64 else (H.astype(np.float32), A.astype(np.float32))
        got = fss.owens_t(fnp.asarray(h), fnp.asarray(a))
        want = J_OWENS_T(h, a)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol_jax,
                                   atol=1e-7 if not x64 else 1e-16)
        np.testing.assert_allclose(np.asarray(got, np.float64), sps.owens_t(H, A),
                                   rtol=0, atol=1e-8 if x64 else 1e-6)
        i = np.array([1, 2, 3], np.int32)
        assert (fss.owens_t(fnp.asarray(i), 2.0).dtype
                == jax.eval_shape(jss.owens_t, i, 2.0).dtype)


def test_owens_t_special_values_match_jax():
    v = np.array([0.0, 1.0, -1.0, 0.5, 3.0, np.inf, -np.inf, np.nan])
    h, a = (g.ravel() for g in np.meshgrid(v, v, indexing="ij"))
    got = np.asarray(fss.owens_t(fnp.asarray(h), fnp.asarray(a)))
    want = np.asarray(J_OWENS_T(h, a))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-16, equal_nan=True)


def test_derivatives_match_jax_and_finite_differences():
    z = np.array([0.3 + 0.2j, -1.5 + 0.7j, 2.0 - 1.0j])
    t = np.array([1.0 - 0.5j, 0.2 + 1j, -1.0 + 0j])
    _, t_fx = fx.jvp(fss.wofz, [fnp.asarray(z)], [fnp.asarray(t)])
    _, t_jax = jax.jit(lambda z, t: jax.jvp(jss.wofz, [z], [t]))(z, t)
    np.testing.assert_allclose(np.asarray(t_fx), np.asarray(t_jax), rtol=1e-12)
    g = fx.grad(lambda z: fss.wofz(z).real, holomorphic=False)(fnp.asarray(0.3 + 0.2j))
    want = jax.jit(jax.grad(lambda z: jss.wofz(z).real))(0.3 + 0.2j)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    check_grads(lambda x: fnp.real(fss.wofz(x)), (fnp.asarray(z.real),), order=2)

    h, a = np.array([0.3, -1.2, 2.0]), np.array([0.5, -2.0, 1.5])
    args_fx, args_jax = (fnp.asarray(h), fnp.asarray(a)), (h, a)
    got = fx.grad(lambda *v: fnp.sum(fss.owens_t(*v)), argnums=(0, 1))(*args_fx)
    want = jax.jit(jax.grad(lambda *v: jnp.sum(jss.owens_t(*v)), argnums=(0, 1)))(*args_jax)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    check_grads(fss.owens_t, args_fx, order=1, atol=1e-6, rtol=1e-6)


def test_vmap_matches_a_loop_and_jit_matches_eager():
    z = fnp.asarray(Z[:12].reshape(3, 4))
    np.testing.assert_array_equal(
        np.asarray(fx.vmap(fss.wofz)(z)), np.stack([np.asarray(fss.wofz(r)) for r in z]))
    np.testing.assert_allclose(np.asarray(fx.jit(fss.wofz)(z)), np.asarray(fss.wofz(z)),
                               rtol=1e-14)
    h, a = fnp.asarray(H[:12].reshape(3, 4)), fnp.asarray(A[:12].reshape(3, 4))
    np.testing.assert_array_equal(
        np.asarray(fx.vmap(fss.owens_t)(h, a)),
        np.stack([np.asarray(fss.owens_t(h[i], a[i])) for i in range(3)]))
    np.testing.assert_allclose(np.asarray(fx.jit(fss.owens_t)(h, a)),
                               np.asarray(fss.owens_t(h, a)), rtol=1e-14, atol=1e-300)


def test_docstring_examples():
    result = doctest.testmod(error_functions, extraglobs={"fx": fx, "fnp": fnp},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted >= 3
