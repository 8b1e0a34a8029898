"""Max and min order the signed zeros (-0.0 < +0.0) and propagate NaN, as jax does, in every
form (elementwise, clamp, reductions, windows, prefix scans, scatters): eager, jit and jax give
the same bits, whatever order the elements are visited in."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_bitwise

import fx
import fx.lax as lax
import fx.numpy as fnp

VALUES = np.array([-0.0, 0.0, -1.0, 2.0, np.nan])


def _draw(rng, shape, dtype, nan=True):
    vals = VALUES if nan else VALUES[:-1]
    return rng.choice(vals, size=shape).astype(dtype)


CASES = {
    "max-min": (lambda L: lambda x, y: (L.max(x, y), L.min(x, y), L.max(y, x), L.min(y, x)),
                [(7, 9), (7, 9)]),
    "clamp": (lambda L: lambda lo, x: L.clamp(lo, x, lo + 1.0), [(7, 9), (7, 9)]),
    "reduce": (lambda L: lambda x: (L.reduce_max(x, (1,)), L.reduce_min(x, (0,))), [(6, 300)]),
    "cumulative": (lambda L: lambda x: (L.cummax(x, 1), L.cummin(x, 0, reverse=True)),
                   [(5, 40)]),
    "reduce_window": (lambda L: lambda x: (
        L.reduce_window(x, -np.inf, L.max, (2, 3), (1, 2), "SAME"),
        L.reduce_window(x, np.inf, L.min, (3, 2), (2, 1), "VALID")), [(9, 10)]),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_extrema_order_signed_zeros_as_jax(name, dtype):
    build, shapes = CASES[name]
    rng = np.random.default_rng(len(name))
    args = [_draw(rng, s, dtype) for s in shapes]
    f = build(lax)
    eager = f(*[fnp.asarray(a) for a in args])
    want = jax.jit(build(jax.lax))(*[jnp.asarray(a) for a in args])  # (x64: conftest)
    assert_bitwise(eager, want, f"{name}: eager vs jax")
    assert_bitwise(fx.jit(f)(*args), eager, f"{name}: jit vs eager")


def test_max_pool_of_signed_zeros():
    x = np.random.default_rng(1).choice(VALUES[:-1], size=(2, 8, 8, 3)).astype(np.float32)
    f = lambda x: fnp.max(x.reshape(2, 4, 2, 4, 2, 3), axis=(2, 4))
    assert_bitwise(fx.jit(f)(x), f(fnp.asarray(x)), "pool")
    assert_bitwise(f(fnp.asarray(x)), jnp.max(jnp.asarray(x).reshape(2, 4, 2, 4, 2, 3),
                                               axis=(2, 4)), "pool vs jax")


def test_scatter_max_and_min_of_signed_zeros():
    rng = np.random.default_rng(2)
    x = _draw(rng, (4, 3), np.float32, nan=False)
    u = _draw(rng, (9, 3), np.float32, nan=False)
    idx = np.array([0, 2, 0, 1, 2, 0, 3, 3, 1])

    def f(m, x, u):
        return x.at[idx].max(u), x.at[idx].min(u)

    eager = f(fnp, fnp.asarray(x), fnp.asarray(u))
    assert_bitwise(eager, f(jnp, jnp.asarray(x), jnp.asarray(u)), "scatter: eager vs jax")
    assert_bitwise(fx.jit(lambda x, u: f(fnp, x, u))(x, u), eager, "scatter: jit vs eager")
