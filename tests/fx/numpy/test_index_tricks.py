"""Tests of fx.numpy's index helpers (s_, index_exp, mgrid, ogrid, r_, c_, ix_, meshgrid,
indices, diag/tril/triu/mask indices, ravel_multi_index, unravel_index) against jax.numpy in
both of jax's modes: values bitwise, dtypes and shapes; jit and vmap of the index arithmetic;
error messages."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_bitwise, run_doctests, same_mode

import fx
import fx.numpy as fnp

A = np.array([1, 2], np.int32)
B = np.array([3.0, 4.0, 5.0], np.float32)
ROWS = np.array([0, 2, 5, -1, 7], np.int32)
COLS = np.array([1, 3, -1, 2, 9], np.int32)

CASES = [
    ("mgrid-int", lambda m: m.mgrid[0:3, 1:5:2]),
    ("mgrid-float", lambda m: m.mgrid[0:3, 0:1:4j]),
    ("mgrid-1d", lambda m: m.mgrid[-1:2]),
    ("mgrid-complex-1d", lambda m: m.mgrid[0:2:5j]),
    ("ogrid", lambda m: m.ogrid[0:3, 0:2]),
    ("ogrid-float", lambda m: m.ogrid[0:3, 0.5:2]),
    ("r_-mixed", lambda m: m.r_[1:4, 0, A]),
    ("r_-floats", lambda m: m.r_[B, 0:1:3j]),
    ("r_-2d", lambda m: m.r_["0,2", A, A]),
    ("r_-axis", lambda m: m.r_["-1", np.ones((2, 1), np.float32), np.zeros((2, 2), np.float32)]),
    ("r_-trans1d", lambda m: m.r_["0,2,0", A, A]),
    ("c_", lambda m: m.c_[A, A]),
    ("c_-2d", lambda m: m.c_[np.ones((2, 2), np.int32), A]),
    ("ix_", lambda m: m.ix_(A, np.array([0, 2, 1], np.int32))),
    ("meshgrid-xy", lambda m: m.meshgrid(A, B)),
    ("meshgrid-ij", lambda m: m.meshgrid(A, B, A, indexing="ij")),
    ("meshgrid-sparse", lambda m: m.meshgrid(A, B, sparse=True)),
    ("meshgrid-3d-xy", lambda m: m.meshgrid(A, B, np.arange(4, dtype=np.int32))),
    ("meshgrid-one", lambda m: m.meshgrid(B)),
    ("indices", lambda m: m.indices((2, 3))),
    ("indices-sparse", lambda m: m.indices((2, 3, 1), sparse=True)),
    ("indices-dtype", lambda m: m.indices((2,), dtype=np.float32)),
    ("diag_indices", lambda m: m.diag_indices(3)),
    ("diag_indices-3", lambda m: m.diag_indices(2, 3)),
    ("diag_indices_from", lambda m: m.diag_indices_from(np.ones((3, 3, 3), np.float32))),
    ("tril_indices", lambda m: m.tril_indices(3)),
    ("tril_indices-k-m", lambda m: m.tril_indices(3, 1, 4)),
    ("triu_indices", lambda m: m.triu_indices(4, -1)),
    ("tril_indices_from", lambda m: m.tril_indices_from(np.ones((2, 5), np.float32), k=2)),
    ("triu_indices_from", lambda m: m.triu_indices_from(np.ones((4, 3), np.float32))),
    ("mask_indices", lambda m: m.mask_indices(3, m.triu, 1)),
    ("ravel_multi_index", lambda m: m.ravel_multi_index((ROWS[:2], COLS[:2]), (3, 4))),
    ("ravel_multi_index-clip", lambda m: m.ravel_multi_index((ROWS, COLS), (3, 4), mode="clip")),
    ("ravel_multi_index-wrap", lambda m: m.ravel_multi_index((ROWS, COLS), (3, 4), mode="wrap")),
    ("ravel_multi_index-F", lambda m: m.ravel_multi_index((ROWS, COLS), (3, 4), mode="wrap",
                                                          order="F")),
    ("ravel_multi_index-broadcast", lambda m: m.ravel_multi_index(
        (ROWS[:2, None], COLS[None, :2]), (3, 4))),
    ("unravel_index", lambda m: m.unravel_index(np.array([-1, 5, 30, -30, 0], np.int32), (3, 4))),
    ("unravel_index-scalar", lambda m: m.unravel_index(np.int32(7), (2, 2, 2))),
    ("unravel_index-int64", lambda m: m.unravel_index(np.array([[3], [4]], np.int64), (5,))),
]


def _mode_rows():
    # Every row in x64; in jax's default mode (where the index dtypes differ) the first row of
    # each function by default and its variants with -m slow (each row costs jax's eager
    # compiles of its ops in both modes).
    seen, rows = set(), []
    for name, f in CASES:
        base = name.split("-")[0]
        rows.append(pytest.param(False, name, f, id=f"x32-{name}",
                                 marks=[pytest.mark.slow] if base in seen else []))
        seen.add(base)
    return rows + [pytest.param(True, name, f, id=f"x64-{name}") for name, f in CASES]


@pytest.mark.parametrize("x64,name,f", _mode_rows())
def test_matches_jax(x64, name, f):
    with same_mode(x64):
        got, want = f(fnp), f(jnp)
        assert_bitwise(list(got) if isinstance(got, tuple) else got,
                       list(want) if isinstance(want, tuple) else want, what=name)


def test_index_expressions():
    assert fnp.s_[1:2, ..., None] == jnp.s_[1:2, ..., None] == (slice(1, 2), Ellipsis, None)
    assert fnp.s_[3] == 3
    assert fnp.index_exp[3] == jnp.index_exp[3] == (3,)
    assert fnp.index_exp[1:2, 0] == (slice(1, 2), 0)
    x = np.arange(12).reshape(3, 4)
    assert_bitwise(fnp.asarray(x)[fnp.ix_(np.array([0, 2]), np.array([True, False, True, True]))],
                   x[np.ix_(np.array([0, 2]), np.array([True, False, True, True]))])


def test_ravel_unravel_trace_and_batch():
    dims = (3, 4, 5)

    def both(m):
        def f(flat):
            multi = m.unravel_index(flat, dims)
            return multi, m.ravel_multi_index(multi, dims, mode="wrap")
        return f

    flat = np.array([[0, 17, 59, -3], [60, 1, 2, 33]], np.int32)
    eager = both(fnp)(flat)
    assert_bitwise(fx.jit(both(fnp))(flat), eager, what="jit")
    assert_bitwise(fx.vmap(both(fnp))(flat), jax.tree_util.tree_map(
        lambda *r: np.stack(r), *[both(fnp)(row) for row in flat]), what="vmap")
    assert_bitwise(eager, both(jnp)(jnp.asarray(flat)), what="jax")


def test_errors():
    cases = [
        (ValueError, r"ravel_multi_index: index array 0 has entries outside \[0, 3\)",
         lambda: fnp.ravel_multi_index((ROWS, COLS), (3, 4))),
        (fx.ConcretizationTypeError, r"ravel_multi_index: mode='raise' checks the indices, which "
                                     r"are traced.*use mode='clip'",
         lambda: fx.jit(lambda r: fnp.ravel_multi_index((r, r), (3, 4)))(A)),
        (ValueError, r"ravel_multi_index: got 1 index arrays for the 2 dimensions",
         lambda: fnp.ravel_multi_index((A,), (3, 4))),
        (TypeError, r"ravel_multi_index: indices must be integers",
         lambda: fnp.ravel_multi_index((B, B), (3, 4))),
        (ValueError, r"unravel_index: cannot unravel into the empty shape \(3, 0\)",
         lambda: fnp.unravel_index(A, (3, 0))),
        (TypeError, r"unravel_index: indices must be integers", lambda: fnp.unravel_index(B, 4)),
        (ValueError, r"meshgrid: indexing must be 'xy' or 'ij'",
         lambda: fnp.meshgrid(A, indexing="ji")),
        (ValueError, r"ix_: argument 1 must be 1-D, got shape \(2, 2\)",
         lambda: fnp.ix_(A, np.ones((2, 2), np.int32))),
        (TypeError, r"ix_: argument 0 must be integer or boolean", lambda: fnp.ix_(B)),
        (ValueError, r"diag_indices_from: input must be at least 2-D with all dimensions equal",
         lambda: fnp.diag_indices_from(np.ones((2, 3)))),
        (ValueError, r"tril_indices_from: input array must be 2-D",
         lambda: fnp.tril_indices_from(np.ones(3))),
        (TypeError, r"mgrid: indices must be slices", lambda: fnp.mgrid[0:2, 3]),
        (NotImplementedError, r"r_: matrix directives", lambda: fnp.r_["r", A]),
        (ValueError, r"r_: invalid directive 'x,1'", lambda: fnp.r_["x,1", A]),
    ]
    for exc, pattern, thunk in cases:
        with pytest.raises(exc, match=pattern):
            thunk()


def test_docstring_examples():
    import fx.numpy.index_tricks

    with same_mode(False):
        assert run_doctests(fx.numpy.index_tricks) >= 6
