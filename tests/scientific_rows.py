"""Rows (see jit_rows.py) for the scientific primitives: FFT, the linear-algebra
decompositions and solves, the special functions. Run by tests/fx/test_jit_ops_scientific.py;
test_jit_ops.py counts them when it checks that every fx.lax primitive has a row.

Decompositions are not unique (signs of singular vectors, the order of complex eigenvalues),
so their rows return what is: reconstructions, singular values, eigenvalues of symmetric
matrices, the trace and determinant through the eigenvalues.
"""

from __future__ import annotations

import jax
import jax.scipy.special as jss
import numpy as np
from jit_rows import FLOATS, Row

import fx.scipy.special as fss
from fx import lax

C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)


def _spd(rng, n, dt, batch=()):
    a = rng.standard_normal(batch + (n, n))
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dt)


def _square(rng, n, dt, batch=()):
    return (rng.standard_normal(batch + (n, n)) + 2 * np.eye(n)).astype(dt)


def _mm(lax_, a, b):
    return lax_.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 2,)), ((), ())))


def _fft_row(lax_):
    def f(x):
        c = lax_.fft(lax_.complex(x, lax_.neg(x)), "FFT", x.shape[-1:])
        back = lax_.fft(c, "IFFT", x.shape[-1:])
        r = lax_.fft(x, "RFFT", x.shape[-1:])
        return c, back, lax_.fft(r, "IRFFT", x.shape[-1:])

    return f


def _linalg_row(lax_):
    L = lax_.linalg

    def f(spd, a, b):
        chol = L.cholesky(spd)
        x = L.triangular_solve(chol, b, left_side=True, lower=True)
        lu, pivots, perm = L.lu(a)
        q, r = L.qr(a)
        v, w = L.eigh(spd)
        s = L.svd(a, compute_uv=False)
        perm2 = L.lu_pivots_to_permutation(pivots, a.shape[-1])
        n = a.shape[-1]
        dl = lax_.concatenate([lax_.full((1,), 0, a.dtype), a[1:, 0]], 0)
        du = lax_.concatenate([a[:-1, 1], lax_.full((1,), 0, a.dtype)], 0)
        d = lax_.add(lax_.full((n,), 4, a.dtype), a[:, 2])
        tri = L.tridiagonal_solve(dl, d, du, b)
        return (chol, x, lu, pivots, perm, perm2, _mm(lax_, q, r), w,
                _mm(lax_, lax_.mul(v, lax_.broadcast_in_dim(w, (n, n), (1,))),
                    lax_.transpose(v, (1, 0))), s, tri)

    return f


def _eig_row(lax_):
    def f(a):
        w = lax_.linalg.eig(a, compute_left_eigenvectors=False,
                            compute_right_eigenvectors=False)[0]
        return lax_.reduce_sum(w, (0,)), lax_.reduce_prod(w, (0,))

    return f


def _schur_householder_row(lax_):
    L = lax_.linalg
    geqrf = L.geqrf if lax_ is lax else jax._src.lax.linalg.geqrf

    def f(a, c):
        t, z = L.schur(a)
        h, taus = L.hessenberg(a)
        r, tq = geqrf(a)
        q, _, p = L.qr(a, pivoting=True)
        return (t, z, h, taus, r, tq, L.householder_product(r, tq), L.ormqr(r, tq, c),
                L.ormqr(r, tq, lax_.transpose(c, (1, 0)), left=False, transpose=True), q, p,
                L.tridiagonal(lax_.add(a, lax_.transpose(a, (1, 0)))))

    return f


def _linalg_args(rng, dt):
    return [(_spd(rng, 4, dt), _square(rng, 4, dt), rng.standard_normal((4, 2)).astype(dt))]


# Random operands, then every combination of the edge values fx and jax agree on
# (tests/fx/scipy/test_special.py's edge-case tests; zeta's limits differ, so it sees only the
# random part). Each function is fused with a neighbouring op (its
# lowering/render/prelude_special.h kernel).
_N_RANDOM = 48
_LAX_EDGES = np.array([0.0, 1.0, 0.5, 3.0, -1.0, np.inf, np.nan])


