"""Signed 32/64-bit arithmetic in generated kernels wraps as NumPy and XLA do.

C leaves signed overflow undefined and GCC folds on it: ``(x + 1) > x`` compiled to true for
INT32_MAX and ``-x > 0`` to true for INT32_MIN, where eager fx and jax wrap. Value arithmetic
on wide signed ints is rendered through the unsigned type (``scalar_ops.WRAPPING``); these
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

