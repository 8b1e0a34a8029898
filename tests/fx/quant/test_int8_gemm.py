"""int8 × int8 → int32 ``dot_general``: bit-exact against NumPy's int32 products, eagerly and
under ``fx.jit`` (where the CPU library's generated kernel ``cpu.int8_gemm`` computes it, its
epilogue fused), and vectorized by GCC to the x86 dot-product instructions."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import fx
from fx import lax
from fx.runtime import cc

# (M, K, N): odd sizes, tiles' edges, a K the vector width does not divide, single rows.
SHAPES = [(3, 5, 7), (17, 129, 33), (1, 784, 10)]
MORE_SHAPES = [(1, 1, 1), (5, 300, 7), (4, 64, 4), (9, 64, 130), (64, 1024, 96), (2, 4097, 3)]


def _operands(m, k, n, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    a.flat[0], b.flat[0] = -128, -128  # the extremes, whose product a uint8 offset must keep
    return a, b


def _reference(a, b, lc=1, rc=0):
    a32, b32 = a.astype(np.int32), b.astype(np.int32)
    return (a32 if lc == 1 else a32.T) @ (b32 if rc == 0 else b32.T)


def _dot(lc, rc):
    def f(a, b):
        return lax.dot_general(a, b, (((lc,), (rc,)), ((), ())),
                               preferred_element_type=np.int32)
    return f


@pytest.mark.parametrize("m,k,n", SHAPES + [pytest.param(*s, marks=pytest.mark.slow)
                                            for s in MORE_SHAPES])
@pytest.mark.parametrize("lc,rc", [(1, 0), (1, 1), (0, 0)])
def test_int8_dot_is_exact(m, k, n, lc, rc):
    a, b = _operands(m, k, n, seed=m * 1000 + n)
    a = a if lc == 1 else np.ascontiguousarray(a.T)
    b = b if rc == 0 else np.ascontiguousarray(b.T)
    want = _reference(a, b, lc, rc)
    f = _dot(lc, rc)
    eager = np.asarray(f(a, b))
    assert eager.dtype == np.int32 and np.array_equal(eager, want)
    jitted = fx.jit(f)
    got = np.asarray(jitted(a, b))
    assert got.dtype == np.int32 and np.array_equal(got, want)
    if cc.compiler() is not None:
        assert "cpu.int8_gemm" in jitted.lower(a, b).as_text("selection")
        # From 16 rows of a K-contiguous A on, the VNNI microkernel (its loop-IR fallback
        # beside it) computes the product.
        source = jitted.lower(a, b).as_text("source")
        assert ("_mm512_dpbusd_epi32" in source) == (m >= 16 and lc == 1)


def test_int8_dot_saturating_extremes():
    # All -128: every product is 2^14, the sum K * 2^14 (no int16 saturation anywhere).
    a = np.full((5, 1000), -128, np.int8)
    b = np.full((1000, 6), -128, np.int8)
    got = np.asarray(fx.jit(_dot(1, 0))(a, b))
    assert np.array_equal(got, np.full((5, 6), 1000 * 16384, np.int32))


def test_epilogue_fused_dequantization():
    a, b = _operands(6, 70, 11, seed=3)
    scale = np.linspace(0.01, 0.1, 11, dtype=np.float32)
    bias = np.arange(11, dtype=np.float32)

    def f(a, b):
        acc = _dot(1, 0)(a, b)
        return fx.numpy.maximum(acc.astype(np.float32) * scale + bias, 0.0)

    jitted = fx.jit(f)
    want = np.maximum(_reference(a, b).astype(np.float32) * scale + bias, 0.0)
    np.testing.assert_array_equal(np.asarray(jitted(a, b)), want)
    text = jitted.lower(a, b).as_text()
    if cc.compiler() is not None:
        step = re.search(r"gemm\[dot_general[^\]]*\]\n\s+impl: (\S+)", text)
        assert step is not None and step.group(1) == "cpu.int8_gemm", text


# --- int8 convolutions: patches times the kernel as a matrix -------------------------------

# (lhs, rhs, out layouts, strides, padding, rhs dilation, kernel selected): the int8 GEMM runs
# them where the kernel's layout is a matrix in the patches' order ((O, *window, I), as
# fx.quant stores it, or HWIO); other layouts are exact through NumPy.
CONVS = [
    ("NHWC", "OHWI", "NHWC", (1, 1), "SAME", (1, 1), True),
    ("NHWC", "HWIO", "NHWC", (2, 1), ((2, 0), (1, 1)), (1, 1), True),
    ("NCHW", "OHWI", "NCHW", (1, 2), "VALID", (2, 1), True),
    ("NHWC", "OIHW", "NHWC", (1, 1), "SAME", (1, 1), False),
]


@pytest.mark.parametrize("specs", CONVS, ids=lambda s: "-".join(map(str, s[:3])))
def test_int8_conv_is_exact(specs):
    import jax

    lhs_s, rhs_s, out_s, stride, pad, dil, int8_kernel = specs
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, {"NHWC": (2, 7, 6, 3), "NCHW": (2, 3, 7, 6)}[lhs_s])
    w = rng.integers(-128, 128, {"HWIO": (3, 2, 3, 5), "OIHW": (5, 3, 3, 2),
                                 "OHWI": (5, 3, 2, 3)}[rhs_s])
    x, w = x.astype(np.int8), w.astype(np.int8)
    x.flat[0] = w.flat[0] = -128
    dn = lax.conv_dimension_numbers(x.shape, w.shape, (lhs_s, rhs_s, out_s))

    def f(x, w):
        return lax.conv_general_dilated(x, w, stride, pad, rhs_dilation=dil,
                                        dimension_numbers=dn, preferred_element_type=np.int32)

    want = np.asarray(jax.lax.conv_general_dilated(
        x, w, stride, pad, rhs_dilation=dil, dimension_numbers=(lhs_s, rhs_s, out_s),
        preferred_element_type=np.int32))
    jitted = fx.jit(f)
    got = np.asarray(jitted(x, w))
    assert got.dtype == np.int32 and np.array_equal(got, want)
    assert np.array_equal(np.asarray(f(x, w)), want)
    if cc.compiler() is not None:
        assert ("cpu.int8_gemm" in jitted.lower(x, w).as_text("selection")) == int8_kernel


# --- what GCC makes of the tiles --------------------------------------------------------------

_X86 = platform.machine().lower() in ("x86_64", "amd64")
# -march level -> an instruction its code must hold in the tile loops.
LEVELS = {"icelake-server": "vpdpbusd", "alderlake": "vpdpbusd", "x86-64-v3": "vpmaddwd"}


@pytest.mark.skipif(not _X86 or shutil.which("gcc") is None, reason="needs GCC for x86-64")
def test_tiles_use_the_dot_product_instructions():
    a, b = _operands(64, 256, 64)
    source = fx.jit(_dot(1, 1)).lower(a, np.ascontiguousarray(b.T)).as_text("source")
    source = source[source.index("#include"):] if "#include" in source else source
    flags = [f for f in cc.FLAGS if not f.startswith("-march") and f not in ("-shared", "-fPIC")]
    for march, instruction in LEVELS.items():
        asm = subprocess.run(["gcc", *flags, f"-march={march}", "-S", "-o", "-", "-x", "c", "-"],
                             input=source, capture_output=True, text=True, check=True).stdout
        assert instruction in asm, march
    # With AVX-512 the tiles ask for 512-bit vectors (GCC's default is 256 even there).
    asm = subprocess.run(["gcc", *flags, "-march=icelake-server", "-S", "-o", "-", "-x", "c",
                          "-"], input=source, capture_output=True, text=True, check=True).stdout
    assert re.search(r"vpdpbusd\s+.*%zmm", asm), "no 512-bit vpdpbusd"


# --- constant weights packed once, at compile time (pack_int8_weights) ------------------------

# (M, K, N, weight layout): batch-1 rows, K not a multiple of 4, N not a multiple of 32, a
# tile's worth of rows plus a few, the (N, K) layout fx.quant stores and the (K, N) one.
PACKED = [(1, 784, 10, "nk"), (3, 5, 33, "kn"), (1, 130, 70, "kn"), (19, 64, 64, "nk")]


@pytest.mark.parametrize("m,k,n,layout", PACKED)
def test_constant_weight_is_packed_at_compile_time_and_exact(m, k, n, layout):
    a, b = _operands(m, k, n, seed=k + n)
    w = np.ascontiguousarray(b.T) if layout == "nk" else b
    rc = 1 if layout == "nk" else 0
    scale = np.linspace(0.5, 2.0, n, dtype=np.float32)

    def f(a):  # the weight is closed over: a constant of the compiled program
        acc = _dot(1, rc)(a, w)
        return acc, acc.astype(np.float32) * scale

    jitted = fx.jit(f)
    acc, scaled = (np.asarray(v) for v in jitted(a))
    assert np.array_equal(acc, _reference(a, b))
    assert np.array_equal(scaled, _reference(a, b).astype(np.float32) * scale)
    if cc.compiler() is not None:
        text = jitted.lower(a).as_text()
        assert "B packed at compile time" in text and "int8_packed_dot" in text, text
        assert "_mm512_dpbusd_epi32" in jitted.lower(a).as_text("source")


def test_packed_panels_layout():
    from fx.lowering.kernels.int8.pack_int8_weights import PANEL, pack

    rng = np.random.default_rng(5)
    b = rng.integers(-128, 128, (7, 40)).astype(np.int8)  # K=7 -> 8, N=40 -> 64
    panels, colsums = pack(b)
    assert panels.ctypes.data % 64 == 0 and panels.size == 2 * 2 * PANEL * 4
    p = panels.reshape(2, 2, PANEL, 4)  # [N'/32][K'/4][32][4]
    for k in range(8):
        for n in range(64):
            want = b[k, n] if k < 7 and n < 40 else 0
            assert p[n // 32, k // 4, n % 32, k % 4] == want
    assert np.array_equal(colsums[:40], 128 * b.astype(np.int32).sum(axis=0))
    assert not colsums[40:].any()


def test_packed_int8_conv_weights_and_threads():
    # A quantized convolution's kernel is read through a reshape: packed all the same; and
    # the compiled program called from several threads at once gives every caller its bits.
    import concurrent.futures as cf

    rng = np.random.default_rng(8)
    w = rng.integers(-128, 128, (6, 3, 3, 4)).astype(np.int8)  # (O, H, W, I)
    dn = lax.conv_dimension_numbers((2, 6, 5, 4), w.shape, ("NHWC", "OHWI", "NHWC"))

    def f(x):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn,
                                        preferred_element_type=np.int32)

    xs = [rng.integers(-128, 128, (2, 6, 5, 4)).astype(np.int8) for _ in range(8)]
    wants = [np.asarray(f(x)) for x in xs]  # eager: NumPy's integer convolution
    jitted = fx.jit(f)
    if cc.compiler() is not None:
        assert "B packed at compile time" in jitted.lower(xs[0]).as_text("selection")
    with cf.ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            gots = list(pool.map(lambda x: np.asarray(jitted(x)), xs))
            assert all(np.array_equal(g, w_) for g, w_ in zip(gots, wants, strict=True))


@pytest.mark.skipif(not _X86 or shutil.which("gcc") is None, reason="needs GCC for x86-64")
def test_packed_kernel_compiles_at_every_level():
    # The packed microkernel under AVX-512 VNNI; the loop-IR fallback (reading B as it is)
    # below it: both in the one source, each -march compiles it.
    a, b = _operands(1, 256, 64)
    w = np.ascontiguousarray(b.T)
    source = fx.jit(lambda a: _dot(1, 1)(a, w)).lower(a).as_text("source")
    source = source[source.index("#include"):] if "#include" in source else source
    _assembles_to(source, {"icelake-server": r"vpdpbusd\s+.*%zmm",
                           # one row: 16-bit products, exact for uint8 x int8
                           "x86-64-v3": r"vpm(addwd|ullw)\s+.*%ymm",
                           "x86-64-v2": r"pm(addwd|ullw)\s+.*%xmm"})


def _assembles_to(source: str, instructions: dict) -> None:
    """``source`` compiled for each -march holds an instruction matching its pattern."""
    flags = [f for f in cc.FLAGS if not f.startswith("-march") and f not in ("-shared", "-fPIC")]
    for march, instruction in instructions.items():
        asm = subprocess.run(["gcc", *flags, f"-march={march}", "-S", "-o", "-", "-x", "c",
                              "-"], input=source, capture_output=True, text=True,
                             check=True).stdout
        assert re.search(instruction, asm), march


# --- an int8 convolution by a constant kernel reading its input in place (int8_conv) --------

# (input NHWC, kernel layout, window, strides, padding, window dilation, output features):
# channels whole words (4, 8), tiles with a partial last one (M % 8), columns past 32 and short
# of it. fx.quant's (O, *window, I) kernels run in place; HWIO ones keep the patches gather.
IN_PLACE = [
    ((2, 4, 4, 16), "OHWI", (3, 3), (1, 1), "SAME", (1, 1), 32),
    ((3, 7, 5, 4), "HWIO", (3, 2), (2, 1), ((2, 0), (1, 1)), (1, 1), 5),
    ((1, 6, 6, 8), "OHWI", (2, 3), (1, 2), "VALID", (2, 1), 40),
    ((2, 3, 5, 4), "HWIO", (1, 1), (1, 1), ((1, 1), (0, 2)), (1, 1), 3),
]


def _in_place_case(case, seed=9):
    shape, layout, window, stride, pad, dil, o = case
    rng = np.random.default_rng(seed)
    c = shape[-1]
    w_shape = (o, *window, c) if layout == "OHWI" else (*window, c, o)
    w = rng.integers(-128, 128, w_shape).astype(np.int8)
    x = rng.integers(-128, 128, shape).astype(np.int8)
    x.flat[0] = w.flat[0] = -128
    dn = lax.conv_dimension_numbers(shape, w.shape, ("NHWC", layout, "NHWC"))

    def f(x):  # the kernel closed over: a constant, packed at compile time
        return lax.conv_general_dilated(x, w, stride, pad, rhs_dilation=dil,
                                        dimension_numbers=dn, preferred_element_type=np.int32)

    return f, x


@pytest.mark.parametrize("case", IN_PLACE, ids=lambda c: f"{c[1]}-{c[2]}-{c[3]}")
def test_int8_conv_reading_its_input_in_place_is_exact(case):
    f, x = _in_place_case(case)
    want = np.asarray(f(x))  # eager: NumPy's integer convolution
    jitted = fx.jit(f)
    got = np.asarray(jitted(x))
    assert got.dtype == np.int32 and got.tobytes() == want.tobytes()
    if cc.compiler() is not None:
        text = jitted.lower(x).as_text()
        in_place = case[1] == "OHWI"
        assert ("cpu.int8_conv" in text) == in_place == ("conv_patches" not in text), text


@pytest.mark.skipif(cc.compiler() is None or not _X86, reason="needs a C compiler for x86-64")
def test_int8_without_byte_dot_products_runs_exactly_in_float32_blas():
    # On x86 without VNNI (FX_MARCH=x86-64-v3: AVX2) an int8 product of K <= 1024 runs as
    # float32 BLAS, exact (every partial sum an integer below 2**24: K = 1024 of -128 * -128
    # is 2**24 itself); K = 1025 stays integer code; convolutions keep the patches gather.
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import numpy as np, fx, sys
        from fx import lax
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_int8_gemm import IN_PLACE, _in_place_case, _dot, _reference
        from fx.runtime import cc
        assert cc.MARCH == "x86-64-v3"
        for k, impl in ((1024, "cpu.int8_gemm_f32 "), (1025, "cpu.int8_gemm ")):
            a = np.full((128, k), -128, np.int8)
            w = np.full((k, 128), -128, np.int8)
            w[0, 0] = 127
            f = lambda a: _dot(1, 0)(a, w)
            jitted = fx.jit(f)
            assert impl in jitted.lower(a).as_text("selection"), k
            assert np.asarray(jitted(a)).tobytes() == _reference(a, w).tobytes(), k
        for case in IN_PLACE:
            f, x = _in_place_case(case)
            jitted = fx.jit(f)
            assert "cpu.int8_conv" not in jitted.lower(x).as_text("selection")
            assert np.asarray(jitted(x)).tobytes() == np.asarray(f(x)).tobytes(), case
        print("ok")
    """)
    env = dict(os.environ, FX_MARCH="x86-64-v3")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-3000:]


@pytest.mark.skipif(not _X86 or shutil.which("gcc") is None, reason="needs GCC for x86-64")
def test_int8_conv_kernel_compiles_at_every_level():
    # The tiles under AVX-512 VNNI (a vpdpbusd per 16 columns); the plain C loops below it,
    # whose integer sums GCC vectorizes over the channels.
    f, x = _in_place_case(IN_PLACE[0])
    source = fx.jit(f).lower(x).as_text("source")
    _assembles_to(source[source.index("#include"):],
                  {"icelake-server": r"vpdpbusd\s+.*%zmm",
                   "x86-64-v3": r"vpm(addwd|ullw|ulld)\s+.*%ymm",
                   "x86-64-v2": r"pm(addwd|ullw|ulld)\s+.*%xmm"})
