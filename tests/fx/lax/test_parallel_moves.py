"""The data-moving collective primitives (fx/lax/parallel_moves.py) in the cases their batching
rules special-case, against jax: an operand that does not vary along the named axis, an inner
vmap over another name (the collective passes through it with its dimensions shifted), an
all-to-all whose split and concatenation axes coincide, and grad through each."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from harness import assert_allclose

import fx
import fx.lax as lax

F32 = np.float32
N = 4
PERM = [(0, 2), (2, 1), (1, 0), (3, 3)]  # (jax's vmap takes only whole permutations)

ROWS = [  # name, fx collective, jax collective (both over "i"), per-lane operand shape
    ("psum_scatter", lambda lx, v: lx.psum_scatter(v, "i"), (N, 3)),
    ("psum_scatter-tiled", lambda lx, v: lx.psum_scatter(v, "i", scatter_dimension=1,
                                                         tiled=True), (3, 2 * N)),
    ("ppermute", lambda lx, v: lx.ppermute(v, "i", PERM), (2, 3)),
    ("all_to_all-same-axis", lambda lx, v: lx.all_to_all(v, "i", 1, 1, tiled=True), (3, 2 * N)),
    ("all_to_all-2-0", lambda lx, v: lx.all_to_all(v, "i", 2, 0), (3, 2, N)),
]


@pytest.mark.parametrize("name, op, shape", ROWS, ids=[r[0] for r in ROWS])
def test_unbatched_operand_and_inner_named_vmap(name, op, shape):
    rng = np.random.default_rng(1)
    c = rng.standard_normal(shape).astype(F32)  # the same on every lane
    x = rng.standard_normal((N,) + shape).astype(F32)

    # An operand that is the same on every lane means what the lanes holding equal copies get
    # (jax's vmap mishandles an unbatched all_to_all operand: the copies are the oracle).
    const = fx.vmap(lambda v: op(lax, fx.numpy.asarray(c)) + v.sum() * 0, axis_name="i")(x)
    copies = fx.vmap(lambda v: op(lax, v), axis_name="i")(np.broadcast_to(c, x.shape))
    assert_allclose(const, jax.vmap(lambda v: op(jax.lax, v), axis_name="i")(
        np.broadcast_to(c, x.shape)), what=f"{name} equal copies")
    assert_allclose(const, copies, what=f"{name} unbatched")
    # An inner vmap named "j" between the operand and the "i" collective.
    xs = rng.standard_normal((N, 2) + shape).astype(F32)
    f = fx.vmap(fx.vmap(lambda v: op(lax, v), axis_name="j"), axis_name="i")
    g = jax.vmap(jax.vmap(lambda v: op(jax.lax, v), axis_name="j"), axis_name="i")
    assert_allclose(f(xs), g(xs), what=f"{name} inner vmap")
    ct = rng.standard_normal(np.shape(g(xs))).astype(F32)
    assert_allclose(fx.vjp(f, xs)[1](ct), jax.vjp(g, xs)[1](ct), what=f"{name} vjp")
    assert_allclose(fx.jit(f)(xs), g(xs), what=f"{name} jit")
