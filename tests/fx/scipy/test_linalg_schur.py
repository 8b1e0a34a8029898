"""fx.scipy.linalg's Schur-based functions, eigh_tridiagonal, expm_frechet, qr_multiply and
pivoted qr against jax.scipy.linalg.

fx and jax call the same LAPACK (jaxlib's CPU kernels call SciPy's), so Schur and Hessenberg
forms are compared directly; each result is also checked for what defines it whatever the
convention (reconstructions, ``sqrtm(a)^2 == a``, Sylvester residuals, eigenpairs), and
eigenvectors of eigh_tridiagonal up to their phase. Values in x64 and the default mode,
jvp against jax and finite differences where jax differentiates, vmap against a loop, jit
against eager.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest
from harness import adjoint, assert_allclose, randn, run_doctests, same_mode

import fx
import fx.numpy as fnp
import fx.scipy.linalg as fsl
import fx.scipy.linalg_schur
import fx.scipy.linalg_tridiagonal
from fx.test_util import check_grads


def _everything(L, np_, a, b, c, tall, d, e, cl, cr, *, level="cheap"):
    """The non-differentiable results as one program (jax compiles once per case). jax's
    compile time sets the levels: 'small' (~0.8 s), 'cheap' (~1 s), 'full' (~6 s, slow); the
    default run checks the rest against SciPy."""
    t, z = L.schur(a)
    out = dict(schur=(t, z), sqrtm=L.sqrtm(a), hess_q=L.hessenberg(a, calc_q=True),
               qrm=L.qr_multiply(tall, cr))
    if level == "small":
        return out
    out.update(
        schur_c=L.schur(a, output="complex"),
        qrm_more=[L.qr_multiply(tall, cr[0], pivoting=True, conjugate=True),
                  L.qr_multiply(tall.T, cl[:3, 0], mode="left", pivoting=True)],
        qrp=L.qr(tall.T, mode="economic", pivoting=True))
    if level == "full":
        out.update(
            sylv=L.solve_sylvester(a, b, c),
            tri=L.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 3)),
            csf=L.rsf2csf(t, z), funm=L.funm(a, np_.sin, disp=False), hess=L.hessenberg(a),
            sylv_eigen=L.solve_sylvester(a, b, c, method="eigen"),
            tri_all=L.eigh_tridiagonal(d, e, eigvals_only=True),
            qrm_left=L.qr_multiply(tall, cl, mode="left"),
            qrp_more=[L.qr(tall, pivoting=True), L.qr(tall, mode="r", pivoting=True)],
            frechet=L.expm_frechet(a, c @ c.T, compute_expm=False))
    return out


def _args(rng, dtype):
    real = np.float32 if np.dtype(dtype) in (np.float32, np.complex64) else np.float64
    return [randn(rng, (4, 4), dtype), randn(rng, (3, 3), dtype), randn(rng, (4, 3), dtype),
            randn(rng, (5, 3), dtype), rng.standard_normal(5).astype(real),
            rng.standard_normal(4).astype(real), randn(rng, (3, 2), dtype),
            randn(rng, (2, 5), dtype)]


def _defining_properties(a, b, c, d, e, tol):
    t, z = (np.asarray(o) for o in fsl.schur(a))
    np.testing.assert_allclose(z @ t @ adjoint(z), a, atol=tol)
    np.testing.assert_allclose(np.tril(t, -2), 0, atol=tol)
    tc, zc = (np.asarray(o) for o in fsl.rsf2csf(t, z))
    np.testing.assert_allclose(zc @ tc @ adjoint(zc), a, atol=tol)
    np.testing.assert_allclose(np.tril(tc, -1), 0, atol=tol)
    s = np.asarray(fsl.sqrtm(a))
    np.testing.assert_allclose(s @ s, a, atol=tol * 10)
    np.testing.assert_allclose(fsl.funm(a, fnp.exp), fsl.expm(a), atol=tol * 10)
    h, q = (np.asarray(o) for o in fsl.hessenberg(a, calc_q=True))
    np.testing.assert_allclose(q @ h @ adjoint(q), a, atol=tol)
    np.testing.assert_allclose(np.tril(h, -2), 0, atol=tol)
    for method in ("schur", "eigen"):
        x = np.asarray(fsl.solve_sylvester(a, b, c, method=method))
        np.testing.assert_allclose(a @ x + x @ b, c, atol=tol * 10)
    full = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    w, v = (np.asarray(o) for o in fsl.eigh_tridiagonal(d, e))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(full), atol=tol)
    np.testing.assert_allclose(full @ v, v * w, atol=tol * 10)


_SLOW = pytest.mark.slow


@pytest.mark.parametrize("dtype,x64,level", [
    (np.float64, True, "cheap"), (np.float32, False, "small"),
    *(pytest.param(d, x, "full", marks=_SLOW) for d, x in [
        (np.float64, True), (np.complex128, True), (np.float32, False),
        (np.complex64, False)])])
def test_values_against_jax(dtype, x64, level):
    args = _args(np.random.default_rng(0), dtype)
    tol = 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-11
    with same_mode(x64):
        got = _everything(fsl, fnp, *args, level=level)
        want = jax.jit(lambda *a: _everything(jsl, jnp, *a, level=level))(*args)
        assert_allclose(got, want, tol, tol)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_values_against_scipy_and_defining_properties(dtype):
    # What jax compiles slowly (the 'full' level above runs with -m slow) against SciPy,
    # whose semantics jax's follow: these matrix functions are unique, and rsf2csf of one real
    # Schur form is one sequence of rotations. (Not sqrtm: with negative eigenvalues SciPy's
    # real-Schur branch picks other square roots than jax's complex one; it runs against jax.)
    import scipy.linalg as sl

    a, b, c, _, d, e, _, _ = _args(np.random.default_rng(0), dtype)
    tol = 1e-11
    if dtype == np.float64:
        t, z = sl.schur(a)
        assert_allclose(fsl.rsf2csf(t, z), sl.rsf2csf(t, z), tol, tol)
    assert_allclose(fsl.funm(a, fnp.sin), sl.funm(a, np.sin).astype(np.complex128), tol, tol)
    for method in ("schur", "eigen"):
        assert_allclose(fsl.solve_sylvester(a, b, c, method=method), sl.solve_sylvester(a, b, c),
                        1e-10, 1e-10)
    assert_allclose(fsl.expm_frechet(a, c @ c.T), sl.expm_frechet(a, c @ c.T), 1e-10, 1e-10)
    assert_allclose(fsl.eigh_tridiagonal(d, e, eigvals_only=True),
                    sl.eigh_tridiagonal(d, e, eigvals_only=True), tol, tol)
    assert_allclose(fsl.eigh_tridiagonal(d, e, eigvals_only=True, select="i",
                                         select_range=(1, 3)),
                    sl.eigh_tridiagonal(d, e, eigvals_only=True, select="i",
                                        select_range=(1, 3)), tol, tol)
    _defining_properties(a, b, c, d, e, tol)


@pytest.mark.slow
def test_eigh_tridiagonal_eigenvectors_against_jax():
    rng = np.random.default_rng(1)
    d, e = rng.standard_normal(5).astype(np.complex128), randn(rng, (4,), np.complex128)
    w, v = fsl.eigh_tridiagonal(d, e)
    jw, jv = jsl.eigh_tridiagonal(d, e)
    assert_allclose(w, jw, 1e-12, 1e-12)
    # Eigenvectors up to a phase: the pivot of the nearly singular shifted solve sets it.
    assert_allclose(fnp.abs(v), jnp.abs(jv), 1e-7, 1e-7)


def test_eigh_tridiagonal_eigenvectors_and_clusters():
    # Hermitian, and clusters of equal and nearly equal eigenvalues (orthonormalized).
    rng = np.random.default_rng(1)
    d, e = rng.standard_normal(5).astype(np.complex128), randn(rng, (4,), np.complex128)
    for dd, ee in [(d, e), (np.array([1.0, 1, 1, 2]), np.array([0, 1e-9, 0]))]:
        w, v = (np.asarray(o) for o in fsl.eigh_tridiagonal(dd, ee))
        np.testing.assert_allclose(adjoint(v) @ v, np.eye(len(dd)), atol=1e-10)
        full = np.diag(dd) + np.diag(ee, 1) + np.diag(np.conj(ee), -1)
        np.testing.assert_allclose(full @ v, v * np.asarray(w), atol=1e-10)
    assert_allclose(fsl.eigh_tridiagonal(np.array([3.0]), np.zeros(0)),
                    jsl.eigh_tridiagonal(np.array([3.0]), np.zeros(0)))


def test_derivatives_against_jax_and_finite_differences():
    rng = np.random.default_rng(2)
    tall, cr = randn(rng, (4, 3), np.complex128), randn(rng, (2, 4), np.complex128)
    # jax's qr_multiply (LAPACK's ormqr) has no derivative; fx's (qr and a matmul) does.
    check_grads(lambda x, c: fsl.qr_multiply(x, c, mode="left", pivoting=True)[0],
                (tall, cr[:, :3].T), order=1)
    t = randn(rng, (4, 3), np.complex128)
    got = fx.jvp(lambda x: fsl.qr(x, pivoting=True)[:2], (tall,), (t,))
    want = jax.jit(lambda x, t: jax.jvp(lambda x: jsl.qr(x, pivoting=True)[:2], (x,), (t,)))(
        tall, t)
    assert_allclose(got, want, 1e-10, 1e-10)


@pytest.mark.slow
def test_expm_frechet_derivative_against_jax():
    rng = np.random.default_rng(2)
    a, e = 0.5 * randn(rng, (3, 3), np.float64), randn(rng, (3, 3), np.float64)
    ta, te = randn(rng, (3, 3), np.float64), randn(rng, (3, 3), np.float64)
    got = fx.jvp(fsl.expm_frechet, (a, e), (ta, te))
    want = jax.jit(lambda *x: jax.jvp(jsl.expm_frechet, x[:2], x[2:]))(a, e, ta, te)
    assert_allclose(got, want, 1e-10, 1e-10)
    check_grads(lambda x, y: fsl.qr_multiply(x, y), (a, e), order=2)


def test_vmap_against_loop_and_jit_against_eager():
    rng = np.random.default_rng(3)
    a, b, c = randn(rng, (2, 3, 3), np.float64), randn(rng, (2, 2, 2), np.float64), \
        randn(rng, (2, 3, 2), np.float64)
    d, e = rng.standard_normal((2, 3)), rng.standard_normal((2, 2))

    def f(a, b, c, d, e):
        t, z = fsl.schur(a)
        return (fsl.rsf2csf(t, z), fsl.sqrtm(a), fsl.funm(a, fnp.cos),
                fsl.hessenberg(a, calc_q=True), fsl.solve_sylvester(a, b, c),
                fsl.eigh_tridiagonal(d, e, eigvals_only=True), fsl.qr_multiply(a, c.T),
                fsl.expm_frechet(a, a))

    got = fx.vmap(f)(a, b, c, d, e)
    loop = [f(*x) for x in zip(a, b, c, d, e)]
    want = fx.tree_util.tree_map(lambda *o: np.stack([np.asarray(v) for v in o]), *loop)
    assert_allclose(got, want, 1e-12, 1e-12)
    one = [x[0] for x in (a, b, c, d, e)]
    g = lambda a, b, c, d, e: f(a, b, c, d, e)[:6]  # noqa: E731  (expm's compile is costly)
    assert_allclose(fx.jit(g)(*one), g(*one), 1e-12, 1e-12)
    # The batched functions take leading batch dimensions directly, broadcasting them.
    assert_allclose(fsl.solve_sylvester(a, b[0], c), np.stack(
        [np.asarray(fsl.solve_sylvester(x, b[0], y)) for x, y in zip(a, c)]), 1e-12, 1e-12)
    t, z = fsl.schur(a)
    assert_allclose(fsl.rsf2csf(t, z), want[0], 1e-12, 1e-12)


def test_errors_match_jax():
    x = np.eye(3)
    with pytest.raises(ValueError, match="'real' or 'complex'"):
        fsl.schur(x, output="both")
    with pytest.raises(ValueError, match="square array_like"):
        fsl.funm(np.ones((2, 3, 3)), fnp.exp)
    with pytest.raises(NotImplementedError, match="Blocked"):
        fsl.sqrtm(x, blocksize=2)
    with pytest.raises(ValueError, match="must be square"):
        fsl.rsf2csf(np.ones((2, 3)), x)
    with pytest.raises(ValueError, match="shapes must match"):
        fsl.rsf2csf(x, np.eye(2))
    with pytest.raises(NotImplementedError, match="select='v'"):
        fsl.eigh_tridiagonal(np.ones(3), np.ones(2), eigvals_only=True, select="v")
    with pytest.raises(ValueError, match="select_range must be specified"):
        fsl.eigh_tridiagonal(np.ones(3), np.ones(2), eigvals_only=True, select="i")
    with pytest.raises(TypeError, match="same dtype"):
        fsl.eigh_tridiagonal(np.ones(3), np.ones(2, np.float32))
    with pytest.raises(ValueError, match="Incompatible shapes for Sylvester"):
        fsl.solve_sylvester(x, x, np.ones((3, 2)))
    with pytest.raises(ValueError, match="Unrecognized method"):
        fsl.solve_sylvester(x, x, x, method="magic")
    with pytest.raises(ValueError, match="'right' or 'left'"):
        fsl.qr_multiply(x, x, mode="up")
    with pytest.raises(ValueError, match="not compatible for Q @ c"):
        fsl.qr_multiply(np.ones((4, 3)), np.ones((4, 1)), mode="left")
    with pytest.raises(ValueError, match="Unsupported QR decomposition mode 'raw'"):
        fsl.qr(x, mode="raw")  # jax.scipy's qr has no 'raw' mode (jax.numpy's has)
    with pytest.raises(ValueError, match="same shape"):
        fsl.expm_frechet(x, np.eye(2))
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'schur'"):
        fx.grad(lambda a: fnp.real(fsl.sqrtm(a)).sum())(x)
    # A singular Sylvester operator (eig(a) + eig(b) = 0) gives NaNs, as jax's.
    assert np.isnan(np.asarray(fsl.solve_sylvester(x, -x, x))).all()


def test_docstring_examples():
    assert run_doctests(fx.scipy.linalg_schur, fx.scipy.linalg_tridiagonal) >= 7
