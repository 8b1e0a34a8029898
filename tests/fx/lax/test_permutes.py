"""ppermute, pshuffle, psum_scatter and all_to_all (fx/lax/permutes.py) inside named vmaps,
against jax: values, vjp, jit, and a nested vmap over another axis."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from harness import assert_allclose, assert_bitwise

import fx
import fx.lax as lax

F32 = np.float32
PERM = [(0, 1), (1, 2), (2, 0), (3, 3)]

ROWS = [  # name, fx function, jax function, operand shape (lanes first)
    ("ppermute", lambda v: lax.ppermute(v, "i", PERM),
     lambda v: jax.lax.ppermute(v, "i", PERM), (4, 3, 2)),
    ("pshuffle", lambda v: lax.pshuffle(v, "i", [2, 0, 3, 1]),
     lambda v: jax.lax.pshuffle(v, "i", [2, 0, 3, 1]), (4, 5)),
    ("psum_scatter", lambda v: lax.psum_scatter(v, "i"),
     lambda v: jax.lax.psum_scatter(v, "i"), (4, 4, 3)),
    ("psum_scatter-tiled-1", lambda v: lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True),
     lambda v: jax.lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True), (4, 3, 8)),
    ("all_to_all-0-1", lambda v: lax.all_to_all(v, "i", 0, 1),
     lambda v: jax.lax.all_to_all(v, "i", 0, 1), (4, 4, 3)),
    ("all_to_all-1-0", lambda v: lax.all_to_all(v, "i", 1, 0),
     lambda v: jax.lax.all_to_all(v, "i", 1, 0), (4, 2, 4)),
    ("all_to_all-tiled", lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True),
     lambda v: jax.lax.all_to_all(v, "i", 1, 0, tiled=True), (4, 3, 8)),
]


@pytest.mark.parametrize("name, f, g, shape", ROWS, ids=[r[0] for r in ROWS])
def test_matches_jax(name, f, g, shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(F32)
    fv, gv = fx.vmap(f, axis_name="i"), jax.vmap(g, axis_name="i")
    want = gv(x)
    assert_allclose(fv(x), want, what=name)
    assert_allclose(fx.jit(fv)(x), want, what=f"{name} jit")
    ct = rng.standard_normal(np.shape(want)).astype(F32)
    assert_allclose(fx.vjp(fv, x)[1](ct), jax.vjp(gv, x)[1](ct), what=f"{name} vjp")
    # An outer vmap over a second axis: each slice is its own named-axis computation.
    xs = rng.standard_normal((2,) + shape).astype(F32)
    assert_allclose(fx.vmap(fv)(xs), jax.vmap(gv)(xs), what=f"{name} nested vmap")


def test_integers_move_exactly():
    x = np.arange(12, dtype=np.int32).reshape(4, 3)
    got = fx.vmap(lambda v: lax.ppermute(v, "i", PERM), axis_name="i")(x)
    assert_bitwise(got, jax.vmap(lambda v: jax.lax.ppermute(v, "i", PERM), axis_name="i")(x))


def test_partial_permutation_gives_zeros():
    x = np.arange(1.0, 5.0, dtype=F32)
    got = fx.vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 0)]), axis_name="i")(x)
    assert_bitwise(got, np.array([2.0, 1.0, 0.0, 0.0], F32))


@pytest.mark.parametrize("call, match", [
    (lambda v: lax.ppermute(v, "i", [(0, 1), (1, 1)]), r"ppermute: perm .* at most once"),
    (lambda v: lax.ppermute(v, "i", [(0, 9)]), r"ppermute: perm .* \(size 4\)"),
    (lambda v: lax.pshuffle(v, "i", [0, 0, 1, 2]), r"pshuffle: perm .* not a permutation"),
    (lambda v: lax.psum_scatter(v, "i"), r"psum_scatter: dimension 0 of f32\[3\] must equal"),
    (lambda v: lax.all_to_all(v, "i", 0, 0, tiled=True), r"all_to_all: split_axis 0 .* multiple"),
    (lambda v: lax.psum_scatter(v, "i", axis_index_groups=[[0, 1]]), r"axis_index_groups"),
])
def test_errors(call, match):
    with pytest.raises((ValueError, NotImplementedError), match=match):
        fx.vmap(call, axis_name="i")(np.ones((4, 3), F32))