def _fused(v):
    return v * 2 + 1


def _special_row(lax_):
    def f(a, x, b):
        r = slice(0, _N_RANDOM)
        return [_fused(v) for v in (
            lax_.igamma(a, x), lax_.igammac(a, x), lax_.igamma_grad_a(a, x),
            lax_.betainc(a, b, lax_.div(x, lax_.add(x, b))), lax_.zeta(lax_.add(a, b)[r], x[r]),
            lax_.bessel_i0e(lax_.sub(x, b)), lax_.bessel_i1e(lax_.sub(x, b)))]

    return f


def _special_args(rng, dt):
    edges = np.meshgrid(*[_LAX_EDGES] * 3, indexing="ij")
    return [tuple(np.concatenate([np.exp(rng.uniform(-3, 4, _N_RANDOM)), g.ravel()]).astype(dt)
                  for g in edges)]


def _scipy_special_row(ss):
    def f(x, pos, p):
        return [_fused(v) for v in (ss.i0e(x), ss.i1e(x), ss.erfcx(x * 0.2), ss.dawsn(x),
                                    *ss.sici(x), *ss.fresnel(x), ss.spence(pos), ss.ndtri(p))]

    return f


# Random operands, then the edge values where fx and jax agree: jax's Ci is NaN at -inf; fx's
# erfcx(-1e30) is -inf; jax's erfcx is 0 from about 9 (float32) or 26 (float64) on, so erfcx
# sees x / 5. (expi and expn, which jax compiles slowly and whose edges it gets otherwise or
# loops on, are compared with eager in test_jit_ops_scientific.py, with jax in
# tests/fx/scipy/test_special.py.)
_SCIPY_EDGES = [
    [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-30, 40.0, np.inf, np.nan],
    [0.0, 1.0, 0.5, 1.5, 2.0, 3.0, 1e-30, -1.0, np.nan],
    [0.0, 1.0, 0.5, 0.25, 0.75, 1e-30, -1.0, 2.0, np.nan],
]


def _scipy_special_args(rng, dt):
    n = _N_RANDOM
    random = [rng.uniform(-30, 30, n), np.exp(rng.uniform(-5, 3, n)), rng.uniform(0, 1, n)]
    return [tuple(np.concatenate([r, e]).astype(dt) for r, e in zip(random, _SCIPY_EDGES))]


ROWS = [
    Row("fft-all-types", _fft_row(lax), _fft_row(jax.lax),
        lambda rng, dt: [(rng.standard_normal(s).astype(dt),) for s in [(8,), (3, 6), (5,)]],
        FLOATS, slack=50.0),
    Row("linalg-decompositions-and-solves", _linalg_row(lax), _linalg_row(jax.lax),
        _linalg_args, FLOATS, slack=100.0, jax_tol=1e-4),
    Row("special-functions", _special_row(lax), _special_row(jax.lax), _special_args, FLOATS,
        jax_tol=1e-4),
    # float64 only (jax compiles these slowly); both dtypes against eager in
    # test_jit_ops_scientific.py's edge-value test.
    Row("special-functions-scipy", _scipy_special_row(fss), _scipy_special_row(jss),
        _scipy_special_args, (np.dtype(np.float64),), jax_tol=1e-4),
    # One LAPACK on both sides (jaxlib's CPU kernels call SciPy's), so the forms agree.
    Row("schur-hessenberg-householder", _schur_householder_row(lax),
        _schur_householder_row(jax.lax),
        lambda rng, dt: [(_square(rng, 4, dt), rng.standard_normal((4, 2)).astype(dt))],
        FLOATS, jax_tol=1e-4),
    Row("eig-trace-and-determinant", _eig_row(lax), _eig_row(jax.lax),
        lambda rng, dt: [(_square(rng, 4, dt),)], FLOATS, jax_tol=1e-3),
]
