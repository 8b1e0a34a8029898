"""The CSR x dense kernel: chosen for sparse constant weights (shown by as_text), equal to the
dense product (to rounding for floats, bitwise for integers), and not chosen otherwise."""

from __future__ import annotations

import numpy as np
import pytest

import fx
import fx.numpy as fnp
from fx.export import freeze
from fx.lowering.kernels.sparse import sparse_gemm
from fx.runtime import platforms


def _sparse(rng, shape, density, dtype=np.float32):
    w = rng.standard_normal(shape).astype(dtype) if np.dtype(dtype).kind == "f" else \
        rng.integers(-50, 50, shape).astype(dtype)
    w[rng.random(shape) >= density] = 0
    return w


@pytest.mark.parametrize("m", [1, 6, 18, 24])  # by columns; by row tiles of 2 and 8
def test_selected_and_equal_to_dense_with_fused_epilogue(m):
    rng = np.random.default_rng(0)
    w, b = _sparse(rng, (40, 24), 0.05), rng.standard_normal(24).astype(np.float32)
    wc = fnp.asarray(w)
    f = fx.jit(lambda x: fnp.maximum(x @ wc + b, 0.0))
    x = rng.standard_normal((m, 40)).astype(np.float32)
    text = f.lower(x).as_text()
    assert "cpu.sparse_gemm" in text and "CSR x dense" in text and "csr_dot" in text
    np.testing.assert_allclose(np.asarray(f(x)), np.maximum(x @ w + b, 0), rtol=1e-5,
                               atol=1e-5)


def test_transposed_layouts_and_frozen_weight():
    rng = np.random.default_rng(1)
    w = _sparse(rng, (24, 40), 0.05)  # stored (N, K): x @ w.T
    x = rng.standard_normal((40, 5)).astype(np.float32)  # x stored (K, M): x.T @ ...
    wc = fnp.asarray(w)
    f = fx.jit(lambda x: fx.lax.dot_general(x, wc, (((0,), (1,)), ((), ()))))
    assert "sparse_gemm" in f.lower(x).as_text()
    np.testing.assert_allclose(np.asarray(f(x)), x.T @ w.T, rtol=1e-5, atol=1e-5)
    frozen = fx.jit(freeze(lambda p, x: x @ p["w"], {"w": w.T}))
    assert "sparse_gemm" in frozen.lower(x.T).as_text()
    np.testing.assert_allclose(np.asarray(frozen(x.T)), x.T @ w.T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_products_are_exact(dtype):
    rng = np.random.default_rng(2)
    w = _sparse(rng, (64, 16), 0.08, dtype)
    x = rng.integers(-1000, 1000, (9, 64)).astype(dtype)
    wc = fnp.asarray(w)
    f = fx.jit(lambda x: x @ wc)
    assert "sparse_gemm" in f.lower(x).as_text()
    np.testing.assert_array_equal(np.asarray(f(x)).view(np.uint8), (x @ w).view(np.uint8))


def test_not_selected_above_threshold_or_for_argument_weights():
    rng = np.random.default_rng(3)
    dense = _sparse(rng, (32, 8), 2 * sparse_gemm.DENSITY_THRESHOLD)
    x = rng.standard_normal((3, 32)).astype(np.float32)
    dc = fnp.asarray(dense)
    f = fx.jit(lambda x: x @ dc)
    assert "sparse_gemm" not in f.lower(x).as_text()
    np.testing.assert_allclose(np.asarray(f(x)), x @ dense, rtol=1e-5, atol=1e-6)
    sparse = _sparse(rng, (32, 8), 0.02)
    g = fx.jit(lambda x, w: x @ w)  # the weight is an argument: its values are not known
    assert "sparse_gemm" not in g.lower(x, sparse).as_text()


def test_all_zero_weight_and_nonfinite_inputs_next_to_pruned_weights():
    w = np.zeros((8, 4), np.float32)
    w[3, 1] = 2.0
    wc = fnp.asarray(w)
    f = fx.jit(lambda x: x @ wc)
    x = np.ones((2, 8), np.float32)
    x[0, 0] = np.inf  # multiplies only pruned weights: the sparse product skips it
    out = np.asarray(f(x))
    assert "sparse_gemm" in f.lower(x).as_text()
    np.testing.assert_array_equal(out, [[0, 2, 0, 0], [0, 2, 0, 0]])
    z = fnp.asarray(np.zeros((8, 4), np.float32))
    np.testing.assert_array_equal(np.asarray(fx.jit(lambda x: x @ z)(x[1:])), np.zeros((1, 4)))


def test_to_csr_layout():
    wt = np.array([[0, 1, 0], [0, 0, 0], [2, 0, 3]], np.float32)
    data, indices, indptr, max_row, min_row = sparse_gemm.to_csr(wt)
    assert (max_row, min_row) == (2, 0) and list(indptr) == [0, 1, 1, 3]
    assert list(data[:3]) == [1, 2, 3] and list(indices[:3]) == [1, 0, 2]
    assert len(data) == len(indices) == 3 + max_row


def test_rows_of_equal_length_run_unguarded_and_match_exactly():
    rng = np.random.default_rng(5)
    w = np.zeros((48, 10), np.int32)
    for n in range(10):  # three nonzeros in every column: min_row == max_row
        w[rng.choice(48, 3, replace=False), n] = rng.integers(1, 9, 3)
    x = rng.integers(-9, 9, (5, 48)).astype(np.int32)
    wc = fnp.asarray(w)
    f = fx.jit(lambda x: x @ wc)
    assert "rows<=3" in f.lower(x).as_text()
    np.testing.assert_array_equal(np.asarray(f(x)), x @ w)


@pytest.mark.skipif(not platforms.OPENCL.available(), reason="no OpenCL runtime/device")
def test_opencl_renders_and_runs_the_kernel():
    rng = np.random.default_rng(6)
    w, b = _sparse(rng, (64, 48), 0.05), rng.standard_normal(48).astype(np.float32)
    wc = fnp.asarray(w)
    f = fx.jit(lambda x: fnp.maximum(x @ wc + b, 0.0), backend="opencl")
    x = rng.standard_normal((32, 64)).astype(np.float32)
    assert "opencl.sparse_gemm" in f.lower(x).as_text()
    np.testing.assert_allclose(np.asarray(f(x)), np.maximum(x @ w + b, 0), rtol=1e-5,
                               atol=1e-5)


def test_gradient_through_a_sparse_constant_weight():
    rng = np.random.default_rng(7)
    w = _sparse(rng, (40, 24), 0.05)
    wc = fnp.asarray(w)
    g = fx.jit(fx.grad(lambda x: fnp.sum(fnp.tanh(x @ wc))))
    x = rng.standard_normal((6, 40)).astype(np.float32)
    text = g.lower(x).as_text()
    assert text.count("cpu.sparse_gemm") == 2  # the forward product and x's cotangent
    expected = (1 - np.tanh(x @ w) ** 2) @ w.T
    np.testing.assert_allclose(np.asarray(g(x)), expected, rtol=1e-5, atol=1e-5)
