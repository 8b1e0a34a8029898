"""Both dialects of the renderer: golden text for small fused kernels, and CUDA compilation."""

from __future__ import annotations

import dataclasses
import re
import shutil

import numpy as np
import pytest
from conftest import compile_cuda_kernels

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.lowering.pipeline import lower
from fx.lowering.render.renderer import CUDA, C, Renderer


def _kernels(f, *args):
    return lower(fx.make_jaxpr(f)(*args), "cpu").kernels


def _fused(x, y):
    return fnp.tanh(x) * y + 1.0


GOLDEN_C = """\
static void k(const float* restrict in0, const float* restrict in1, float* restrict out0) {
  for (int64_t i0 = 0; i0 < 16; i0++) {
    const float t0 = in0[i0];
    const float t1 = fx_tanhf(t0);
    const float t2 = in1[i0];
    const float t3 = (t1 * t2);
    const float t4 = (t3 + 1.0f);
    out0[i0] = t4;
  }
}"""

GOLDEN_CUDA = """\
extern "C" __global__ void k(const float* __restrict__ in0, const float* __restrict__ in1, \
float* __restrict__ out0) {
  for (int i0 = 0 + ((int)blockIdx.x * blockDim.x + threadIdx.x); i0 < 16; \
i0 += (int)gridDim.x * blockDim.x) {
    const float t0 = in0[i0];
    const float t1 = tanhf(t0);
    const float t2 = in1[i0];
    const float t3 = (t1 * t2);
    const float t4 = (t3 + 1.0f);
    out0[i0] = t4;
  }
}"""


@pytest.mark.default_mode  # NumPy float64 data: float32 in the default mode, as written
def test_golden_c_and_cuda_for_a_fused_elementwise_kernel():
    (k,) = _kernels(_fused, fnp.ones(16), fnp.ones(16))
    k = dataclasses.replace(k, name="k")
    assert Renderer(C).kernel(k) == GOLDEN_C
    assert Renderer(CUDA).kernel(k) == GOLDEN_CUDA


def test_only_kernels_with_enough_work_start_threads():
    # A small kernel has no OpenMP pragma at all: even a region switched off by if() is a
    # call into the runtime, paid by every step of a compiled loop.
    small = Renderer(C).kernel(_kernels(_fused, fnp.ones(16), fnp.ones(16))[0])
    (big,) = _kernels(_fused, fnp.ones(C.parallel_min_work + 1), fnp.ones(C.parallel_min_work + 1))
    assert "omp" not in small
    # Straight-line bodies are independent iterations: SIMD lanes within each thread, handed
    # out guided (a thread whose core another process holds takes fewer of them).
    assert "#pragma omp parallel for simd schedule(guided)\n" in Renderer(C).kernel(big)


def test_golden_c_broadcast_becomes_index_arithmetic():
    (k,) = _kernels(lambda x, b: x + b, fnp.ones((3, 4)), fnp.ones(4))
    text = Renderer(C).kernel(dataclasses.replace(k, name="k"))
    # The bias is read by its column index: no broadcast buffer is materialized.
    assert re.search(r"= in\d\[i1\];", text), text
    assert "for (int64_t i1 = 0; i1 < 4; i1++)" in text


def test_half_precision_is_stored_16_bit_and_computed_in_float():
    (k,) = _kernels(lambda x: fnp.exp(x) * 2.0, fnp.ones(8, dtype=fnp.bfloat16))
    text = Renderer(C).kernel(dataclasses.replace(k, name="k"))
    assert "const uint16_t* restrict in0" in text
    assert "fx_bf16_to_f32(in0[i0])" in text and "fx_f32_to_bf16(" in text


def _softmax(x):
    m = lax.reduce_max(x, (1,))
    e = fnp.exp(x - lax.broadcast_in_dim(m, x.shape, (0,)))
    return e / lax.broadcast_in_dim(lax.reduce_sum(e, (1,)), x.shape, (0,))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (CUDA toolkit)")
def test_generated_kernels_compile_for_sm90_without_spills():
    kernels = []
    for dt in (fnp.float32, fnp.float64, fnp.float16, fnp.bfloat16):
        kernels += _kernels(_softmax, fnp.ones((4, 8), dtype=dt))
        kernels += _kernels(_fused, fnp.ones(16, dtype=dt), fnp.ones(16, dtype=dt))
    kernels += _kernels(lambda x: lax.argmax(x, 1, fnp.int32), fnp.ones((4, 8)))
    kernels += _kernels(lambda x, y: (x // y, x % y, x << 3), fnp.ones(8, fnp.int32),
                        fnp.ones(8, fnp.int32))
    ok, report = compile_cuda_kernels(kernels)
    assert ok, report


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_max_and_min_against_constants_keep_nans_and_signed_zeros(dtype):
    # A nonzero, non-NaN constant operand renders as one compare (see Renderer.op); against
    # zero (two of them) or a NaN the full NaN- and sign-aware helper stays. Bitwise eager.
    import numpy as np

    x = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, -127.0, 3.0, 5.0, -200.0, 127.0],
                 dtype)

    def f(x):
        return (fnp.maximum(x, -127.0), fnp.minimum(x, 3.0), fnp.maximum(-127.0, x),
                fnp.minimum(127.0, fnp.maximum(x, 0.0)), fnp.minimum(x, -0.0),
                fnp.maximum(x, np.inf), fnp.minimum(x, -np.inf))

    eager = [np.asarray(v) for v in f(x)]
    jitted = [np.asarray(v) for v in fx.jit(f)(x)]
    for e, j in zip(eager, jitted, strict=True):
        assert e.dtype == j.dtype
        assert np.array_equal(np.isnan(e), np.isnan(j))
        keep = ~np.isnan(e)
        assert np.array_equal(e[keep].view(f"u{e.itemsize}"), j[keep].view(f"u{j.itemsize}"))
    source = fx.jit(f).lower(x).as_text("source")
    assert re.search(r"\(\(-127\.0f?\) > ", source)  # the compact form against -127
    kernels = source[source.index("void k0("):]
    assert re.search(r"fx_max(f)?\(", kernels)  # max(x, 0.0) keeps the helper


