"""fx.scipy.special.bessel_jn and sph_harm_y against jax and scipy: values and dtypes in x64
and the default mode, argument errors, jvp/grad against jax and finite differences, vmap
against a loop, jit against eager."""

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
from fx.scipy.special import bessel, spherical_harmonics
from fx.test_util import check_grads
from tests.harness import same_mode

warnings.filterwarnings("ignore", category=RuntimeWarning)

RNG = np.random.default_rng(0)
Z = np.r_[np.linspace(-25, 25, 60), 0.5, 1e-3]
ORDERS = np.arange(8)[:, None]
DEG = RNG.integers(0, 9, 40)
ORD = np.array([RNG.integers(-k, k + 1) for k in DEG])
THETA, PHI = RNG.uniform(0, np.pi, 40), RNG.uniform(0, 2 * np.pi, 40)


def _jax_bessel_jn(z, v, n_iter):
    return jax.jit(lambda z: jss.bessel_jn(z, v=v, n_iter=n_iter))(z)


# The backward recurrence from n_iter = 50 overflows float32 for small |z| (NaN, as in jax):
# the default mode is checked from n_iter = 30 on 1 <= |z| <= 12 (where 30 terms suffice).
@pytest.mark.parametrize("x64, n_iter, rtol", [(True, 50, 1e-13), (False, 30, 1e-6)])
def test_bessel_jn_values_match_jax_and_scipy(x64, n_iter, rtol):
    with same_mode(x64):
        z = Z if x64 else Z[(np.abs(Z) >= 1) & (np.abs(Z) <= 12)].astype(np.float32)
        got = fss.bessel_jn(fnp.asarray(z), v=7, n_iter=n_iter)
        want = _jax_bessel_jn(z, 7, n_iter)
        assert (got.shape, got.dtype) == (want.shape, want.dtype)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol,
                                   atol=10 * rtol)
        # Against scipy: the recurrence started at n = 50 is within 3e-13 of J_n up to
        # |z| = 25 (and 1e-15 below |z| = 20).
        np.testing.assert_allclose(np.asarray(got, np.float64),
                                   sps.jv(ORDERS, z.astype(np.float64)), rtol=0,
                                   atol=3e-13 if x64 else 1e-6)
    # Shapes: a scalar gives (v + 1,), an array a leading axis of v + 1; z = 0 is NaN as jax.
    assert fss.bessel_jn(2.0, v=2).shape == (3,)
    assert fss.bessel_jn(fnp.ones((2, 3)), v=2).shape == (3, 2, 3)
    assert np.isnan(np.asarray(fss.bessel_jn(0.0, v=1))).all()


def test_bessel_jn_refuses_what_jax_refuses():
    with pytest.raises(ValueError, match="complex"):
        fss.bessel_jn(fnp.asarray(1.0 + 1j), v=1)
    with pytest.raises(TypeError):
        fss.bessel_jn(1.0, v=1.5)
    with pytest.raises(fx.ConcretizationTypeError):
        fx.jit(lambda v: fss.bessel_jn(1.0, v=v))(2)


def _sph_harm_y_table(x64: bool):
    """(theta, phi, fx's Y) at the test points in the mode's float type; call in the mode."""
    dt = np.float64 if x64 else np.float32
    th, ph = THETA.astype(dt), PHI.astype(dt)
    return th, ph, fss.sph_harm_y(fnp.asarray(DEG), fnp.asarray(ORD), fnp.asarray(th),
                                  fnp.asarray(ph))


@pytest.mark.parametrize("x64, rtol", [(True, 1e-13), (False, 5e-6)])
def test_sph_harm_y_values_match_scipy(x64, rtol):
    with same_mode(x64):
        th, ph, got = _sph_harm_y_table(x64)
        spec = jax.eval_shape(lambda t, p: jss.sph_harm_y(DEG, ORD, t, p, n_max=8), th, ph)
        assert (got.shape, got.dtype) == (spec.shape, spec.dtype)
        np.testing.assert_allclose(np.asarray(got, np.complex128),
                                   sps.sph_harm_y(DEG, ORD, THETA, PHI), rtol=rtol, atol=rtol)
    # n_max below a degree clips that degree to n_max, as jax; a scalar theta is one point.
    got = fss.sph_harm_y(fnp.asarray([5]), fnp.asarray([1]), 0.7, fnp.asarray([0.3]), n_max=3)
    np.testing.assert_allclose(np.asarray(got), sps.sph_harm_y(3, 1, 0.7, 0.3)[None],
                               rtol=1e-13)


def test_sph_harm_y_argument_errors():
    with pytest.raises(NotImplementedError, match="diff_n"):
        fss.sph_harm_y(fnp.asarray([1]), fnp.asarray([0]), 0.5, 0.5, diff_n=1)
    with pytest.raises(fx.ConcretizationTypeError):
        fx.jit(lambda n: fss.sph_harm_y(n, fnp.asarray([0]), 0.5, 0.5))(fnp.asarray([1]))


