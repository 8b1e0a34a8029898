"""Column reductions (the innermost axis kept) on the CPU: ``cpu.column_reduction`` takes them,
splits the reduced rows into blocks where they are many (``column_reductions.blocks``), and
gives NumPy's results: exactly for integers and max/min, within float32 rounding of the
float64 sum for float32 sums (which accumulate in float64 in both of its orders)."""

from __future__ import annotations

import numpy as np
import pytest

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.lowering.codegen import column_reductions

_RNG = np.random.default_rng(0)


def _impls(f, *args):
    return [s.choice.impl.name for s in fx.jit(f).lower(*args).program.steps]


# (shape, axes): blocks of rows with none left over, with some left over, one block (a small
# reduction, or outer rows enough to share), axes that are not adjacent, an outer kept axis.
SHAPES = [((64, 28, 28, 16), (0, 1, 2)), ((64, 14, 14, 32), (0, 1, 2)), ((7, 5, 3), (0,)),
          ((100, 100, 10), (0,)), ((8, 3001, 5, 6), (1, 2)), ((30, 7, 2000, 9), (0, 2)),
          ((5000, 2), (0,))]


@pytest.mark.parametrize("shape,axes", SHAPES, ids=[str(s) for s, _ in SHAPES])
def test_float32_sums_within_rounding_of_float64(shape, axes):
    x = (_RNG.standard_normal(shape) + 3).astype(np.float32)
    f = lambda v: fnp.sum(v, axis=axes)  # noqa: E731
    assert _impls(f, x) == ["cpu.column_reduction"]
    got = np.asarray(fx.jit(f)(x), np.float64)
    want = x.astype(np.float64).sum(axis=axes)
    # The float64 sum rounded once to float32: half an ulp, and a little for its own error.
    assert np.all(np.abs(got - want) <= np.abs(want) * 2.0 ** -24 * 1.01), (got - want)


def test_blocks_split_long_reductions_only():
    assert column_reductions.blocks((64, 28, 28, 16), (0, 1, 2)) == 49
    assert column_reductions.blocks((7, 5, 3), (0,)) == 1
    # Outer rows enough to keep every thread busy: each sums its columns whole.
    assert column_reductions.blocks((4096, 100, 16), (1,)) == 1


@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
def test_integers_exact(op):
    x = _RNG.integers(-2**31, 2**31 - 1, (70001, 16), dtype=np.int64).astype(np.int32)
    if op == "prod":
        x = x % 3 + 1  # (products of small factors; int32 wraps as NumPy's)
    got = np.asarray(fx.jit(lambda v: getattr(fnp, op)(v, axis=0))(x))
    np.testing.assert_array_equal(got, getattr(np, op)(x, axis=0))


def test_nan_and_max_min_as_numpy():
    x = _RNG.standard_normal((40000, 24)).astype(np.float32)
    x[12345, 3] = np.nan
    x[39999, 5] = np.nan  # a row left over after the blocks
    for op in ("max", "min", "sum"):
        got = np.asarray(fx.jit(lambda v, op=op: getattr(fnp, op)(v, axis=0))(x))
        want = getattr(np, op)(x.astype(np.float64), axis=0).astype(np.float32)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-4)


def test_fused_operands_and_epilogue():
    # A relu gradient summed over columns, scaled after: one kernel of the column strategy.
    x = _RNG.standard_normal((20000, 40)).astype(np.float32)
    g = _RNG.standard_normal((20000, 40)).astype(np.float32)

    def f(x, g):
        return -fnp.sum(fnp.where(x > 0, g, 0.0), axis=0) / 3.0

    assert _impls(f, x, g) == ["cpu.column_reduction"]
    want = -np.where(x > 0, g, 0).astype(np.float64).sum(0) / 3.0
    np.testing.assert_allclose(np.asarray(fx.jit(f)(x, g)), want, rtol=1e-5, atol=1e-5)


def test_reduction_of_a_reduction_stays_generic():
    # sum(x - mean) needs the mean before its rows: the generic kernel, in one group.
    x = _RNG.standard_normal((300, 16)).astype(np.float32)

    def f(v):
        m = lax.reduce_sum(v, (0,)) / 300.0
        return lax.reduce_sum((v - lax.broadcast_in_dim(m, v.shape, (1,))) ** 2, (0,))

    assert _impls(f, x) == ["cpu.fused_reduction"]
    got = np.asarray(fx.jit(f)(x))
    want = ((x.astype(np.float64) - x.astype(np.float64).mean(0)) ** 2).sum(0)
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("shape,axes", [((0, 16), 0), ((3, 0, 16), (0, 1)), ((0, 5, 16), 1)])
def test_empty_operands(shape, axes):
    x = np.ones(shape, np.float32)
    got = np.asarray(fx.jit(lambda v: fnp.sum(v, axis=axes))(x))
    np.testing.assert_array_equal(got, x.sum(axis=axes))


def test_half_sums_as_jax():
    jnp = pytest.importorskip("jax.numpy")
    h = (_RNG.standard_normal((40000, 3)) + 3).astype(np.float16)
    got = fx.jit(lambda v: fnp.sum(v, axis=0))(h)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(got), np.asarray(jnp.sum(h, axis=0)))
