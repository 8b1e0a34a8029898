"""Float32 convolutions run by the generated kernel reading its input in place
(``fx.lowering.kernels.cpu.conv_in_place``): jitted convolutions and their gradients agree with
eager ``conv_general_dilated`` for every layout, stride, padding, dilation and rank; the
forward pass, the input gradient and the weight gradient all run in place (no patches
gather left), the bias and activation after a convolution run in its store, and the kernel
compiles to fused multiply-adds at every ISA level."""

from __future__ import annotations

import platform
import re
import shutil
import subprocess

import numpy as np
import pytest
from conv_geometries import CONVS, conv, operands

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.lowering.kernels.cpu import conv_in_place
from fx.runtime import cc

pytestmark = pytest.mark.skipif(cc.compiler() is None, reason="needs a C compiler")

def _close(a, b, scale):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("lhs,rhs,params", CONVS)
def test_jit_matches_eager_with_gradients(lhs, rhs, params):
    x, w = operands(lhs, rhs)
    f = conv(params)
    k = int(np.prod(rhs)) // max(rhs)
    _close(fx.jit(f)(x, w), f(x, w), k)

    def loss(x, w):
        y = f(x, w)
        return fnp.sum(y * fnp.cos(y))

    g_jit = fx.jit(fx.grad(loss, argnums=(0, 1)))(x, w)
    g_eager = fx.grad(loss, argnums=(0, 1))(x, w)
    for a, b in zip(g_jit, g_eager):
        _close(a, b, 10 * k)


def _steps(f, *args) -> str:
    return fx.jit(f).lower(*args).compile().as_text()


def test_forward_and_both_gradients_run_in_place():
    lhs, rhs, params = CONVS[9]
    x, w = operands(lhs, rhs)
    f = conv(params)
    text = _steps(fx.grad(lambda x, w: fnp.sum(f(x, w) ** 2), argnums=(0, 1)), x, w)
    assert len(re.findall(r"impl: cpu\.in_place_conv ->", text)) == 3, text
    assert "conv_patches" not in text, text


def test_bias_and_relu_run_in_the_store():
    lhs, rhs, params = CONVS[9]
    x, w = operands(lhs, rhs)
    b = np.linspace(-1, 1, rhs[-1]).astype(np.float32)
    f = lambda x, w, b: fnp.maximum(conv(params)(x, w) + b, 0.0)  # noqa: E731
    text = _steps(f, x, w, b)
    assert re.search(r"gemm\[conv_in_place, [^\]]*add[^\]]*max", text), text
    assert len(re.findall(r"^  step ", text, re.M)) <= 2, text  # (a pad, the conv)
    _close(fx.jit(f)(x, w, b), f(x, w, b), 400)


def test_other_dtypes_and_groups_keep_the_gather():
    # float64 and grouped convolutions are not the kernel's: they keep their other forms.
    x, w = operands((2, 6, 6, 4), (3, 3, 2, 4))
    grouped = lambda x, w: lax.conv_general_dilated(  # noqa: E731
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=2)
    assert "conv_in_place" not in _steps(grouped, x, w)
    _close(fx.jit(grouped)(x, w), grouped(x, w), 20)


@pytest.mark.parametrize("length,most,rows", [(14, 8, 7), (28, 14, 14), (16, 14, 8),
                                              (5, 14, 5), (1, 8, 1), (13, 8, 7), (100, 6, 6)])
def test_tile_rows_fewest_tiles_then_least_waste(length, most, rows):
    assert conv_in_place._rows(length, most) == rows


def test_tile_dimension_with_the_least_waste():
    # the weight gradient of a one-channel 5x5 layer: rows (kh, kw, c=1) tile along kw, not c
    r, v, d = conv_in_place._tile_shape(16, 16, (5, 5, 1))
    assert (r, v, d) == (5, 1, 1)
    r, v, d = conv_in_place._tile_shape(32, 16, (64, 14, 14))
    assert (r, v, d) == (7, 2, 2)
    assert conv_in_place._tile_shape(200, 8, (3, 9))[:2] == (3, 4)


_X86 = platform.machine() in ("x86_64", "AMD64")


@pytest.mark.skipif(not _X86 or shutil.which("gcc") is None, reason="needs GCC for x86-64")
@pytest.mark.parametrize("march,lanes,instruction", [
    ("skylake-avx512", 16, r"vfmadd\w+ps\s+.*%zmm"),
    ("x86-64-v3", 8, r"vfmadd\w+ps\s+.*%ymm"),
    ("x86-64-v2", 4, r"mulps\s+.*%xmm"),
])
def test_kernel_compiles_at_every_level(monkeypatch, march, lanes, instruction):
    # The program (its kernels call the driver and the tile by name) and the tile library
    # both compile for the level; the tile's arithmetic is fused multiply-adds where it has
    # them.
    monkeypatch.setattr(conv_in_place, "lanes", lambda: lanes)
    lhs, rhs, params = CONVS[9]
    x, w = operands(lhs, rhs)
    source = fx.jit(conv(params)).lower(x, w).as_text("source")
    (shape,) = set(re.findall(r"\bfx_tile_(\d+)x(\d+)x(\d+)_", source))
    assert int(shape[2]) == lanes
    tile = conv_in_place.tile_library(*map(int, shape))
    assert tile.name in source
    flags = [f for f in cc.FLAGS if not f.startswith("-march") and f not in ("-shared", "-fPIC")]
    asm = [subprocess.run(["gcc", *flags, f"-march={march}", "-S", "-o", "-", "-x", "c", "-"],
                          input=text, capture_output=True, text=True, check=True).stdout
           for text in (source, tile.source)]
    assert re.search(instruction, asm[1]), march


