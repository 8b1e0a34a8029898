"""Tests of fx.numpy.vectorize (broadcasting, signature=, excluded=, keyword arguments) and
of ufunc/frompyfunc (call, outer, reduce, accumulate, reduceat, at) against jax.numpy:
values, dtypes and shapes; grad, jit and vmap through them; error messages."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_allclose, assert_bitwise, run_doctests

import fx
import fx.numpy as fnp

A = np.arange(12, dtype=np.float32).reshape(4, 3) / 4
B = np.array([1.0, -2.0, 0.5], np.float32)

CASES = [
    ("elementwise", lambda m: m.vectorize(lambda a, b: a * b + 1)(A, B)),
    ("python-branch", lambda m: m.vectorize(lambda a: m.where(a > 1, a, -a))(A)),
    ("scalar-out-signature", lambda m: m.vectorize(lambda a, b: (a * b).sum(),
                                                   signature="(n),(n)->()")(A, B)),
    ("matvec", lambda m: m.vectorize(lambda x, v: x @ v, signature="(m,n),(n)->(m)")(
        np.stack([A, 2 * A]), B)),
    ("two-outputs", lambda m: m.vectorize(lambda v: (v.min(), v.max()),
                                          signature="(n)->(),()")(A)),
    ("grow", lambda m: m.vectorize(lambda v: m.outer(v, v), signature="(n)->(n,n)")(A[:2])),
    ("scalar-and-core", lambda m: m.vectorize(lambda s, v: s * v, signature="(),(n)->(n)")(
        A[:, 0], A)),
    ("excluded-position", lambda m: m.vectorize(lambda a, p: a ** p, excluded={1})(A, 2)),
    ("excluded-keyword", lambda m: m.vectorize(lambda a, b, c=1.0: a + b * c,
                                               excluded={"c"})(A, B, c=5.0)),
]


def test_keyword_arguments_are_vectorized():
    # NumPy is the oracle here (jax's vectorize passes b through in a way that loses it).
    got = fnp.vectorize(lambda a, b=0.0: a - b)(A, b=B)
    assert_allclose(got, np.vectorize(lambda a, b=0.0: a - b)(A, b=B).astype(np.float32))


@pytest.mark.parametrize("name,f", CASES, ids=[c[0] for c in CASES])
def test_vectorize_matches_jax(name, f):
    got, want = f(fnp), f(jnp)
    assert_allclose(got, want, what=name)


def test_vectorize_grad_jit_vmap():
    dot = fnp.vectorize(lambda a, b: (a * b).sum(), signature="(n),(n)->()")
    jdot = jnp.vectorize(lambda a, b: (a * b).sum(), signature="(n),(n)->()")
    a64, b64 = A.astype(np.float64), B.astype(np.float64)
    assert_allclose(fx.grad(lambda a: dot(a, b64).sum())(a64),
                    jax.grad(lambda a: jdot(a, b64).sum())(a64))
    assert_allclose(fx.jit(dot)(A, B), dot(A, B))
    assert_allclose(fx.vmap(dot, in_axes=(0, None))(np.stack([A, A]), B),
                    np.stack([np.asarray(dot(A, B))] * 2))


def test_ufunc_methods_match_jax():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    f_add = fnp.frompyfunc(lambda a, b: a * 2 + b, 2, 1, identity=0)
    j_add = jnp.frompyfunc(lambda a, b: a * 2 + b, 2, 1, identity=0)
    for m_f, m_j in ((f_add, j_add),):
        assert_bitwise(m_f(x, x[0]), m_j(x, x[0]), what="call")
        assert_bitwise(m_f.outer(x[0], x[1, :2]), m_j.outer(x[0], x[1, :2]), what="outer")
        for axis in (0, 1, None):
            assert_bitwise(m_f.reduce(x, axis=axis), m_j.reduce(x, axis=axis), what="reduce")
        assert_bitwise(m_f.reduce(x, axis=1, keepdims=True, initial=5),
                       m_j.reduce(x, axis=1, keepdims=True, initial=5), what="reduce initial")
        assert_bitwise(m_f.accumulate(x, axis=1), m_j.accumulate(x, axis=1), what="accumulate")
        assert_bitwise(m_f.accumulate(x), m_j.accumulate(x), what="accumulate 0")
        idx = np.array([0, 3, 1, 2], np.int32)
        assert_bitwise(m_f.reduceat(x[0], idx), m_j.reduceat(x[0], idx), what="reduceat")
        assert_bitwise(m_f.at(x[0], np.array([0, 0, 2]), 3, inplace=False),
                       m_j.at(x[0], np.array([0, 0, 2]), 3, inplace=False), what="at")
    assert f_add.nin == 2 and f_add.nout == 1 and f_add.identity == 0
    assert "ufunc" in repr(f_add)


def test_ufunc_under_jit_and_grad():
    mul = fnp.frompyfunc(lambda a, b: a * b, 2, 1, identity=1)
    jmul = jnp.frompyfunc(lambda a, b: a * b, 2, 1, identity=1)
    x = np.array([1.5, -2.0, 0.5, 3.0])
    assert_allclose(fx.jit(mul.reduce)(x), jmul.reduce(x))
    assert_allclose(fx.grad(lambda v: mul.reduce(v))(x), jax.grad(lambda v: jmul.reduce(v))(x))
    assert_allclose(fx.grad(lambda v: mul.accumulate(v).sum())(x),
                    jax.grad(lambda v: jmul.accumulate(v).sum())(x))


def test_errors():
    add = fnp.frompyfunc(lambda a, b: a + b, 2, 1)
    neg = fnp.frompyfunc(lambda a: -a, 1, 1)
    cases = [
        (ValueError, r"vectorize: not a valid gufunc signature: '\(n\)->\)'",
         lambda: fnp.vectorize(lambda a: a, signature="(n)->)")),
        (TypeError, r"vectorize\(<lambda>\): the signature '\(n\),\(n\)->\(\)' has 2 inputs, "
                    r"but it was called with 1",
         lambda: fnp.vectorize(lambda a: a, signature="(n),(n)->()")(A)),
        (ValueError, r"inconsistent size for core dimension 'n': 3 vs 2",
         lambda: fnp.vectorize(lambda a, b: a, signature="(n),(n)->()")(A, B[:2])),
        (ValueError, r"an output has 1 dimensions, but its core dimensions are \(\)",
         lambda: fnp.vectorize(lambda a: a, signature="(n)->()")(A)),
        (ValueError, r"argument 0 of shape \(3,\) has fewer dimensions than its core",
         lambda: fnp.vectorize(lambda a: a, signature="(m,n)->()")(B)),
        (ValueError, r"reduce: zero-size reduction with no identity",
         lambda: add.reduce(np.zeros(0, np.float32))),
        (ValueError, r"outer: only supported for functions of two arguments",
         lambda: neg.outer(B, B)),
        (ValueError, r"at cannot modify arrays in place", lambda: add.at(B, 0, 1.0)),
        (TypeError, r"takes 2 arguments, got 1", lambda: add(B)),
    ]
    for exc, pattern, thunk in cases:
        with pytest.raises(exc, match=pattern):
            thunk()


def test_docstring_examples():
    import fx.numpy.vectorization

    assert run_doctests(fx.numpy.vectorization) >= 3
