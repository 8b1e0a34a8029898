"""fx.lax.linalg's decompositions and solvers against jax.lax.linalg.

Outputs that are unique (Cholesky factors, triangular solves, LU with its pivots, QR from the
same Householder convention, singular and eigenvalues) are compared directly. Where an
implementation may pick another sign, phase or order (eigenvectors, singular vectors, the
eigenvalues of a general matrix) the cases compare invariants instead: ``|v|^2``, the rank-one
terms ``u_i vh_i``, power sums of the eigenvalues, as jax's own tests do. Each case is checked
for values, jvp and vjp against jax, vmap against a loop and jax.vmap, finite differences at
order 2 in float64, and jit against eager.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import OpCase as HarnessCase
from harness import (
    adjoint,
    assert_allclose,
    check_grads_f64,
    check_jvp,
    randn,
    run_doctests,
)

import fx
import fx.lax.linalg as fl
import fx.lax.linalg.solvers
import fx.lax.linalg.spectral
import fx.numpy as fnp

jl = jax.lax.linalg



def _spd(rng, n, dtype, batch=()):
    a = randn(rng, (*batch, n, n), dtype)
    return (a @ adjoint(a) + n * np.eye(n)).astype(dtype)


def _herm(rng, n, dtype, batch=()):
    a = randn(rng, (*batch, n, n), dtype)
    return ((a + adjoint(a)) / 2).astype(dtype)


def _tri(rng, n, dtype, lower, batch=()):
    a = randn(rng, (*batch, n, n), dtype) * 0.3 + 2 * np.eye(n)
    return (np.tril(a) if lower else np.triu(a)).astype(dtype)


def _abs2(x, np_):
    return np_.real(x * np_.conj(x))


# --- the cases ------------------------------------------------------------------------------

DTYPES = [np.float64, np.complex128]


def OpCase(name, fx_fn, jax_fn, args, **kw):  # noqa: N802
    # jax compiled once per case: op-by-op jax costs seconds per derivative on shared cores.
    return HarnessCase(name, fx_fn, jax.jit(jax_fn), args, **kw)


def _cholesky_case(dtype, n=4):
    return OpCase(
        f"cholesky:{np.dtype(dtype).name}",
        fl.cholesky,
        jl.cholesky,
        lambda rng: [_spd(rng, n, dtype)],
    )


def _trsm_case(dtype, left, lower, trans, conj, unit, n=3, k=2):
    kw = dict(left_side=left, lower=lower, transpose_a=trans, conjugate_a=conj, unit_diagonal=unit)
    bshape = (n, k) if left else (k, n)
    return OpCase(
        f"triangular_solve:{np.dtype(dtype).name}:" + "".join(str(int(v)) for v in kw.values()),
        lambda a, b: fl.triangular_solve(a, b, **kw),
        lambda a, b: jl.triangular_solve(a, b, **kw),
        lambda rng: [_tri(rng, n, dtype, lower), randn(rng, bshape, dtype)],
        diff_argnums=(0, 1),
    )


def _lu_case(dtype, shape):
    return OpCase(
        f"lu{shape}:{np.dtype(dtype).name}",
        lambda x: fl.lu(x)[0],
        lambda x: jl.lu(x)[0],
        lambda rng: [randn(rng, shape, dtype)],
    )


def _qr_case(dtype, shape, full, pivoting=False):
    return OpCase(
        f"qr{shape}:full={full}:pivoting={pivoting}:{np.dtype(dtype).name}",
        lambda x: fl.qr(x, full_matrices=full, pivoting=pivoting)[:2],
        lambda x: jl.qr(x, full_matrices=full, pivoting=pivoting)[:2],
        lambda rng: [randn(rng, shape, dtype)],
    )


def _eigh_case(dtype, n=4):
    def f(mod, np_):
        def g(x):
            v, w = mod.eigh(x)
            return w, _abs2(v, np_)

        return g

    return OpCase(
        f"eigh:{np.dtype(dtype).name}", f(fl, fnp), f(jl, jnp), lambda rng: [_herm(rng, n, dtype)]
    )


def _svd_case(dtype, shape, compute_uv=True):
    def f(mod, np_):
        def g(x):
            if not compute_uv:
                return mod.svd(x, full_matrices=False, compute_uv=False)
            u, s, vh = mod.svd(x, full_matrices=False)
            return s, np_.einsum("...ik,...kj->...kij", u, vh)  # phase-free rank-one terms

        return g

    return OpCase(
        f"svd{shape}:uv={compute_uv}:{np.dtype(dtype).name}",
        f(fl, fnp),
        f(jl, jnp),
        lambda rng: [randn(rng, shape, dtype)],
    )


def _eigvals_case(dtype, n=3):
    def f(mod, np_):
        def g(x):
            (w,) = mod.eig(x, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
            return np_.stack([np_.sum(w), np_.sum(w * w), np_.sum(w * w * w)])

        return g

    return OpCase(
        f"eigvals:{np.dtype(dtype).name}",
        f(fl, fnp),
        f(jl, jnp),
        lambda rng: [randn(rng, (n, n), dtype)],
        grad_order=1,
    )


def _tridiagonal_case(dtype, m=4, k=2):
    def args(rng):
        dl, du = randn(rng, (m,), dtype), randn(rng, (m,), dtype)
        dl[0] = du[-1] = 0
        return [dl, randn(rng, (m,), dtype) + 4, du, randn(rng, (m, k), dtype)]

    return OpCase(
        f"tridiagonal_solve:{np.dtype(dtype).name}",
        fl.tridiagonal_solve,
        jl.tridiagonal_solve,
        args,
        diff_argnums=(0, 1, 2, 3),
    )


CASES = [
    *(_cholesky_case(d) for d in DTYPES),
    *(
        _trsm_case(np.float64, left, lower, trans, False, unit)
        for left, lower, trans, unit in [
            (True, True, False, False),
            (False, False, False, False),
            (True, False, True, True),
            (False, True, True, False),
        ]
    ),
    *(
        _trsm_case(np.complex128, left, lower, trans, True, unit)
        for left, lower, trans, unit in [(True, True, True, False), (False, False, False, True)]
    ),
    *(_lu_case(np.float64, s) for s in [(4, 4), (5, 3), (3, 5)]),
    _lu_case(np.complex128, (4, 4)),
    *(_qr_case(np.float64, s, full) for s, full in [((4, 4), True), ((5, 3), False)]),
    _qr_case(np.complex128, (4, 3), False),
    *(_eigh_case(d) for d in DTYPES),
    *(_svd_case(np.float64, s) for s in [(3, 3), (4, 3), (3, 5)]),
    _svd_case(np.complex128, (4, 3)),
    _svd_case(np.float64, (4, 3), compute_uv=False),
    *(_eigvals_case(d) for d in DTYPES),
    *(_tridiagonal_case(d) for d in DTYPES),
]

# Checked for jvp and finite differences only (kept out of the vmap/jit samples of CASES).
MORE_QR_CASES = [
    # jax 0.10.2 differentiates wide and full-tall factors too, and column-pivoted ones (its
    # wide pivoted jvp uses the unpermuted columns of x for r's extra block, which finite
    # differences reject: see test_pivoted_qr_derivatives, which runs by default).
    *(pytest.param(c, marks=pytest.mark.slow) for c in (
        _qr_case(np.float64, (5, 3), True, pivoting=True),
        _qr_case(np.float64, (3, 5), True),
        _qr_case(np.complex128, (5, 3), True),
        _qr_case(np.complex128, (4, 4), False, pivoting=True))),
]


@pytest.mark.parametrize("case", CASES + MORE_QR_CASES, ids=repr)
def test_eval_and_jvp_against_jax(case):
    # Reverse mode is checked against jax in test_vmap_of_grad and against finite differences
    # (and this jvp) in test_finite_differences: each jax comparison costs a compile.
    rng = np.random.default_rng(0)
    args = case.args(rng)
    check_jvp(case, args, rng)  # compares the primal outputs too


@pytest.mark.parametrize("case", [c for c in CASES if not c.name.startswith("eigvals")]
                         + MORE_QR_CASES, ids=repr)
def test_finite_differences(case):
    check_grads_f64(case, case.args(np.random.default_rng(1)))


def test_eigvals_finite_differences_forward():
    # Reverse mode too (the jvp is linear in the tangent through triangular solves).
    for case in [c for c in CASES if c.name.startswith("eigvals")]:
        check_grads_f64(case, case.args(np.random.default_rng(1)))


def _batched_args(case, size=3):
    rows = [case.args(np.random.default_rng(i)) for i in range(size)]
    return [np.stack(col) for col in zip(*rows)]


VMAP_CASES = CASES[::2]


@pytest.mark.parametrize("case", VMAP_CASES, ids=repr)
def test_vmap_against_loop(case):
    args = _batched_args(case)
    got = fx.vmap(case.fx_fn)(*map(fnp.asarray, args))
    rows = [case.fx_fn(*[fnp.asarray(a[i]) for a in args]) for i in range(3)]
    want = fx.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *rows)
    assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES[1::4], ids=repr)
def test_vmap_of_grad(case):
    args = _batched_args(case)

    def loss(mod_fn, np_):
        def f(*xs):
            out = mod_fn(*xs)
            leaves = jax.tree_util.tree_leaves(out) if np_ is jnp else fx.tree_util.tree_leaves(out)
            return sum(np_.sum(np_.real(o)) for o in leaves)

        return f

    argnums = tuple(case.diff_argnums)
    got = fx.vmap(fx.grad(loss(case.fx_fn, fnp), argnums=argnums))(*map(fnp.asarray, args))
    want = jax.vmap(jax.grad(loss(case.jax_fn, jnp), argnums=argnums))(*map(jnp.asarray, args))
    assert_allclose(got, want, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("case", CASES[::3], ids=repr)
def test_jit_matches_eager(case):
    args = [fnp.asarray(a) for a in case.args(np.random.default_rng(2))]
    assert_allclose(fx.jit(case.fx_fn)(*args), case.fx_fn(*args), rtol=1e-12, atol=1e-12)
    g = fx.grad(lambda *xs: fnp.sum(fnp.real(fx.tree_util.tree_leaves(case.fx_fn(*xs))[0])))
    assert_allclose(fx.jit(g)(*args), g(*args), rtol=1e-10, atol=1e-10)


# --- factorizations reconstruct their input -------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 5)])
def test_reconstructions(dtype, shape):
    rng = np.random.default_rng(3)
    x = randn(rng, shape, dtype)
    tol = 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10
    lu, piv, perm = (np.asarray(o) for o in fl.lu(x))
    m, n = shape[-2:]
    k = min(m, n)
    low = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    up = np.triu(lu[..., :k, :])
    np.testing.assert_allclose(low @ up, np.take_along_axis(x, perm[..., None], -2), atol=tol)
    assert piv.dtype == perm.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(fl.lu_pivots_to_permutation(piv, m)), perm)
    for full in (True, False):
        q, r = (np.asarray(o) for o in fl.qr(x, full_matrices=full))
        np.testing.assert_allclose(q @ r, x, atol=tol)
        eye = np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2)
        np.testing.assert_allclose(adjoint(q) @ q, eye, atol=tol)
        assert q.dtype == r.dtype == np.dtype(dtype)
        u, s, vh = (np.asarray(o) for o in fl.svd(x, full_matrices=full))
        assert s.dtype == np.dtype(dtype).type(0).real.dtype
        np.testing.assert_allclose((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], x, atol=tol)
        assert u.shape[-1] == (m if full else k) and vh.shape[-2] == (n if full else k)
    if m == n:
        w, vl, vr = (np.asarray(o) for o in fl.eig(x))
        np.testing.assert_allclose(x @ vr, vr * w[..., None, :], atol=tol * 10)
        np.testing.assert_allclose(adjoint(vl) @ x, w[..., :, None] * adjoint(vl), atol=tol * 10)
        np.testing.assert_allclose(np.linalg.norm(vl, axis=-2), 1, atol=tol)
        h = (x + adjoint(x)) / 2
        v, w = (np.asarray(o) for o in fl.eigh(x))
        np.testing.assert_allclose(h @ v, v * w[..., None, :], atol=tol * 10)
        assert np.all(np.diff(w, axis=-1) >= 0)
        spd = h @ adjoint(h) + n * np.eye(n, dtype=dtype)
        c = np.asarray(fl.cholesky(spd))
        np.testing.assert_allclose(c @ adjoint(c), spd, rtol=tol, atol=tol * 10)


def test_eigvec_derivatives_opt_in():
    rng = np.random.default_rng(4)
    x = randn(rng, (3, 3), np.float64)

    def f(mod, np_, left):
        def g(a):
            outs = mod.eig(a, compute_left_eigenvectors=left, enable_eigvec_derivs=True)
            return outs[0], _abs2(outs[-1], np_)

        return g

    t = randn(rng, (3, 3), np.float64)
    for left in (False, True):
        got = fx.jvp(f(fl, fnp, left), (x,), (t,))
        g = f(jl, jnp, left)
        want = jax.jit(lambda x, t, g=g: jax.jvp(g, (x,), (t,)))(x, t)
        # eigenvalue order is LAPACK's on both sides (the same algorithm).
        assert_allclose(got, want, rtol=1e-8, atol=1e-8)
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        fx.jvp(lambda a: fl.eig(a)[1], (x,), (t,))


def test_not_positive_definite_is_nan_and_singular_solve_is_not_finite():
    # jax: the factor of a failed batch element is NaN, then its upper triangle is zeroed.
    batch = np.stack([np.eye(2), -np.eye(2), np.array([[1.0, 2.0], [2.0, 1.0]])])
    assert_allclose(fl.cholesky(batch), jl.cholesky(batch))
    assert np.isnan(np.asarray(fl.cholesky(batch))[1:, :, 0]).all()
    x = np.asarray(fl.triangular_solve(np.zeros((2, 2)), np.ones((2, 1)), left_side=True))
    assert not np.isfinite(x).any()


def test_singular_lu_matches_jax():
    x = np.array([[0.0, 1.0, 2.0], [0.0, 2.0, 4.0], [0.0, 3.0, 1.0]])
    got = fl.lu(x)
    want = jl.lu(x)
    assert_allclose(got, want)


def test_errors():
    with pytest.raises(TypeError, match="float32, float64"):
        fl.cholesky(np.eye(2, dtype=np.int32), symmetrize_input=False)
    with pytest.raises(TypeError, match="square"):
        fl.eigh(np.ones((2, 3)), symmetrize_input=False)
    with pytest.raises(TypeError, match="rows"):
        fl.triangular_solve(np.eye(2), np.ones((3, 1)), left_side=True)
    with pytest.raises(NotImplementedError, match="full matrices"):
        fx.jvp(lambda a: fl.svd(a)[0], (np.ones((3, 2)),), (np.ones((3, 2)),))


def test_pivoted_qr_derivatives():
    # Against jax (one program): a tall pivoted QR's q and r tangents, a wide one's q tangent.
    # fx's r tangent of a wide pivoted QR uses the pivoted columns (finite differences agree);
    # jax 0.10.2's uses x's unpermuted columns there.
    rng = np.random.default_rng(2)
    x, t = randn(rng, (3, 5), np.float64), randn(rng, (3, 5), np.float64)
    f = lambda a: fl.qr(a, pivoting=True)[:2]  # noqa: E731
    (q, r), (dq, dr) = fx.jvp(f, (x,), (t,))
    e = 1e-6
    fd = [(np.asarray(p) - np.asarray(m)) / (2 * e) for p, m in zip(f(x + e * t), f(x - e * t))]
    assert_allclose([dq, dr], fd, 1e-7, 1e-7)

    def both(L, jvp, x, t):
        g = lambda a: L.qr(a, pivoting=True)[:2]  # noqa: E731
        return jvp(lambda a: g(a)[0], (x,), (t,)), jvp(g, (x.T,), (t.T,)), L.qr(x, pivoting=True)

    want = jax.jit(lambda x, t: both(jl, jax.jvp, x, t))(x, t)
    assert_allclose(both(fl, fx.jvp, x, t), want, 1e-10, 1e-10)
    q, r, p = (np.asarray(o) for o in fl.qr(x, pivoting=True))
    np.testing.assert_allclose(q @ r, x[:, p], atol=1e-12)
    assert p.dtype == np.int32 and np.all(np.diff(np.abs(np.diag(r))) <= 0)


@pytest.mark.default_mode
def test_default_mode_dtypes_match_jax():
    rng = np.random.default_rng(5)
    x = _spd(rng, 3, np.float64)
    for fn, jfn in [
        (fl.cholesky, jl.cholesky),
        (lambda a: fl.eigh(a), lambda a: jl.eigh(a)),
        (lambda a: fl.svd(a), lambda a: jl.svd(a)),
        (fl.lu, jl.lu),
        (fl.qr, jl.qr),
        (fl.eig, jl.eig),
    ]:
        got, want = fn(x), jfn(x)
        got_d = [np.asarray(g).dtype for g in fx.tree_util.tree_leaves(got)]
        want_d = [np.asarray(w).dtype for w in jax.tree_util.tree_leaves(want)]
        assert got_d == want_d


def test_docstring_examples():
    assert run_doctests(fx.lax.linalg, fx.lax.linalg.solvers, fx.lax.linalg.spectral) >= 10


LAX_LINALG_EXCLUDED = {
    "cholesky_update": "rank-one Cholesky update: not built yet (recompute cholesky)",
    "cholesky_update_p": "as cholesky_update",
    "qdwh": "the TPU polar decomposition by QR iterations: fx has svd-based polar (scipy)",
    "symmetric_product": "alpha a a^T + beta c (a BLAS syrk): not built yet, use matmul",
    "symmetric_product_p": "as symmetric_product",
}


def test_jax_lax_linalg_names_are_in_fx_or_excluded_with_a_reason():
    public = {n for n in dir(jax.lax.linalg) if not n.startswith("_")}
    missing = public - set(dir(fl))
    assert missing - set(LAX_LINALG_EXCLUDED) == set(), "not in fx.lax.linalg, not excluded"
    assert set(LAX_LINALG_EXCLUDED) - missing == set(), "in fx.lax.linalg now: drop from list"
    assert all(len(r) > 10 for r in LAX_LINALG_EXCLUDED.values())


@pytest.mark.parametrize("dt", [np.float32, np.complex128])
def test_large_eigh_and_svd_take_scipys_lapack_per_matrix_and_agree_with_numpy(dt):
    from fx.lax.linalg import spectral as linalg_spectral

    n = linalg_spectral._SCIPY_FROM_N
    rng = np.random.default_rng(3)
    a = randn(rng, (2, n, n), dt)
    h = a + adjoint(a)
    assert linalg_spectral._lapack_per_matrix(h)
    tol = 1e-4 if dt == np.float32 else 1e-10
    v, w = linalg_spectral.eigh_p.impl(h, lower=True, sort_eigenvalues=True,
                                       subset_by_index=None)
    np.testing.assert_allclose(w, np.linalg.eigh(h)[0], rtol=tol, atol=tol * n)
    np.testing.assert_allclose(h @ v, v * w[:, None, :], atol=tol * n)
    s, u, vh = linalg_spectral.svd_p.impl(a, full_matrices=False, compute_uv=True,
                                          subset_by_index=None)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=tol, atol=tol * n)
    np.testing.assert_allclose((u * s[:, None, :]) @ vh, a, atol=tol * n)


@pytest.mark.parametrize("m", [5, fx.lax.linalg.solvers.GATHER_ROWS + 3])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_permute_rows_and_its_inverse(m, batch):
    # A permutation-matrix product up to GATHER_ROWS rows, a gather (and a sort) above.
    from fx.lax.linalg.solvers import permute_rows

    rng = np.random.default_rng(5)
    x = rng.standard_normal((*batch, m, 3))
    p = np.argsort(rng.random((*batch, m)), axis=-1).astype(np.int32)
    want = np.take_along_axis(x, p[..., None], axis=-2)
    np.testing.assert_array_equal(fx.jit(permute_rows)(x, p), want)
    back = fx.jit(lambda x, p: permute_rows(x, p, inverse=True))(want, p)
    np.testing.assert_array_equal(back, x)


def test_solve_with_gathered_rows_against_jax():
    # n above GATHER_ROWS: the transposed LU's permutation is undone by a sort and a gather.
    n = fx.lax.linalg.solvers.GATHER_ROWS + 4
    rng = np.random.default_rng(6)
    a = randn(rng, (n, n), np.float64) + 4 * np.eye(n)
    b = randn(rng, (n, 2), np.float64)
    assert_allclose(fx.jit(fnp.linalg.solve)(a, b), jnp.linalg.solve(a, b), rtol=1e-10,
                    atol=1e-10)

    def loss(np_):
        return lambda a, b: np_.sum(np_.linalg.solve(a, b) ** 3)

    got = fx.jit(fx.grad(loss(fnp), (0, 1)))(a, b)
    want = jax.grad(loss(jnp), (0, 1))(a, b)
    assert_allclose(got, want, rtol=1e-8, atol=1e-8)
    batched = fx.vmap(fnp.linalg.solve)(np.stack([a, a.T]), np.stack([b, b]))
    assert_allclose(batched, np.stack([np.linalg.solve(a, b), np.linalg.solve(a.T, b)]),
                    rtol=1e-10, atol=1e-10)
