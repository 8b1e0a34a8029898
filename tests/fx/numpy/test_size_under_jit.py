"""The data-dependent ``fx.numpy`` functions under ``jit``, against jax: the one-argument
``where`` (``nonzero``), ``nonzero``, ``argwhere``, ``flatnonzero``, ``unique``, ``bincount``
and ``repeat`` take jax's static ``size=``/``fill_value=`` (``length=``,
``total_repeat_length=``); with it, jit agrees with eager and with jax, and vmap with a loop;
without it, both libraries raise a ``ConcretizationTypeError`` (a ``TypeError``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_bitwise, same_mode

import fx
import fx.numpy as fnp


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def mode(request):
    with same_mode(request.param):
        yield request.param


M = np.array([[0, 1, 0], [2, 0, 3]], np.int32)
F = np.array([0.0, np.nan, -0.0, 2.5, 0.0, -1.0], np.float32)
I = np.array([3, 1, 3, 0, 2, 1], np.int32)
R = np.array([2, 0, 3, 1, 0, 1], np.int32)

# name, f(np_module, x) with the static sizes inside, the data.
SIZED = [
    ("where-1arg", lambda m, x: m.where(x, size=4), M),
    ("where-1arg-fill", lambda m, x: m.where(x > 0, size=5, fill_value=-1), M),
    ("where-1arg-fill-per-dim", lambda m, x: m.where(x, size=2, fill_value=(-1, -2)), M),
    ("where-1arg-float", lambda m, x: m.where(x, size=6), F),
    ("nonzero", lambda m, x: m.nonzero(x, size=5, fill_value=7), M),
    ("argwhere", lambda m, x: m.argwhere(x, size=2), M),
    ("flatnonzero", lambda m, x: m.flatnonzero(x, size=4, fill_value=-3), F),
    ("unique", lambda m, x: m.unique(x, size=5, fill_value=-1), I),
    ("unique-counts", lambda m, x: m.unique(x, size=3, return_counts=True,
                                            return_inverse=True), I),
    ("unique_values", lambda m, x: m.unique_values(x, size=6, fill_value=9), I),
    ("bincount", lambda m, x: m.bincount(x, length=3), I),
    ("bincount-weights", lambda m, x: m.bincount(x, weights=x * 0.5, length=6), I),
    ("repeat-total", lambda m, x: m.repeat(m.arange(6), x, total_repeat_length=9), R),
    ("repeat-total-short", lambda m, x: m.repeat(m.arange(6.0), x, total_repeat_length=3), R),
    ("repeat-total-2d", lambda m, x: m.repeat(m.ones((2, 6)), x, axis=1,
                                              total_repeat_length=7), R),
    ("repeat-total-scalar-count", lambda m, x: m.repeat(m.arange(3), x[0],
                                                        total_repeat_length=5), R),
    ("repeat-total-zero", lambda m, x: m.repeat(m.arange(6), x, total_repeat_length=0), R),
]


@pytest.mark.parametrize("name,f,x", SIZED, ids=[c[0] for c in SIZED])
def test_jit_with_size_matches_jax_and_eager(mode, name, f, x):
    want = jax.jit(lambda x: f(jnp, x))(x)
    assert_bitwise(jax.tree_util.tree_leaves(f(fnp, x)), jax.tree_util.tree_leaves(want),
                   what=f"{name} eager")
    got = fx.jit(lambda x: f(fnp, x))(x)
    assert_bitwise(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want),
                   what=f"{name} jit")


@pytest.mark.parametrize("name,f,x", SIZED, ids=[c[0] for c in SIZED])
def test_vmap_with_size_matches_loop(name, f, x):
    xs = np.stack([x, x[::-1] if x.ndim == 1 else x[:, ::-1]])
    got = fx.vmap(lambda x: f(fnp, x))(xs)
    for i in range(2):
        rows = [np.asarray(g)[i] for g in jax.tree_util.tree_leaves(got)]
        assert_bitwise(rows, jax.tree_util.tree_leaves(f(fnp, xs[i])), what=f"{name} row {i}")


def test_where_one_argument_is_nonzero(mode):
    for x in (M, F, M > 1, np.zeros((2, 0), np.float32)):
        assert_bitwise(fnp.where(x), jnp.where(x), what=f"where({x.dtype})")
        assert_bitwise(fnp.where(x), fnp.nonzero(x), what="where is nonzero")


UNSIZED = [
    ("where-1arg", lambda m, x: m.where(x), M),
    ("nonzero", lambda m, x: m.nonzero(x), M),
    ("argwhere", lambda m, x: m.argwhere(x), M),
    ("flatnonzero", lambda m, x: m.flatnonzero(x), M),
    ("unique", lambda m, x: m.unique(x), I),
    ("bincount", lambda m, x: m.bincount(x), I),
    ("repeat", lambda m, x: m.repeat(m.arange(6), x), R),
]


@pytest.mark.parametrize("name,f,x", UNSIZED, ids=[c[0] for c in UNSIZED])
def test_jit_without_size_raises_as_jax(name, f, x):
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(lambda x: f(jnp, x))(x)
    with pytest.raises(fx.core.ConcretizationTypeError) as info:
        fx.jit(lambda x: f(fnp, x))(x)
    assert isinstance(info.value, TypeError)
    assert "size=" in str(info.value) or "length=" in str(info.value), str(info.value)


@pytest.mark.parametrize("call,error", [
    (lambda m: m.where(M > 0, 1, 0, size=3), ValueError),
    (lambda m: m.where(M > 0, 1, 0, fill_value=0), ValueError),
    (lambda m: m.where(M > 0, 1), TypeError),
    (lambda m: m.where(np.int32(1)), ValueError),
], ids=["3arg-size", "3arg-fill", "2arg", "1arg-0d"])
def test_where_argument_errors_as_jax(call, error):
    with pytest.raises(error):
        call(jnp)
    with pytest.raises(error):
        call(fnp)