# --- products: the same kernel for a dot_general of plain operands --------------------------

SMALL_DOTS = [  # lhs shape, rhs shape, contracting dims
    ((64, 128), (128, 128), ((1,), (0,))),      # a dense layer
    ((128, 64), (128, 10), ((0,), (0,))),       # its weight gradient: x.T @ g
    ((64, 10), (128, 10), ((1,), (1,))),        # its input gradient: g @ w.T
    ((3, 5, 6), (6, 5, 9), ((1, 2), (1, 0))),   # two contracted dims, out of order
]


@pytest.mark.parametrize("lhs,rhs,dims", SMALL_DOTS)
def test_products_run_as_tiles_and_match_eager(lhs, rhs, dims):
    a, b = operands(lhs, rhs, seed=3)
    f = lambda a, b: fnp.maximum(lax.dot_general(a, b, (dims, ((), ()))), 0.0)  # noqa: E731
    text = _steps(f, a, b)
    assert "impl: cpu.tiled_gemm" in text, text
    assert len(re.findall(r"^  step ", text, re.M)) == 1, text  # relu in the store
    _close(fx.jit(f)(a, b), f(a, b), 100)


def test_large_products_run_as_tiles_and_vectors_are_one_row():
    a, b = operands((256, 784), (784, 512), seed=4)
    assert "impl: cpu.tiled_gemm" in _steps(lambda a, b: a @ b, a, b)
    _close(fx.jit(lambda a, b: a @ b)(a, b), a @ b, 800)
    v, m = operands((7,), (7, 33), seed=5)  # (the pipeline reads v as one row, (1, 7))
    for f in (lambda v, m: v @ m, lambda v, m: m.T @ v):
        _close(fx.jit(f)(v, m), f(v, m), 10)


def test_batched_products_keep_blas():
    a, b = operands((4, 16, 32), (4, 32, 8), seed=7)
    f = lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))))  # noqa: E731
    assert "impl: cpu.blas_gemm" in _steps(f, a, b)


def test_conv_in_a_compiled_loop_body():
    # A compiled loop renames its body's kernels: the tile's text names the kernel's vector
    # type and helpers by the kernel's final name.
    x, w = operands((2, 6, 6, 4), (3, 3, 4, 4), seed=6)
    same = conv(dict(window_strides=(1, 1), padding="SAME",
                     dimension_numbers=("NHWC", "HWIO", "NHWC")))
    f = lambda x, w: lax.fori_loop(0, 3, lambda i, c: fnp.tanh(same(c, w)), x)  # noqa: E731
    assert "native fx_loop" in _steps(f, x, w)  # the loop compiled whole
    _close(fx.jit(f)(x, w), f(x, w), 40)


def test_kernels_call_the_driver_and_tile_libraries():
    # Two products of other sizes with one tile shape: the program defines neither the driver
    # nor the tile (runtime libraries, built once per machine); both kernels call the same.
    a, b, c = operands((64, 128), (128, 128), seed=8) + operands((128, 96), (1,), seed=9)[:1]
    f = lambda a, b, c: (a @ b, fnp.tanh(a @ c))  # noqa: E731
    source = fx.jit(f).lower(a, b, c).as_text("source")
    assert "fx_tiled_digits" not in source
    calls = re.findall(r"\b(fx_tiled_run_\w+)\(&g, .*, (fx_tile_\w+), ", source)
    assert len(calls) == 2 and len(set(calls)) == 1, calls
    for got, want in zip(fx.jit(f)(a, b, c), f(a, b, c)):
        _close(got, want, 200)


def test_inner_run_of_k_spans_a_window_row_of_channels():
    # NHWC, 5x5 window over 3 channels: a window row's kw * C = 15 taps are one apart in x,
    # so the tile's inner loop runs over 15 elements for each of the 5 window rows; with a
    # dilation they are not one apart, and the inner run is one window dimension (3 or 5).
    x, w = operands((2, 12, 12, 3), (5, 5, 3, 8), seed=10)
    for dilation, runs in ((1, {(5, 15)}), (2, {(25, 3), (15, 5)})):
        f = conv(dict(window_strides=(1, 1), padding="VALID", rhs_dilation=(dilation,) * 2,
                      dimension_numbers=("NHWC", "HWIO", "NHWC")))
        source = fx.jit(f).lower(x, w).as_text("source")
        (got,) = re.findall(r"M, N, K, (?:\d+, ){3}(\d+), (\d+),", source)
        assert tuple(map(int, got)) in runs, (dilation, got)
        _close(fx.jit(f)(x, w), f(x, w), 100)
