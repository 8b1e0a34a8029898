"""The CUDA backend: everything that needs no device is tested here on the CPU (launch
configuration, argument packing, lowering for CUDA, graph splitting, compilation with NVRTC
and nvcc); tests marked ``cuda`` run the compiled programs on a GPU when one is present."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from conftest import compile_cuda_kernels
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.core import Primitive
from fx.devices import cupy_module
from fx.lowering.codegen.kernel_ir import Param
from fx.lowering.pipeline import lower
from fx.lowering.select import op_impl
from fx.runtime import device_loops, nvrtc
from fx.runtime.cuda import THREADS, kernel_iterations, launch_config, pack_args

needs_gpu = pytest.mark.skipif(cupy_module() is None, reason="needs a CUDA device and CuPy")


@given(st.integers(0, 10**9), st.sampled_from([1, 32]), st.integers(1, 200))
def test_launch_config_covers_the_work_or_fills_the_device(iters, lanes, sms):
    cfg = launch_config(iters, lanes, sms)
    assert cfg.block == (THREADS, 1, 1)
    blocks = cfg.grid[0]
    assert 1 <= blocks <= sms * 32
    rows_per_block = THREADS // lanes
    # Either every iteration gets its own (group of) threads, or the grid is a full wave cap
    # and the kernels' grid-stride loops cover the rest.
    assert blocks * rows_per_block >= iters or blocks == sms * 32


def test_pack_args_uses_exact_scalar_types_and_keeps_arrays():
    params = (Param("in0", np.dtype(np.float32), 8, False), Param("n", np.dtype(np.int32), 1,
                                                                   False))
    arr = np.zeros(8, np.float32)
    packed = pack_args(params, {"in0": arr, "n": 5})
    assert packed[0] is arr
    assert type(packed[1]) is np.int32 and packed[1] == 5


def _softmax(x):
    m = lax.reduce_max(x, (1,))
    e = fnp.exp(x - lax.broadcast_in_dim(m, x.shape, (0,)))
    return e / lax.broadcast_in_dim(lax.reduce_sum(e, (1,)), x.shape, (0,))


def _mlp_layer(w, b, x):
    return fnp.maximum(x @ w + b, 0.0)


@pytest.mark.default_mode  # NumPy float64 data: float32 in the default mode, as written
def test_lowering_for_cuda_is_pure_and_uses_cuda_choices():
    low = lower(fx.make_jaxpr(_mlp_layer)(fnp.ones((6, 5)), fnp.ones(5), fnp.ones((4, 6))),
                "cuda")
    text = low.as_text()
    assert "for cuda" in text and "cuda.tiled_gemm" in text and "cuda.cublas_gemm=" in text
    assert 'extern "C" __global__ void' in low.source
    assert low.plan.arena_bytes % 256 == 0
    low = lower(fx.make_jaxpr(lambda x: fnp.tanh(x).sum(axis=1))(fnp.ones((64, 33))), "cuda")
    for k in low.kernels:
        iters, lanes = kernel_iterations(k)
        assert iters == 64 and lanes == 32


def test_loops_with_kernel_bodies_are_device_loops_on_cuda():
    """On CUDA a scan/while/cond whose bodies are kernels is run by the executor on the
    device (fx.runtime.device_loops): its renamed body kernels are in the program's module
    (compiled for sm_90 with the others), a scan without literals can be captured in a CUDA
    graph, and a body with a library call stays a host loop."""
    def f(x):
        c, ys = fx.lax.scan(lambda c, xi: (fnp.tanh(c + xi), c * 2), x[0], x)
        z = fx.lax.while_loop(lambda v: v[0] < 10.0, lambda v: v * 1.5 + 1.0, fnp.abs(c))
        return ys, z

    low = lower(fx.make_jaxpr(f)(fnp.ones((6, 32), np.float32)), "cuda")
    loops = [op for op in low.ops if op.device]
    assert len(loops) == 2 and not any(op.native for op in loops)
    for op in loops:
        assert op.kernels and all(f"void {k.name}(" in low.source for k in op.kernels)
        assert set(op.kernels) <= set(low.kernels)
    assert [device_loops.capturable(op) for op in loops] == [True, False]  # while reads back
    assert "launched on the device" in low.as_text()
    with_gemm = lower(fx.make_jaxpr(lambda a: fx.lax.scan(
        lambda c, m: (c @ m, None), a[0], a)[0])(fnp.ones((3, 64, 64), np.float32)), "cuda")
    assert [op.device for op in with_gemm.ops if op.label.startswith("loop")] == [False]


def test_row_reductions_are_warp_per_row_on_cuda():
    low = lower(fx.make_jaxpr(_softmax)(fnp.ones((64, 128))), "cuda")
    (k,) = low.kernels
    assert kernel_iterations(k) == (64, 32)
    assert "__shfl_xor_sync" in low.source and "fx_lane == 0" not in low.source  # I-space out


def test_ops_without_a_gpu_implementation_run_on_the_host_with_copies():
    host_op = Primitive("host_only_example")
    host_op.def_abstract_eval(lambda x: x)
    host_op.def_impl(lambda x: np.asarray(x) * 2)
    op_impl.host_only_prims.add(host_op)
    try:
        low = lower(fx.make_jaxpr(lambda x: fnp.sin(host_op.bind(fnp.cos(x))))(fnp.ones(8)),
                    "cuda")
        text = low.as_text()
        assert "on host (no GPU implementation): copy_to_host[" in text
        placements = [s.placement for s in low.steps]
        assert placements == ["device", "host", "device"]
        cpu = lower(fx.make_jaxpr(lambda x: host_op.bind(x))(fnp.ones(8)), "cpu")
        assert all(s.placement == "device" for s in cpu.steps)
    finally:
        op_impl.host_only_prims.discard(host_op)


def _cuda_kernels():
    kernels = []
    for dt in (fnp.float32, fnp.bfloat16, fnp.float16, fnp.float64):
        kernels += lower(fx.make_jaxpr(_softmax)(fnp.ones((8, 64), dt)), "cuda").kernels
        kernels += lower(fx.make_jaxpr(lambda x: lax.argmax(x, 1, fnp.int32))(
            fnp.ones((8, 64), dt)), "cuda").kernels
        kernels += lower(fx.make_jaxpr(lambda x, y: fnp.tanh(x) * y + 1)(
            fnp.ones(100, dt), fnp.ones(100, dt)), "cuda").kernels
    kernels += lower(fx.make_jaxpr(lambda x: fnp.sum(x, axis=0))(fnp.ones((64, 8))),
                     "cuda").kernels
    kernels += lower(fx.make_jaxpr(_mlp_layer)(fnp.ones((300, 200)), fnp.ones(200),
                                               fnp.ones((64, 300))), "cuda").kernels
    return [k.renamed(f"k{i}") for i, k in enumerate(kernels)]


@pytest.mark.skipif(not nvrtc.available(), reason="needs cuda-bindings and the NVRTC wheel")
def test_generated_cuda_compiles_with_nvrtc_like_cupy():
    from conftest import compile_cuda_kernels_nvrtc

    ok, log = compile_cuda_kernels_nvrtc(_cuda_kernels())
    assert ok, log


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_generated_cuda_compiles_with_nvcc_without_spills():
    ok, report = compile_cuda_kernels(_cuda_kernels())
    assert ok, report


def test_cuda_backend_without_a_device_is_a_clear_error():
    if cupy_module() is not None:
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="backend 'cuda'"):
        fx.jit(lambda x: x + 1, backend="cuda")(fnp.ones(3))


# --- on a GPU -------------------------------------------------------------------------------------

CASES = [
    ("softmax", _softmax, lambda r: [r.standard_normal((33, 70)).astype(np.float32)]),
    ("mlp_layer", _mlp_layer, lambda r: [r.standard_normal((6, 5)).astype(np.float32),
                                         r.standard_normal(5).astype(np.float32),
                                         r.standard_normal((4, 6)).astype(np.float32)]),
    ("elementwise", lambda x: fnp.tanh(2 * x + 1) * fx.lax.logistic(x) - fnp.exp(-x * x),
     lambda r: [r.standard_normal(10_000).astype(np.float32)]),
    ("column_sum", lambda x: fnp.sum(x, axis=0), lambda r: [r.standard_normal((300, 7))
                                                               .astype(np.float32)]),
    ("argmax_bf16", lambda x: lax.argmax(x, 1, fnp.int32),
     lambda r: [r.standard_normal((9, 40)).astype(fnp.bfloat16)]),
    ("mixed_precision", lambda x: (x.astype(fnp.float32) * 2).astype(fnp.float16),
     lambda r: [r.standard_normal(1000).astype(np.float16)]),
    # device loops (fx.runtime.device_loops): a scan with scanned outputs, a while, a cond
    ("device_scan", lambda x: fx.lax.scan(lambda c, xi: (fnp.tanh(c + xi), c * 2), x[0], x)[1],
     lambda r: [r.standard_normal((7, 300)).astype(np.float32)]),
    ("device_while", lambda x: fx.lax.while_loop(lambda v: v[0] < 50.0,
                                                 lambda v: v * 1.5 + 1.0, fnp.abs(x)),
     lambda r: [r.standard_normal(64).astype(np.float32)]),
    ("device_cond", lambda x: fx.lax.cond(x[0] > 0, fnp.sin, fnp.cos, x),
     lambda r: [r.standard_normal(64).astype(np.float32)]),
]


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("name,f,make", CASES, ids=[c[0] for c in CASES])
def test_gpu_matches_cpu(name, f, make):
    args = make(np.random.default_rng(0))
    cpu = fx.jit(f, backend="cpu")(*[fnp.asarray(a) for a in args])
    gpu = fx.jit(f, backend="cuda")(*[fx.device_put(a, "cuda") for a in args])
    assert gpu.device.platform == "cuda"
    np.testing.assert_allclose(np.asarray(gpu, np.float64), np.asarray(cpu, np.float64),
                               rtol=2e-2 if np.asarray(cpu).dtype.itemsize == 2 else 2e-5,
                               atol=1e-5)


@pytest.mark.cuda
@needs_gpu
def test_gpu_scan_captured_as_one_graph(monkeypatch):
    """FX_CUDA_GRAPHS=1: a program with a scan is captured whole and replayed."""
    monkeypatch.setenv("FX_CUDA_GRAPHS", "1")

    def f(x):
        return fx.lax.scan(lambda c, xi: (fnp.tanh(c + xi), c * 2), x[0], x)[1]

    x = np.random.default_rng(1).standard_normal((9, 128)).astype(np.float32)
    exe = lower(fx.make_jaxpr(f)(x), "cuda").compile()
    assert exe.use_graph
    import cupy

    got = [cupy.asnumpy(exe([cupy.asarray(x)])[0]) for _ in range(2)]
    want = np.asarray(fx.jit(f, backend="cpu")(x))
    for g in got:
        np.testing.assert_allclose(g, want, rtol=2e-5, atol=1e-6)


@pytest.mark.cuda
@needs_gpu
def test_gpu_eager_ops_and_device_put():
    x = fx.device_put(np.arange(6.0, dtype=np.float32), "cuda")
    y = fnp.sin(x) * 2
    assert y.device.platform == "cuda"
    np.testing.assert_allclose(np.asarray(y), np.sin(np.arange(6.0)) * 2, rtol=1e-6)
