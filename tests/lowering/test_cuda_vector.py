"""Wide (float4/int4) memory access in flat CUDA elementwise kernels: when it is used, and
its results (aligned, misaligned, with a tail, in place) from the CUDA source run on the CPU."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from cuda_emulation import build, run

import fx
import fx.numpy as fnp
from fx.lowering.codegen.loop_kernels import VECTOR_MIN_EXTENT
from fx.lowering.pipeline import lower

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (C++20)")


def _step(f, *args, backend="cuda"):
    low = lower(fx.make_jaxpr(f)(*[fnp.asarray(a) for a in args]), backend)
    (step,) = [s for s in low.steps if s.choice.impl.name.endswith("fused_elementwise")]
    return low, step


def _mixed(x, i, s, d):
    """float32 and int32 operands read wide, a broadcast scalar and a float64 read scalar."""
    return (d * 3.0).astype(np.float32) + (x * 2.0 + i.astype(np.float32) - s)


def _args(n, rng):
    return (rng.standard_normal(n).astype(np.float32), rng.integers(-9, 9, n).astype(np.int32),
            np.float32(0.25), rng.standard_normal(n))


def test_large_flat_cuda_loops_use_wide_access_and_small_or_c_ones_do_not():
    rng = np.random.default_rng(0)
    low, step = _step(_mixed, *_args(VECTOR_MIN_EXTENT, rng))
    src = low.source
    assert re.search(r"const float4 (in\d)_v = reinterpret_cast<const float4\*>\(\1\)\[i0_v\];",
                     src)
    assert re.search(r"const int4 in\d_v", src) and "float4 out0_v;" in src
    assert "double" in src and not re.search(r"double\d", src)  # float64 stays scalar
    assert "% 16ull) == 0ull" in src  # a scalar path remains for misaligned pointers
    small, _ = _step(_mixed, *_args(VECTOR_MIN_EXTENT - 1, rng))
    assert "float4" not in small.source
    cpu, _ = _step(_mixed, *_args(VECTOR_MIN_EXTENT, rng), backend="cpu")
    assert "float4" not in cpu.source and "_v" not in cpu.kernels[0].name


@needs_gxx
@pytest.mark.parametrize("n,misalign", [(VECTOR_MIN_EXTENT + 3, 0), (VECTOR_MIN_EXTENT, 1),
                                        (2 * VECTOR_MIN_EXTENT + 1, 2)])
def test_wide_access_results_match_numpy(n, misalign):
    rng = np.random.default_rng(n)
    x, i, s, d = _args(n, rng)
    low, step = _step(_mixed, x, i, s, d)
    lib = build(low.source, step.kernel.name)

    def placed(a):
        # A view ``misalign`` elements into a larger buffer: pointers not 16-byte aligned.
        base = np.zeros(a.size + 4, a.dtype)
        view = base[misalign:misalign + a.size]
        view[...] = a
        return view

    ins = {v: placed(np.asarray(a)) for v, a in zip(low.jaxpr.invars, (x, i, s, d))}
    arrays = [ins[v] if v in ins else placed(np.zeros(v.aval.shape, v.aval.dtype))
              for v in step.inputs + step.outputs]
    run(lib, arrays, (3, 1), 64)  # grid-stride: few threads still cover every element
    want = (d * 3.0).astype(np.float32) + (x * np.float32(2.0) + i.astype(np.float32) - s)
    np.testing.assert_allclose(arrays[-1], want, rtol=1e-6, atol=1e-6)


@needs_gxx
def test_wide_access_in_place_reads_before_it_writes():
    n = VECTOR_MIN_EXTENT + 2
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    low, step = _step(lambda a: a * a + 1.0, x)
    lib = build(low.source.replace("__restrict__", ""), step.kernel.name)
    buf = x.copy()
    run(lib, [buf, buf], (2, 1), 32)  # output and input share one buffer
    np.testing.assert_allclose(buf, x * x + 1.0, rtol=1e-6)
