"""fx.scipy.ndimage.map_coordinates and fx.scipy.integrate.trapezoid against jax (and
SciPy): values and dtypes per mode and order, gradients with respect to the input, jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.integrate as jsi
import jax.scipy.ndimage as jnd
import numpy as np
import pytest
import scipy.integrate
import scipy.ndimage

import fx
import fx.numpy as fnp
import fx.scipy.integrate as fsi
import fx.scipy.ndimage as fnd
from tests.harness import assert_allclose

MODES = ["constant", "nearest", "wrap", "mirror", "reflect"]
RNG = np.random.default_rng(0)
IMG = RNG.normal(size=(4, 5))
COORDS = [RNG.uniform(-2.5, 6.5, size=(7,)), RNG.uniform(-2.5, 7.5, size=(7,))]
# Exact halves exercise rounding half away from zero (order 0).
COORDS_HALF = [np.array([-0.5, 0.5, 1.5, 2.5, 3.5]), np.array([0.5, -1.5, 4.5, 2.0, 5.5])]


def _jax_map(img, coords, order, mode, cval):
    return jax.jit(lambda i, c: jnd.map_coordinates(i, c, order, mode, cval))(img, coords)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", [0, 1])
def test_map_coordinates_matches_jax(mode, order):
    for coords in (COORDS, COORDS_HALF):
        got = fnd.map_coordinates(fnp.asarray(IMG), [fnp.asarray(c) for c in coords], order,
                                  mode, 1.5)
        want = _jax_map(jnp.asarray(IMG), [jnp.asarray(c) for c in coords], order, mode, 1.5)
        assert_allclose(got, want, what=f"{mode} order={order}")


@pytest.mark.parametrize("mode,scipy_mode", [("constant", "grid-constant"),
                                             ("nearest", "nearest"), ("wrap", "grid-wrap"),
                                             ("mirror", "mirror"), ("reflect", "reflect")])
def test_map_coordinates_linear_matches_scipy_grid_modes(mode, scipy_mode):
    got = fnd.map_coordinates(fnp.asarray(IMG), [fnp.asarray(c) for c in COORDS], 1, mode)
    want = scipy.ndimage.map_coordinates(IMG, np.stack(COORDS), order=1, mode=scipy_mode)
    assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_map_coordinates_dtypes_integer_input_and_3d():
    img = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    coords = [np.array([0.25, 1.0]), np.array([0.5, 2.7]), np.array([3.5, 1.2])]
    for order in (0, 1):
        got = fnd.map_coordinates(fnp.asarray(img), [fnp.asarray(c) for c in coords], order,
                                  "nearest")
        want = _jax_map(jnp.asarray(img), [jnp.asarray(c) for c in coords], order,
                        "nearest", 0.0)
        assert_allclose(got, want)
    f32 = IMG.astype(np.float32)
    got = fnd.map_coordinates(fnp.asarray(f32), [fnp.asarray(c) for c in COORDS], 1)
    assert got.dtype == np.float32
    assert_allclose(got, _jax_map(jnp.asarray(f32), [jnp.asarray(c) for c in COORDS], 1,
                                  "constant", 0.0))


def test_map_coordinates_grad_wrt_input_jit_and_errors():
    cs = [fnp.asarray(c) for c in COORDS]
    jcs = [jnp.asarray(c) for c in COORDS]
    w = RNG.normal(size=7)

    def f(img, c):
        return (fnd.map_coordinates(img, c, 1, "mirror") * w).sum()

    def jf(img, c):
        return (jnd.map_coordinates(img, c, 1, "mirror") * w).sum()

    got = fx.grad(f)(fnp.asarray(IMG), cs)
    assert_allclose(got, jax.jit(jax.grad(jf))(jnp.asarray(IMG), jcs))
    assert_allclose(fx.jit(fx.grad(f))(fnp.asarray(IMG), cs), got)
    eager = fnd.map_coordinates(fnp.asarray(IMG), cs, 0, "wrap")
    jitted = fx.jit(lambda i, c: fnd.map_coordinates(i, c, 0, "wrap"))(fnp.asarray(IMG), cs)
    assert_allclose(jitted, eager)
    with pytest.raises(ValueError, match="length input.ndim"):
        fnd.map_coordinates(fnp.asarray(IMG), cs[:1], 1)
    with pytest.raises(NotImplementedError, match="order"):
        fnd.map_coordinates(fnp.asarray(IMG), cs, 3)
    with pytest.raises(NotImplementedError, match="mode"):
        fnd.map_coordinates(fnp.asarray(IMG), cs, 1, "grid-wrap")


def test_trapezoid_values_dtypes_grad_jit():
    y = RNG.normal(size=(3, 6))
    x = np.sort(RNG.uniform(size=6))
    cases = [((y,), {}), ((y, x), {}), ((y,), {"dx": 0.5, "axis": 0}),
             ((np.arange(6, dtype=np.int32),), {}), ((y.astype(np.float32),), {"dx": 2.0})]
    for args, kw in cases:
        got = fsi.trapezoid(*[fnp.asarray(a) for a in args], **kw)
        want = jax.jit(lambda *a, kw=kw: jsi.trapezoid(*a, **kw))(*[jnp.asarray(a) for a in args])
        assert_allclose(got, want, what=str(kw))
        np.testing.assert_allclose(np.asarray(got), scipy.integrate.trapezoid(*args, **kw),
                                   rtol=1e-5)
    g = fx.grad(lambda y, x: fsi.trapezoid(y, x).sum(), argnums=(0, 1))(fnp.asarray(y),
                                                                        fnp.asarray(x))
    jg = jax.jit(jax.grad(lambda y, x: jsi.trapezoid(y, x).sum(), argnums=(0, 1)))(
        jnp.asarray(y), jnp.asarray(x))
    assert_allclose(g, jg)
    assert_allclose(fx.jit(fsi.trapezoid)(fnp.asarray(y), fnp.asarray(x)),
                    fsi.trapezoid(fnp.asarray(y), fnp.asarray(x)))
