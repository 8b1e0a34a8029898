"""Float32 3x3 convolutions by Winograd F(2x2, 3x3) and F(4x4, 3x3)
(``fx.lowering.kernels.cpu.winograd``): each variant, forced, agrees with jax's
``conv_general_dilated`` forward and in the input gradient, over whole and partial tiles,
channel counts off the vector width and layouts read through a transpose; its error stays
within ``winograd.error_bound`` on random and adversarial inputs; operator selection takes it
only for the layers it applies to; and the kernel compiles to vector code at every ISA level."""

from __future__ import annotations

import dataclasses
import math
import platform
import re
import shutil
import subprocess

import jax
import numpy as np
import pytest

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.lowering.kernels.cpu import conv_in_place, winograd
from fx.lowering.select import op_impl
from fx.runtime import cc

pytestmark = [pytest.mark.skipif(cc.compiler() is None, reason="needs a C compiler"),
              pytest.mark.usefixtures("strict_fallbacks")]

NHWC = ("NHWC", "HWIO", "NHWC")
CONV_IMPLS = ("cpu.in_place_conv", "cpu.winograd_f2", "cpu.winograd_f4")


@pytest.fixture(params=[2, 4], ids=["f2", "f4"])
def only(request, monkeypatch):
    """Forces ``cpu.winograd_f<m>`` wherever it applies; the fixture's value is m."""
    force(monkeypatch, f"cpu.winograd_f{request.param}")
    return request.param


def force(monkeypatch, name):
    """Operator selection takes the convolution kernel ``name`` wherever it applies."""
    monkeypatch.setattr(op_impl, "registry", [
        dataclasses.replace(impl, cost=lambda g, c=0.0 if impl.name == name else math.inf: c)
        if impl.name in CONV_IMPLS else impl
        for impl in op_impl.registry])


def _compiled(f, *args):
    """``f`` compiled for ``args`` (each call lowers anew: the registry may be patched) and
    its program's text."""
    lowered = fx.jit(f).lower(*args)
    return lowered.compile(), lowered.as_text()


def _conv(padding="SAME", dn=NHWC):
    return lambda x, w: lax.conv_general_dilated(x, w, (1, 1), padding, dimension_numbers=dn)


def jax_conv(padding, dn):
    return lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), padding,
                                                     dimension_numbers=dn)


def _operands(xs, ws, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(xs).astype(np.float32),
            rng.standard_normal(ws).astype(np.float32))


def _jax(f, *args):
    return np.asarray(f(*(jax.numpy.asarray(a, np.float64) for a in args)))


def _assert_close(got, want, scale):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=0,
                               atol=2e-5 * scale)


GEOMETRIES = [  # input, kernel, padding, dimension numbers
    ((2, 8, 8, 16), (3, 3, 16, 32), "SAME", NHWC),      # whole tiles of both sizes
    ((2, 7, 9, 5), (3, 3, 5, 40), "SAME", NHWC),        # partial tiles, channels off a vector
    ((1, 6, 5, 3), (3, 3, 3, 7), "VALID", NHWC),        # one partial tile of F(4x4)
    ((2, 9, 5, 20), (3, 3, 20, 17), "VALID", NHWC),     # 7x3 outputs: partial tiles
    ((2, 6, 11, 9), (3, 3, 9, 6), ((2, 0), (1, 3)), NHWC),  # uneven padding
    ((2, 4, 7, 6), (8, 4, 3, 3), "SAME", ("NCHW", "OIHW", "NCHW")),  # read through transposes
]


@pytest.mark.parametrize("xs,ws,padding,dn", GEOMETRIES)
def test_forward_matches_jax(only, xs, ws, padding, dn):
    x, w = _operands(xs, ws)
    f = _conv(padding, dn)
    run, text = _compiled(f, x, w)
    assert f"impl: cpu.winograd_f{only} ->" in text, text
    _assert_close(run(x, w), _jax(jax_conv(padding, dn), x, w), 9 * max(xs))


