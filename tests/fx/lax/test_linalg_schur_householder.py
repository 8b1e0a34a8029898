"""fx.lax.linalg's Schur decomposition and packed Householder factorizations (schur,
hessenberg, tridiagonal, geqrf, householder_product, ormqr) against jax.lax.linalg.

fx and jax call the same LAPACK routines (jaxlib's CPU kernels call SciPy's LAPACK), so the
outputs are compared directly; each is also checked for what defines it whatever the
convention (reconstruction, unitarity, (quasi) triangular structure). vmap is checked
against a loop, jit against eager, and the refused derivatives for their error.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from harness import adjoint, assert_allclose, randn, run_doctests, same_mode

import fx
import fx.lax.linalg as fl
import fx.lax.linalg.householder
import fx.lax.linalg.schur_decomposition

jl = jax.lax.linalg
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]



def _tol(dtype):
    return 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-11



def _check_quasi_triangular(t, real, tol):
    # Below the first subdiagonal: zero. The subdiagonal: zero for complex forms; for real
    # ones, nonzero only inside 2x2 blocks, which do not touch.
    n = t.shape[-1]
    np.testing.assert_allclose(np.tril(t, -2), 0, atol=tol)
    sub = np.diagonal(t, -1, -2, -1)
    if not real:
        np.testing.assert_allclose(sub, 0, atol=tol)
    elif n > 2:
        nz = np.abs(sub) > tol
        assert not (nz[..., 1:] & nz[..., :-1]).any()


def _reconstruction_checks(x, tol):
    real = np.dtype(x.dtype).kind == "f"
    n = x.shape[-1]
    eye = np.eye(n)
    t, q = (np.asarray(o) for o in fl.schur(x))
    np.testing.assert_allclose(q @ t @ adjoint(q), x, atol=tol * 10)
    np.testing.assert_allclose(adjoint(q) @ q, np.broadcast_to(eye, q.shape), atol=tol)
    _check_quasi_triangular(t, real, tol)
    a, taus = (np.asarray(o) for o in fl.hessenberg(x))
    np.testing.assert_allclose(np.tril(a, -2) != 0, np.tril(np.ones_like(a), -2) != 0)
    assert taus.shape == (*x.shape[:-2], n - 1)
    _, d, e, _ = (np.asarray(o) for o in fl.tridiagonal((x + adjoint(x)) / 2))
    full = d[..., :, None] * eye
    for i in range(n - 1):
        full[..., i, i + 1] = full[..., i + 1, i] = e[..., i]
    np.testing.assert_allclose(np.linalg.eigvalsh(full), np.linalg.eigvalsh((x + adjoint(x)) / 2),
                               atol=tol * 10)


def _all(L, x, tall, c_left, c_right):
    a, taus = L.geqrf(tall) if L is fl else jax._src.lax.linalg.geqrf(tall)
    outs = [L.schur(x), L.schur(x, compute_schur_vectors=False), L.hessenberg(x),
            L.tridiagonal(x), L.tridiagonal(x, lower=False),
            L.householder_product(a, taus), L.householder_product(a[..., :, :2], taus[..., :1])]
    for left, c in ((True, c_left), (False, c_right)):
        for transpose in (False, True):
            outs.append(L.ormqr(a, taus, c, left=left, transpose=transpose))
    return outs


@pytest.mark.parametrize("dtype,x64", [
    (np.float64, True), (np.complex64, False),
    *(pytest.param(d, x, marks=pytest.mark.slow)
      for d, x in [(np.complex128, True), (np.float32, False)])])
def test_values_against_jax(dtype, x64):
    rng = np.random.default_rng(0)
    x = randn(rng, (2, 4, 4), dtype)
    tall = randn(rng, (2, 5, 3), dtype)
    c_left, c_right = randn(rng, (2, 5, 2), dtype), randn(rng, (2, 2, 5), dtype)
    with same_mode(x64):
        tol = _tol(dtype)
        c_left, c_right = c_left.astype(dtype), c_right.astype(dtype)
        # One jax program per case: op-by-op jax compiles each call.
        assert_allclose(_all(fl, x, tall, c_left, c_right),
                        jax.jit(lambda *a: _all(jl, *a))(x, tall, c_left, c_right), tol, tol)
        _reconstruction_checks(x, tol)


def test_empty_and_one_by_one():
    x = np.ones((2, 1, 1))
    assert_allclose(fl.schur(x), jl.schur(x))
    assert_allclose(fl.hessenberg(x), jl.hessenberg(x))
    # jax's hessenberg lowering fails on 0x0 matrices; fx returns empty outputs.
    assert [np.shape(o) for o in fl.hessenberg(np.ones((2, 0, 0)))] == [(2, 0, 0), (2, 0)]
    assert_allclose(fl.schur(np.ones((2, 0, 0))), jl.schur(np.ones((2, 0, 0))))


def test_vmap_against_loop_and_jit_against_eager():
    rng = np.random.default_rng(1)
    xs = randn(rng, (3, 4, 4), np.float64)

    def f(x):
        t, q = fl.schur(x)
        a, taus = fl.hessenberg(x)
        h, tau2 = fl.geqrf(x)
        return (t, q, a, taus, fl.householder_product(h, tau2), fl.ormqr(h, tau2, x),
                fl.tridiagonal(x))

    got = fx.vmap(f)(xs)
    loop = [f(x) for x in xs]
    want = fx.tree_util.tree_map(lambda *o: np.stack([np.asarray(v) for v in o]), *loop)
    assert_allclose(got, want, 0, 0)
    got = fx.vmap(f, in_axes=2)(np.moveaxis(xs, 0, 2))
    assert_allclose(got, want, 0, 0)
    assert_allclose(fx.jit(f)(xs[0]), f(xs[0]), 0, 0)


def test_derivatives_are_refused_and_errors_are_clear():
    x = np.eye(3) + 0.1
    for fn in (lambda a: fl.schur(a)[0], lambda a: fl.hessenberg(a)[0],
               lambda a: fl.geqrf(a)[0], lambda a: fl.householder_product(a, a[:, 0]),
               lambda a: fl.tridiagonal(a)[1]):
        with pytest.raises(NotImplementedError, match="Differentiation rule for"):
            fx.jvp(fn, (x,), (x,))
    with pytest.raises(TypeError, match="square"):
        fl.schur(np.ones((2, 3)))
    with pytest.raises(TypeError, match="float32, float64"):
        fl.hessenberg(np.eye(2, dtype=np.int32))
    with pytest.raises(NotImplementedError, match="sort"):
        fl.schur(np.eye(2), sort_eig_vals=True)
    with pytest.raises(TypeError, match="rows"):
        fl.householder_product(np.ones((2, 3)), np.ones(2))
    with pytest.raises(TypeError, match="as many rows"):
        fl.ormqr(np.ones((3, 2)), np.ones(2), np.ones((2, 2)))


def test_docstring_examples():
    assert run_doctests(fx.lax.linalg.householder, fx.lax.linalg.schur_decomposition) >= 5
