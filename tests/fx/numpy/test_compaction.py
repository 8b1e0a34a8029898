"""Tests of fx.numpy's data-dependent selections (nonzero, argwhere, flatnonzero, extract,
compress) against jax.numpy in both of jax's modes: values bitwise, dtypes and shapes with and
without ``size=``/``fill_value=``; jit with ``size=`` against eager and the error without it;
vmap against a loop; grad against jax."""

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


M = np.array([[0, 1, 0], [2, 0, 3]], np.int32)
F = np.array([0.0, np.nan, -0.0, 2.5, 0.0, -1.0], np.float32)
B = np.array([[True, False], [True, True]])
X = np.arange(12.0, dtype=np.float32).reshape(3, 4)

CASES = [
    ("nonzero-2d", lambda m, s: m.nonzero(M, size=s), ),
    ("nonzero-fill", lambda m, s: m.nonzero(M, size=s, fill_value=-1)),
    ("nonzero-fill-per-dim", lambda m, s: m.nonzero(M, size=s, fill_value=(-1, -2))),
    ("nonzero-float-nan-negzero", lambda m, s: m.nonzero(F, size=s)),
    ("nonzero-empty", lambda m, s: m.nonzero(np.zeros((2, 0), np.float32), size=s)),
    ("argwhere", lambda m, s: m.argwhere(M, size=s)),
    ("argwhere-fill", lambda m, s: m.argwhere(B, size=s, fill_value=-7)),
    ("argwhere-3d", lambda m, s: m.argwhere(np.arange(8).reshape(2, 2, 2) % 3, size=s)),
    ("argwhere-0d", lambda m, s: m.argwhere(np.int32(4), size=s)),
    ("argwhere-0d-false", lambda m, s: m.argwhere(np.float32(0), size=s)),
    ("flatnonzero", lambda m, s: m.flatnonzero(M, size=s, fill_value=9)),
    ("extract", lambda m, s: m.extract(M, X[:2, :3], size=s)),
    ("extract-short-condition", lambda m, s: m.extract(np.array([1, 0, 1]), X, size=s)),
    ("extract-fill", lambda m, s: m.extract(B, np.arange(4, dtype=np.int32).reshape(2, 2),
                                            size=s, fill_value=-5)),
    ("compress-axis0", lambda m, s: m.compress(np.array([True, False, True]), X, axis=0,
                                               size=s)),
    ("compress-axis1-fill", lambda m, s: m.compress(np.array([1, 0, 1]), X, axis=1, size=s,
                                                    fill_value=-1)),
    ("compress-flat", lambda m, s: m.compress(np.array([0, 1, 1, 0, 1]), X, size=s)),
    ("compress-long-condition", lambda m, s: m.compress(np.array([1, 1, 0, 0, 0]), X, axis=0,
                                                        size=s)),
]
SIZES = [None, 1, 3]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"size={s}")
@pytest.mark.parametrize("name,f", CASES, ids=[c[0] for c in CASES])
def test_matches_jax(mode, name, f, size):
    assert_bitwise(f(fnp, size), f(jnp, size), what=f"{name} size={size}")


def test_nonzero_padding_past_the_array_length(mode):
    assert_bitwise(fnp.nonzero(M, size=9, fill_value=-1),
                   jnp.nonzero(jnp.asarray(M), size=9, fill_value=-1))
    assert_bitwise(fnp.asarray(M).nonzero(), jnp.asarray(M).nonzero())


TRACEABLE = [
    ("nonzero", lambda m, x: m.nonzero(x, size=4, fill_value=-1)),
    ("argwhere", lambda m, x: m.argwhere(m.reshape(x, (2, 3)), size=4)),
    ("flatnonzero", lambda m, x: m.flatnonzero(x, size=2)),
    ("extract", lambda m, x: m.extract(x > 1, x, size=4)),
    ("compress", lambda m, x: m.compress(x > 1, m.stack([x, -x]), axis=1, size=3)),
]
DATA = np.array([[3, 0, 3, 0, 2, 1], [0, 0, 0, 0, 0, 0], [5, 4, 3, 2, 1, 0]], np.int32)


