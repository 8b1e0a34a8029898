"""Tests of fx.numpy's set operations (unique & the array API's unique_*, union1d,
intersect1d, setdiff1d, setxor1d, isin) against jax.numpy in both of jax's modes: values
bitwise (these are exact ops; -0.0 and NaN included), dtypes and shapes, with and without
``size=``; jit with ``size=`` against eager, the error without it; vmap against a loop; grad
against jax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_allclose, assert_bitwise, run_doctests, same_mode

import fx
import fx.numpy as fnp


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def mode(request):
    with same_mode(request.param):
        yield request.param


def _jx(args):
    return [jnp.asarray(a) for a in args]


F = np.array([5.0, 1.0, 3.0, 3.0, np.nan, 7.0, -0.0, 0.0, np.nan], np.float32)
G = np.array([3.0, 9.0, 1.0, np.nan, 1.0, 0.0], np.float32)
I = np.array([4, 2, 2, 1, 7, 7, 0], np.int32)  # noqa: E741
J = np.array([2, 9, 0, 0], np.int32)
NEG = np.array([-3, -5], np.int32)
ROWS = np.array([[1, 2], [1, 2], [0, 5], [0, 4]], np.int32)
EMPTY = np.zeros(0, np.float32)
ALL = dict(return_index=True, return_inverse=True, return_counts=True)

# (id, f(module, *args, size), args): every row runs without size (the data-dependent length)
# and with a size larger than the result; a sample in both modes with a smaller one.
CASES = [
    ("unique-float", lambda m, x, s: m.unique(x, size=s), [F]),
    ("unique-float-all", lambda m, x, s: m.unique(x, size=s, **ALL), [F]),
    ("unique-float-distinct-nans", lambda m, x, s: m.unique(x, size=s, equal_nan=False, **ALL),
     [F]),
    ("unique-int-all", lambda m, x, s: m.unique(x, size=s, **ALL), [I]),
    ("unique-2d-inverse", lambda m, x, s: m.unique(x, size=s, return_inverse=True), [ROWS]),
    ("unique-fill", lambda m, x, s: m.unique(x, size=s, fill_value=-1, **ALL), [F]),
    ("unique-empty", lambda m, x, s: m.unique(x, size=s, fill_value=2.0, **ALL), [EMPTY]),
    ("unique-axis0", lambda m, x, s: m.unique(x, axis=0, size=s, **ALL), [ROWS]),
    ("unique-axis1", lambda m, x, s: m.unique(x, axis=1, size=s, **ALL), [ROWS]),
    ("unique-axis0-fill", lambda m, x, s: m.unique(x, axis=0, size=s, fill_value=7), [ROWS]),
    ("unique-scalar", lambda m, x, s: m.unique(x, size=s, return_inverse=True),
     [np.float32(3)]),
    ("unique_all", lambda m, x, s: tuple(m.unique_all(x, size=s)), [F]),
    ("unique_counts", lambda m, x, s: tuple(m.unique_counts(x, size=s)), [I]),
    ("unique_inverse", lambda m, x, s: tuple(m.unique_inverse(x, size=s)), [ROWS]),
    ("unique_values", lambda m, x, s: m.unique_values(x, size=s), [F]),
    ("union1d-float", lambda m, x, y, s: m.union1d(x, y, size=s), [F, G]),
    ("union1d-int", lambda m, x, y, s: m.union1d(x, y, size=s), [I, J]),
    ("intersect1d-float", lambda m, x, y, s: m.intersect1d(x, y, size=s), [F, G]),
    ("intersect1d-indices", lambda m, x, y, s: m.intersect1d(x, y, return_indices=True, size=s),
     [F, G]),
    ("intersect1d-int-indices",
     lambda m, x, y, s: m.intersect1d(x, y, return_indices=True, size=s), [I, J]),
    ("intersect1d-negative", lambda m, x, y, s: m.intersect1d(x, y, size=s),
     [NEG, np.array([-5, -3, 1], np.int32)]),
    ("intersect1d-assume-unique",
     lambda m, x, y, s: m.intersect1d(x, y, assume_unique=True, return_indices=True, size=s),
     [np.array([4, 1, 3], np.int32), np.array([3, 0, 4, 5], np.int32)]),
    ("setdiff1d-float", lambda m, x, y, s: m.setdiff1d(x, y, size=s), [F, G]),
    ("setdiff1d-int", lambda m, x, y, s: m.setdiff1d(x, y, size=s), [I, J]),
    ("setdiff1d-assume-unique", lambda m, x, y, s: m.setdiff1d(x, y, True, size=s), [F, G]),
    ("setdiff1d-empty-result", lambda m, x, y, s: m.setdiff1d(x, y, size=s), [J, J]),
    ("setxor1d-float", lambda m, x, y, s: m.setxor1d(x, y, size=s), [F, G]),
    ("setxor1d-int", lambda m, x, y, s: m.setxor1d(x, y, size=s), [I, J]),
    ("setxor1d-negative", lambda m, x, y, s: m.setxor1d(x, y, size=s),
     [NEG, np.array([-5, 2], np.int32)]),
    ("setxor1d-assume-unique", lambda m, x, y, s: m.setxor1d(x, y, True, size=s),
     [np.array([1, 2, 5], np.int32), np.array([2, 3], np.int32)]),
    ("setops-empty-first", lambda m, x, y, s: (m.union1d(x, y, size=s),
                                               m.setdiff1d(x, y, size=s),
                                               m.setxor1d(x, y, size=s)), [I[:0], I]),
]
SIZES = [None, 12]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"size={s}")
@pytest.mark.parametrize("name,f,args", CASES, ids=[c[0] for c in CASES])
def test_matches_jax(name, f, args, size):
    # jax's default mode (fx's too); jax's set operations are slow to run eagerly, so the
    # x64 mode gets a sample of the table below.
    with same_mode(False):
        assert_bitwise(f(fnp, *args, size), f(jnp, *_jx(args), size), what=f"{name} {size=}")


@pytest.mark.parametrize("name,f,args", CASES[1:30:4], ids=[c[0] for c in CASES[1:30:4]])
def test_matches_jax_both_modes(mode, name, f, args):
    assert_bitwise(f(fnp, *args, 2), f(jnp, *_jx(args), 2), what=f"{name} size=2")


def test_unsorted_request_is_sorted_as_in_jax():
    assert_bitwise(fnp.unique(I, sorted=False), jnp.unique(jnp.asarray(I), sorted=False))


def test_isin_matches_jax(mode):
    for kw in ({}, {"invert": True}, {"method": "sort"}, {"assume_unique": True}):
        assert_bitwise(fnp.isin(F, G, **kw), jnp.isin(jnp.asarray(F), jnp.asarray(G), **kw))
        assert_bitwise(fnp.isin(I.reshape(7, 1), J, **kw),
                       jnp.isin(jnp.asarray(I.reshape(7, 1)), jnp.asarray(J), **kw))
    assert_bitwise(fnp.isin(I, I[:0]), jnp.isin(jnp.asarray(I), jnp.asarray(I[:0])))
    assert_bitwise(fnp.isin(np.float32(1.0), G), jnp.isin(jnp.float32(1.0), jnp.asarray(G)))


# --- transformations ----------------------------------------------------------------------------

TRACEABLE = [
    ("unique", lambda m, x: m.unique(x, size=6, **ALL)),
    ("unique_all", lambda m, x: tuple(m.unique_all(x, size=6))),
    ("union1d", lambda m, x: m.union1d(x, x[::-1] + 1, size=9)),
    ("intersect1d", lambda m, x: m.intersect1d(x, x[::-1] + 1, return_indices=True, size=4)),
    ("setdiff1d", lambda m, x: m.setdiff1d(x, x[:3] + 1, size=5)),
    ("setxor1d", lambda m, x: m.setxor1d(x, x[:3] + 1, size=5)),
    ("isin", lambda m, x: m.isin(x, x[:2] + 1)),
]
DATA = np.array([[3, 1, 3, 0, 2, 1], [5, 5, 5, 5, 5, 5], [0, 1, 2, 3, 4, 5]], np.int32)


@pytest.mark.parametrize("name,f", TRACEABLE, ids=[t[0] for t in TRACEABLE])
def test_jit_and_vmap_with_size(name, f):
    x = DATA[0]
    eager = f(fnp, x)
    assert_bitwise(fx.jit(lambda v: f(fnp, v))(x), eager, what=f"{name} jit vs eager")
    assert_bitwise(eager, f(jnp, jnp.asarray(x)), what=f"{name} vs jax")
    batched = fx.vmap(lambda v: f(fnp, v))(DATA)
    loop = [f(fnp, row) for row in DATA]
    assert_bitwise(batched, jax.tree_util.tree_map(lambda *r: np.stack(r), *loop),
                   what=f"{name} vmap vs loop")


@pytest.mark.parametrize("fn,call", [
    ("unique", lambda x: fnp.unique(x)),
    ("unique_counts", lambda x: fnp.unique_counts(x)),
    ("union1d", lambda x: fnp.union1d(x, x)),
    ("intersect1d", lambda x: fnp.intersect1d(x, x)),
    ("setdiff1d", lambda x: fnp.setdiff1d(x, x)),
    ("setxor1d", lambda x: fnp.setxor1d(x, x)),
])
def test_traced_without_size_asks_for_size(fn, call):
    pattern = rf"fx\.numpy\.{fn}: the length of the result depends on the values .* Pass size="
    with pytest.raises(fx.ConcretizationTypeError, match=pattern):
        fx.jit(call)(DATA[0])
    with pytest.raises(fx.ConcretizationTypeError, match=pattern):
        fx.vmap(call)(DATA)


def test_grad_matches_jax():
    x = np.array([0.5, -1.0, 0.5, 2.0, -1.0, 3.0])
    w = np.arange(1.0, 7.0)

    def losses(m):
        yield lambda v: (m.unique(v, size=6) * w).sum()
        yield lambda v: (m.unique(v, size=3, fill_value=0.0) * w[:3]).sum()
        yield lambda v: (m.union1d(v, 2 * v, size=6) * w).sum()
        yield lambda v: (m.intersect1d(v, -v, size=2) * w[:2]).sum()
        yield lambda v: (m.setdiff1d(v, v[:1], size=4) * w[:4]).sum()
        yield lambda v: (m.setxor1d(v, v[:2], size=3) * w[:3]).sum()
        yield lambda v: (m.unique(m.reshape(v, (3, 2)), axis=0, size=3) * w.reshape(3, 2)).sum()

    with same_mode(True):
        for i, (fl, jl) in enumerate(zip(losses(fnp), losses(jnp))):
            # Jitted: eagerly jax compiles each primitive of the set operation's gradient on
            # its own (~15 s for the seven); the comparison is to rounding either way.
            want = jax.jit(jax.grad(jl))(jnp.asarray(x))
            assert_allclose(fx.grad(fl)(x), want, what=f"grad {i}")
            if i % 3 == 0:  # compiling is slower than running: a sample under jit
                assert_allclose(fx.jit(fx.grad(fl))(x), want, what=f"jit(grad) {i}")


# --- errors and docs ----------------------------------------------------------------------------


def test_errors():
    cases = [
        (ValueError, r"unique: for a zero-sized input with size=3, fill_value must be given",
         lambda: fnp.unique(EMPTY, size=3)),
        (ValueError, r"unique: size must be non-negative, got -1",
         lambda: fnp.unique(F, size=-1)),
        (TypeError, r"unique: size must be a static int", lambda: fnp.unique(F, size=2.5)),
        (ValueError, r"unique: axis 2 is out of bounds for an array of rank 2",
         lambda: fnp.unique(ROWS, axis=2)),
        (ValueError, r"unique: fill_value of shape \(3,\) does not fit rows of shape \(2,\)",
         lambda: fnp.unique(ROWS, axis=0, size=4, fill_value=np.zeros(3))),
        (ValueError, r"intersect1d: fill_value must be a scalar",
         lambda: fnp.intersect1d(I, J, size=4, fill_value=np.zeros(2))),
        (ValueError, r"isin: method must be one of", lambda: fnp.isin(I, J, method="hash")),
    ]
    for exc, pattern, thunk in cases:
        with pytest.raises(exc, match=pattern):
            thunk()


def test_docstring_examples():
    import fx.numpy.setops

    with same_mode(False):
        assert run_doctests(fx.numpy.setops) >= 7
