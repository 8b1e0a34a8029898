"""Tests of fx/numpy/polynomial.py against jax.numpy (x64 mode in both): values, dtypes and
shapes over a table of coefficient sets and options, derivatives against jax and finite
differences, vmap against a loop, jit against eager, roots (eigenvalues of the companion
matrix) and poly of a matrix, and the errors."""

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


I3 = np.array([1, 2, 3], np.int32)
F2 = np.array([1.0, 2.0], np.float32)
P5 = np.array([1.0, -2.0, 3.0, 0.5, 5.0])
XS = np.linspace(0, 1, 12)
YS = XS**2 + 1 + np.sin(20 * XS) * 0.01
YM = np.stack([YS, 2 * YS + np.cos(9 * XS), YS**2], 1)

VALUE_CASES = [
    ("polyadd", (I3, I3), {}), ("polyadd", (I3, F2), {}),
    ("polysub", (F2, I3), {}), ("polysub", (P5, P5[:2]), {}),
    ("polymul", (I3, I3), {}), ("polymul", (P5, F2), {}),
    ("polymul", (I3, np.array([0, 0, 1], np.int32)), dict(trim_leading_zeros=True)),
    ("polydiv", (I3, F2), {}), ("polydiv", (P5, np.array([2.0, 1, 1])), {}),
    ("polydiv", (P5, np.array([2.0, 1, 1])), dict(trim_leading_zeros=True)),
    ("polydiv", (F2, P5.astype(np.float32)), {}), ("polydiv", (P5, np.array([3.0])), {}),
    ("polyder", (I3,), {}), ("polyder", (I3, 2), {}), ("polyder", (F2, 5), {}),
    ("polyder", (P5, 3), {}), ("polyder", (P5, 0), {}),
    ("polyint", (I3,), {}), ("polyint", (I3, 2), dict(k=np.array([1, 2]))),
    ("polyint", (F2, 0), {}), ("polyint", (F2, 1), dict(k=3.0)), ("polyint", (P5, 3), {}),
    ("polyint", (P5, 2), dict(k=1.5)),
    ("polyval", (I3, np.int32(2)), {}), ("polyval", (F2, np.array([1, 2], np.int32)), {}),
    ("polyval", (np.array([]), 2.0), {}), ("polyval", (P5, np.linspace(-2, 2, 12)
                                                        .reshape(3, 4)), {}),
    ("polyval", (P5.astype(np.float32), np.float32(1.5)), {}),
    ("poly", (np.array([1.0, 2.0]),), {}), ("poly", (np.array([1, 2], np.int32),), {}),
    ("poly", (np.array([]),), {}), ("poly", (np.float32(3.0),), {}),
    ("poly", (np.array([0.5, -1.0, 2.0, 3.0]),), {}),
    ("polyfit", (XS, YS, 2), {}), ("polyfit", (XS, YS, 0), {}),
    ("polyfit", (XS.astype(np.float32), YS.astype(np.float32), 2), {}),
    ("polyfit", (XS, YS, 2), dict(cov=True)),
    ("polyfit", (XS, YS, 3), dict(cov="unscaled", w=XS + 1)),
    ("polyfit", (XS, YM, 1), {}), ("polyfit", (XS, YM, 2), dict(cov=True)),
    ("polyfit", (XS * 100 + 5, YS, 5), {}), ("polyfit", (XS, YS, 11), {}),
    ("polyfit", (XS, YS, 2), dict(full=True)), ("polyfit", (XS, YM, 3), dict(full=True)),
    ("polyfit", (XS, YS, 2), dict(full=True, rcond=0.1)),  # truncated: minimum norm
    ("polyfit", (XS, YS, 11), dict(full=True)),
    ("polyfit", (XS[:3], YS[:3], 4), {}),  # fewer points than coefficients
    ("polyfit", (np.ones(5), YS[:5], 2), {}),  # rank 1
    ("polyfit", (XS.astype(np.float32), YS.astype(np.float32), 3), dict(full=True)),
]


def _leaves(out):
    return [leaf for o in out for leaf in _leaves(o)] if isinstance(out, (tuple, list)) \
        else [out]


