"""The generated tiled GEMM: selection against cuBLAS, compilation, and its results computed
by running the CUDA source on the CPU (emulated threads and barriers)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from cuda_emulation import build, run

import fx
import fx.numpy as fnp
from fx.lowering.pipeline import lower

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (C++20)")


def _layer(w, b, x):
    return fnp.maximum(x @ w + b, 0.0)


@pytest.mark.default_mode  # NumPy float64 data: float32 in the default mode, as written
def test_selection_prefers_the_fused_tile_for_mid_sizes_and_cublas_for_large():
    mid = lower(fx.make_jaxpr(_layer)(fnp.ones((512, 512)), fnp.ones(512),
                                      fnp.ones((512, 512))), "cuda")
    assert [s.choice.impl.name for s in mid.steps] == ["cuda.tiled_gemm"]
    big = lower(fx.make_jaxpr(_layer)(fnp.ones((4096, 4096)), fnp.ones(4096),
                                      fnp.ones((4096, 4096))), "cuda")
    assert [s.choice.impl.name for s in big.steps] == ["cuda.cublas_gemm",
                                                       "cuda.fused_elementwise"]
    assert "cuda.cublas_gemm=" in mid.as_text()  # the alternative and its cost are shown


@pytest.mark.parametrize("m,k,n,transpose_a", [(130, 20, 70, False), (64, 37, 129, False),
                                               (33, 16, 40, True)])
def test_tiled_gemm_with_epilogue_matches_numpy(m, k, n, transpose_a):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((k, m) if transpose_a else (m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)

    def f(a, w, bias):  # a stored (k, m) is contracted over its first dimension
        dims = (((0 if transpose_a else 1,), (0,)), ((), ()))
        return fnp.maximum(fx.lax.dot_general(a, w, dims) + bias, 0.0)

    closed = fx.make_jaxpr(f)(fnp.asarray(a), fnp.asarray(w), fnp.asarray(bias))
    low = lower(closed, "cuda")
    gemm = [s for s in low.steps if s.choice.impl.name == "cuda.tiled_gemm"]
    if not gemm:
        pytest.skip("operator selection chose cuBLAS for this shape")
    (step,) = gemm
    k_ir = step.kernel
    lib = build(low.source, k_ir.name)
    values = {v: arr for v, arr in zip(low.jaxpr.invars, (a, w, bias))}
    arrays = []
    for v in step.inputs + step.outputs:
        arrays.append(values[v] if v in values else np.zeros(v.aval.shape, v.aval.dtype))
    run(lib, arrays, k_ir.grid[:2], k_ir.block[0])
    want = np.maximum((a.T if transpose_a else a) @ w + bias, 0.0)
    np.testing.assert_allclose(arrays[-1], want, rtol=1e-5, atol=1e-5)