def test_bessel_jn_derivatives_match_jax_and_finite_differences():
    z = np.array([0.7, 3.1, -8.2])
    f_fx = lambda z: fss.bessel_jn(z, v=3, n_iter=40)  # noqa: E731
    f_jax = lambda z: jss.bessel_jn(z, v=3, n_iter=40)  # noqa: E731
    t = np.array([1.0, -0.5, 2.0])
    _, t_fx = fx.jvp(f_fx, [fnp.asarray(z)], [fnp.asarray(t)])
    _, t_jax = jax.jit(lambda z, t: jax.jvp(f_jax, [z], [t]))(z, t)
    np.testing.assert_allclose(np.asarray(t_fx), np.asarray(t_jax), rtol=1e-11, atol=1e-14)
    # J_n' = (J_(n-1) - J_(n+1)) / 2, from scipy's values.
    n = np.arange(4)[:, None]
    np.testing.assert_allclose(np.asarray(t_fx), t * (sps.jv(n - 1, z) - sps.jv(n + 1, z)) / 2,
                               rtol=0, atol=1e-13)
    check_grads(lambda z: fnp.sum(f_fx(z) ** 2, axis=0), (fnp.asarray(z),), order=1)


SPH_N, SPH_M = DEG[:4], ORD[:4]
SPH_THETA, SPH_PHI = np.array([0.4, 1.2, 2.0, 2.9]), np.array([0.1, 2.0, 4.0, 5.5])


def _sph_loss(mod, m):
    def loss(th, ph):
        y = mod.sph_harm_y(SPH_N, SPH_M, th, ph, n_max=8)
        return m.sum(m.real(y) + 2 * m.imag(y))
    return loss


def test_sph_harm_y_derivatives_by_identity_and_finite_differences():
    th, ph = fnp.asarray(SPH_THETA), fnp.asarray(SPH_PHI)
    y = lambda p: fss.sph_harm_y(SPH_N, SPH_M, th, p, n_max=8)  # noqa: E731
    _, dy = fx.jvp(y, [ph], [fnp.ones_like(ph)])
    np.testing.assert_allclose(np.asarray(dy), 1j * SPH_M * np.asarray(y(ph)), rtol=1e-13,
                               atol=1e-15)  # d/dphi Y_n^m = i m Y_n^m
    check_grads(_sph_loss(fss, fnp), (th, ph), order=1)


@pytest.mark.slow  # compiling jax's Legendre table takes seconds (it equals scipy's to 2e-15)
@pytest.mark.parametrize("x64, rtol", [(True, 1e-13), (False, 5e-6)])
def test_sph_harm_y_values_match_jax(x64, rtol):
    with same_mode(x64):
        th, ph, got = _sph_harm_y_table(x64)
        want = jss.sph_harm_y(DEG, ORD, th, ph, n_max=8)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=rtol)


@pytest.mark.slow  # compiling jax's gradient of its Legendre table takes ~5 s
def test_sph_harm_y_gradient_matches_jax():
    got = fx.grad(_sph_loss(fss, fnp), argnums=(0, 1))(fnp.asarray(SPH_THETA),
                                                        fnp.asarray(SPH_PHI))
    want = jax.jit(jax.grad(_sph_loss(jss, jnp), argnums=(0, 1)))(SPH_THETA, SPH_PHI)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-11, atol=1e-13)


def test_vmap_matches_a_loop_and_jit_matches_eager():
    z = fnp.asarray(Z[:12].reshape(3, 4))
    f = lambda z: fss.bessel_jn(z, v=4)  # noqa: E731
    np.testing.assert_array_equal(np.asarray(fx.vmap(f)(z)),
                                  np.stack([np.asarray(f(r)) for r in z]))
    np.testing.assert_allclose(np.asarray(fx.jit(f)(z)), np.asarray(f(z)), rtol=1e-13)
    n, m = fnp.asarray(DEG[:4]), fnp.asarray(ORD[:4])
    th, ph = fnp.asarray(THETA[:12].reshape(3, 4)), fnp.asarray(PHI[:12].reshape(3, 4))
    g = lambda t, p: fss.sph_harm_y(n, m, t, p, n_max=8)  # noqa: E731
    np.testing.assert_array_equal(np.asarray(fx.vmap(g)(th, ph)),
                                  np.stack([np.asarray(g(th[i], ph[i])) for i in range(3)]))
    np.testing.assert_allclose(np.asarray(fx.jit(g)(th[0], ph[0])), np.asarray(g(th[0], ph[0])),
                               rtol=1e-13)


def test_docstring_examples():
    for module in (bessel, spherical_harmonics):
        result = doctest.testmod(module, extraglobs={"fx": fx, "fnp": fnp},
                                 optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0 and result.attempted >= 1, module