def test_bias_relu_and_the_input_gradient_match_jax(only):
    x, w = _operands((2, 9, 7, 12), (3, 3, 12, 20), seed=1)
    b = np.linspace(-1, 1, 20).astype(np.float32)

    def loss(np_, conv):
        return lambda x, w, b: np_.sum(np_.maximum(conv(x, w) + b, 0.0) ** 2)

    f = fx.grad(loss(fnp, _conv()), argnums=0)
    run, text = _compiled(f, x, w, b)
    # the forward convolution with its bias and relu, and the input gradient
    assert len(re.findall(rf"impl: cpu\.winograd_f{only} ->", text)) == 2, text
    want = jax.grad(loss(jax.numpy, jax_conv("SAME", NHWC)), argnums=0)(
        *(jax.numpy.asarray(a, np.float64) for a in (x, w, b)))
    _assert_close(run(x, w, b), np.asarray(want), 2e4)


def test_in_a_compiled_loop_body(only):
    # A compiled loop renames its body's kernels: the generated transforms and tile name the
    # kernel's vector type and helpers by the kernel's final name.
    x, w = _operands((2, 6, 6, 8), (3, 3, 8, 8), seed=5)
    w = w / 8
    f = lambda x, w: lax.fori_loop(0, 3, lambda i, c: fnp.tanh(_conv()(c, w)), x)  # noqa: E731
    run, text = _compiled(f, x, w)
    assert "native fx_loop" in text and f"cpu.winograd_f{only})" in text, text

    def want(x, w):
        for _ in range(3):
            x = jax.numpy.tanh(jax_conv("SAME", NHWC)(x, w))
        return x

    _assert_close(run(x, w), _jax(want, x, w), 1)


# --- rounding ---------------------------------------------------------------------------------

def _adversarial(c=24):
    """(name, x, w) in float64: random normal; large magnitudes; large alternating values
    whose sums cancel; one large pixel among small ones (its rounding error reaches the other
    outputs of its tile, which do not read it); channels over forty decades; magnitudes near
    the top of float32's range."""
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((2, 10, 10, c)), rng.standard_normal((3, 3, c, 16))
    yield "random", x, w
    yield "large", x * 1e15, w * 1e15
    signs = (-1.0) ** np.indices(x.shape).sum(0)
    yield "cancelling", 1e3 * signs + 1e-3 * x, np.abs(w)
    spike = 1e-3 * x
    spike[:, 5, 5, :] = 1e6
    yield "spike", spike, w
    yield "decades", x * np.logspace(-20, 20, c), w
    yield "near overflow", x * 1e34, w * 1e-2


@pytest.mark.parametrize("case", list(range(6)),
                         ids=[name for name, _, _ in _adversarial()])
def test_error_within_the_bound(only, case):
    # |fx - exact| <= winograd.error_bound: (C + 4a) * 2^-24 times the transforms of |x| and
    # |w| (see there), against the float64 convolution of the float32 operands.
    _, x, w = list(_adversarial())[case]
    x, w = x.astype(np.float32), w.astype(np.float32)
    run, _ = _compiled(_conv("VALID"), x, w)
    exact = _jax(jax_conv("VALID", NHWC), x, w)
    err = np.abs(np.asarray(run(x, w), np.float64) - exact)
    bound = winograd.error_bound(x, w, only)
    assert np.all(np.isfinite(err)), "overflow"
    worst = np.unravel_index(np.argmax(err / bound), err.shape)
    assert np.all(err <= bound), (worst, err[worst], bound[worst])


