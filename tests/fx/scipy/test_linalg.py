"""fx.scipy.linalg against jax.scipy.linalg: values, jvp against jax, finite differences,
vmap against a loop, jit against eager, and the coverage of jax.scipy.linalg's names."""

from __future__ import annotations

import jax
import jax.scipy.linalg as jsl
import numpy as np
import pytest
from harness import OpCase as HarnessCase
from harness import (
    assert_allclose,
    check_eval,
    check_grads_f64,
    check_jvp,
    randn,
    run_doctests,
    same_mode,
)

import fx
import fx.numpy as fnp
import fx.scipy.linalg as fsl
import fx.scipy.linalg_special_matrices


def _spd(rng, n, dtype=np.float64):
    a = randn(rng, (n, n), dtype)
    return (a @ np.conj(a.T) + n * np.eye(n)).astype(dtype)


def _tri(rng, n, dtype, lower):
    a = randn(rng, (n, n), dtype) * 0.3 + 2 * np.eye(n)
    return (np.tril(a) if lower else np.triu(a)).astype(dtype)


def _case(name, fn, args, diff=(0,), **kw):
    return HarnessCase(name, lambda *a: fn(fsl, *a), jax.jit(lambda *a: fn(jsl, *a)), args,
                       diff_argnums=diff, **kw)


def _cases(dtype):
    dn = np.dtype(dtype).name
    return [
        _case(f"cholesky:{dn}", lambda L, a: (L.cholesky(a), L.cholesky(a, lower=True)),
              lambda r: [_spd(r, 3, dtype)]),
        _case(f"cho_solve:{dn}", lambda L, a, b: (
            L.cho_solve(L.cho_factor(a), b), L.cho_solve(L.cho_factor(a, lower=True), b)),
              lambda r: [_spd(r, 3, dtype), randn(r, (3, 2), dtype)], diff=(0, 1)),
        _case(f"solve_triangular:{dn}", lambda L, a, b: tuple(
            L.solve_triangular(a, b, trans=t, lower=True) for t in (0, 1, 2)),
              lambda r: [_tri(r, 3, dtype, True), randn(r, (3,), dtype)], diff=(0, 1)),
        _case(f"lu:{dn}", lambda L, a: (L.lu(a), L.lu(a, permute_l=True)),
              lambda r: [randn(r, (4, 3), dtype)]),
        _case(f"lu_solve:{dn}", lambda L, a, b: tuple(
            L.lu_solve(L.lu_factor(a), b, trans=t) for t in (0, 1, 2)),
              lambda r: [randn(r, (3, 3), dtype) + 3 * np.eye(3), randn(r, (3, 2), dtype)],
              diff=(0, 1)),
        _case(f"det_inv_solve:{dn}", lambda L, a, b: (
            L.det(a), L.inv(a), L.solve(a, b), L.solve(a @ a.conj().T, b, assume_a="pos")),
              lambda r: [randn(r, (3, 3), dtype) + 3 * np.eye(3), randn(r, (3,), dtype)],
              diff=(0, 1)),
        _case(f"expm:{dn}", lambda L, a: L.expm(a), lambda r: [randn(r, (3, 3), dtype)]),
        _case(f"expm_large:{dn}", lambda L, a: L.expm(a), lambda r: [8 * randn(r, (3, 3), dtype)],
              rtol=1e-9, atol=1e-9, grad_order=1, grad_tol=1e-4),
        _case(f"polar:{dn}", lambda L, a: (L.polar(a, method="svd"),
                                           L.polar(a, "left", method="svd")),
              lambda r: [randn(r, (4, 3), dtype)], grad_order=1),
        _case(f"eigh_svd_qr:{dn}", lambda L, a: (
            L.eigh(a, eigvals_only=True), L.svd(a, compute_uv=False), L.qr(a, mode="r")),
              lambda r: [_spd(r, 3, dtype)], grad_order=1),
        _case(f"structured:{dn}", lambda L, c, r: (
            L.toeplitz(c), L.toeplitz(c, r), L.hankel(c), L.hankel(c, r), L.circulant(c),
            L.block_diag(c[:2, None], r[None, :], c[0])),
              lambda r: [randn(r, (4,), dtype), randn(r, (3,), dtype)], diff=(0, 1)),
    ]


CASES = _cases(np.float64) + _cases(np.complex128)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_jvp_and_values_against_jax(case):
    rng = np.random.default_rng(0)
    check_jvp(case, case.args(rng), rng)  # compares the primal outputs too


# Cholesky and eigh here read one triangle (no symmetrization), while jax's jvp rules (and so
# fx's) use the whole tangent: finite differences of the one-triangle function differ.
@pytest.mark.parametrize("case", [c for c in CASES if not c.name.startswith(("cho", "eigh"))],
                         ids=repr)
def test_finite_differences(case):
    check_grads_f64(case, case.args(np.random.default_rng(1)))


@pytest.mark.parametrize("case", [c for c in CASES if "structured" not in c.name][::3],
                         ids=repr)
def test_vmap_against_loop_and_jit_against_eager(case):
    rows = [case.args(np.random.default_rng(i)) for i in range(3)]
    args = [np.stack(col) for col in zip(*rows)]
    got = fx.vmap(case.fx_fn)(*map(fnp.asarray, args))
    loop = [case.fx_fn(*map(fnp.asarray, r)) for r in rows]
    want = fx.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *loop)
    assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    one = [fnp.asarray(a) for a in rows[0]]
    assert_allclose(fx.jit(case.fx_fn)(*one), case.fx_fn(*one), rtol=1e-12, atol=1e-12)