@pytest.mark.parametrize("name,f", TRACEABLE, ids=[t[0] for t in TRACEABLE])
def test_jit_and_vmap_with_size(name, f):
    for row in DATA:
        eager = f(fnp, row)
        assert_bitwise(fx.jit(lambda v: f(fnp, v))(row), eager, what=f"{name} jit vs eager")
        assert_bitwise(eager, f(jnp, jnp.asarray(row)), what=f"{name} vs jax")
    batched = fx.vmap(lambda v: f(fnp, v))(DATA)
    loop = [f(fnp, row) for row in DATA]
    assert_bitwise(batched, jax.tree_util.tree_map(lambda *r: np.stack(r), *loop),
                   what=f"{name} vmap vs loop")


@pytest.mark.parametrize("fn,call", [
    ("nonzero", lambda x: fnp.nonzero(x)),
    ("argwhere", lambda x: fnp.argwhere(x)),
    ("flatnonzero", lambda x: fnp.flatnonzero(x)),
    ("extract", lambda x: fnp.extract(x, x)),
    ("compress", lambda x: fnp.compress(x, x)),
])
def test_traced_without_size_asks_for_size(fn, call):
    pattern = rf"fx\.numpy\.{fn}: the length of the result depends on the values .* Pass size="
    with pytest.raises(fx.ConcretizationTypeError, match=pattern):
        fx.jit(call)(DATA[0])
    with pytest.raises(fx.ConcretizationTypeError, match=pattern):
        fx.make_jaxpr(call)(DATA[0])
    with pytest.raises(fx.ConcretizationTypeError, match=pattern):
        fx.vmap(call)(DATA)


def test_grad_matches_jax():
    x = np.array([0.5, -1.0, 0.0, 2.0, -3.0, 3.0])
    w = np.arange(1.0, 5.0)

    def losses(m):
        yield lambda v: (m.extract(v > 0, v * v, size=4) * w).sum()
        yield lambda v: (m.compress(v < 1, v, size=4, fill_value=2.0) * w).sum()
        yield lambda v: (m.compress(v[:2] > 0, m.reshape(v, (2, 3)), axis=0, size=2)).sum()
        # Without size, eagerly: the length is counted on the concrete primal.
        yield lambda v: (m.extract(v > 0, v) ** 2).sum()

    with same_mode(True):
        for i, (fl, jl) in enumerate(zip(losses(fnp), losses(jnp))):
            # Jitted where a size makes it traceable: eagerly jax compiles each primitive of
            # the gradient on its own. The comparison is to rounding either way.
            want = (jax.jit(jax.grad(jl)) if i < 3 else jax.grad(jl))(jnp.asarray(x))
            assert_allclose(fx.grad(fl)(x), want, what=f"grad {i}")
            if i < 3:
                assert_allclose(fx.jit(fx.grad(fl))(x), want, what=f"jit(grad) {i}")


def test_errors():
    cases = [
        (ValueError, r"nonzero: 0-d arrays are not allowed; use fx.numpy.atleast_1d",
         lambda: fnp.nonzero(np.float32(1))),
        (ValueError, r"nonzero: fill_value must be a scalar or a tuple of 2 values",
         lambda: fnp.nonzero(M, size=3, fill_value=(1, 2, 3))),
        (ValueError, r"nonzero: size must be non-negative", lambda: fnp.nonzero(M, size=-2)),
        (TypeError, r"nonzero: size must be a static non-negative int",
         lambda: fnp.nonzero(M, size=1.5)),
        (ValueError, r"compress: condition must be a 1-D array, got shape \(2, 2\)",
         lambda: fnp.compress(B, X)),
        (ValueError, r"compress: condition of length 5 is True beyond the end of axis 0 "
                     r"\(size 3\)", lambda: fnp.compress(np.ones(5, bool), X, axis=0)),
        (ValueError, r"compress: size must be between 0 and the length 4 of axis 1",
         lambda: fnp.compress(np.ones(4, bool), X, axis=1, size=5)),
        (ValueError, r"extract: size must be between 0 and the length 12",
         lambda: fnp.extract(np.ones(12, bool), X, size=13)),
        (NotImplementedError, r"compress: the 'out' argument is not supported",
         lambda: fnp.compress(np.ones(3, bool), X, axis=0, out=X)),
        (ValueError, r"compress: fill_value must be a scalar",
         lambda: fnp.compress(np.ones(3, bool), X, axis=0, size=3, fill_value=np.ones(2))),
    ]
    for exc, pattern, thunk in cases:
        with pytest.raises(exc, match=pattern):
            thunk()


def test_docstring_examples():
    import fx.numpy.compaction

    with same_mode(False):
        assert run_doctests(fx.numpy.compaction) >= 6
