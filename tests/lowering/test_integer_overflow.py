"""Signed 32/64-bit arithmetic in generated kernels wraps as NumPy and XLA do.

C leaves signed overflow undefined and GCC folds on it: ``(x + 1) > x`` compiled to true for
INT32_MAX and ``-x > 0`` to true for INT32_MIN, where eager fx and jax wrap. Value arithmetic
on wide signed ints is rendered through the unsigned type (``primitive_rules.WRAPPING``); these
programs compare the comparisons that overflow would fold, bit for bit, jit against eager and
jax (test_vectorization checks that such loops still vectorize at every ISA level)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import fx
import fx.numpy as fnp

PROGRAMS = {
    "x + 1 > x": lambda np_, x: (x + 1) > x,
    "x - 1 < x": lambda np_, x: (x - 1) < x,
    "(2 x) // 2 == x": lambda np_, x: (x * 2) // 2 == x,
    "-x > 0": lambda np_, x: -x > 0,
    "|x| >= 0": lambda np_, x: np_.abs(x) >= 0,
    "x * x": lambda np_, x: x * x,
    "3 x + x - 7": lambda np_, x: 3 * x + x - 7,
    # integer_pow's multiplications and a reduction's accumulator wrap too.
    "x ** 3": lambda np_, x: x ** 3,
    "x ** 2 >= 0": lambda np_, x: x ** 2 >= 0,
    "sum(x)": lambda np_, x: np_.sum(x, keepdims=True),
    "sum(x * x) per row": lambda np_, x: np_.sum((x * x).reshape(3, 3), axis=1),
    "prod(x)": lambda np_, x: np_.prod(x[:4], keepdims=True),
}


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_overflowing_arithmetic_wraps_under_jit(name, dtype):
    info = np.iinfo(dtype)
    x = np.array([info.max, info.max - 1, info.min, info.min + 1, 0, 5, -5,
                  info.max // 2 + 1, info.min // 2 - 1], dtype)
    f = PROGRAMS[name]
    eager = np.asarray(f(fnp, fnp.asarray(x)))
    jitted = np.asarray(fx.jit(lambda x: f(fnp, x))(x))
    # jax op by op: under jax.jit, LLVM folds |x| >= 0 to true even for INT_MIN, whose abs
    # XLA returns as INT_MIN (the same overflow question, answered two ways).
    want = np.asarray(f(jnp, jnp.asarray(x)))
    assert eager.dtype == jitted.dtype == want.dtype
    assert np.array_equal(eager, want), name
    assert np.array_equal(jitted, want), name



# --- narrow stores of short loops, staged through int32 (renderer.Renderer.staged_loop) --------


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16])
def test_short_float_to_narrow_store_loops_keep_eager_bits(dtype):
    # A (4, 16) output: the 16-long inner loop is staged (its float work in wide vectors, its
    # conversions in an int32 array, then narrowed). NaN, infinities, out-of-range values,
    # halves and negative zero, converted as eager converts them.
    special = np.array([np.nan, -np.inf, np.inf, -0.0, 0.5, -0.5, 127.5, -128.5, 255.9, 256.0,
                        -1.0, 32767.9, -32769.0, 65535.5, 70000.0, 3.0], np.float32)
    rows = np.stack([special, special[::-1], special * 3.7, special / 7.0, -special])
    x = np.stack([np.roll(rows, k, axis=0).reshape(-1, 16)[:4] for k in range(4)])
    x = x.reshape(1, 4, 4, 16)  # (N, H, W, C): a 2x2 max-pool's 16-channel inner loop

    def f(x):
        pooled = fx.lax.reduce_window(x, -np.inf, fx.lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                      "VALID")
        return fx.lax.convert_element_type(fnp.round(pooled * 1.5) - 0.25, dtype)

    eager = np.asarray(f(fnp.asarray(x)))
    jitted = fx.jit(f)
    assert np.array_equal(np.asarray(jitted(x)), eager)
    source = jitted.lower(x).as_text("source")
    from fx.runtime import cc

    if cc.compiler() is not None:
        assert "fx_stage" in source  # the staged form was taken


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32])
def test_division_by_positive_constants_keeps_eager_bits(dtype):
    # Rendered as C's / and % (no helper): truncation toward zero, the remainder with the
    # dividend's sign, as XLA and eager fx.
    info = np.iinfo(dtype)
    x = np.array([info.min, info.min + 1, 0, 1, 7, info.max - 1, info.max]
                 + ([-7, -1] if info.min < 0 else []), dtype)

    def f(x):
        return x // 3, x % 3, fx.lax.div(x, dtype(4)), fx.lax.rem(x, dtype(4)), x // 1

    eager = [np.asarray(v) for v in f(fnp.asarray(x))]
    jitted = [np.asarray(v) for v in fx.jit(f)(x)]
    want = [np.asarray(v) for v in (x // 3, x % 3)]
    for e, j in zip(eager, jitted, strict=True):
        assert e.dtype == j.dtype and np.array_equal(e, j)
    for e, w in zip(eager[:2], want, strict=True):
        assert np.array_equal(e, w)