def test_expm_of_batched_and_huge_matrices():
    rng = np.random.default_rng(2)
    a = randn(rng, (2, 4, 4)) * np.array([0.01, 30.0])[:, None, None]
    assert_allclose(fsl.expm(a), jsl.expm(a), rtol=1e-8)
    check_eval(_case("hilbert", lambda L: L.hilbert(4), lambda r: []), [])


@pytest.mark.default_mode
def test_default_mode_dtypes():
    x = np.array([[4, 1], [1, 3]], np.int32)
    for name in ("expm", "inv", "det", "cholesky", "lu_factor"):
        got, want = getattr(fsl, name)(x), getattr(jsl, name)(x)
        assert ([np.asarray(g).dtype for g in fx.tree_util.tree_leaves(got)]
                == [np.asarray(w).dtype for w in jax.tree_util.tree_leaves(want)]), name


def _constructors(L, f, s, c, v):
    """Every special-matrix constructor, one jax program (op by op each costs a compile)."""
    i = np.array([3, 1, 4, 1])
    return [L.leslie(f, s), L.leslie(np.array([1, 2, 3]), np.array([4, 5])), L.companion(f),
            L.companion(i), L.fiedler(i), L.fiedler_companion(c),
            L.fiedler_companion(np.array([2.0])), L.fiedler_companion(np.array([2.0, 3.0])),
            L.convolution_matrix(f, 3), L.convolution_matrix(v, 6, "same"),
            L.convolution_matrix(v, 2, "valid"), L.helmert(5), L.helmert(4, True),
            L.hadamard(8), L.hadamard(4, np.float32), L.dft(5), L.dft(4, "sqrtn"),
            L.dft(3, "n", dtype=np.complex64)]


def _binomial_matrices(L):
    return [L.pascal(6), L.pascal(5, "lower"), L.invpascal(6), L.invpascal(5, "upper"),
            L.invhilbert(6)]


def _constructor_args():
    rng = np.random.default_rng(4)
    return [rng.standard_normal((2, 4)), rng.standard_normal((2, 3)),
            rng.standard_normal((2, 7)), rng.standard_normal(4)]


def test_special_matrix_constructors_match_jax():
    import scipy.linalg as sl

    args = _constructor_args()
    want = jax.jit(lambda *a: _constructors(jsl, *a))(*args)
    assert_allclose(_constructors(fsl, *args), want, 1e-13, 1e-13)
    # fx's binomial matrices are exact integers, as SciPy's; jax's lgamma-based ones are off
    # by ~1e-6 relative (and cost seconds of compile), so only their dtypes come from jax.
    got = _binomial_matrices(fsl)
    shapes = jax.eval_shape(lambda: _binomial_matrices(jsl))
    assert [(g.shape, g.dtype) for g in got] == [(w.shape, w.dtype) for w in shapes]
    for g, w in zip(got, _binomial_matrices(sl)):
        np.testing.assert_array_equal(np.asarray(g), w)
    a, t = args[0], args[1][:, :1] * args[0]
    got = fx.jvp(fsl.fiedler_companion, (a,), (t,))
    assert_allclose(got, jax.jit(lambda a, t: jax.jvp(jsl.fiedler_companion, (a,), (t,)))(a, t),
                    1e-13, 1e-13)
    for name in ("companion", "fiedler_companion"):
        assert_allclose(fx.jit(getattr(fsl, name))(a), getattr(fsl, name)(a), 0, 0)
    with pytest.raises(ValueError, match="power of 2"):
        fsl.hadamard(6)
    with pytest.raises(ValueError, match="Expected kind"):
        fsl.pascal(3, "diagonal")
    with pytest.raises(ValueError, match="complex floating"):
        fsl.dft(3, dtype=np.float32)
    with pytest.raises(ValueError, match="one less than"):
        fsl.leslie(np.ones(3), np.ones(3))


@pytest.mark.default_mode
def test_special_matrix_constructors_in_the_default_mode():
    # jax's dtypes and shapes without compiling (eval_shape); values against the x64 results.
    args = _constructor_args()
    got = _constructors(fsl, *args) + _binomial_matrices(fsl)
    shapes = jax.eval_shape(lambda *a: _constructors(jsl, *a) + _binomial_matrices(jsl), *args)
    assert [(g.shape, g.dtype) for g in got] == [(w.shape, w.dtype) for w in shapes]
    with same_mode(True):
        wide = _constructors(fsl, *args) + _binomial_matrices(fsl)
    for g, w in zip(got, wide):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)


EXCLUDED: dict[str, str] = {}


def test_every_jax_scipy_linalg_name_is_in_fx_or_excluded():
    public = {n for n in dir(jsl) if not n.startswith("_")}
    missing = public - set(dir(fsl))
    assert missing - set(EXCLUDED) == set(), "not in fx.scipy.linalg and not excluded"
    assert set(EXCLUDED) - missing == set(), "in fx.scipy.linalg now: drop from EXCLUDED"
    assert all(len(r) > 10 for r in EXCLUDED.values())


def test_docstring_examples():
    assert run_doctests(fsl, fx.scipy.linalg_special_matrices) >= 24
