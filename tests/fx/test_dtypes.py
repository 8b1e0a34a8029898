"""Tests of fx.dtypes: the promotion lattice against jax (x64), weak Python scalars, default
dtypes and canonicalization."""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax._src.lax.lax import _convert_element_type as jax_convert  # weak values of any dtype

import fx
import fx.numpy as fnp
from fx import dtypes

ALL = dtypes.SUPPORTED
NAMES = [dtypes.short_name(d) for d in ALL]


def _jax_value(dt, weak):
    x = jnp.asarray(np.ones(3, dt))
    return jax_convert(x, dt, weak_type=True) if weak else x


def _fx_value(dt, weak):
    return fx.Array(np.ones(3, dt), weak)


def _expected(a, wa, b, wb):
    """jax-x64's result for ``a + b``, with fx's documented difference: when a strongly typed
    operand of a lower kind meets a weak one (``int32_array * 2.0``), jax-x64 gives its 64-bit
    default dtype while fx keeps the weak operand's dtype (float32 for a Python float, as in
    JAX's default mode)."""
    out = _jax_value(a, wa) + _jax_value(b, wb)
    dt, weak = out.dtype, out.weak_type
    if weak and not (wa and wb):
        dt = a if wa else b
    return np.dtype(dt), weak


PAIRS = list(itertools.product(zip(ALL, NAMES), [False, True], zip(ALL, NAMES), [False, True]))


@pytest.mark.parametrize(
    "a,wa,b,wb", [(a, wa, b, wb) for (a, _), wa, (b, _), wb in PAIRS],
    ids=[f"{na}{'~' if wa else ''}+{nb}{'~' if wb else ''}" for (_, na), wa, (_, nb), wb in PAIRS],
)
def test_promotion_table_matches_jax(a, wa, b, wb):
    want = _expected(a, wa, b, wb)
    assert dtypes.promote_types((a, wa), (b, wb)) == want
    assert dtypes.promote_types((b, wb), (a, wa)) == want  # symmetric
    x, y = _fx_value(a, wa), _fx_value(b, wb)
    out = fnp.add(x, y)
    assert (out.dtype, out.weak_type) == want
    assert (x + y).dtype == want[0]
    if not (wa or wb):
        assert fnp.promote_types(a, b) == want[0]
        assert fnp.result_type(x, y) == want[0]


def test_promotion_is_associative():
    typed = [(d, w) for d in ALL for w in (False, True)]
    for p, q, r in itertools.product(typed, repeat=3):
        left = dtypes.promote_types(dtypes.promote_types(p, q), r)
        right = dtypes.promote_types(p, dtypes.promote_types(q, r))
        assert left == right == dtypes.promote_types(p, q, r), (p, q, r)


# --- Python scalars -----------------------------------------------------------------------------


def test_python_scalars_are_weak():
    f32 = fnp.ones(3, np.float32)
    i32 = fnp.ones(3, np.int32)
    assert (f32 * 2.0).dtype == np.float32 and not (f32 * 2.0).weak_type
    assert (f32 * 2).dtype == np.float32
    assert (fnp.ones(3, np.float16) * 2.0).dtype == np.float16
    assert (fnp.ones(3, fnp.bfloat16) + 1).dtype == dtypes.bfloat16
    assert (i32 * 2).dtype == np.int32
    assert (fnp.ones(3, np.uint32) + 1).dtype == np.uint32
    assert (fnp.ones(3, np.int64) * 3).dtype == np.int64
    # An int array meeting a float scalar becomes float; fx's default float is float32 (jax-x64
    # would give a weak float64).
    out = i32 * 2.0
    assert out.dtype == np.float32 and out.weak_type
    assert (fnp.ones(3, np.bool_) + 1).dtype == np.int32
    # Two Python scalars: weak, default dtypes.
    assert (fnp.asarray(1.0) + 2).dtype == np.float32
    assert fnp.asarray(1.0).weak_type and fnp.asarray(3).weak_type
    assert not fnp.asarray(True).weak_type


def test_strong_mixed_pairs():
    bf16, f16 = fnp.ones(2, fnp.bfloat16), fnp.ones(2, np.float16)
    assert (bf16 + f16).dtype == np.float32
    assert (fnp.ones(2, np.uint32) + fnp.ones(2, np.int32)).dtype == np.int64
    assert (fnp.ones(2, np.int64) + fnp.ones(2, np.float16)).dtype == np.float16
    assert (fnp.ones(2, np.float32) + fnp.ones(2, np.float64)).dtype == np.float64