# --- index maps and invariant values ---------------------------------------------------------


def _evaluate(e, env):
    from fx.lowering.codegen import kernel_ir as ir

    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.Sym):
        return env[e.name]
    a, b = (_evaluate(x, env) for x in e.args)
    ops = {"add": lambda: a + b, "mul": lambda: a * b, "div": lambda: a // b,
           "rem": lambda: a % b, "sub": lambda: a - b}
    return ops[e.op]()


RESHAPES = [((256, 8, 8, 3, 3, 1), (256, 8, 8, 9)), ((3, 1, 4), (3, 4)), ((4,), (4, 1)),
            ((2, 6), (3, 4)), ((1, 1, 6), (6, 1, 1)), ((2, 3, 4), (6, 4)), ((2, 3, 4), (2, 12)),
            ((6, 1), (2, 3)), ((1,), (1, 1)), ((5, 1, 1), (5,)), ((1, 5), (5, 1)),
            ((2, 1, 3), (1, 6, 1)), ((4, 6), (2, 2, 3, 2)), ((2, 2, 3, 2), (4, 6))]


@pytest.mark.parametrize("in_shape,out_shape", RESHAPES)
def test_a_reshape_maps_indices_group_by_group(in_shape, out_shape):
    # Every output index goes to the operand index NumPy's row-major reshape gives; dimensions
    # the reshape keeps pass their index through; the flat index is kept for loads.
    import itertools

    from fx.lowering.codegen import kernel_ir as ir

    syms = tuple(ir.Sym(f"i{k}", ir.INDEX) for k in range(len(out_shape)))
    got = ir.reshaped_index(syms, in_shape, out_shape)
    assert ir.linearize(got, in_shape) == ir.linearize(syms, out_shape)
    for k in range(min(len(in_shape), len(out_shape))):  # kept leading dimensions
        if in_shape[k] != out_shape[k]:
            break
        assert got[k] == (syms[k] if in_shape[k] != 1 else ir.const_index(0))
    for idx in itertools.product(*map(range, out_shape)):
        env = {f"i{k}": v for k, v in enumerate(idx)}
        want = np.unravel_index(np.ravel_multi_index(idx, out_shape), in_shape)
        assert tuple(_evaluate(e, env) for e in got) == tuple(int(w) for w in want), idx


def test_values_invariant_in_an_inner_loop_are_bound_before_it():
    from fx.lowering.codegen import kernel_ir as ir

    f32 = np.dtype(np.float32)
    i, j = ir.Sym("i", ir.INDEX), ir.Sym("j", ir.INDEX)
    inner = ir.Loop("j", 16, (
        ir.Let("a", ir.Load("in0", i, f32)),  # invariant: the position's value
        ir.Let("b", ir.Op("mul", (ir.Sym("a", f32), ir.Load("in1", j, f32)), f32)),
        ir.Let("c", ir.Op("add", (ir.Sym("a", f32), ir.Const(1.0, f32)), f32)),  # invariant
        ir.Store("out0", ir.iadd(ir.imul(i, ir.const_index(16)), j),
                 ir.Op("add", (ir.Sym("b", f32), ir.Sym("c", f32)), f32))))
    params = (ir.Param("in0", f32, 4, False), ir.Param("in1", f32, 16, False),
              ir.Param("out0", f32, 64, True))
    k = ir.Kernel("k", params, (ir.Loop("i", 4, (inner,)),), work=64, restrict=True)
    (outer,) = ir.hoist_invariants(k).body
    assert [type(s).__name__ + ":" + getattr(s, "name", "") for s in outer.body] == [
        "Let:a", "Let:c", "Loop:"]
    assert [s.name for s in outer.body[-1].body if isinstance(s, ir.Let)] == ["b"]
    # Where parameters may alias (an in-place kernel), loads stay in the loop, and so does
    # every value computed from them.
    (outer,) = ir.hoist_invariants(dataclasses.replace(k, restrict=False)).body
    assert [type(s).__name__ for s in outer.body] == ["Loop"]



def test_short_float64_rows_are_summed_in_order():
    # A row shorter than C.simd_reduction_min is summed left to right, as XLA sums it: with
    # these rows another order rounds differently (the two small terms meet first, or the
    # large one does). Longer rows may be summed in SIMD lanes. (A float32 sum accumulates
    # in float64, where these rows are exact.)
    from harness import same_mode

    with same_mode(True):
        tiny = float(np.finfo(np.float64).eps) / 2
        rows = np.array([[tiny, tiny, 1.0], [1.0, tiny, tiny], [tiny, 1.0, tiny]])
        want = np.array([((0.0 + a) + b) + c for a, b, c in rows])
        assert len(set(want.tolist())) == 2  # the orders disagree on these rows
        f = lambda x: lax.reduce_sum(x * 1, (1,))  # noqa: E731
        assert "omp simd reduction" not in fx.jit(f).lower(rows).as_text("source")
        np.testing.assert_array_equal(np.asarray(fx.jit(f)(rows)), want)
        long_rows = np.ones((4, C.simd_reduction_min))
        assert "omp simd reduction" in fx.jit(f).lower(long_rows).as_text("source")
