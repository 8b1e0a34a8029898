"""Pooling in generated kernels (reduce_window and the max-pool gradient as index maps): jit
against the NumPy implementations on random window geometries, with ties, NaN and padding."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from cuda_emulation import build, run
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.lax as lax
from fx.lax import windowed as win
from fx.lowering.pipeline import lower
from fx.runtime.cuda import kernel_iterations, launch_config


@st.composite
def geometries(draw):
    nd = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(nd))
    window = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    padding = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(nd))
    base = tuple(draw(st.sampled_from([1, 1, 2])) for _ in range(nd))
    wdil = tuple(draw(st.sampled_from([1, 1, 2])) for _ in range(nd))
    params = dict(window_dimensions=window, window_strides=strides, padding=padding,
                  base_dilation=base, window_dilation=wdil)
    return shape, params


def _values(draw, shape, dtype):
    # Few distinct values: many ties, so the first-choice rule is exercised.
    pool = [-1.0, 0.0, 0.5, 2.0] + ([np.nan] if np.dtype(dtype).kind == "f" else [])
    vals = draw(st.lists(st.sampled_from(pool), min_size=int(np.prod(shape)),
                         max_size=int(np.prod(shape))))
    return np.array(vals, dtype=np.float64).reshape(shape).astype(dtype)


def _assert_same(got, want):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@given(geometries(), st.sampled_from(["max", "min", "sum"]),
       st.sampled_from([np.float32, np.float64, np.int32]), st.data())
def test_reduce_window_in_a_kernel_matches_numpy(geometry, kind, dtype, data):
    shape, params = geometry
    x = _values(data.draw, shape, dtype)
    prim = {"max": win.reduce_window_max_p, "min": win.reduce_window_min_p,
            "sum": win.reduce_window_sum_p}[kind]

    def f(x):
        return prim.bind(x * 1, **params)  # a producer fused into the window's reads

    want = prim.impl(x * 1, **params)
    if want.size == 0:
        return
    low = lower(fx.make_jaxpr(f)(x), "cpu")
    assert all(s.choice.impl.name == "cpu.fused_elementwise" for s in low.steps)
    got = fx.jit(f)(x)
    if kind == "sum" and np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    else:
        _assert_same(got, want)


@given(geometries(), st.sampled_from(["max", "min"]), st.sampled_from([np.float32, np.float64]),
       st.data())
def test_select_and_scatter_add_in_a_kernel_matches_numpy(geometry, select, dtype, data):
    shape, params = geometry
    operand = _values(data.draw, shape, dtype)
    out_shape = win.reduce_window_max_p.abstract_eval(
        fx.core.get_aval(fx.numpy.asarray(operand)), **params).shape
    if 0 in out_shape:
        return
    source = np.arange(1, int(np.prod(out_shape)) + 1, dtype=dtype).reshape(out_shape)

    def f(source, operand):
        return win.select_and_scatter_add(source, operand, select, **params)

    want = win.select_and_scatter_add_p.impl(source, operand, select=select, **params)
    _assert_same(fx.jit(f)(source, operand), want)


def test_max_pool_gradient_is_one_kernel_with_the_relu_backward():
    x = np.random.default_rng(0).standard_normal((2, 8, 8, 3)).astype(np.float32)

    def loss(x):
        y = lax.reduce_window(fx.nn.relu(x), -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                              "VALID")
        return (y * y).sum()

    g = fx.jit(fx.grad(loss))
    low = g.lower(x)
    assert "numpy.opaque" not in low.as_text()
    np.testing.assert_allclose(np.asarray(g(x)), np.asarray(fx.grad(loss)(x)), rtol=1e-6)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (C++20)")
@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_pooling_kernels_in_the_cuda_dialect_run_correctly(padding):
    """The same kernels rendered for CUDA (their tap loops and accumulators), run on the CPU
    by emulating threads and blocks."""
    x = np.random.default_rng(3).standard_normal((2, 5, 5, 3)).astype(np.float32)
    x[0, 0, :2, 0] = 1.0  # a tie inside a window

    def loss(x):
        y = lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), padding)
        return (y * y).sum()

    want = np.asarray(fx.grad(loss)(x))
    low = lower(fx.make_jaxpr(fx.grad(loss))(x), "cuda")
    values = {low.jaxpr.invars[0]: x}
    for step in low.steps:  # every step is a generated kernel here
        k = step.kernel
        lib = build(low.source, k.name)
        arrays = [values[v] for v in step.inputs]
        arrays += [np.zeros(v.aval.shape, v.aval.dtype) for v in step.outputs]
        iters, lanes = kernel_iterations(k)
        cfg = launch_config(iters, lanes, sm_count=2, threads=64)
        run(lib, arrays, cfg.grid[:2], cfg.block[0])
        values.update(zip(step.outputs, arrays[len(step.inputs):]))
    (out,) = low.jaxpr.outvars
    np.testing.assert_allclose(values[out], want, rtol=1e-6)


def test_a_flatten_after_pooling_iterates_in_the_pooled_shape():
    # The group's output is a row-major reshape of the window's result: the kernel loops over
    # the pooled shape (affine window loads, no index divisions in the inner loop) and stores
    # at the same linear positions: the eager bits, NaN and signed zeros included.
    from fx.example_libraries import stax

    _, pool = stax.MaxPool((2, 2), (2, 2))
    x = np.random.default_rng(0).standard_normal((8, 6, 6, 16)).astype(np.float32)
    x[0, 0, 0, :4] = [np.nan, -0.0, 0.0, np.inf]

    def f(x):
        return fx.numpy.reshape(pool((), fx.numpy.maximum(x, 0.0)), (8, -1))

    eager = np.asarray(f(fx.numpy.asarray(x)))
    jitted = np.asarray(fx.jit(f)(x))
    assert eager.shape == jitted.shape == (8, 144)
    assert np.array_equal(np.isnan(eager), np.isnan(jitted))
    keep = ~np.isnan(eager)
    assert np.array_equal(eager[keep].view(np.uint32), jitted[keep].view(np.uint32))
    kernel = fx.jit(f).lower(x).as_text("source")
    kernel = kernel[kernel.index("void k0("):]
    kernel = kernel[:kernel.index("\n}\n")]
    assert "i3 < 16; i3++" in kernel and "< 144;" not in kernel, kernel
