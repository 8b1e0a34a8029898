"""Tests of fx/numpy/windows.py and fx/numpy/vector_products.py against jax.numpy (x64 mode
in both): window values and dtypes for every length class, kaiser's beta gradient; vecdot,
matvec, vecmat, cross, matrix_transpose, permute_dims over broadcast batches and dtypes,
their derivatives, vmap against a loop, jit against eager; einsum_path's order; errors."""

from __future__ import annotations

import jax
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
)

import fx
import fx.numpy as fnp


@pytest.fixture(autouse=True)
def _x64():
    before = fx.config.enable_x64
    fx.config.update("jax_enable_x64", True)
    yield
    fx.config.update("jax_enable_x64", before)


WINDOWS = ["bartlett", "blackman", "hamming", "hanning"]


@pytest.mark.parametrize("M", [-2, 0, 1, 2, 3, 8, 33])
@pytest.mark.parametrize("name", WINDOWS + ["kaiser"])
def test_windows_match_jax(name, M):
    args = (M, 5.5) if name == "kaiser" else (M,)
    # jax 0.10 raises for a negative length; numpy (and fx) give an empty window.
    oracle = np if M < 0 else jnp
    got, want = getattr(fnp, name)(*args), getattr(oracle, name)(*args)
    assert_allclose(got, want, rtol=1e-13, atol=1e-15, what=f"{name}({M})")


def test_window_default_dtype_follows_the_mode():
    with fx.enable_x64(False):
        for name in WINDOWS:
            assert getattr(fnp, name)(4).dtype == np.float32
        assert fnp.kaiser(4, 2.0).dtype == np.float32
        assert_allclose(fnp.hamming(6), np.hamming(6).astype(np.float32), what="f32")


def test_kaiser_beta_is_differentiable_and_traceable():
    # jax's derivative jitted once for every beta (eagerly it compiles each primitive of
    # the Bessel function's jvp on its own); compared to rounding either way.
    jax_d = jax.jit(jax.jacfwd(lambda b: jnp.kaiser(7, b)))
    for beta in (0.0, 1.5, 8.6, 30.0):
        g = fx.jacfwd(lambda b: fnp.kaiser(7, b))(np.float64(beta))
        want = jax_d(np.float64(beta))
        assert_allclose(g, want, rtol=1e-10, atol=1e-12, what=f"d kaiser / d beta {beta}")
        check_grads_f64(OpCase("kaiser", lambda b: fnp.kaiser(7, b), None, None),
                        [np.float64(beta)])
    assert_allclose(fx.jit(lambda b: fnp.kaiser(9, b))(np.float64(4.0)), jnp.kaiser(9, 4.0),
                    rtol=1e-12, what="jit kaiser")
    assert fnp.euler_gamma == jnp.euler_gamma


def test_window_errors():
    with pytest.raises(TypeError, match=r"fx\.numpy\.hamming: M must be a Python int"):
        fnp.hamming(3.5)
    with pytest.raises(ValueError, match=r"fx\.numpy\.kaiser: beta must be a scalar"):
        fnp.kaiser(4, np.ones(2))


# --- products --------------------------------------------------------------------------------

PRODUCT_SHAPES = {
    "vecdot": [((3,), (3,)), ((4, 1, 3), (5, 3)), ((2, 3), (3,))],
    "matvec": [((4, 3), (3,)), ((2, 1, 4, 3), (5, 3)), ((4, 3), (2, 3))],
    "vecmat": [((3,), (3, 4)), ((5, 3), (2, 1, 3, 4)), ((2, 3), (3, 4))],
    "cross": [((3,), (3,)), ((2,), (3,)), ((3,), (2,)), ((2,), (2,)), ((4, 3), (1, 3)),
              ((5, 1, 2), (4, 3))],
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=lambda d: d.__name__)
@pytest.mark.parametrize("name,shapes",
                         [(n, s) for n, ss in PRODUCT_SHAPES.items() for s in ss], ids=str)
def test_products_match_jax(name, shapes, dtype):
    rng = np.random.default_rng(0)
    a, b = (rng.integers(-4, 5, s).astype(dtype) for s in shapes)
    got = getattr(fnp, name)(to_fx(a), to_fx(b))
    want = getattr(jnp, name)(a, b)
    assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else None, what=name)


def test_vecdot_axis_bool_and_precision():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 5, 1))
    assert_allclose(fnp.vecdot(to_fx(a), to_fx(b), axis=0), jnp.vecdot(a, b, axis=0),
                    what="vecdot axis=0")
    assert_allclose(fnp.vecdot(to_fx(a), to_fx(a), axis=-1, precision="highest",
                               preferred_element_type=np.float64),
                    jnp.vecdot(a, a, precision="highest", preferred_element_type=np.float64),
                    what="options")
    t, f = np.array([True, False]), np.array([True, True])
    assert_bitwise(fnp.vecdot(to_fx(t), to_fx(f)), jnp.vecdot(t, f), what="bool")


@pytest.mark.parametrize("axes", [dict(axisa=0, axisb=1, axisc=0), dict(axis=0),
                                  dict(axisc=1)], ids=str)
