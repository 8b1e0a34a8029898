"""The gradient of pooling whose windows do not overlap: ``expand_window_sums`` rewrites the
window sum of a spread cotangent into a repeat, bit for bit (signed zeros, infinities, NaN and
integers included), for windows that tile the input and for global pools, and leaves
overlapping windows alone."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.interpreters.eval import eval_jaxpr
from fx.jaxpr import check_jaxpr
from fx.lowering.passes.expand_window_sums import expand_window_sums

# (operand shape, window, strides, padding, rewritten)
POOLS = [
    ((2, 16, 16, 4), (1, 16, 16, 1), (1, 1, 1, 1), "VALID", True),  # a global average pool
    ((2, 5, 8), (1, 5, 8), (1, 1, 1), "VALID", True),
    ((2, 8, 8, 3), (1, 2, 2, 1), (1, 2, 2, 1), "VALID", True),  # windows tiling the input
    ((2, 7, 9, 3), (1, 2, 3, 1), (1, 2, 3, 1), "VALID", True),  # a remainder left out
    ((3, 10), (2, 5), (2, 5), "SAME", True),
    ((2, 6, 6, 1), (1, 3, 3, 1), (1, 3, 3, 1), ((0, 0), (1, 2), (2, 0), (0, 0)), True),
    ((2, 6, 6, 1), (1, 3, 3, 1), (1, 2, 2, 1), "VALID", False),  # overlapping windows
    ((2, 6, 6, 1), (1, 2, 2, 1), (1, 3, 3, 1), "VALID", False),  # gaps between windows
]


def _pool(m, win, st, pad):
    return lambda x: m.lax.reduce_window(x, np.zeros((), x.dtype), m.lax.add, win, st, pad)


def _sum_pool_vjp(win, st, pad, x, ct):
    _, vjp = fx.vjp(_pool(fx, win, st, pad), x)
    return vjp(ct)[0]


def _specials(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(dtype)
    flat = a.reshape(-1)
    flat[:4] = [-0.0, np.inf, -np.inf, np.nan][:flat.size]
    return a


def _check(closed, rewritten, ct, dtype):
    j = expand_window_sums(closed.jaxpr)
    check_jaxpr(j)
    before = [e.primitive.name for e in closed.jaxpr.eqns].count("reduce_window_sum")
    after = [e.primitive.name for e in j.eqns].count("reduce_window_sum")
    assert after == before - rewritten, (before, after)
    want = np.asarray(eval_jaxpr(closed.jaxpr, closed.consts, ct)[0])
    got = np.asarray(eval_jaxpr(j, closed.consts, ct)[0])
    assert got.dtype == want.dtype and got.shape == want.shape
    bits = np.uint32 if dtype == np.float32 else np.int32
    np.testing.assert_array_equal(got.view(bits), want.view(bits))


@pytest.mark.parametrize("config,window,rewritten", [
    (((0, 0, 0), (15, 15, 0), (15, 15, 0)), (1, 16, 16), True),
    (((0, 0, 0), (1, 1, 1), (0, 1, 2)), (1, 2, 3), True),
    (((0, 0, 0), (1, 1, 1), (0, 1, 2)), (1, 3, 3), False),
])
def test_integer_window_sums_of_spread_operands(config, window, rewritten):
    ct = np.arange(-12, 12, dtype=np.int32).reshape(2, 3, 4)[:, :1 if window[1] == 16 else 3,
                                                          :1 if window[1] == 16 else 4]
    ct = np.ascontiguousarray(ct)

    def f(c):
        return lax.reduce_window(lax.pad(c, np.int32(0), config), np.int32(0), lax.add,
                                 window, (1, 1, 1), "VALID")

    _check(fx.make_jaxpr(f)(ct), rewritten, ct, np.int32)


@pytest.mark.parametrize("shape,win,st,pad,rewritten", POOLS)
def test_rewrite_is_exact_and_applies_where_windows_do_not_overlap(shape, win, st, pad,
                                                                    rewritten):
    dtype = np.float32
    x = np.zeros(shape, dtype)
    y = np.asarray(_pool(fx, win, st, pad)(x))
    ct = _specials(y.shape, dtype, 1)
    _check(fx.make_jaxpr(lambda c: _sum_pool_vjp(win, st, pad, x, c))(ct), rewritten, ct,
           dtype)


@pytest.mark.parametrize("shape,win,st,pad,rewritten", POOLS)
def test_jitted_average_pool_gradient_is_jax_bit_for_bit(shape, win, st, pad, rewritten):
    x = _specials(shape, np.float32)
    w = np.random.default_rng(2).standard_normal(
        np.asarray(_pool(fx, win, st, pad)(x)).shape).astype(np.float32)

    def loss(m):
        return lambda x: (m.numpy.sum(_pool(m, win, st, pad)(x) * w)) / 4.0

    got = np.asarray(fx.jit(fx.grad(loss(fx)))(x))
    want = np.asarray(jax.grad(loss(jax))(x))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    text = fx.jit(fx.grad(loss(fx))).lower(x).as_text()
    steps = [line for line in text.splitlines() if line.startswith("  step ")]
    # the loss is linear: its gradient is the transposed pool alone
    assert any("reduce_window_sum" in s for s in steps) == (not rewritten), steps


def test_global_average_pool_gradient_is_one_pass():
    # stax's AvgPool over the whole 16x16 map: the gradient repeats the cotangent, one
    # elementwise kernel, where summing 256-element windows of the spread cotangent was.
    x = np.ones((4, 16, 16, 8), np.float32)
    f = fx.grad(lambda x: fnp.sum(lax.reduce_window(x, 0.0, lax.add, (1, 16, 16, 1),
                                                    (1, 1, 1, 1), "VALID") ** 2))
    text = fx.jit(f).lower(x).as_text()
    steps = [line for line in text.splitlines() if line.startswith("  step ")]
    assert sum("reduce_window_sum" in s for s in steps) == 1, steps  # the forward pool only
    np.testing.assert_array_equal(np.asarray(fx.jit(f)(x)), np.asarray(f(x)))