@pytest.mark.parametrize("i", range(len(VALUE_CASES)),
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(VALUE_CASES)])
def test_values_dtypes_shapes(i):
    name, args, kw = VALUE_CASES[i]
    kw_fx = {k: to_fx(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    got = _leaves(getattr(fnp, name)(*to_fx(list(args)), **kw_fx))
    want = _leaves(getattr(jnp, name)(*args, **kw))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        f32 = np.asarray(w).dtype == np.float32
        # polyfit of degree 5-11 is ill-conditioned: QR and SVD agree to the conditioning.
        rtol = 1e-4 if f32 else (1e-6 if name == "polyfit" and args[2] >= 5 else 1e-9)
        assert_allclose(g, w, rtol=rtol, atol=rtol, what=f"{name} {kw}")


def test_polyfit_reproduces_an_exact_polynomial():
    x = np.linspace(-1, 2, 9)
    for deg in range(5):
        p = np.arange(1.0, deg + 2)
        got = fnp.polyfit(to_fx(x), to_fx(np.polyval(p, x)), deg)
        np.testing.assert_allclose(np.asarray(got), p, rtol=1e-11, atol=1e-11)


# --- derivatives ---------------------------------------------------------------------------


def _r(*shape, lo=-1.0, hi=1.0, seed=1):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


GRAD_CASES = [
    OpCase("polyval", fnp.polyval, jnp.polyval, lambda r: [_r(4), _r(3, 2, seed=2)],
           diff_argnums=(0, 1)),
    OpCase("polyadd", fnp.polyadd, jnp.polyadd, lambda r: [_r(4), _r(2, seed=2)],
           diff_argnums=(0, 1)),
    OpCase("polysub", fnp.polysub, jnp.polysub, lambda r: [_r(2), _r(4, seed=2)],
           diff_argnums=(0, 1)),
    OpCase("polymul", fnp.polymul, jnp.polymul, lambda r: [_r(4), _r(3, seed=2)],
           diff_argnums=(0, 1)),
    OpCase("polydiv", fnp.polydiv, jnp.polydiv,
           lambda r: [_r(5), _r(3, lo=0.5, hi=1.5, seed=2)], diff_argnums=(0, 1)),
    OpCase("polyder", lambda p: fnp.polyder(p, 2), lambda p: jnp.polyder(p, 2),
           lambda r: [_r(5)]),
    OpCase("polyint", lambda p, k: fnp.polyint(p, 2, k), lambda p, k: jnp.polyint(p, 2, k),
           lambda r: [_r(4), _r(2, seed=2)], diff_argnums=(0, 1)),
    OpCase("poly", fnp.poly, jnp.poly, lambda r: [_r(4)]),
    OpCase("polyfit", lambda x, y: fnp.polyfit(x, y, 2), lambda x, y: jnp.polyfit(x, y, 2),
           lambda r: [np.linspace(0, 1, 7) + _r(7) * 0.01, _r(7, seed=2)], diff_argnums=(0, 1)),
    OpCase("polyfit_full", lambda x, y: fnp.polyfit(x, y, 2, full=True)[1],
           lambda x, y: jnp.polyfit(x, y, 2, full=True)[1],
           lambda r: [np.linspace(0, 1, 7) + _r(7) * 0.01, _r(7, seed=2)], diff_argnums=(0, 1)),
    OpCase("polyfit_cov", lambda y: fnp.polyfit(XS, y, 1, cov=True)[1],
           lambda y: jnp.polyfit(XS, y, 1, cov=True)[1], lambda r: [YS]),
]


# polyfit's derivatives through lstsq in x and y (~20 s with a cold cache) and polyfit_full's
# (the same again) run with -m slow; polyfit_cov keeps a polyfit derivative in the default run.
@pytest.mark.parametrize("case", [
    pytest.param(c, marks=pytest.mark.slow) if c.name in ("polyfit", "polyfit_full") else c
    for c in GRAD_CASES], ids=repr)
def test_derivatives(case):
    rng = np.random.default_rng(3)
    args = case.args(rng)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)
    check_grads_f64(case, args)


TRANSFORM_CASES = [
    OpCase("polyval", fnp.polyval, jnp.polyval, lambda r: [_r(4, 5), _r(4, 3, seed=2)]),
    OpCase("polymul", fnp.polymul, jnp.polymul, lambda r: [_r(4, 5), _r(4, 3, seed=2)]),
    OpCase("polydiv", fnp.polydiv, jnp.polydiv,
           lambda r: [_r(4, 5), _r(4, 2, lo=0.5, hi=1.5, seed=2)]),
    OpCase("polyint", lambda p: fnp.polyint(p, 2, k=1.0), lambda p: jnp.polyint(p, 2, k=1.0),
           lambda r: [_r(4, 5)]),
    OpCase("polyder", fnp.polyder, jnp.polyder, lambda r: [_r(4, 5)]),
    OpCase("poly", fnp.poly, jnp.poly, lambda r: [_r(4, 3)]),
    OpCase("polyfit", lambda y: fnp.polyfit(XS.astype(np.float32), y, 2),
           lambda y: jnp.polyfit(XS.astype(np.float32), y, 2),
           lambda r: [np.stack([YS, 2 * YS, YS**2, -YS])]),
]


@pytest.mark.parametrize("case", TRANSFORM_CASES, ids=repr)
def test_vmap_and_jit(case):
    rng = np.random.default_rng(4)
    args = [a.astype(np.float32) for a in case.args(rng)]
    case.rtol = case.atol = 1e-4
    check_vmap(case, args, (0,) * len(args))
    one = [a[0] for a in args]
    # Compiled float32 dot products round differently; polyfit's small coefficient carries
    # the Vandermonde matrix's conditioning (about 1e-6 absolute here).
    assert_allclose(fx.jit(case.fx_fn)(*to_fx(one)), case.fx_fn(*to_fx(one)), rtol=1e-5,
                    atol=1e-5, what="jit")


def test_polyfit_jit_matches_eager_in_float64():
    # The Jacobi sweeps run as a loop; unrolled, a compiler bug zeroed a column under jit.
    for deg in (2, 5, 8):
        def f(x, y, deg=deg):
            return fnp.polyfit(x, y, deg, full=True)

        eager, jitted = f(to_fx(XS), to_fx(YM)), fx.jit(f)(to_fx(XS), to_fx(YM))
        assert_allclose(jitted, eager, rtol=1e-9, atol=1e-12, what=f"deg {deg}")


def test_errors():
    with pytest.raises(ValueError, match=r"fx\.numpy\.poly: input must be 1-d.*\(2, 3\)"):
        fnp.poly(to_fx(np.ones((2, 3))))
    with pytest.raises(ValueError, match=r"fx\.numpy\.polyfit: .*data points \(3\).*exceed"):
        fnp.polyfit(to_fx(XS[:3]), to_fx(YS[:3]), 4, cov=True)
    with pytest.raises(TypeError, match=r"fx\.numpy\.polyfit: expected y of shape \(12,\)"):
        fnp.polyfit(to_fx(XS), to_fx(YS[:5]), 1)
    with pytest.raises(ValueError, match=r"fx\.numpy\.polyadd: coefficients must be 1-d"):
        fnp.polyadd(to_fx(np.ones((2, 2))), to_fx(np.ones(2)))
    with pytest.raises(ValueError, match=r"fx\.numpy\.polyder: .*non-negative"):
        fnp.polyder(to_fx(P5), -1)
    with pytest.raises(ValueError, match=r"fx\.numpy\.polyint: k must be a scalar or hold m=2"):
        fnp.polyint(to_fx(P5), 2, k=to_fx(np.ones(3)))
    with pytest.raises(TypeError, match=r"fx\.numpy\.polymul: trim_leading_zeros.*concrete"):
        fx.jit(lambda a: fnp.polymul(a, a, trim_leading_zeros=True))(to_fx(P5))
    with pytest.raises(TypeError, match=r"fx\.numpy\.roots: .*concrete.*strip_zeros=False"):
        fx.jit(fnp.roots)(to_fx(P5))
    with pytest.raises(ValueError, match=r"fx\.numpy\.roots: .*rank 1.*\(2, 2\)"):
        fnp.roots(to_fx(np.ones((2, 2))))


ROOTS = [np.array([1.0, -3.0, 2.0]), np.array([0.0, 0.0, 1.0, -6.0, 11.0, -6.0]),
         np.array([2.0, 0.0, 0.0]), np.array([0.0, 0.0]), np.array([3.0]), np.array([1.0, 0, 1]),
         np.array([1, 2, 3], np.int32), np.array([1.5, -0.5, 2.0, 1.0], np.float32)]


@pytest.mark.parametrize("i", range(len(ROOTS)))
def test_roots_as_jax(i):
    p = ROOTS[i]
    # The same LAPACK eigenvalue routine: the same roots in the same order.
    assert_allclose(fnp.roots(to_fx(p)), jnp.roots(p), rtol=1e-6, atol=1e-6)
    keep = fnp.roots(to_fx(p), strip_zeros=False)
    assert_allclose(keep, jnp.roots(p, strip_zeros=False), rtol=1e-6, atol=1e-6)
    assert_allclose(fx.jit(lambda q: fnp.roots(q, strip_zeros=False))(to_fx(p)), keep,
                    rtol=1e-6, atol=1e-6)


def test_poly_of_a_matrix_is_its_characteristic_polynomial_as_jax():
    m = np.array([[1.0, 2.0, 0.5], [3.0, 4.0, -1.0], [0.0, 1.0, 2.0]])
    assert_allclose(fnp.poly(to_fx(m)), jnp.poly(m), rtol=1e-10, atol=1e-10)


# --- arguments: arrays and scalars, not lists (jax's ensure_arraylike) ------------------------

_P = np.array([1.0, -2.0, 3.0], np.float32)
_ARRAYLIKE_CALLS = [
    ("polyadd", lambda m, a: m.polyadd(a, _P)),
    ("polyadd-second", lambda m, a: m.polyadd(_P, a)),
    ("polysub", lambda m, a: m.polysub(a, _P)),
    ("polymul", lambda m, a: m.polymul(_P, a)),
    ("polydiv", lambda m, a: m.polydiv(a, _P[:2])),
    ("polyder", lambda m, a: m.polyder(a)),
    ("polyint", lambda m, a: m.polyint(a)),
    ("polyint-k", lambda m, a: m.polyint(_P, m=2, k=a[:2])),
    ("polyval-p", lambda m, a: m.polyval(a, 2.0)),
    ("polyval-x", lambda m, a: m.polyval(_P, a)),
    ("poly", lambda m, a: m.poly(a)),
    ("polyfit", lambda m, a: m.polyfit(a, _P, 1)),
]


@pytest.mark.parametrize("name,call", _ARRAYLIKE_CALLS, ids=[c[0] for c in _ARRAYLIKE_CALLS])
def test_lists_are_refused_as_jax(name, call):
    data = [1.0, 2.0, 4.0]
    with pytest.raises(TypeError):
        call(jnp, data)
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        call(fnp, data)
    # The same data as an array works in both, with the same result.
    got, want = call(fnp, np.asarray(data, np.float32)), call(jnp, np.asarray(data, np.float32))
    assert_allclose(got, want, rtol=1e-5, atol=1e-5, what=name)


# (jax also passes a scalar polynomial to polyadd/polymul/polyder through ensure_arraylike,
# then fails on its 0-d shape; fx treats it as a constant polynomial.)
@pytest.mark.parametrize("call", [
    lambda m: m.polyval(_P, 2.0), lambda m: m.polyval(_P, np.float32(-1.5)),
    lambda m: m.polyint(_P, k=1.0),
], ids=["polyval-scalar-x", "polyval-numpy-scalar-x", "polyint-scalar-k"])
def test_scalars_are_accepted_as_jax(call):
    assert_allclose(call(fnp), call(jnp), rtol=1e-6, what="scalar argument")