def test_error_against_the_direct_kernel(monkeypatch):
    # On random data F(2x2) is about as accurate as the direct kernel and F(4x4) a few bits
    # less: the bound's transforms of |x| and |w| overstate what random signs give.
    x, w = _operands((4, 12, 12, 64), (3, 3, 64, 32), seed=3)
    exact = _jax(jax_conv("SAME", NHWC), x, w)
    errors = {}
    for name in CONV_IMPLS:
        with monkeypatch.context() as m:
            force(m, name)
            run, text = _compiled(_conv(), x, w)
            assert f"impl: {name} ->" in text
            errors[name] = np.max(np.abs(np.asarray(run(x, w), np.float64) - exact))
    direct = errors["cpu.in_place_conv"]
    assert errors["cpu.winograd_f2"] <= 2 * direct, errors
    assert errors["cpu.winograd_f4"] <= 16 * direct, errors


def test_error_bound_scales_with_the_operands_and_channels():
    # linear in |x| and |w|, and at least (C + 4a) * 2^-24 times the direct form's sum of
    # |x| |w| (the transforms of absolute values only add terms)
    x, w = _operands((1, 8, 8, 6), (3, 3, 6, 4), seed=4)
    direct = _jax(jax_conv("VALID", NHWC), np.abs(x), np.abs(w))
    for m in (2, 4):
        bound = winograd.error_bound(x, w, m)
        np.testing.assert_allclose(winograd.error_bound(4 * x, w / 2, m), 2 * bound)
        assert np.all(bound >= (6 + 4 * (m + 2)) * 2.0 ** -24 * direct * (1 - 1e-12))


# --- selection --------------------------------------------------------------------------------

def test_selection_takes_winograd_only_where_it_applies_and_pays():
    x64, w64 = _operands((8, 16, 16, 64), (3, 3, 64, 64))
    text = _compiled(_conv(), x64, w64)[1]
    assert re.search(r"impl: cpu\.winograd_f\d -> k\d+ \(float32 Winograd F", text), text
    # three input channels: the transforms cost more than they save
    x3, w3 = _operands((8, 16, 16, 3), (3, 3, 3, 32))
    assert "impl: cpu.in_place_conv ->" in _compiled(_conv(), x3, w3)[1]
    # stride 2, a 5x5 window, rhs dilation: not Winograd's
    strided = lambda x, w: lax.conv_general_dilated(  # noqa: E731
        x, w, (2, 2), "SAME", dimension_numbers=NHWC)
    dilated = lambda x, w: lax.conv_general_dilated(  # noqa: E731
        x, w, (1, 1), "SAME", rhs_dilation=(2, 2), dimension_numbers=NHWC)
    for f, args in ((strided, (x64, w64)), (dilated, (x64, w64)),
                    (_conv(), _operands((8, 16, 16, 64), (5, 5, 64, 64)))):
        text = _compiled(f, *args)[1]
        assert "winograd" not in text and "impl: cpu.in_place_conv ->" in text, text


# --- code generation --------------------------------------------------------------------------

_X86 = platform.machine() in ("x86_64", "AMD64")


@pytest.mark.skipif(not _X86 or shutil.which("gcc") is None, reason="needs GCC for x86-64")
@pytest.mark.parametrize("march,lanes,instruction", [
    ("skylake-avx512", 16, r"vfmadd\w+ps\s+.*%zmm"),
    ("x86-64-v3", 8, r"vfmadd\w+ps\s+.*%ymm"),
    ("x86-64-v2", 4, r"mulps\s+.*%xmm"),
])
def test_kernel_compiles_at_every_level(monkeypatch, only, march, lanes, instruction):
    monkeypatch.setattr(conv_in_place, "lanes", lambda: lanes)
    x, w = _operands((2, 8, 8, 16), (3, 3, 16, 24))
    lowered = fx.jit(_conv()).lower(x, w)
    assert f"impl: cpu.winograd_f{only} ->" in lowered.as_text()
    flags = [f for f in cc.FLAGS if not f.startswith("-march") and f not in ("-shared", "-fPIC")]
    asm = subprocess.run(["gcc", *flags, f"-march={march}", "-S", "-o", "-", "-x", "c", "-"],
                         input=lowered.as_text("source"), capture_output=True, text=True,
                         check=True).stdout
    assert re.search(instruction, asm), march
