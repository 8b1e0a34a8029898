"""fx.numpy.partition/argpartition against jax's exact outputs (not only NumPy's contract):
jax arranges the ``kth + 1`` smallest entries ascending, then the rest descending (values) or
in index order (indices), by ``lax.top_k``'s total order of floats (NaNs with the sign bit set
first, -0.0 before 0.0). A table of inputs with ties, NaNs of both signs, signed zeros,
infinities, negative kth and axes, in several dtypes, eager, under jit and under vmap; values
compared bitwise."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import fx
import fx.numpy as fnp

NEG_NAN = -np.float64(np.nan)
SPECIAL = [np.nan, NEG_NAN, -0.0, 0.0, np.inf, -np.inf, 1.0, 1.0, -2.0, 3.5, 3.5, 0.0]


def _special(dtype, shape=(12,)):
    x = np.array(SPECIAL, np.float64)
    x = np.resize(x, int(np.prod(shape))).reshape(shape)
    out = x.astype(dtype)
    # NumPy's cast may drop a NaN's sign: set it from the float64's.
    sign = np.signbit(x) & np.isnan(x)
    bits = out.view(f"u{out.itemsize}")
    bits[sign] |= np.array(1 << (8 * out.itemsize - 1)).astype(bits.dtype)
    return out


def _ints(dtype, shape, lo, hi, seed=0):
    return np.random.default_rng(seed).integers(lo, hi, shape).astype(dtype)


def _floats(dtype, shape, seed=0):
    # Few distinct values: many ties.
    return np.round(np.random.default_rng(seed).standard_normal(shape)).astype(dtype)


# (name, array, kth, axis)
CASES = [
    ("special_f32", _special(np.float32), 0, -1),
    ("special_f32_k5", _special(np.float32), 5, -1),
    ("special_f32_klast", _special(np.float32), 11, -1),
    ("special_f32_kneg", _special(np.float32), -3, -1),
    ("special_f64_k7", _special(np.float64), 7, -1),
    ("special_f16_k4", _special(np.float16), 4, -1),
    ("special_bf16_k6", _special(ml_dtypes.bfloat16), 6, -1),
    ("special_2d_axis0", _special(np.float32, (6, 4)), 2, 0),
    ("special_2d_axis1", _special(np.float32, (4, 6)), -2, 1),
    ("ties_f32", _floats(np.float32, (3, 9)), 4, -1),
    ("ties_f64_axis0", _floats(np.float64, (7, 3), 1), 3, 0),
    ("ties_3d_axis1", _floats(np.float32, (2, 5, 3), 2), 1, 1),
    ("ties_3d_axis_neg3", _floats(np.float32, (5, 2, 3), 3), -1, -3),
    ("int32", _ints(np.int32, (4, 10), -5, 5), 3, -1),
    ("int32_kneg", _ints(np.int32, (10,), -5, 5, 1), -10, 0),
    ("int64_axis0", _ints(np.int64, (8, 2), -100, 100, 2), 5, 0),
    ("int8_extremes", np.array([-128, 127, 0, -128, 5, -1], np.int8), 2, -1),
    ("uint8_zero_max", np.array([0, 255, 3, 0, 255, 7], np.uint8), 2, -1),
    ("uint32", _ints(np.uint32, (3, 7), 0, 4, 3), 0, -1),
    ("uint16_klast", _ints(np.uint16, (9,), 0, 3, 4), 8, -1),
    ("length_1", np.array([2.5], np.float32), 0, -1),
]
IDS = [c[0] for c in CASES]


def _bits(x):
    x = np.asarray(x)
    return x.view(f"u{x.itemsize}") if x.dtype.kind == "f" or x.dtype == ml_dtypes.bfloat16 \
        else x


def _assert_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("name,x,kth,axis", CASES, ids=IDS)
def test_partition_as_jax(name, x, kth, axis):
    for f, g in ((fnp.partition, jnp.partition), (fnp.argpartition, jnp.argpartition)):
        want = g(x, kth, axis)
        _assert_same(f(x, kth, axis), want)
        _assert_same(fx.jit(lambda v, f=f: f(v, kth, axis))(x), want)


@pytest.mark.parametrize("name,x,kth,axis", [c for c in CASES if c[1].ndim >= 2],
                         ids=[c[0] for c in CASES if c[1].ndim >= 2])
def test_partition_under_vmap_as_jax(name, x, kth, axis):
    inner_axis = axis % x.ndim
    in_axis = 1 if inner_axis == 0 else 0  # map over a dimension other than the partitioned
    inner = inner_axis - (inner_axis > in_axis)
    for f, g in ((fnp.partition, jnp.partition), (fnp.argpartition, jnp.argpartition)):
        want = jax.vmap(lambda v, g=g: g(v, kth, inner), in_axes=in_axis)(x)
        _assert_same(fx.vmap(lambda v, f=f: f(v, kth, inner), in_axes=in_axis)(x), want)
        _assert_same(fx.jit(fx.vmap(lambda v, f=f: f(v, kth, inner), in_axes=in_axis))(x), want)


def test_partition_gradient_as_jax():
    x = np.random.default_rng(0).permutation(12).reshape(3, 4).astype(np.float64) / 7
    w = np.arange(12.0).reshape(3, 4)
    for axis in (0, 1):
        want = jax.grad(lambda v, a=axis: jnp.sum(w * jnp.partition(v, 1, a)))(x)
        got = fx.grad(lambda v, a=axis: fnp.sum(w * fnp.partition(v, 1, a)))(x)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_top_k_total_order_as_jax():
    # partition rests on top_k's order of floats: NaN, inf, ..., 0.0, -0.0, ..., -inf, -NaN.
    for dtype in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16):
        x = _special(dtype, (2, 12))
        for k in (0, 5, 12):
            got, want = fx.lax.top_k(x, k), jax.lax.top_k(x, k)
            _assert_same(got[0], want[0])
            _assert_same(got[1], want[1])


@pytest.mark.parametrize("call", [
    lambda m: m.partition(np.ones(3, np.float32), 3),
    lambda m: m.argpartition(np.ones(3, np.float32), -4),
    lambda m: m.partition(np.ones((2, 3), np.float32), 0, axis=2),
    lambda m: m.partition(np.array([True, False]), 0),
    lambda m: m.argpartition(np.array([True, False]), 1),
    lambda m: m.partition(np.ones(3, np.complex64), 1),
    lambda m: m.argpartition(np.ones(3, np.complex64), 1),
], ids=["kth_high", "kth_low", "axis", "bool", "bool_arg", "complex", "complex_arg"])
def test_partition_errors_as_jax(call):
    with pytest.raises(Exception) as want:  # noqa: PT011  (jax's type, checked below)
        call(jnp)
    with pytest.raises(want.type):
        call(fnp)