def test_cross_axes(axes):
    rng = np.random.default_rng(2)
    shapes = ((3, 4, 5), (3, 4, 5)) if "axis" in axes else ((3, 4, 5), (5, 3))
    if axes == dict(axisc=1):
        shapes = ((4, 5, 3), (3,))
    a, b = (rng.standard_normal(s) for s in shapes)
    assert_allclose(fnp.cross(to_fx(a), to_fx(b), **axes), jnp.cross(a, b, **axes),
                    what=str(axes))


def test_transposes():
    x = np.arange(24.0).reshape(2, 3, 4)
    assert_bitwise(fnp.matrix_transpose(to_fx(x)), jnp.matrix_transpose(x), what="mT")
    assert_bitwise(fnp.permute_dims(to_fx(x), (2, 0, 1)), jnp.permute_dims(x, (2, 0, 1)),
                   what="permute_dims")
    with pytest.raises(ValueError, match=r"fx\.numpy\.matrix_transpose.*at least 2-d.*\(3,\)"):
        fnp.matrix_transpose(to_fx(np.ones(3)))


def test_product_errors():
    with pytest.raises(ValueError, match=r"fx\.numpy\.vecdot: contracted.*3.*4"):
        fnp.vecdot(to_fx(np.ones(3)), to_fx(np.ones(4)))
    with pytest.raises(ValueError, match=r"fx\.numpy\.matvec: operands need at least 2"):
        fnp.matvec(to_fx(np.ones(3)), to_fx(np.ones(3)))
    with pytest.raises(ValueError, match=r"fx\.numpy\.cross: incompatible dimensions.*4"):
        fnp.cross(to_fx(np.ones(4)), to_fx(np.ones(3)))
    with pytest.raises(ValueError, match=r"fx\.numpy\.vecmat.*broadcast.*\(2,\) \(5,\)"):
        fnp.vecmat(to_fx(np.ones((2, 3))), to_fx(np.ones((5, 3, 4))))
    with pytest.raises(TypeError, match=r"fx\.numpy\.cross: bool"):
        fnp.cross(to_fx(np.ones(3, bool)), to_fx(np.ones(3, bool)))


PRODUCT_CASES = [
    OpCase("vecdot", fnp.vecdot, jnp.vecdot,
           lambda r: [r.standard_normal((4, 3)), r.standard_normal((4, 3))], diff_argnums=(0, 1)),
    OpCase("matvec", fnp.matvec, jnp.matvec,
           lambda r: [r.standard_normal((4, 2, 3)), r.standard_normal((4, 3))],
           diff_argnums=(0, 1)),
    OpCase("vecmat", fnp.vecmat, jnp.vecmat,
           lambda r: [r.standard_normal((4, 3)), r.standard_normal((4, 3, 2))],
           diff_argnums=(0, 1)),
    OpCase("cross", fnp.cross, jnp.cross,
           lambda r: [r.standard_normal((4, 3)), r.standard_normal((4, 3))], diff_argnums=(0, 1)),
    OpCase("cross2", fnp.cross, jnp.cross,
           lambda r: [r.standard_normal((4, 2)), r.standard_normal((4, 3))], diff_argnums=(0, 1)),
    OpCase("matrix_transpose", fnp.matrix_transpose, jnp.matrix_transpose,
           lambda r: [r.standard_normal((4, 2, 3))]),
]


@pytest.mark.parametrize("case", PRODUCT_CASES, ids=repr)
def test_product_transforms(case):
    rng = np.random.default_rng(3)
    args = case.args(rng)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)
    check_grads_f64(case, args)
    args32 = [a.astype(np.float32) for a in args]
    check_vmap(case, args32, (0,) * len(args))
    check_vmap(case, [args32[0], args32[1][0]] if len(args) == 2 else args32,
               (0, None) if len(args) == 2 else (0,))
    assert_allclose(fx.jit(case.fx_fn)(*to_fx(args32)), case.fx_fn(*to_fx(args32)),
                    rtol=1e-6, what="jit")


# --- einsum_path -----------------------------------------------------------------------------

PATHS = [
    ("ij,jk,kl->il", [(2, 30), (30, 40), (40, 2)]),
    ("ij,jk,kl,lm->im", [(5, 6), (6, 7), (7, 2), (2, 9)]),
    ("ij,j->i", [(3, 3), (3,)]),
    ("ii->i", [(3, 3)]),
    ("bij,bjk,bkl->bil", [(2, 8, 3), (2, 3, 9), (2, 9, 2)]),
]


@pytest.mark.parametrize("spec,shapes", PATHS, ids=[p[0] for p in PATHS])
def test_einsum_path_order(spec, shapes):
    ops = [np.ones(s) for s in shapes]
    path, report = fnp.einsum_path(spec, *[to_fx(o) for o in ops])
    assert path == jnp.einsum_path(spec, *ops)[0]
    assert spec in report
    # The path is a valid contraction order of the operands, and einsum's value is jax's.
    n = len(ops)
    for step in path:
        assert all(0 <= i < n for i in step)
        n -= len(step) - 1
    assert n == 1
    rng = np.random.default_rng(4)
    ops = [rng.standard_normal(s) for s in shapes]
    assert_allclose(fnp.einsum(spec, *[to_fx(o) for o in ops]), jnp.einsum(spec, *ops),
                    what=spec)
