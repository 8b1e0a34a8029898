"""Tests of fx/numpy/nan_reductions.py against jax.numpy (x64 mode in both): values, dtypes
and shapes on data with scattered and all-NaN slices over every axis choice, the options
(``where``, ``initial``, ``ddof``, ``mean``, ``keepdims``, quantile methods), integer data,
derivatives against jax and finite differences, vmap against a loop and jit against eager."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from harness import (
    OpCase,
    assert_allclose,
    assert_bitwise,
    check_grads_f64,
    check_jvp,
    check_vjp,
    check_vmap,
    to_fx,
    to_jax,
)

import fx
import fx.numpy as fnp


@pytest.fixture(autouse=True)
def _x64():
    before = fx.config.enable_x64
    fx.config.update("jax_enable_x64", True)
    yield
    fx.config.update("jax_enable_x64", before)


REDUCTIONS = ["nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd",
              "nanmedian"]
ARGS = ["nanargmax", "nanargmin"]
CUMULATIVE = ["nancumsum", "nancumprod"]
AXES = [None, 0, 1, -1, (0, 2), ()]


def _data(dtype, shape=(3, 4, 5), seed=0, nan_rows=True):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 2.0, shape)
    x[rng.random(shape) < 0.3] = np.nan
    if nan_rows:
        x[1, 2, :] = np.nan  # an all-NaN slice along the last axis
        x[:, 3, 1] = np.nan  # ... and along the first
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("name,axis", [(n, a) for n in REDUCTIONS for a in AXES]
                         + [(n, a) for n in ARGS for a in AXES if not isinstance(a, tuple)],
                         ids=str)
def test_values_and_dtypes(name, axis, dtype):
    x = _data(dtype)
    for keepdims in (False, True):
        got = getattr(fnp, name)(to_fx(x), axis=axis, keepdims=keepdims)
        want = getattr(jnp, name)(x, axis=axis, keepdims=keepdims)
        assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                        what=f"{name} axis={axis} keepdims={keepdims}")


@pytest.mark.parametrize("name", CUMULATIVE)
@pytest.mark.parametrize("axis", [None, 0, 2, -2])
def test_cumulative(name, axis):
    for dtype in (np.float32, np.float64):
        x = _data(dtype)
        assert_allclose(getattr(fnp, name)(to_fx(x), axis=axis),
                        getattr(jnp, name)(x, axis=axis), what=f"{name} {dtype}")
    x = _data(np.float32)
    assert_allclose(getattr(fnp, name)(to_fx(x), axis=axis, dtype=np.float64),
                    getattr(jnp, name)(x, axis=axis, dtype=np.float64), what="dtype=")


QUANTILE_METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("method", QUANTILE_METHODS)
@pytest.mark.parametrize("axis", [None, 1, (0, 2)], ids=str)
def test_nanquantile_and_nanpercentile(method, axis):
    x = _data(np.float64, seed=1)
    q = np.array([0.0, 0.1, 0.5, 0.9, 1.0])
    for keepdims in (False, True):
        assert_allclose(fnp.nanquantile(to_fx(x), to_fx(q), axis=axis, method=method,
                                        keepdims=keepdims),
                        jnp.nanquantile(x, q, axis=axis, method=method, keepdims=keepdims),
                        what=f"nanquantile {method} {axis} {keepdims}")
    assert_allclose(fnp.nanpercentile(to_fx(x), 37.5, axis=axis, method=method),
                    jnp.nanpercentile(x, 37.5, axis=axis, method=method),
                    what=f"nanpercentile {method}")
    x32 = _data(np.float32, seed=2)
    assert_allclose(fnp.nanquantile(to_fx(x32), 0.3, axis=axis, method=method),
                    jnp.nanquantile(x32, 0.3, axis=axis, method=method), what="float32")


@pytest.mark.parametrize("axis", [None, 1, (0, 2), -1], ids=str)
def test_inverted_cdf_with_and_without_weights(axis):
    x = _data(np.float64, seed=9)
    w = np.random.default_rng(10).uniform(0.1, 2.0, x.shape)
    w[0, 0, :2] = 0.0  # zero weights count for nothing but may be picked at q == 0
    q = np.array([0.0, 0.1, 0.37, 0.5, 0.9, 1.0])
    kw = dict(axis=axis, method="inverted_cdf")
    assert_allclose(fnp.nanquantile(to_fx(x), to_fx(q), **kw), jnp.nanquantile(x, q, **kw),
                    what="unweighted")
    assert_allclose(fnp.nanquantile(to_fx(x), to_fx(q), weights=to_fx(w), keepdims=True,
                                    **kw),
                    jnp.nanquantile(x, q, weights=w, keepdims=True, **kw), what="weighted")
    assert_allclose(fnp.nanpercentile(to_fx(x), 37.0, weights=to_fx(w), **kw),
                    jnp.nanpercentile(x, 37.0, weights=w, **kw), what="percentile")
    if isinstance(axis, int):
        w1 = w[0, 0, : x.shape[axis]] + 0.5 if axis == -1 else w[0, :, 0] + 0.5
        assert_allclose(fnp.nanquantile(to_fx(x), 0.4, weights=to_fx(w1), **kw),
                        jnp.nanquantile(x, 0.4, weights=w1, **kw), what="1-d weights")


def test_options():
    x = _data(np.float64, seed=3)
    mask = np.random.default_rng(4).random(x.shape) < 0.7
    for name, kw in [("nansum", dict(initial=2.0)), ("nanprod", dict(initial=3.0)),
                     ("nanmax", dict(initial=-1.0)), ("nanmin", dict(initial=10.0)),
                     ("nansum", dict(where=mask)), ("nanmean", dict(where=mask)),
                     ("nanvar", dict(where=mask, ddof=1)), ("nanstd", dict(ddof=2)),
                     ("nanmax", dict(where=mask, initial=0.0)), ("nanvar", dict(ddof=3)),
                     ("nansum", dict(dtype=np.float32)), ("nanmean", dict(dtype=np.float32))]:
        kw_fx = {k: to_fx(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        assert_allclose(getattr(fnp, name)(to_fx(x), axis=2, **kw_fx),
                        getattr(jnp, name)(x, axis=2, **kw), rtol=1e-6, what=f"{name} {kw}")
    m = jnp.nanmean(x, axis=1, keepdims=True)
    assert_allclose(fnp.nanvar(to_fx(x), axis=1, mean=to_fx(np.asarray(m))),
                    jnp.nanvar(x, axis=1, mean=m), what="nanvar mean=")


@pytest.mark.parametrize("name", REDUCTIONS + ARGS + CUMULATIVE + ["nanquantile"])
def test_integer_data_has_no_nans(name):
    x = np.random.default_rng(5).integers(-5, 9, (3, 4)).astype(np.int32)
    twin = {"nanquantile": "quantile", "nanmedian": "median"}.get(name, name[3:])
    args = (0.25,) if name == "nanquantile" else ()
    got = getattr(fnp, name)(to_fx(x), *args, axis=1)
    # Integer data goes straight to the twin, and matches jax, dtype included.
    assert_bitwise(got, getattr(fnp, twin)(to_fx(x), *args, axis=1), what=f"{name} twin")
    assert_allclose(got, getattr(jnp, name)(x, *args, axis=1), rtol=1e-6, what=name)


def test_half_precision():
    x = _data(np.float16, seed=6)
    for name in ("nansum", "nanmean", "nanvar", "nanmax", "nanmedian"):
        assert_allclose(getattr(fnp, name)(to_fx(x), axis=1), getattr(jnp, name)(x, axis=1),
                        what=f"{name} float16")


def test_errors():
    x = to_fx(_data(np.float32))
    with pytest.raises(ValueError, match=r"fx\.numpy\.nanquantile: method"):
        fnp.nanquantile(x, 0.5, method="bogus")
    with pytest.raises(NotImplementedError, match=r"fx\.numpy\.nanpercentile: method "
                       r"'linear' does not support weights.*inverted_cdf"):
        fnp.nanpercentile(x, 50, weights=x)
    with pytest.raises(ValueError, match=r"fx\.numpy\.nanquantile: weights of shape \(2,\)"):
        fnp.nanquantile(x, 0.5, axis=(0, 1), weights=to_fx(np.ones(2)), method="inverted_cdf")
    with pytest.raises(ValueError, match=r"fx\.numpy\.nanmedian.*zero elements"):
        fnp.nanmedian(to_fx(np.zeros((2, 0))), axis=1)
    with pytest.raises(ValueError, match=r"nanargmax.*out of bounds"):
        fnp.nanargmax(x, axis=3)


# --- derivatives, vmap, jit ----------------------------------------------------------------


def _ad_data(r):
    x = r.uniform(0.5, 2.0, (3, 5))
    x[0, 1] = x[2, 3] = np.nan
    return [x]


def _along(module, name: str, axis: int):
    def f(x):
        return getattr(module, name)(x, axis=axis)

    return f


AD_CASES = [
    OpCase(name, _along(fnp, name, 1), _along(jnp, name, 1), _ad_data)
    for name in ["nansum", "nanprod", "nanmax", "nanmean", "nanvar", "nanstd", "nanmedian",
                 "nancumsum", "nancumprod"]
] + [
    OpCase("nanquantile", lambda x: fnp.nanquantile(x, np.array([0.2, 0.7]), axis=0),
           lambda x: jnp.nanquantile(x, np.array([0.2, 0.7]), axis=0), _ad_data),
    OpCase("nanquantile_weighted",
           lambda x: fnp.nanquantile(x, np.array([0.2, 0.7]), axis=1, method="inverted_cdf",
                                     weights=np.arange(1.0, 6.0)),
           lambda x: jnp.nanquantile(x, np.array([0.2, 0.7]), axis=1, method="inverted_cdf",
                                     weights=np.arange(1.0, 6.0)), _ad_data),
]


def _finite_grads(case, args):
    # Finite differences cannot see through a NaN entry; check the derivatives of the data
    # with its NaNs replaced by constants the function must ignore.
    x = args[0]
    nan = np.isnan(x)

    def at(v):
        return case.fx_fn(fnp.where(to_fx(nan), np.nan, v))

    check_grads_f64(OpCase(case.name, at, None, None), [np.where(nan, 1.0, x)])


@pytest.mark.parametrize("case", AD_CASES, ids=repr)
def test_derivatives(case):
    rng = np.random.default_rng(7)
    args = case.args(rng)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)
    _finite_grads(case, args)
    # No gradient reaches a NaN entry.
    g = fx.grad(lambda x: fnp.sum(case.fx_fn(x)))(to_fx(args[0]))
    assert np.all(np.asarray(g)[np.isnan(args[0])] == 0)


TRANSFORM_CASES = AD_CASES + [
    OpCase("nanmin", lambda x: fnp.nanmin(x, axis=0), lambda x: jnp.nanmin(x, axis=0),
           _ad_data),
] + [
    OpCase(n, _along(fnp, n, 0), _along(jnp, n, 0), _ad_data)
    for n in ("nanargmax", "nanargmin")
]


@pytest.mark.parametrize("case", TRANSFORM_CASES, ids=repr)
def test_vmap_and_jit(case):
    rng = np.random.default_rng(8)
    x = rng.uniform(0.5, 2.0, (4, 3, 5)).astype(np.float32)
    x[rng.random(x.shape) < 0.3] = np.nan
    x[2, 1, :] = np.nan
    x[:, 0, 0] = np.nan
    for axis in (0, 1, 2):
        check_vmap(case, [np.moveaxis(x, 0, axis)], (axis,))
    eager = case.fx_fn(to_fx(x[0]))
    assert_allclose(fx.jit(case.fx_fn)(to_fx(x[0])), eager, rtol=1e-6, what="jit")
    assert_allclose(eager, case.jax_fn(to_jax(x[0])), rtol=1e-5, what="eager vs jax")
