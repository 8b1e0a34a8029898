"""fx.numpy.linalg's decompositions, solves and array-API names against jax.numpy.linalg:
values in both modes, jvp against jax, finite differences, vmap against a loop, jit against
eager, and the coverage of jax.numpy.linalg's names. Outputs that are unique only up to signs
(eigenvectors, singular vectors) are compared through invariants."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import OpCase as HarnessCase
from harness import (
    assert_allclose,
    check_eval,
    check_grads_f64,
    check_jvp,
    check_vjp,
    randn,
    run_doctests,
)

import fx
import fx.numpy as fnp
import fx.numpy.linalg_array_api
import fx.numpy.linalg_decompositions
import fx.numpy.linalg_determinants
import fx.numpy.linalg_norms

FL, JL = fnp.linalg, jnp.linalg


def OpCase(name, fx_fn, jax_fn, args, **kw):  # noqa: N802
    return HarnessCase(name, fx_fn, jax.jit(jax_fn), args, **kw)



def _wellcond(rng, shape, dtype=np.float64):
    return (randn(rng, shape, dtype) + 3 * np.eye(shape[-1])).astype(dtype)


def _spd(rng, n, dtype=np.float64):
    a = randn(rng, (n, n), dtype)
    return (a @ np.conj(a.T) + n * np.eye(n)).astype(dtype)


def _case(name, fn, args, diff=(0,), **kw):
    """``fn(mod, *args)`` run with fx.numpy.linalg and jax.numpy.linalg."""
    return OpCase(name, lambda *a: fn(FL, fnp, *a), lambda *a: fn(JL, jnp, *a), args,
                  diff_argnums=diff, **kw)


def _cases(dtype):
    dn = np.dtype(dtype).name
    c = dtype == np.complex128
    out = [
        _case(f"det2:{dn}", lambda L, np_, a: L.det(a), lambda r: [randn(r, (2, 2), dtype)]),
        _case(f"det3:{dn}", lambda L, np_, a: L.det(a), lambda r: [randn(r, (3, 3), dtype)]),
        _case(f"det5:{dn}", lambda L, np_, a: L.det(a), lambda r: [_wellcond(r, (2, 5, 5), dtype)]),
        _case(f"slogdet:{dn}", lambda L, np_, a: tuple(L.slogdet(a)),
              lambda r: [randn(r, (4, 4), dtype)]),
        _case(f"inv:{dn}", lambda L, np_, a: L.inv(a), lambda r: [_wellcond(r, (2, 3, 3), dtype)]),
        _case(f"solve_vec:{dn}", lambda L, np_, a, b: L.solve(a, b),
              lambda r: [_wellcond(r, (4, 4), dtype), randn(r, (4,), dtype)], diff=(0, 1)),
        _case(f"solve_bcast:{dn}", lambda L, np_, a, b: L.solve(a, b),
              lambda r: [_wellcond(r, (3, 3), dtype), randn(r, (2, 3, 2), dtype)], diff=(0, 1)),
        _case(f"pinv_tall:{dn}", lambda L, np_, a: L.pinv(a), lambda r: [randn(r, (5, 3), dtype)]),
        _case(f"pinv_wide:{dn}", lambda L, np_, a: L.pinv(a), lambda r: [randn(r, (2, 4), dtype)]),
        _case(f"lstsq:{dn}", lambda L, np_, a, b: L.lstsq(a, b)[:2],
              lambda r: [randn(r, (5, 3), dtype), randn(r, (5, 2), dtype)], diff=(0, 1)),
        _case(f"matrix_power:{dn}", lambda L, np_, a: (L.matrix_power(a, 5),
                                                       L.matrix_power(a, -2),
                                                       L.matrix_power(a, 0)),
              lambda r: [_wellcond(r, (3, 3), dtype)]),
        _case(f"norms:{dn}", lambda L, np_, a: [L.norm(a, o) for o in (2, -2, "nuc")]
              + [L.matrix_norm(a, ord=2), L.matrix_norm(a)],
              lambda r: [randn(r, (3, 4), dtype)]),
        _case(f"norms_batched:{dn}", lambda L, np_, a: (L.norm(a, "nuc", axis=(0, 2),
                                                               keepdims=True),
                                                        L.matrix_norm(a, ord=-2)),
              lambda r: [randn(r, (3, 2, 4), dtype)]),
        _case(f"cond:{dn}", lambda L, np_, a: (L.cond(a), L.cond(a, -2), L.cond(a, 1),
                                               L.cond(a, "fro")),
              lambda r: [_wellcond(r, (3, 3), dtype)]),
        _case(f"vector_norm:{dn}", lambda L, np_, a: [L.vector_norm(a, ord=o) for o in
                                                      (2, 1, np.inf, -np.inf, 3)]
              + [L.vector_norm(a, axis=(0, 1), keepdims=True), L.vector_norm(a, axis=1)],
              lambda r: [randn(r, (3, 4), dtype)]),
        _case(f"svdvals:{dn}", lambda L, np_, a: L.svdvals(a),
              lambda r: [randn(r, (2, 4, 3), dtype)]),
        _case(f"eigvalsh:{dn}", lambda L, np_, a: (L.eigvalsh(a), L.eigvalsh(a, "U")),
              lambda r: [_spd(r, 4, dtype)]),
        _case(f"eigh_invariant:{dn}", lambda L, np_, a: np_.abs(L.eigh(a).eigenvectors) ** 2,
              lambda r: [_spd(r, 3, dtype)]),
        _case(f"svd_invariant:{dn}", lambda L, np_, a: (
            lambda u, s, vh: (s, np_.abs(u[..., :, :3]) ** 2))(*L.svd(a, full_matrices=False)),
              lambda r: [randn(r, (4, 3), dtype)]),
        _case(f"eigvals:{dn}", lambda L, np_, a: np_.sort_complex(L.eigvals(a)),
              lambda r: [randn(r, (3, 3), dtype)], differentiable=False),
        _case(f"cholesky:{dn}", lambda L, np_, a: (L.cholesky(a), L.cholesky(a, upper=True)),
              lambda r: [_spd(r, 3, dtype)]),
        _case(f"qr_r:{dn}", lambda L, np_, a: (L.qr(a, "r"), L.qr(a).R),
              lambda r: [randn(r, (4, 3), dtype)]),
        _case(f"tensorinv:{dn}", lambda L, np_, a: L.tensorinv(a.reshape(4, 2, 2), ind=1),
              lambda r: [_wellcond(r, (4, 4), dtype)]),
        _case(f"tensorsolve:{dn}", lambda L, np_, a, b: L.tensorsolve(a.reshape(2, 2, 4), b),
              lambda r: [_wellcond(r, (4, 4), dtype), randn(r, (2, 2), dtype)], diff=(0, 1)),
        _case(f"array_api:{dn}", lambda L, np_, a, b: (
            L.vecdot(a, b), L.cross(a[..., :3], b[..., :3]), L.diagonal(a[None], offset=1),
            L.trace(a[None]), L.matrix_transpose(a), L.multi_dot([a[0], a.T, b, b[0]]),
            L.outer(a[0], b[1])),
              lambda r: [randn(r, (3, 3), dtype), randn(r, (3, 3), dtype)], diff=(0, 1)),
    ]
    if not c:
        out.append(_case(f"matrix_rank:{dn}", lambda L, np_, a: (
            L.matrix_rank(a), L.matrix_rank(a @ np_.diag(np_.array([1.0, 1.0, 0.0]))),
            L.matrix_rank(a, hermitian=False, rtol=0.5)),
            lambda r: [randn(r, (3, 3), dtype)], differentiable=False))
        out.append(_case(f"pinv_hermitian:{dn}", lambda L, np_, a: L.pinv(a, hermitian=True),
                         lambda r: [_spd(r, 3, dtype)]))
    return out


CASES = _cases(np.float64) + _cases(np.complex128)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_eval_and_jvp_against_jax(case):
    rng = np.random.default_rng(0)
    args = case.args(rng)
    # check_jvp compares the primal outputs too: one jax compile per case.
    if case.differentiable:
        check_jvp(case, args, rng)
    else:
        check_eval(case, args)


@pytest.mark.parametrize("case", [c for c in CASES if c.differentiable][::2], ids=repr)
def test_finite_differences(case):
    check_grads_f64(case, case.args(np.random.default_rng(1)))


@pytest.mark.parametrize("case", [c for c in CASES if c.differentiable][1::5], ids=repr)
def test_grad_against_jax(case):
    args = case.args(np.random.default_rng(2))

    def loss(fn, np_, tree):
        def f(*xs):
            return sum(np_.sum(np_.real(o)) for o in tree.tree_leaves(fn(*xs)))
        return f

    argnums = tuple(case.diff_argnums)
    got = fx.grad(loss(case.fx_fn, fnp, fx.tree_util), argnums)(*map(fnp.asarray, args))
    want = jax.jit(jax.grad(loss(case.jax_fn, jnp, jax.tree_util), argnums))(*args)
    assert_allclose(got, want, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("case", CASES[::3], ids=repr)
def test_vmap_against_loop_and_jit_against_eager(case):
    rows = [case.args(np.random.default_rng(i)) for i in range(3)]
    args = [np.stack(col) for col in zip(*rows)]
    got = fx.vmap(case.fx_fn)(*map(fnp.asarray, args))
    loop = [case.fx_fn(*map(fnp.asarray, r)) for r in rows]
    want = fx.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *loop)
    assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    one = [fnp.asarray(a) for a in rows[0]]
    assert_allclose(fx.jit(case.fx_fn)(*one), case.fx_fn(*one), rtol=1e-12, atol=1e-12)


@pytest.mark.default_mode
@pytest.mark.parametrize("name", ["det", "inv", "slogdet", "pinv", "svdvals", "eigvalsh",
                                  "cholesky", "qr", "matrix_rank", "cond", "eigvals"])
def test_default_mode_promotion_matches_jax(name):
    x = np.array([[4, 1, 0], [1, 3, 1], [0, 1, 2]], np.int32)
    got = getattr(FL, name)(x)
    want = getattr(JL, name)(x)
    g_leaves, w_leaves = fx.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert [np.asarray(g).dtype for g in g_leaves] == [np.asarray(w).dtype for w in w_leaves]
    for g, w in zip(g_leaves, w_leaves):
        if name != "eigvals":
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)


# The table's matrices have n <= 4: solve_square factors them as jax does. Above that it
# uses the LU factors of a^T (fx.lax.linalg.solvers.solve_square): the same rows for it.
LARGE_SOLVE_CASES = [
    c for dtype in (np.float64, np.complex128) for dn in [np.dtype(dtype).name] for c in (
        _case(f"solve_n9:{dn}", lambda L, np_, a, b: L.solve(a, b),
              lambda r, d=dtype: [_wellcond(r, (2, 9, 9), d), randn(r, (2, 9, 3), d)],
              diff=(0, 1)),
        _case(f"solve_vec_n7:{dn}", lambda L, np_, a, b: L.solve(a, b),
              lambda r, d=dtype: [_wellcond(r, (7, 7), d), randn(r, (7,), d)], diff=(0, 1)),
        _case(f"inv_det_n6:{dn}", lambda L, np_, a: (L.inv(a), L.det(a)),
              lambda r, d=dtype: [_wellcond(r, (6, 6), d)]),
    )]


@pytest.mark.parametrize("case", LARGE_SOLVE_CASES, ids=repr)
def test_solve_above_small_n_against_jax(case):
    rng = np.random.default_rng(4)
    args = case.args(rng)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)
    check_grads_f64(case, args)
    rows = [case.args(np.random.default_rng(i)) for i in range(3)]
    batched = fx.jit(fx.vmap(case.fx_fn))(*[np.stack(col) for col in zip(*rows)])
    loop = [case.fx_fn(*r) for r in rows]
    want = fx.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *loop)
    assert_allclose(batched, want, rtol=1e-10, atol=1e-10)


def test_solve_above_small_n_of_a_singular_matrix_is_not_finite():
    a = np.ones((6, 6))
    x = FL.solve(a, np.ones(6))
    assert not np.isfinite(np.asarray(x)).all()
    assert not np.isfinite(np.asarray(JL.solve(a, np.ones(6)))).all()


def test_integer_input_promotes_in_x64():
    x = np.array([[2, 1], [1, 3]], np.int64)
    assert FL.inv(x).dtype == JL.inv(x).dtype == np.float64
    assert FL.solve(x, np.array([1, 2])).dtype == np.float64


def test_decompositions_reconstruct():
    rng = np.random.default_rng(3)
    a = randn(rng, (2, 4, 3), np.complex128)
    u, s, vh = FL.svd(a)
    assert u.shape == (2, 4, 4) and vh.shape == (2, 3, 3)
    np.testing.assert_allclose(np.asarray(u[..., :3] * s[..., None, :].astype(u.dtype) @ vh),
                               a, atol=1e-12)
    q, r = FL.qr(a, mode="complete")
    assert q.shape == (2, 4, 4) and r.shape == (2, 4, 3)
    np.testing.assert_allclose(np.asarray(q @ r), a, atol=1e-12)
    sq = a[..., :3, :]
    w, v = FL.eig(sq)
    np.testing.assert_allclose(np.asarray(sq @ v), np.asarray(v * w[..., None, :]), atol=1e-10)
    h = _spd(rng, 3)
    res = FL.svd(h, hermitian=True)
    np.testing.assert_allclose(np.asarray(res.S), np.linalg.svd(h, compute_uv=False))
    np.testing.assert_allclose(np.asarray(res.U * res.S[None] @ res.Vh), h, atol=1e-12)
    x, resid, rank, sv = FL.lstsq(randn(rng, (5, 3)), randn(rng, (5,)))
    assert x.shape == (3,) and resid.shape == (1,) and int(rank) == 3 and sv.shape == (3,)


def test_errors_match_jax():
    for fn, args, err in [(FL.det, (np.ones((2, 3)),), ValueError),
                          (FL.solve, (np.ones(2), np.ones(2)), ValueError),
                          (FL.matrix_power, (np.ones(3), 2), TypeError),
                          (FL.cross, (np.ones(2), np.ones(2)), ValueError),
                          (FL.eigh, (np.eye(2), "X"), ValueError),
                          (FL.qr, (np.eye(2), "bad"), ValueError),
                          (FL.multi_dot, ([np.ones(2)],), ValueError)]:
        with pytest.raises(err):
            fn(*args)
        with pytest.raises(err):
            getattr(JL, fn.__name__)(*args)


def test_singular_det_and_slogdet():
    a = np.array([[1.0, 2.0, 3.0, 4.0]] * 4)
    assert float(FL.det(a)) == 0.0
    sign, logdet = FL.slogdet(a)
    assert float(sign) == 0 and float(logdet) == -np.inf
    assert float(FL.cond(a)) > 1e15 or np.isinf(float(FL.cond(a)))


def _low_rank(rng, n, rank):
    return randn(rng, (n, rank)) @ randn(rng, (rank, n))


def test_det_derivative_at_singular_matrices_matches_jax():
    # jax's cofactor rule: the adjugate for rank n-1, zero below; finite either way.
    rng = np.random.default_rng(7)
    x = np.stack([_low_rank(rng, 4, 3), _low_rank(rng, 4, 2), _wellcond(rng, (4, 4))])
    t = randn(rng, x.shape)
    want = jax.jit(jax.vmap(jax.grad(JL.det)))(x)
    got = fx.vmap(fx.grad(FL.det))(x)
    assert np.isfinite(np.asarray(got)).all()
    assert_allclose(got, want, 1e-9, 1e-9)
    # The jvp is the same rule: trace(adj(x) t).
    assert_allclose(fx.jvp(FL.det, (x,), (t,))[1], np.einsum("bij,bij->b", np.asarray(got), t),
                    1e-9, 1e-9)
    adj = np.asarray(got)[0].T  # adj(a) a = det(a) I = 0 at rank n-1, and adj != 0
    np.testing.assert_allclose(adj @ x[0], 0, atol=1e-9)
    assert np.abs(adj).max() > 1e-3


def test_slogdet_methods_and_qr_raw_match_jax():
    rng = np.random.default_rng(8)
    a4, a2, a1 = randn(rng, (2, 4, 4)), randn(rng, (3, 2, 2)), randn(rng, (2, 1, 1))
    tall, t4 = randn(rng, (2, 5, 3)), randn(rng, (2, 4, 4))

    def f(L, a4, a2, a1, tall):
        return (tuple(L.slogdet(a4, method="qr")), tuple(L.slogdet(a2)), tuple(L.slogdet(a1)),
                tuple(L.qr(tall, mode="raw")), tuple(L.qr(tall.transpose(0, 2, 1), mode="raw")))

    want = jax.jit(lambda *a: f(JL, *a))(a4, a2, a1, tall)
    assert_allclose(f(FL, a4, a2, a1, tall), want, 1e-11, 1e-11)
    # Both methods share jax's jvp rule (slogdet's jvp against jax runs in the table above).
    assert_allclose(fx.jvp(lambda a: FL.slogdet(a, method="qr")[1], (a4,), (t4,)),
                    fx.jvp(lambda a: FL.slogdet(a)[1], (a4,), (t4,)), 1e-11, 1e-11)
    with pytest.raises(NotImplementedError, match="complex"):
        FL.slogdet(np.eye(3, dtype=np.complex128), method="qr")
    with pytest.raises(ValueError, match="Unknown slogdet method"):
        FL.slogdet(np.eye(3), method="svd")


EXCLUDED: dict[str, str] = {}


def test_every_jax_numpy_linalg_name_is_in_fx_or_excluded():
    public = {n for n in dir(JL) if not n.startswith("_")}
    missing = public - set(dir(FL))
    assert missing - set(EXCLUDED) == set(), "not in fx.numpy.linalg and not excluded"
    assert set(EXCLUDED) - missing == set(), "in fx.numpy.linalg now: drop from EXCLUDED"


def test_fx_numpy_top_level_names_are_unchanged():
    # fx.numpy.trace/diagonal keep NumPy's first-two-axes defaults; linalg's use the last two.
    x = np.arange(24.0).reshape(2, 3, 4)
    assert fnp.trace(x).shape == (4,) and FL.trace(x).shape == (2,)
    assert fnp.linalg.outer is fnp.outer


def test_docstring_examples():
    assert run_doctests(fx.numpy.linalg_decompositions, fx.numpy.linalg_array_api,
                        fx.numpy.linalg_determinants, fx.numpy.linalg_norms) >= 25
