"""The host kernels behind cholesky, triangular_solve and lu (fx.lax.linalg.host): each fast
path against the general NumPy path it replaces.

- LAPACK one matrix at a time (SciPy's potrf/getrf/trsm/trsv on C-order buffers read as
  Fortran transposes): every flag combination, real and complex, batched, against the NumPy
  loops; the LU of the transposes (``transposed=True``) bitwise that of a transposed copy;
- the small-matrix paths (the C kernels and the NumPy closed forms): bitwise equal to each
  other and to the NumPy LU loop and substitution, close to LAPACK;
- NumPy only (SciPy "missing", no C kernels): the same values;
- through fx: jit(vmap(solve)) and grads over a batch of small matrices (the small paths)
  agree with the same functions one matrix at a time (the LAPACK paths).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from harness import randn
from numpy.testing import assert_allclose

import fx
import fx.numpy as fnp
from fx.lax import small_linalg, small_linalg_kernels
from fx.lax.linalg import host

REAL = (np.float32, np.float64)
ALL = (*REAL, np.complex64, np.complex128)



def _spd(rng, shape, dtype):
    x = randn(rng, shape, dtype)
    n = shape[-1]
    return (x @ np.conj(np.swapaxes(x, -1, -2)) / n + np.eye(n)).astype(dtype)


def _tol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(40, 40), (3, 24, 24)])
def test_lapack_cholesky_matches_numpy(dtype, shape):
    rng = np.random.default_rng(0)
    x = _spd(rng, shape, dtype)
    x[..., 0, -1] = 7  # the upper triangle is not read
    got = host.cholesky(x)
    assert got.dtype == x.dtype
    assert_allclose(got, host.cholesky_numpy(np.tril(x) + np.conj(np.swapaxes(
        np.tril(x, -1), -1, -2))), rtol=_tol(dtype), atol=_tol(dtype))
    assert np.all(np.triu(got, 1) == 0)


def test_lapack_cholesky_not_positive_definite_is_nan():
    rng = np.random.default_rng(1)
    x = _spd(rng, (3, 20, 20), np.float64)
    x[1] = -x[1]
    got = host.cholesky(x)
    rows, cols = np.tril_indices(20)
    assert np.isnan(got[1, rows, cols]).all() and np.isfinite(got[[0, 2]]).all()
    assert np.all(np.triu(got, 1) == 0)  # the primitive's invariant: no tril pass after it


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("k", [5, 1])  # one right-hand side on the left: BLAS trsv
def test_lapack_triangular_solve_every_flag(dtype, k):
    rng = np.random.default_rng(2)
    m = 20
    a = randn(rng, (2, m, m), dtype) + 4 * np.eye(m, dtype=dtype)
    for left, lower, trans, conj, unit in itertools.product((True, False), repeat=5):
        b = randn(rng, (2, m, k) if left else (2, k, m), dtype)
        kw = dict(left_side=left, lower=lower, transpose_a=trans, conjugate_a=conj,
                  unit_diagonal=unit)
        got = host.triangular_solve(a, b, **kw)
        want = host.triangular_solve_numpy(a, b, **kw)
        assert_allclose(got, want, rtol=_tol(dtype), atol=_tol(dtype), err_msg=str(kw))


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(30, 30), (2, 17, 17), (12, 9), (9, 12)])
def test_lapack_lu_matches_numpy_loop(dtype, shape):
    rng = np.random.default_rng(3)
    x = randn(rng, shape, dtype)
    got, want = host.lu(x), host.lu_numpy(x)
    assert_allclose(got[0], want[0], rtol=_tol(dtype) * 10, atol=_tol(dtype) * 10)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2], want[2])


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(30, 30), (2, 17, 17), (12, 9), (9, 12), (20, 3, 3),
                                   (300, 6, 6)])
def test_lu_transposed_is_the_lu_of_the_transpose(dtype, shape):
    # getrf in place on x read as Fortran-order x^T, or (small matrices, NumPy loop) the plain
    # LU of a transposed copy: bitwise the LU of x^T, its factors transposed back.
    rng = np.random.default_rng(4)
    x = randn(rng, shape, dtype)
    got = host.lu(x, transposed=True)
    want = host.lu(np.ascontiguousarray(np.swapaxes(x, -1, -2)))
    assert got[0].shape == x.shape and got[0].flags.c_contiguous
    np.testing.assert_array_equal(got[0], np.swapaxes(want[0], -1, -2))
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2], want[2])


def test_lapack_singular_triangular_solve_is_inf_not_an_error():
    a = np.tril(np.ones((16, 16)))
    a[3, 3] = 0
    assert not np.isfinite(host.triangular_solve(
        a, np.ones((16, 1)), left_side=True, lower=True, transpose_a=False,
        conjugate_a=False, unit_diagonal=False)).all()


# --- the small-matrix paths ---------------------------------------------------------------


needs_kernels = pytest.mark.skipif(not small_linalg_kernels.available(np.zeros(1)),
                                   reason="no C compiler for the small-matrix kernels")


@needs_kernels
@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_small_lu_bitwise_equal_to_the_numpy_loop(dtype, n):
    x = randn(np.random.default_rng(n), (64, n, n), dtype)
    x[5] = 0  # a singular matrix: pivots stay, nothing is divided
    want = host.lu_numpy(x)
    for got in (small_linalg_kernels.lu(x), small_linalg.lu(x), host.lu(x)):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", (np.complex64, np.complex128))
def test_small_lu_complex_closed_form_bitwise(dtype):
    x = randn(np.random.default_rng(7), (32, 3, 3), dtype)
    for g, w in zip(host.lu(x), host.lu_numpy(x)):
        np.testing.assert_array_equal(g, w)


@needs_kernels
@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n", [2, 3, 4])
def test_small_triangular_solve_bitwise(dtype, n):
    rng = np.random.default_rng(10 + n)
    a = randn(rng, (50, n, n), dtype) + 3 * np.eye(n, dtype=dtype)
    for left, lower, trans, unit in itertools.product((True, False), repeat=4):
        b = randn(rng, (50, n, 2) if left else (50, 2, n), dtype)
        kw = dict(left_side=left, lower=lower, transpose_a=trans, unit_diagonal=unit)
        got = small_linalg_kernels.triangular_solve(a, b, **kw)
        numpy_closed = host.triangular_solve_numpy(a, b, conjugate_a=False, **kw)
        np.testing.assert_array_equal(got, numpy_closed, err_msg=str(kw))
        t = (np.tril(a) if lower else np.triu(a))
        if unit:
            t = t - t * np.eye(n, dtype=dtype) + np.eye(n, dtype=dtype)
        t = np.swapaxes(t, -1, -2) if trans else t
        want = np.linalg.solve(t, b) if left else np.swapaxes(
            np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
        assert_allclose(got, want, rtol=_tol(dtype) * 10, atol=_tol(dtype) * 10)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_small_cholesky_close_to_lapack_and_nan_on_failure(dtype, n):
    x = _spd(np.random.default_rng(20 + n), (40, n, n), dtype)
    x[3] = -x[3]
    x[4, 0, 0] = np.nan
    got = host.cholesky(x)
    want = host.cholesky_numpy(x)
    # (for a NaN input LAPACK leaves zeros above the diagonal, the closed forms NaNs: the
    # primitive's users read the lower triangle)
    np.testing.assert_array_equal(np.isnan(np.tril(got)), np.isnan(np.tril(want)))
    rows, cols = np.tril_indices(n)
    assert np.isnan(got[3:5, rows, cols]).all()
    assert np.all(np.triu(got, 1) == 0)  # the primitive's invariant, failures included
    assert_allclose(np.nan_to_num(np.tril(got)), np.nan_to_num(np.tril(want)), rtol=_tol(dtype),
                    atol=_tol(dtype))
    if np.dtype(dtype).kind == "f" and small_linalg_kernels.available(x):
        np.testing.assert_array_equal(small_linalg_kernels.cholesky(x),
                                      small_linalg.cholesky(x))


def test_numpy_only_paths_give_the_same_values(monkeypatch):
    rng = np.random.default_rng(30)
    big, small = _spd(rng, (2, 20, 20), np.float64), _spd(rng, (30, 3, 3), np.float64)
    b = rng.standard_normal((2, 20, 3))
    kw = dict(left_side=True, lower=True, transpose_a=True, conjugate_a=False,
              unit_diagonal=False)
    fast = [host.cholesky(big), host.lu(big)[0], host.triangular_solve(big, b, **kw),
            host.cholesky(small), host.lu(small)[0]]
    monkeypatch.setattr(host, "_scipy", lambda kind: None)
    monkeypatch.setattr(small_linalg_kernels, "available", lambda *a: False)
    slow = [host.cholesky(big), host.lu(big)[0], host.triangular_solve(big, b, **kw),
            host.cholesky(small), host.lu(small)[0]]
    for f, s in zip(fast, slow):
        assert_allclose(f, s, rtol=1e-10, atol=1e-10)


# --- through fx: a batch of small matrices against one matrix at a time -------------------


def test_jit_vmap_small_solve_and_grad_agree_with_one_matrix_at_a_time():
    rng = np.random.default_rng(40)
    a = _spd(rng, (16, 3, 3), np.float32)
    b = rng.standard_normal((16, 3)).astype(np.float32)

    def f(a, b):
        x = fnp.linalg.solve(a, b)
        c = fnp.linalg.cholesky(a)
        return fnp.sum(x * x) + fnp.sum(fnp.log(fnp.diagonal(c)))

    batched = fx.jit(fx.vmap(fnp.linalg.solve))(a, b)
    assert_allclose(batched, np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-5, atol=1e-5)
    grads = fx.jit(fx.vmap(fx.grad(f, argnums=(0, 1))))(a, b)
    one = [fx.grad(f, argnums=(0, 1))(a[i], b[i]) for i in range(len(a))]
    for k in range(2):
        assert_allclose(grads[k], np.stack([g[k] for g in one]), rtol=1e-4, atol=1e-5)
