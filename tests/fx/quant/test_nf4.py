"""``fx.quant.nf4``: the code book, the round trip's error bound, the packed layout and sizes,
the fused dequantize-in-GEMM kernels (bit-equal to dequantize-then-matmul summed in order, on
the CPU and, emulated, in the CUDA dialect; vectorized by GCC at every x86-64 level), the
gradients (to x only) and the errors."""

from __future__ import annotations

import platform
import re
import shutil
import statistics
import subprocess

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fx
from fx.lowering.pipeline import lower
from fx.quant import nf4
from fx.runtime import cc

# The NF4 data type of the QLoRA paper (Dettmers et al. 2023, Appendix E), as published.
PUBLISHED = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
             -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
             0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
             0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
             0.7229568362236023, 1.0]
MAX_GAP = float(np.max(np.diff(np.asarray(PUBLISHED, np.float32))))


def _w(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_code_book_is_the_published_nf4():
    assert nf4.CODE.dtype == np.float32 and nf4.CODE.shape == (16,)
    assert nf4.CODE.tolist() == np.asarray(PUBLISHED, np.float32).tolist()
    assert np.all(np.diff(nf4.CODE) > 0) and nf4.CODE[7] == 0.0
    # Its construction (the paper's): quantiles of N(0, 1), 8 for the positive half and 7 for
    # the negative, at offset 0.9677 = (1/(2*15) + 1 - 1/(2*16)) / 2, normalized to [-1, 1].
    ppf = np.vectorize(statistics.NormalDist().inv_cdf)
    offset = 0.9677083
    pos = ppf(np.linspace(offset, 0.5, 9)[:-1])
    neg = -ppf(np.linspace(offset, 0.5, 8)[:-1])
    v = np.sort(np.concatenate([pos, [0.0], neg]))
    np.testing.assert_allclose(nf4.CODE, v / np.max(np.abs(v)), atol=2e-7)


@pytest.mark.parametrize("shape,block_size,double", [((64, 32), 64, False), ((6, 20), 8, False),
                                                    ((3, 4, 10), 5, False),
                                                    ((512, 96), 64, True)])
def test_round_trip_error_is_bounded_by_half_a_code_gap(shape, block_size, double):
    w = _w(shape, seed=block_size) * 3.0
    w.flat[5] = 0.0
    q = nf4.quantize(w, block_size=block_size, double_quant=double)
    assert q.shape == shape and q.packed.dtype == np.uint8
    assert q.packed.shape == (*shape[:-1], shape[-1] // 2)
    back = nf4.dequantize(q)
    assert back.dtype == np.float32 and back.shape == shape
    blocks = w.reshape(-1, block_size)
    absmax = np.abs(blocks).max(axis=1, keepdims=True)
    scale = q.block_scales()[:, None]
    err = np.abs(back.reshape(blocks.shape) - blocks)
    # Half the largest gap times the block's scale (plus, with double quantization, what the
    # 8-bit scale lost: |code| <= 1 times |absmax - scale|), and float rounding.
    bound = 0.5 * MAX_GAP * absmax + np.abs(absmax - scale) + 1e-6 * absmax
    assert np.all(err <= bound)
    # Each value took the nearest code of its block (ties aside).
    nearest = np.abs(blocks / absmax)[..., None] - 0  # shape (blocks, bs, 1)
    want = np.argmin(np.abs((blocks / absmax)[..., None] - nf4.CODE), axis=-1)
    assert np.mean(q.codes().reshape(blocks.shape) == want) > 0.999, nearest.shape
    if double:
        assert q.double_quant and q.scale_codes.dtype == np.int8
        assert np.max(np.abs(scale - absmax) / absmax) < 0.02


def test_zeros_extremes_and_exact_codes_round_trip_exactly():
    s = np.float32(0.5)
    w = np.concatenate([nf4.CODE * s, np.zeros(16, np.float32)]).reshape(2, 16)
    q = nf4.quantize(w, block_size=16)
    assert np.array_equal(nf4.dequantize(q), w)  # zero block: scale 0, every value 0


def test_sizes_are_about_an_eighth_of_float32():
    w = _w((4096, 256))
    q = nf4.quantize(w)
    assert q.nbytes == w.size // 2 + 4 * (w.size // 64)
    assert 7.0 < w.nbytes / q.nbytes < 7.2
    qd = nf4.quantize(w, double_quant=True)
    groups = -(-(w.size // 64) // 256)
    assert qd.nbytes == w.size // 2 + 256 * groups + 4 * groups + 4
    assert 7.7 < w.nbytes / qd.nbytes < 7.8  # 4.127 bits per value


def test_bad_inputs_get_clear_errors():
    with pytest.raises(ValueError, match="block_size 64 must divide the size 96"):
        nf4.quantize(_w((4, 24)))
    with pytest.raises(ValueError, match="last dimension .* must be even"):
        nf4.quantize(_w((8, 7)), block_size=8)
    with pytest.raises(TypeError, match="must be a float array, got int32"):
        nf4.quantize(np.ones((4, 16), np.int32), block_size=16)
    with pytest.raises(ValueError, match="block_size must be a positive integer"):
        nf4.quantize(_w((4, 16)), block_size=0)
    with pytest.raises(TypeError, match="expected an NF4Tensor"):
        nf4.dequantize(_w((4, 16)))
    q = nf4.quantize(_w((16, 8)), block_size=8)
    with pytest.raises(TypeError, match="x must be float32"):
        nf4.matmul(np.ones((2, 16), np.float64), q)
    with pytest.raises(ValueError, match=r"must end in the weight's input dimension 16"):
        nf4.matmul(np.ones((2, 8), np.float32), q)
    with pytest.raises(ValueError, match="must be 2-D"):
        nf4.matmul(np.ones((2, 4), np.float32), nf4.quantize(_w((2, 2, 4)), block_size=8))


# --- the fused kernel --------------------------------------------------------------------------

# (M, K, N, block): one row; a tile's tail; chunks of 4 and 2 bytes (block 32 with N/2 = 20,
# block 8 with N/2 = 10: scale blocks crossing rows). The AVX-512 microkernel (16 | block and
# 16 | N/2) takes the first and the last three: strips of 4, 1 and 2 groups of 16 bytes, tiles
# of 3 rows with a tail of 1, exactly one tile, two tiles and a tail.
SHAPES = [(1, 128, 64, 64), (6, 96, 40, 32), (5, 6, 20, 8), (4, 64, 256, 64),
          (3, 16, 32, 16), (7, 40, 192, 32)]


def _bits(a) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, np.float32)).view(np.uint32)


@pytest.mark.parametrize("m,k,n,block,double", [(*s, False) for s in SHAPES]
                         + [(*SHAPES[1], True)])  # double quantization: other scales, same kernel
def test_fused_kernel_bit_matches_dequantize_then_matmul(m, k, n, block, double):
    q = nf4.quantize(_w((k, n), seed=k), block_size=block, double_quant=double)
    x = _w((m, k), seed=m)
    bias = _w((n,), seed=3)
    want = nf4.reference_matmul(x, q)
    jitted = fx.jit(lambda x: nf4.matmul(x, q))
    assert np.array_equal(_bits(jitted(x)), _bits(want))
    # With an epilogue (bias, relu): the product is the kernel's, the rest elementwise.
    layer = fx.jit(lambda x: fx.nn.relu(nf4.matmul(x, q) + bias))
    assert np.array_equal(_bits(layer(x)), _bits(np.maximum(want + bias, 0)))
    if cc.compiler() is not None:
        assert "cpu.nf4_gemm" in jitted.lower(x).as_text("selection")
    # Leading batch dimensions are rows.
    x3 = _w((2, m, k), seed=9)
    got3 = fx.jit(lambda x: nf4.matmul(x, q))(x3)
    assert np.array_equal(_bits(got3), _bits(nf4.reference_matmul(x3.reshape(-1, k), q)
                                             .reshape(2, m, n)))


def test_eager_product_is_the_dequantized_matmul():
    q = nf4.quantize(_w((64, 32)), block_size=16)
    x = _w((3, 64), seed=1)
    np.testing.assert_allclose(np.asarray(nf4.matmul(x, q)), x @ nf4.dequantize(q),
                               rtol=1e-5, atol=1e-5)


def _cuda_program(q, x):
    closed = fx.make_jaxpr(lambda x: nf4.matmul(x, q))(x)
    low = lower(closed, "cuda")  # (the test session compiles its kernels with nvcc)
    (step,) = low.steps
    assert step.choice.impl.name == "cuda.nf4_gemm"
    return closed, low, step


def test_cuda_selects_the_fused_kernel():
    _cuda_program(nf4.quantize(_w((32, 16)), block_size=16), _w((3, 32)))


def test_cuda_runs_the_product_its_kernel_does_not_take_on_the_host():
    # fx.quant registers nf4_dot with the compiler (nf4_gemm.register_nf4_dot), which marks its
    # NumPy impl host-only: CuPy has no NF4 product.
    from fx.lowering.select.op_impl import host_only_prims

    assert nf4.nf4_dot_p in host_only_prims and None not in host_only_prims


@pytest.mark.slow  # compiling the emulation takes seconds
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (C++20)")
def test_cuda_kernel_emulated_bit_matches():
    from cuda_emulation import build, run

    q = nf4.quantize(_w((96, 40), seed=2), block_size=8)
    x = _w((6, 96), seed=4)
    closed, low, step = _cuda_program(q, x)
    values = dict(zip(low.jaxpr.invars, [*(np.asarray(c) for c in closed.consts), x]))
    out = np.zeros(step.outputs[0].aval.shape, np.float32)
    run(build(low.source, step.kernel.name), [values[v] for v in step.inputs] + [out], (2, 1),
        16)
    assert np.array_equal(_bits(out), _bits(nf4.reference_matmul(x, q)))


_X86 = platform.machine().lower() in ("x86_64", "amd64")


@pytest.mark.skipif(not _X86 or shutil.which("gcc") is None, reason="needs GCC for x86-64")
# (From x86-64-v4 on, AVX-512F, the microkernel runs and GCC drops the unused loop-IR kernel
# before vectorizing: test_avx512_microkernel_with_its_fallback_compiles_at_every_level.)
@pytest.mark.parametrize("march", [pytest.param("x86-64-v2", marks=pytest.mark.slow),
                                   "x86-64-v3"])
def test_inner_loop_vectorizes_at_every_x86_level(tmp_path, march):
    q = nf4.quantize(_w((256, 128)), block_size=64)
    x = _w((5, 256))  # a full tile of 4 rows and a tail of 1
    source = fx.jit(lambda x: nf4.matmul(x, q)).lower(x).as_text("source")
    source = source[source.index("#include"):]
    src = tmp_path / "nf4.c"
    src.write_text(source)
    lines = source.splitlines()
    # The loops that unpack, look up and accumulate (one per tile).
    hot = {i + 2 for i, line in enumerate(lines) if "for (int64_t jj" in line
           and i + 1 < len(lines) and "wlo" in lines[i + 1]}
    assert len(hot) == 2
    flags = [f"-march={march}" if f.startswith("-march=") else f for f in cc.FLAGS]
    flags = [f for f in flags if f not in ("-shared", "-w")]
    proc = subprocess.run(["gcc", *flags, "-c", str(src), "-o", str(tmp_path / "nf4.o"),
                           "-fopt-info-vec-optimized"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    done = {int(m.group(1)) for m in re.finditer(r"nf4\.c:(\d+):\d+: optimized: loop "
                                                 r"vectorized", proc.stderr)}
    assert hot <= done, (march, sorted(hot), sorted(done))


@pytest.mark.skipif(not _X86 or shutil.which("gcc") is None, reason="needs GCC for x86-64")
def test_avx512_microkernel_with_its_fallback_compiles_at_every_level(tmp_path):
    # The code book in a register (vpermps) under AVX-512F; the loop IR, vectorized, below.
    q = nf4.quantize(_w((64, 256)), block_size=64)
    source = fx.jit(lambda x: nf4.matmul(x, q)).lower(_w((2, 64))).as_text("source")
    source = source[source.index("#include"):]
    assert "_mm512_permutexvar_ps" in source
    flags = [f for f in cc.FLAGS if not f.startswith("-march") and f not in ("-shared", "-w")]
    for march, instruction in {"x86-64-v4": r"vpermps\s+.*%zmm", "x86-64-v3": r"%ymm",
                               "x86-64-v2": r"mulps\s+.*%xmm"}.items():
        asm = subprocess.run(["gcc", *flags, f"-march={march}", "-S", "-o", "-", "-x", "c",
                              "-"], input=source, capture_output=True, text=True,
                             check=True).stdout
        assert re.search(instruction, asm), march


# (M, K, N, block): the transposed product x (M, N) @ W.T: the loop IR (block 8), and the AVX-512
# microkernel with a remainder of rows of W (K % 4) and of x (M % 3), and without.
TRANSPOSED = [(3, 20, 24, 8), (5, 38, 64, 16), (1, 64, 256, 64), (6, 16, 32, 32)]


@pytest.mark.parametrize("m,k,n,block", TRANSPOSED)
def test_transposed_product_has_a_kernel_and_matches_numpy(m, k, n, block):
    q = nf4.quantize(_w((k, n), seed=k + n), block_size=block)
    ct = _w((m, n), seed=m)

    def f(ct):
        return nf4.nf4_dot_p.bind(ct, q.packed, q.block_scales(), nf4.CODE, block_size=block,
                                  transposed=True)

    want = ct.astype(np.float64) @ nf4.dequantize(q).astype(np.float64).T
    jitted = fx.jit(f)
    got = np.asarray(jitted(ct))
    assert got.dtype == np.float32 and got.shape == (m, k)
    np.testing.assert_allclose(got, want, rtol=2e-6 * np.sqrt(n), atol=2e-6 * np.sqrt(n))
    np.testing.assert_allclose(np.asarray(f(ct)), want, rtol=2e-6 * np.sqrt(n),
                               atol=2e-6 * np.sqrt(n))
    if cc.compiler() is not None:
        text = jitted.lower(ct).as_text()
        assert "cpu.nf4_gemm" in text and "transposed" in text, text
        if block % 16 == 0 and n % 32 == 0:
            assert "_mm512_reduce_add_ps" in jitted.lower(ct).as_text("source")


# --- differentiation ---------------------------------------------------------------------------


def test_gradients_reach_x_only_and_match_jax():
    q = nf4.quantize(_w((48, 24), seed=5), block_size=8)
    w = jnp.asarray(nf4.dequantize(q))
    x = _w((3, 48), seed=6)
    c = _w((3, 24), seed=7)

    def f(x):
        return fx.numpy.sum(fx.numpy.tanh(nf4.matmul(x, q)) * c)

    def g(x):
        return jnp.sum(jnp.tanh(x @ w) * c)

    want = np.asarray(jax.grad(g)(x))
    tol = dict(rtol=1e-4, atol=1e-5)  # the forward products' sums differ in order
    np.testing.assert_allclose(np.asarray(fx.grad(f)(x)), want, **tol)
    np.testing.assert_allclose(np.asarray(fx.jit(fx.grad(f))(x)), want, **tol)
    def per_row(r, cr):  # batching moves the mapped axis into the rows
        return fx.numpy.sum(fx.numpy.tanh(nf4.matmul(r[None], q)) * cr)

    rows = fx.vmap(fx.grad(per_row))(x, c)
    np.testing.assert_allclose(np.asarray(rows), want, **tol)
    # The base is integer storage, not a differentiable input.
    with pytest.raises(TypeError, match="uint8"):
        fx.grad(lambda q: fx.numpy.sum(nf4.matmul(x, q)))(q)
    # Its float scales, reached directly through the primitive, refuse a tangent.
    scales = q.block_scales()
    with pytest.raises(TypeError, match="frozen"):
        fx.jvp(lambda s: nf4.nf4_dot_p.bind(x, q.packed, s, nf4.CODE, block_size=8,
                                            transposed=False), (scales,), (scales,))
