"""Float32 convolutions reading their input in place on CUDA
(``fx.lowering.kernels.cuda.conv_in_place``): the forward convolution, the input gradient and
the weight gradient each lower to the generated kernel (no patches gather, no cuBLAS), the
bias and activation run in its store, and its CUDA source, run on the CPU (emulated threads
and barriers, ``cuda_emulation``), computes what the lowered program's NumPy form computes,
for the geometries of the CPU kernel's tests, tile shapes of every size. The suite compiles
every kernel for sm_90 with nvcc (``conftest``); tests marked ``cuda`` run on a GPU."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from conv_geometries import CONVS, conv, operands
from cuda_emulation import build, run

import fx
import fx.numpy as fnp
from fx.devices import cupy_module
from fx.jaxpr import Literal
from fx.lowering.kernels.cuda import conv_in_place
from fx.lowering.pipeline import lower
from fx.lowering.render.renderer import CUDA, render_module

needs_gpp = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (C++20)")
IMPL = "cuda.in_place_conv"


def _loss(f):
    def loss(x, w):
        y = f(x, w)
        return fnp.sum(y * fnp.cos(y))

    return loss


def _values(low, args) -> dict:
    """Every variable of the lowered program's jaxpr, computed by its primitives' NumPy
    implementations (``conv_in_place``'s: the gather and a product)."""
    jaxpr = low.jaxpr
    env = dict(zip(jaxpr.invars, [np.asarray(a) for a in [*low.consts, *args]]))

    def read(v):
        return np.asarray(v.value) if isinstance(v, Literal) else env[v]

    for eqn in jaxpr.eqns:
        outs = eqn.primitive.impl(*[read(v) for v in eqn.invars], **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        env.update(zip(eqn.outvars, [np.asarray(o) for o in outs]))
    return env


def _emulate(low, args, scale) -> tuple[int, dict]:
    """Runs the kernel of each step of ``low`` that has one (its CUDA source compiled for the
    CPU) on the values the NumPy form computes for the step's inputs, and checks its outputs
    against that form's; returns how many steps ran and every value."""
    env = _values(low, args)
    steps = [s for s in low.steps if s.choice.impl.name == IMPL]
    for s in steps:
        lib = build(render_module([s.kernel], CUDA), s.kernel.name)
        arrays = [np.ascontiguousarray(env[v]) for v in s.inputs]
        arrays += [np.full(v.aval.shape, np.nan, v.aval.dtype) for v in s.outputs]
        run(lib, arrays, s.kernel.grid[:2], s.kernel.block[0])
        for v, got in zip(s.outputs, arrays[len(s.inputs):]):
            np.testing.assert_allclose(got, env[v], rtol=1e-4, atol=1e-5 * scale)
    return len(steps), env


# Each row compiles three kernels for the CPU and runs them on emulated threads: the default
# run keeps these (dilation and padding, 3-D, cropping and 40 columns, NCHW strided).
DEFAULT_ROWS = (2, 4, 8, 10)


@needs_gpp
@pytest.mark.parametrize("lhs,rhs,params", [
    pytest.param(*c, marks=() if i in DEFAULT_ROWS else pytest.mark.slow)
    for i, c in enumerate(CONVS)])
def test_kernel_matches_the_numpy_form_and_eager_with_gradients(lhs, rhs, params):
    x, w = operands(lhs, rhs)
    f = conv(params)
    k = int(np.prod(rhs)) // max(rhs)
    grad = fx.grad(_loss(f), argnums=(0, 1))
    low = lower(fx.make_jaxpr(grad)(x, w), "cuda")
    ran, env = _emulate(low, (x, w), 10 * k)
    assert ran >= 1  # (a forward product of at most SMALL_K terms is a sum of products)
    want = grad(x, w)  # eager: conv_general_dilated and its transposes
    for v, b in zip(low.jaxpr.outvars, want):
        np.testing.assert_allclose(env[v], np.asarray(b), rtol=1e-4, atol=1e-4 * k)


def test_forward_and_both_gradients_run_in_place():
    lhs, rhs, params = CONVS[9]
    x, w = operands(lhs, rhs)
    grad = fx.grad(_loss(conv(params)), argnums=(0, 1))
    text = lower(fx.make_jaxpr(grad)(x, w), "cuda").as_text()
    assert len(re.findall(r"impl: " + re.escape(IMPL) + " ->", text)) == 3, text
    assert "conv_patches" not in text and "cublas" not in text, text


@needs_gpp
def test_bias_and_relu_run_in_the_store():
    lhs, rhs, params = CONVS[1]
    x, w = operands(lhs, rhs)
    b = np.linspace(-1, 1, rhs[-1]).astype(np.float32)

    def f(x, w, b):
        return fnp.maximum(conv(params)(x, w) + b, 0.0)

    low = lower(fx.make_jaxpr(f)(x, w, b), "cuda")
    text = low.as_text()
    assert re.search(r"gemm\[conv_in_place, [^\]]*add[^\]]*max\]\n\s+impl: " + re.escape(IMPL),
                     text), text
    assert "cublas" not in text
    ran, env = _emulate(low, (x, w, b), 30)
    assert ran == 1
    (out,) = low.jaxpr.outvars
    np.testing.assert_allclose(env[out], np.asarray(f(x, w, b)), rtol=1e-4, atol=1e-4)


@needs_gpp
@pytest.mark.parametrize("lhs,rhs,tile", [
    ((1, 184, 184, 2), (3, 3, 2, 100), (128, 128)),
    ((1, 96, 96, 2), (3, 3, 2, 48), (64, 64)),
    ((2, 12, 12, 8), (3, 3, 8, 20), (32, 32)),
])
def test_every_tile_shape(lhs, rhs, tile):
    x, w = operands(lhs, rhs, seed=1)
    params = dict(window_strides=(1, 1), padding="SAME",
                  dimension_numbers=("NHWC", "HWIO", "NHWC"))
    low = lower(fx.make_jaxpr(lambda x, w: fnp.tanh(conv(params)(x, w)))(x, w), "cuda")
    (step,) = [s for s in low.steps if s.choice.impl.name == IMPL]
    assert f"{tile[0]}x{tile[1]} block tiles" in step.choice.reason
    ran, _ = _emulate(low, (x, w), 100)
    assert ran == 1


def test_tile_shapes():
    assert conv_in_place.tile(32 * 34 * 32, 32) == (128, 32)  # forward: many rows
    assert conv_in_place.tile(32 * 18 * 16, 64) == (64, 64)
    assert conv_in_place.tile(576, 64) == (32, 64)  # weight gradient: few outputs
    assert conv_in_place.tile(100, 200) == (32, 128)


def test_float16_convolutions_keep_their_form():
    x, w = operands((2, 6, 6, 4), (3, 3, 4, 8))
    p = dict(window_strides=(1, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    half = lower(fx.make_jaxpr(conv(p))(x.astype(np.float16), w.astype(np.float16)), "cuda")
    assert "conv_in_place" not in half.as_text()


@pytest.mark.cuda
@pytest.mark.skipif(cupy_module() is None, reason="needs a CUDA device and CuPy")
@pytest.mark.parametrize("lhs,rhs,params", CONVS)
def test_on_the_gpu_matches_eager_with_gradients(lhs, rhs, params):
    x, w = operands(lhs, rhs)
    f = conv(params)
    k = int(np.prod(rhs)) // max(rhs)
    grad = fx.grad(_loss(f), argnums=(0, 1))
    jitted = fx.jit(grad, backend="cuda")
    assert len(re.findall(re.escape(IMPL) + " ->", jitted.lower(x, w).as_text())) == 3
    got = jitted(fx.device_put(x, "cuda"), fx.device_put(w, "cuda"))
    for a, b in zip(got, grad(x, w)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-4 * k)
