"""The CUDA int8 GEMM (``cuda.int8_gemm``, ``__dp4a``): selected for int8 products and int8
convolutions on the CUDA backend, and exact — its CUDA source run on the CPU (emulated threads,
a C ``__dp4a``) against NumPy's int32 products, epilogue included. (The test session also
compiles it with nvcc for sm_90, as every generated CUDA kernel.)"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from cuda_emulation import build, run

import fx
from fx import lax
from fx.devices import cupy_module
from fx.lowering.pipeline import lower

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (C++20)")


def _emulate(low, args):
    (step,) = [s for s in low.steps if s.choice.impl.name == "cuda.int8_gemm"]
    kernel = step.kernel
    lib = build(low.source, kernel.name)
    values = dict(zip(low.jaxpr.invars, args))
    arrays = [values[v] if v in values else np.zeros(v.aval.shape, v.aval.dtype)
              for v in step.inputs + step.outputs]
    run(lib, arrays, kernel.grid[:2], kernel.block[0])
    return arrays[len(step.inputs):]


# (M, K, N, B stored (N, K)): a K the 16-byte loads take, one they do not, ragged tiles.
@pytest.mark.parametrize("m,k,n,rows", [
    (70, 128, 33, True), pytest.param(5, 37, 66, False, marks=pytest.mark.slow),
    pytest.param(65, 200, 64, True, marks=pytest.mark.slow)])
def test_int8_products_and_epilogue_are_exact(m, k, n, rows):
    rng = np.random.default_rng(m + k)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (n, k) if rows else (k, n)).astype(np.int8)
    scale = np.linspace(0.5, 2.0, n, dtype=np.float32)

    def product(a, b):
        return lax.dot_general(a, b, (((1,), (1 if rows else 0,)), ((), ())),
                               preferred_element_type=np.int32)

    want = a.astype(np.int32) @ (b.T if rows else b).astype(np.int32)
    for f, expected in [(lambda a, b, s: product(a, b), want),
                        (lambda a, b, s: product(a, b).astype(np.float32) * s,
                         want.astype(np.float32) * scale)]:
        low = lower(fx.make_jaxpr(f)(a, b, scale), "cuda")
        assert [s.choice.impl.name for s in low.steps] == ["cuda.int8_gemm"]  # one kernel
        (got,) = _emulate(low, [a, b, scale])
        assert got.dtype == expected.dtype and np.array_equal(got, expected)


def test_int8_convolution_runs_on_the_tile():
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (2, 6, 6, 8)).astype(np.int8)
    w = rng.integers(-128, 128, (5, 3, 3, 8)).astype(np.int8)  # (O, H, W, I), as fx.quant's
    dn = lax.conv_dimension_numbers(x.shape, w.shape, ("NHWC", "OHWI", "NHWC"))

    def f(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn,
                                        preferred_element_type=np.int32)

    low = lower(fx.make_jaxpr(f)(x, w), "cuda")
    want = np.asarray(f(x, w))  # eager: NumPy's int32 convolution
    # The patches are a step of their own: compute them eagerly, then the tile.
    (gemm,) = [s for s in low.steps if s.choice.impl.name == "cuda.int8_gemm"]
    patches = np.asarray(lax.conv_general_dilated_patches(
        x, (3, 3), (1, 1), "SAME", dimension_numbers=("NHWC", "OIHW", "NHWC")))
    assert gemm.inputs[1] in low.jaxpr.invars  # the kernel read in place
    lib = build(low.source, gemm.kernel.name)
    # conv_general_dilated_patches orders features (channel, window); the compiler's
    # gather (window, channel): reorder to the gather's order.
    pat = patches.reshape(2, 6, 6, 8, 3, 3).transpose(0, 1, 2, 4, 5, 3).copy()
    out = np.zeros(want.shape, np.int32)
    run(lib, [pat, w, out], gemm.kernel.grid[:2], gemm.kernel.block[0])
    assert np.array_equal(out, want)


@pytest.mark.cuda
@pytest.mark.skipif(cupy_module() is None, reason="needs a CUDA device and CuPy")
def test_quantized_mlp_on_the_gpu_matches_the_cpu():
    import fx.quant
    from fx.example_libraries import stax

    init, apply = stax.serial(stax.Dense(256), stax.Relu, stax.Dense(10))
    _, params = init(fx.random.PRNGKey(0), (-1, 784))
    x = np.random.default_rng(0).uniform(0, 1, (64, 784)).astype(np.float32)
    qfn = fx.quant.quantize(apply, params, fx.quant.calibrate(apply, params, [x]))
    gpu = fx.jit(qfn, backend="cuda")
    assert "cuda.int8_gemm" in gpu.lower(x).as_text("selection")
    got = np.asarray(gpu(fx.device_put(x, "cuda")))
    want = np.asarray(fx.jit(qfn, backend="cpu")(x))  # the same int32 sums, then float ops
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
