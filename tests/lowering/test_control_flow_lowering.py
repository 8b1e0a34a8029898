"""Control flow inside jit: loops run inside the compiled program (a C loop around the body's
kernels) and agree with eager evaluation; bodies that need a library call loop on the host."""

from __future__ import annotations

import numpy as np
import pytest

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.lowering.kernels.cpu import conv_in_place
from fx.runtime import cc

pytestmark = pytest.mark.skipif(cc.compiler() is None, reason="needs a C compiler")


def _loop_notes(f, *args):
    low = fx.jit(f).lower(*args).program
    return [s.loop.note for s in low.steps if s.loop is not None]


def _check(f, *args, rtol=1e-6):
    got, want = fx.jit(f)(*args), f(*args)
    for g, w in zip(fx.tree_util.tree_leaves(got), fx.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=1e-6)


X = fnp.asarray(np.linspace(-1, 1, 12).astype(np.float32).reshape(3, 4))


def test_fori_loop_runs_as_one_c_function():
    f = lambda x: lax.fori_loop(0, 200, lambda i, c: c * 0.99 + fnp.sin(c) * 0.01, x)  # noqa
    assert _loop_notes(f, X) == ["compiled loop: the body's kernels called from one C function"]
    _check(f, X)


def test_scan_with_xs_ys_reverse_and_unused_outputs():
    def f(xs):
        c, ys = lax.scan(lambda c, x: (c + x, (c * x, fnp.tanh(x))), fnp.zeros(4), xs,
                         reverse=True)
        return c, ys[0]

    assert "compiled loop" in _loop_notes(f, X)[0]
    _check(f, X)


def test_while_loop_with_a_computed_trip_count():
    def f(x):
        return lax.while_loop(lambda c: fnp.sum(c[1]) < 50.0,
                              lambda c: (c[0] + 1, c[1] * 1.5 + 0.1), (0, fnp.abs(x)))

    assert "compiled loop" in _loop_notes(f, X)[0]
    _check(f, X)


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 7])
def test_switch_clamps_its_index_like_jax(index):
    branches = [lambda x: x + 1.0, lambda x: x * 2.0, lambda x: fnp.exp(x)]
    f = lambda i, x: lax.switch(i, branches, x)  # noqa: E731
    assert "compiled loop" in _loop_notes(f, index, X)[0]
    _check(f, index, X)


def test_loop_with_a_matmul_body_runs_on_the_host_over_the_compiled_body(monkeypatch):
    # A product BLAS runs (a library call) keeps the loop on the host; as generated tiles
    # (kernels.cpu.conv_in_place's products, float32's default), the loop compiles whole.
    w = fnp.asarray(np.eye(4, dtype=np.float32) * 0.5)
    f = lambda x: lax.fori_loop(0, 5, lambda i, c: fnp.tanh(c @ w), x)  # noqa: E731
    assert _loop_notes(f, X) == ["compiled loop: the body's kernels called from one C function"]
    _check(f, X)
    monkeypatch.setattr(conv_in_place, "TILED_PRODUCT_MAX_FLOPS", 0)
    assert _loop_notes(f, X) == ["a host loop over the compiled body (one dispatch per "
                                 "iteration)"]
    _check(f, X)


def test_gradient_of_a_jitted_scan():
    def loss(x):
        c, ys = lax.scan(lambda c, x: (c * fnp.sin(x), c + x), fnp.ones(4), x)
        return fnp.sum(c) + fnp.sum(ys ** 2)

    np.testing.assert_allclose(np.asarray(fx.jit(fx.grad(loss))(X)),
                               np.asarray(fx.grad(loss)(X)), rtol=1e-5, atol=1e-6)
