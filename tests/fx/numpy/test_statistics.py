"""Tests of fx/numpy/statistics.py and fx/numpy/histograms.py against jax.numpy (x64 mode in
both): values, dtypes and shapes over a table of argument sets (options, edge cases, integer
data), derivatives against jax and finite differences, vmap against a loop, jit against
eager, and the errors (``bincount`` without ``length=`` under jit, bad shapes)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from harness import (
    OpCase,
    assert_allclose,
    check_grads_f64,
    check_jvp,
    check_vjp,
    check_vmap,
    to_fx,
)

import fx
import fx.numpy as fnp


@pytest.fixture(autouse=True)
def _x64():
    before = fx.config.enable_x64
    fx.config.update("jax_enable_x64", True)
    yield
    fx.config.update("jax_enable_x64", before)


RNG = np.random.default_rng(0)
S = RNG.standard_normal((40, 3))
S32 = S.astype(np.float32)
INTS = np.array([0, 1, 1, 3, -1, 7, 2, 2], np.int32)
W = RNG.uniform(size=40)

# (name, args, kwargs): each row is compared with jax.numpy on values, dtypes and shapes.
VALUE_CASES = [
    ("bincount", (INTS,), dict(length=5)),
    ("bincount", (INTS,), {}),
    ("bincount", (INTS,), dict(minlength=12)),
    ("bincount", (INTS,), dict(weights=np.arange(8, dtype=np.float32), length=4)),
    ("bincount", (np.array([], np.int32),), {}),
    ("digitize", (S[:, 0], np.array([-1.0, 0.0, 0.5])), {}),
    ("digitize", (S[:, 0], np.array([0.5, 0.0, -1.0])), dict(right=True)),
    ("digitize", (np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 2.0])), dict(right=True)),
    ("digitize", (np.array([0.0, 1.0, 2.0]), np.array([2.0, 1.0, 0.0])), {}),
    ("histogram_bin_edges", (S[:, 0],), dict(bins=4)),
    ("histogram_bin_edges", (np.array([2.0, 2.0]),), dict(bins=2)),
    ("histogram_bin_edges", (S32[:, 0],), dict(bins=3, range=(-1.0, 2.0))),
    ("histogram", (S[:, 0],), {}),
    ("histogram", (S32[:, 0],), dict(bins=5, density=True)),
    ("histogram", (S[:, 0],), dict(bins=np.array([-1.0, 0.0, 0.3, 2.0]), weights=W)),
    ("histogram", (S[:, :2],), dict(bins=3, range=(-0.5, 0.5))),
    ("histogram", (np.array([1.0, np.nan, 2.0, 3.0]),), dict(bins=2, range=(0.0, 4.0))),
    ("histogram", (np.array([1, 2, 2, 3, 5], np.int32),), dict(bins=np.array([0, 2, 4]))),
    ("histogramdd", (S,), dict(bins=(3, 4, 2))),
    ("histogramdd", (S32,), dict(bins=3, density=True, range=[(-1, 1), None, (0, 2)])),
    ("histogramdd", (S,), dict(bins=[np.array([-1.0, 0, 1]), 2, np.array([-3.0, 3.0])],
                               weights=W)),
    ("histogram2d", (S[:, 0], S[:, 1]), {}),
    ("histogram2d", (S[:, 0], S[:, 1]), dict(bins=[3, 5], weights=W, density=True)),
    ("histogram2d", (S[:, 0], S[:, 1]), dict(bins=np.array([-1.0, 0.0, 1.0]))),
    ("gradient", (np.array([1.0, 2, 4, 7]),), {}),
    ("gradient", (np.array([1.0, 2, 4, 7]), np.array([0.0, 1, 3, 4])), {}),
    ("gradient", (S,), {}),
    ("gradient", (S, 2.0), dict(axis=1)),
    ("gradient", (S, 0.5, np.linspace(0, 1, 3) ** 2), {}),
    ("gradient", (S32,), dict(axis=(0,))),
    ("gradient", (np.arange(6, dtype=np.int32) ** 2,), {}),
    ("interp", (np.array([-1.0, 0.5, 1.5, 3]), np.array([0.0, 1, 2]), np.array([1.0, 3, 2])),
     {}),
    ("interp", (np.array([-1.0, 0.5, 3]), np.array([0.0, 1, 2]), np.array([1.0, 3, 2])),
     dict(left="extrapolate", right=-5.0)),
    ("interp", (np.array([-1.0, 0.5, 7, 2.5]), np.array([0.0, 1, 2]), np.array([1.0, 3, 2])),
     dict(period=3)),
    ("interp", (S32[:, 0], np.array([-1.0, -1.0, 0.0, 2.0], np.float32),
                np.array([0.0, 1.0, 2.0, 3.0], np.float32)), {}),
    ("interp", (np.array([1, 2], np.int32), np.array([0, 3], np.int32),
                np.array([0, 3], np.int32)), {}),
    ("trapezoid", (S,), {}),
    ("trapezoid", (S,), dict(dx=0.5, axis=0)),
    ("trapezoid", (S,), dict(x=np.array([0.0, 0.5, 2.0]))),
    ("trapezoid", (S,), dict(x=np.cumsum(np.abs(S), axis=0), axis=0)),
    ("trapezoid", (np.array([1, 2, 3], np.int32),), {}),
    ("unwrap", (np.cumsum(S * 3, axis=0),), dict(axis=0)),
    ("unwrap", (np.array([0.0, 3, 6.5, 1]),), {}),
    ("unwrap", (np.array([0.0, 3, 6.5, 1]),), dict(discont=4.0)),
    ("unwrap", (np.array([0, 3, 7, 1], np.int32),), {}),
    ("unwrap", (np.array([0, 5, 9, 2, 14]),), dict(period=4)),
    ("unwrap", (np.array([0, 5, 9, 2, 14]),), dict(period=5)),
    ("unwrap", (np.array([0.0, 170, 350, 10]),), dict(period=360)),
    ("cov", (S.T,), {}),
    ("cov", (S,), dict(rowvar=False, bias=True)),
    ("cov", (S[:, 0], S[:, 1]), {}),
    ("cov", (S[:, 0],), {}),
    ("cov", (S,), dict(rowvar=False, fweights=np.arange(40) % 3,
                       aweights=W)),
    ("cov", (S.T,), dict(ddof=3, aweights=W)),
    ("cov", (S.T,), dict(fweights=np.arange(40) % 4 + 1, ddof=0)),
    ("cov", (np.array([[1, 2, 3], [2, 1, 7]], np.int32),), {}),
    ("cov", (S32.T,), dict(dtype=np.float64)),
    ("corrcoef", (S.T,), {}),
    ("corrcoef", (S[:, 0], S[:, 2]), {}),
    ("corrcoef", (S,), dict(rowvar=False)),
    ("corrcoef", (S32[:, 0],), {}),
]


def _leaves(out):
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in _leaves(o)]
    return [out]


@pytest.mark.parametrize("i", range(len(VALUE_CASES)),
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(VALUE_CASES)])
def test_values_dtypes_shapes(i):
    name, args, kw = VALUE_CASES[i]
    kw_fx = {k: to_fx(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    got = _leaves(getattr(fnp, name)(*to_fx(list(args)), **kw_fx))
    want = _leaves(getattr(jnp, name)(*args, **kw))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        rtol = 1e-5 if np.asarray(w).dtype == np.float32 else 1e-11
        assert_allclose(g, w, rtol=rtol, atol=rtol, what=f"{name} {kw}")


def test_interp_scalar_left_with_extrapolated_right():
    # jax 0.10 mixes the sides up here (gives [-1, 2, 7]); its documentation, and fx, say
    # left applies below xp[0] and right extrapolates the last segment.
    got = fnp.interp(to_fx(np.array([-1.0, 0.5, 3])), to_fx(np.array([0.0, 1, 2])),
                     to_fx(np.array([1.0, 3, 2])), left=7.0, right="extrapolate")
    assert_allclose(got, np.array([7.0, 2.0, 1.0]), what="interp mixed sides")


# --- derivatives ---------------------------------------------------------------------------


def _r(*shape, lo=-1.0, hi=1.0, seed=1):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


GRAD_CASES = [
    OpCase("cov", fnp.cov, jnp.cov, lambda r: [_r(3, 6)]),
    OpCase("cov_aweights", lambda m, a: fnp.cov(m, aweights=a, ddof=1),
           lambda m, a: jnp.cov(m, aweights=a, ddof=1),
           lambda r: [_r(3, 6), _r(6, lo=0.5, hi=2.0)], diff_argnums=(0, 1)),
    OpCase("corrcoef", fnp.corrcoef, jnp.corrcoef, lambda r: [_r(3, 6)]),
    OpCase("gradient", fnp.gradient, jnp.gradient, lambda r: [_r(4, 5)]),
    OpCase("gradient_coords", lambda f, x: fnp.gradient(f, x), lambda f, x: jnp.gradient(f, x),
           lambda r: [_r(6), np.cumsum(_r(6, lo=0.5, hi=1.5))], diff_argnums=(0, 1)),
    OpCase("interp", fnp.interp, jnp.interp,
           lambda r: [_r(7, lo=-0.3, hi=3.3), np.array([0.0, 1.1, 2.0, 3.0]), _r(4)],
           diff_argnums=(0, 1, 2)),
    OpCase("interp_extrapolate", lambda x, f: fnp.interp(x, np.arange(4.0), f, left="extrapolate",
                                                         right="extrapolate"),
           lambda x, f: jnp.interp(x, np.arange(4.0), f, left="extrapolate",
                                   right="extrapolate"),
           lambda r: [_r(7, lo=-1.3, hi=4.3), _r(4)], diff_argnums=(0, 1)),
    OpCase("trapezoid", lambda y, x: fnp.trapezoid(y, x, axis=0),
           lambda y, x: jnp.trapezoid(y, x, axis=0),
           lambda r: [_r(5, 3), np.cumsum(_r(5, lo=0.5, hi=1.0))], diff_argnums=(0, 1)),
    OpCase("unwrap", lambda p: fnp.unwrap(p, axis=0), lambda p: jnp.unwrap(p, axis=0),
           lambda r: [np.cumsum(_r(6, 2) * 3.0, axis=0) + 0.1]),
    OpCase("histogram_weights", lambda w: fnp.histogram(np.linspace(0, 1, 9), bins=3,
                                                        weights=w)[0],
           lambda w: jnp.histogram(np.linspace(0, 1, 9), bins=3, weights=w)[0],
           lambda r: [_r(9)]),
    OpCase("histogram_density", lambda w: fnp.histogram(np.linspace(0, 1, 9), bins=3,
                                                        weights=w, density=True)[0],
           lambda w: jnp.histogram(np.linspace(0, 1, 9), bins=3, weights=w, density=True)[0],
           lambda r: [_r(9, lo=0.5, hi=1.5)]),
    OpCase("bincount_weights", lambda w: fnp.bincount(INTS, w, length=6),
           lambda w: jnp.bincount(INTS, w, length=6), lambda r: [_r(8)]),
    OpCase("histogram2d_weights", lambda w: fnp.histogram2d(S[:9, 0], S[:9, 1], bins=2,
                                                            weights=w)[0],
           lambda w: jnp.histogram2d(S[:9, 0], S[:9, 1], bins=2, weights=w)[0],
           lambda r: [_r(9)]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=repr)
def test_derivatives(case):
    rng = np.random.default_rng(2)
    args = case.args(rng)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)
    check_grads_f64(case, args)


# --- vmap and jit --------------------------------------------------------------------------

TRANSFORM_CASES = [
    OpCase("bincount", lambda x: fnp.bincount(x, length=6), lambda x: jnp.bincount(x, length=6),
           lambda r: [r.integers(-1, 8, (4, 9)).astype(np.int32)]),
    OpCase("digitize", lambda x: fnp.digitize(x, np.array([-0.5, 0.0, 0.5], np.float32)),
           lambda x: jnp.digitize(x, np.array([-0.5, 0.0, 0.5], np.float32)),
           lambda r: [r.standard_normal((4, 9)).astype(np.float32)]),
    OpCase("histogram", lambda x: fnp.histogram(x, bins=4), lambda x: jnp.histogram(x, bins=4),
           lambda r: [r.standard_normal((4, 9)).astype(np.float32)]),
    OpCase("histogramdd", lambda x: fnp.histogramdd(x, bins=3, range=[(-1, 1), (-2, 2)]),
           lambda x: jnp.histogramdd(x, bins=3, range=[(-1, 1), (-2, 2)]),
           lambda r: [r.standard_normal((4, 9, 2)).astype(np.float32)]),
    OpCase("gradient", fnp.gradient, jnp.gradient,
           lambda r: [r.standard_normal((4, 5, 3)).astype(np.float32)]),
    OpCase("interp", lambda x, f: fnp.interp(x, np.arange(4.0, dtype=np.float32), f),
           lambda x, f: jnp.interp(x, np.arange(4.0, dtype=np.float32), f),
           lambda r: [r.uniform(-1, 5, (4, 7)).astype(np.float32),
                      r.standard_normal((4, 4)).astype(np.float32)]),
    OpCase("trapezoid", fnp.trapezoid, jnp.trapezoid,
           lambda r: [r.standard_normal((4, 6)).astype(np.float32)]),
    OpCase("unwrap", fnp.unwrap, jnp.unwrap,
           lambda r: [np.cumsum(r.standard_normal((4, 8)) * 3, axis=1).astype(np.float32)]),
    OpCase("cov", fnp.cov, jnp.cov, lambda r: [r.standard_normal((4, 3, 6)).astype(np.float32)]),
    OpCase("corrcoef", fnp.corrcoef, jnp.corrcoef,
           lambda r: [r.standard_normal((4, 3, 6)).astype(np.float32)]),
]


@pytest.mark.parametrize("case", TRANSFORM_CASES, ids=repr)
def test_vmap_and_jit(case):
    rng = np.random.default_rng(3)
    args = case.args(rng)
    check_vmap(case, args, (0,) * len(args))
    one = [a[0] for a in args]
    eager = case.fx_fn(*to_fx(one))
    assert_allclose(fx.jit(case.fx_fn)(*to_fx(one)), eager, rtol=1e-6, atol=1e-6, what="jit")


# --- errors --------------------------------------------------------------------------------


def test_bincount_needs_length_under_transformations():
    x = to_fx(INTS)
    with pytest.raises(TypeError, match=r"fx\.numpy\.bincount.*traced.*length="):
        fx.jit(fnp.bincount)(x)
    with pytest.raises(TypeError, match=r"fx\.numpy\.bincount.*length="):
        fx.vmap(fnp.bincount)(to_fx(np.stack([INTS, INTS])))
    assert fx.jit(lambda v: fnp.bincount(v, length=3))(x).shape == (3,)


def test_errors():
    with pytest.raises(TypeError, match=r"fx\.numpy\.bincount: x must have an integer type"):
        fnp.bincount(to_fx(np.ones(3)))
    with pytest.raises(ValueError, match=r"fx\.numpy\.bincount: x must be 1-d.*\(2, 2\)"):
        fnp.bincount(to_fx(np.ones((2, 2), np.int32)))
    with pytest.raises(ValueError, match=r"fx\.numpy\.digitize: bins must be 1-d"):
        fnp.digitize(to_fx(np.ones(3)), to_fx(np.ones((2, 2))))
    with pytest.raises(NotImplementedError, match=r"fx\.numpy\.histogram_bin_edges: string"):
        fnp.histogram(to_fx(np.ones(3)), bins="auto")
    with pytest.raises(ValueError, match=r"fx\.numpy\.histogram_bin_edges: range must be"):
        fnp.histogram(to_fx(np.ones(3)), range=(0.0, 1.0, 2.0))
    with pytest.raises(NotImplementedError, match=r"fx\.numpy\.gradient: edge_order"):
        fnp.gradient(to_fx(np.ones(3)), edge_order=2)
    with pytest.raises(ValueError, match=r"fx\.numpy\.gradient.*at least 2.*\(1, 3\)"):
        fnp.gradient(to_fx(np.ones((1, 3))))
    with pytest.raises(ValueError, match=r"fx\.numpy\.gradient: coordinates of length 2"):
        fnp.gradient(to_fx(np.ones(3)), to_fx(np.ones(2)))
    with pytest.raises(ValueError, match=r"fx\.numpy\.interp: xp and fp must have the same"):
        fnp.interp(to_fx(np.ones(3)), to_fx(np.ones(2)), to_fx(np.ones(3)))
    with pytest.raises(ValueError, match=r"fx\.numpy\.interp: left must be"):
        fnp.interp(to_fx(np.ones(3)), to_fx(np.ones(2)), to_fx(np.ones(2)), left="wrap")
    with pytest.raises(ValueError, match=r"fx\.numpy\.cov: m and y must be at most 2-d"):
        fnp.cov(to_fx(np.ones((2, 2, 2))))
    with pytest.raises(ValueError, match=r"fx\.numpy\.cov: aweights must be 1-d.*\(5\)"):
        fnp.cov(to_fx(np.ones((2, 5))), aweights=to_fx(np.ones(4)))
    with pytest.raises(TypeError, match=r"fx\.numpy\.cov: fweights must be integers"):
        fnp.cov(to_fx(np.ones((2, 5))), fweights=to_fx(np.ones(5)))
    with pytest.raises(ValueError, match=r"fx\.numpy\.trapezoid: x of length 2"):
        fnp.trapezoid(to_fx(np.ones(3)), to_fx(np.ones(2)))
    with pytest.raises(ValueError, match=r"fx\.numpy\.histogram2d: x and y must be 1-d"):
        fnp.histogram2d(to_fx(np.ones(3)), to_fx(np.ones(4)))