def test_weak_dtype_join_is_order_independent():
    # Regression: this used to keep whichever weak dtype came first.
    w = lambda dt: (np.dtype(dt), True)  # noqa: E731
    assert dtypes.promote_types(w(np.uint32), w(np.int32)) == (np.dtype(np.int64), True)
    assert dtypes.promote_types(w(np.int32), w(np.uint32)) == (np.dtype(np.int64), True)
    assert dtypes.promote_types(w(np.float16), w(dtypes.bfloat16)) == (dtypes.float32, True)
    assert dtypes.promote_types(w(dtypes.bfloat16), w(np.float16)) == (dtypes.float32, True)
    # A weak float64 meeting a strong int stays float64 (as in jax-x64).
    assert dtypes.promote_types((dtypes.int32, False), w(np.float64)) == (dtypes.float64, True)


def test_result_type():
    assert dtypes.result_type(np.float16, 1.0) == np.float16
    assert dtypes.result_type(np.int32, 1.0) == np.float32
    assert dtypes.result_type(np.int8, np.uint8) == np.int64  # canonicalized: int32 + uint32
    assert dtypes.result_type(fnp.ones(2, np.int64), 2) == np.int64
    assert dtypes.result_type(True, 1) == np.int32
    with pytest.raises(TypeError, match="complex"):
        dtypes.result_type(1j)


# --- defaults and canonicalization --------------------------------------------------------------


@pytest.mark.parametrize("data,dtype", [
    ([1.0], np.float32),
    ([1], np.int32),
    ([True, False], np.bool_),
    ([[1, 2.5]], np.float32),
    (1.0, np.float32),
    (np.array([1.0]), np.float64),
    (np.float64(1.0), np.float64),
    (np.array([1]), np.int64),
    ([np.float64(1.0), 2.0], np.float64),
    (np.array([1], np.int8), np.int32),
    (np.array([1], np.uint8), np.uint32),
    (np.array([1], np.int16), np.int32),
    (np.array([1], np.float16), np.float16),
    (np.array([1], ml_dtypes.bfloat16), dtypes.bfloat16),
])
def test_default_dtypes(data, dtype):
    assert fnp.array(data).dtype == dtype
    assert fnp.asarray(data).dtype == dtype


def test_explicit_dtype_is_honoured():
    assert fnp.array([1.0], dtype=np.float64).dtype == np.float64
    assert fnp.array([1.0], dtype=float).dtype == np.float32
    assert fnp.array([1], dtype=int).dtype == np.int32
    assert fnp.zeros(2).dtype == np.float32
    assert fnp.zeros(2, np.int64).dtype == np.int64


@pytest.mark.parametrize("given,want", [
    (float, np.float32), (int, np.int32), (bool, np.bool_), ("float64", np.float64),
    (np.float16, np.float16), ("bfloat16", dtypes.bfloat16), (np.dtype("uint32"), np.uint32),
    # Narrow integer types have no fx counterpart: they map to the 32-bit type of their kind.
    (np.int8, np.int32), (np.int16, np.int32), (np.uint8, np.uint32), (np.uint16, np.uint32),
])
def test_canonicalize(given, want):
    assert dtypes.canonicalize(given) == np.dtype(want)


@pytest.mark.parametrize("bad", [np.complex64, "complex128", np.uint64, "U3", object])
def test_canonicalize_rejects_unsupported(bad):
    with pytest.raises(TypeError, match=r"fx does not support dtype .*; supported dtypes are "
                                        r"bool, int32, int64, uint32, float16, bfloat16"):
        dtypes.canonicalize(bad)


def test_canonicalize_rejects_non_dtypes():
    with pytest.raises(TypeError, match="'nonsense' is not a dtype"):
        dtypes.canonicalize("nonsense")


def test_unsupported_data_is_rejected():
    with pytest.raises(TypeError, match="complex128"):
        fnp.array([1 + 2j])
    with pytest.raises(TypeError, match="uint64"):
        fnp.asarray(np.array([1], np.uint64))
    with pytest.raises(TypeError):
        fnp.ones(2) * (1 + 2j)


def test_predicates_and_names():
    assert [dtypes.is_float(d) for d in ALL] == [False] * 4 + [True] * 4
    assert [dtypes.is_int(d) for d in ALL] == [False, True, True, True] + [False] * 4
    assert [dtypes.is_signed_int(d) for d in ALL] == [False, True, True] + [False] * 5
    assert NAMES == ["bool", "i32", "i64", "u32", "f16", "bf16", "f32", "f64"]
    assert dtypes.finfo(dtypes.bfloat16).bits == 16
    assert dtypes.iinfo(np.uint32).max == 2**32 - 1
