"""complex64 and complex128 in generated kernels: the parts (real, imag, complex, conj),
arithmetic, comparisons, selects, conversions and data movement compile to C (and CUDA)
kernels over {re, im} pairs, never NumPy steps. Operations exact on each part give eager's
bits; products, quotients and moduli (rounded more than once) agree with eager and jax to a
few ulps, special values (zeros, infinities, NaNs) included. Groups with other operations on
complex values (exp, reductions) stay NumPy steps.
"""

from __future__ import annotations

import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import compile_cuda_kernels
from cuda_emulation import build, run
from harness import assert_allclose, assert_bitwise

import fx
import fx.lax as flax
import fx.numpy as fnp
from fx.lowering.pipeline import lower

# Conversions of complex to real warn, as jax's; eager NumPy flags inf - inf and 0 * inf.
pytestmark = [pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning"),
              pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")]

COMPLEX = ("complex64", "complex128")
KERNELS = {"cpu.fused_elementwise"}

# Exact on each part: eager's bits. ``fn(np_, lax, a, b, x)``: complex a, b; real x.
EXACT = [
    ("add", lambda np_, lax, a, b, x: a + b),
    ("sub", lambda np_, lax, a, b, x: a - b),
    ("neg", lambda np_, lax, a, b, x: -a),
    ("conj", lambda np_, lax, a, b, x: lax.conj(a)),
    ("real", lambda np_, lax, a, b, x: lax.real(a)),
    ("imag", lambda np_, lax, a, b, x: lax.imag(b)),
    ("complex", lambda np_, lax, a, b, x: lax.complex(x, lax.neg(x))),
    ("conj-of-real", lambda np_, lax, a, b, x: lax.conj(x)),
    ("eq", lambda np_, lax, a, b, x: a == b),
    ("ne", lambda np_, lax, a, b, x: a != a),  # True at NaNs
    ("select", lambda np_, lax, a, b, x: np_.where(x > 0, a, b)),
    ("from-real", lambda np_, lax, a, b, x: x.astype(a.dtype) - a),
    ("to-real", lambda np_, lax, a, b, x: lax.real(a).astype(np.float32)),
    ("to-bool", lambda np_, lax, a, b, x: a.astype(bool)),
    ("to-int", lambda np_, lax, a, b, x: lax.real(a).astype(np.int32)),
    ("widen", lambda np_, lax, a, b, x: a.astype(np.complex128)),
    ("transpose-pad", lambda np_, lax, a, b, x: np_.pad(a.reshape(4, 4).T, 1).reshape(-1)),
    ("scalar-const", lambda np_, lax, a, b, x: a + (1 - 2j)),
]
# Rounded more than once per part: a few ulps.
ROUNDED = [
    ("mul", lambda np_, lax, a, b, x: a * b),
    ("div", lambda np_, lax, a, b, x: a / b),
    ("abs", lambda np_, lax, a, b, x: np_.abs(a)),
    ("square", lambda np_, lax, a, b, x: a ** 2),
    ("cube-inverse", lambda np_, lax, a, b, x: a ** -3),
    ("real-times-complex", lambda np_, lax, a, b, x: x * a + b),
]

# Special values on both parts: zeros of both signs, infinities, NaN, a tiny and a large value
# (whose square still fits: past overflow, inf - inf in a product depends on FMA contraction).
_PARTS = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 1e-30, 3e15])


def _operands(dt: str):
    """Complex ``a`` with every pair of special parts, ``b`` random with specials at every
    fifth place (x / 0, x / inf, inf / inf, ...), and real ``x`` of the parts' dtype."""
    re, im = np.meshgrid(_PARTS, _PARTS)
    a = np.empty(re.size, dt)
    a.real, a.imag = re.ravel(), im.ravel()  # (re + 1j * im would turn 1j * inf into nan + infj)
    rng = np.random.default_rng(0)
    b = (rng.standard_normal(a.size) + 1j * rng.standard_normal(a.size)).astype(dt)
    b[::5] = a[::-5]
    x = np.resize(_PARTS, a.size).astype(np.float32 if dt == "complex64" else np.float64)
    return a, b, x


def _program(table, np_, lax):
    return lambda a, b, x: tuple(f(np_, lax, a, b, x) for _, f in table)


def _impls(f, *args, backend="cpu"):
    low = lower(fx.make_jaxpr(f)(*[fnp.asarray(v) for v in args]), backend)
    return low, {s.choice.impl.name for s in low.steps}


@pytest.mark.parametrize("dt", COMPLEX)
def test_exact_operations_run_as_kernels_with_eager_bits(dt):
    a, b, x = _operands(dt)
    args = (a[:16], b[:16], x[:16])  # the transpose-pad row needs 16 elements
    f = _program(EXACT, fnp, flax)
    _, impls = _impls(f, *args)
    assert impls <= KERNELS, impls
    got = fx.jit(f)(*args)
    assert_bitwise(got, f(*[fnp.asarray(v) for v in args]), what=dt)
    want = jax.jit(_program(EXACT, jnp, jax.lax))(*args)
    assert_allclose(got, want, rtol=0, atol=0, what=f"{dt} vs jax")


@pytest.mark.parametrize("dt", COMPLEX)
def test_rounded_operations_run_as_kernels_within_ulps(dt):
    a, b, x = _operands(dt)
    f = _program(ROUNDED, fnp, flax)
    _, impls = _impls(f, a, b, x)
    assert impls <= KERNELS, impls
    got = fx.jit(f)(a, b, x)
    eager = f(fnp.asarray(a), fnp.asarray(b), fnp.asarray(x))
    tol = 4 * np.finfo(dt).eps
    for name, g, e in zip([n for n, _ in ROUNDED], got, eager):
        g, e = np.asarray(g), np.asarray(e)
        finite = np.isfinite(e)
        # Special values: the same NaN/Inf pattern (signs of infinities included) as eager.
        np.testing.assert_array_equal(np.isnan(g), np.isnan(e), err_msg=name)
        np.testing.assert_array_equal(np.where(np.isinf(e), e, 0), np.where(np.isinf(g), g, 0),
                                      err_msg=name)
        np.testing.assert_allclose(g[finite], e[finite], rtol=tol, atol=0, err_msg=name)


@pytest.mark.parametrize("dt", COMPLEX)
def test_other_complex_operations_and_reductions_stay_numpy_steps(dt):
    a, b, x = _operands(dt)
    for f in (lambda a: fnp.exp(a) + 1, lambda a: fnp.sum(a * 2, axis=0),
              lambda a: fnp.sqrt(a)):
        _, impls = _impls(f, a.reshape(9, 9))
        assert not impls & KERNELS, impls
        assert_bitwise(fx.jit(f)(a.reshape(9, 9)), f(fnp.asarray(a.reshape(9, 9))))


def test_complex_mixed_with_real_kernels_through_grad():
    # A real loss of complex values, differentiated and compiled: the complex adjoint math
    # (conj, real, complex, products) runs in kernels and matches jax.
    rng = np.random.default_rng(1)
    z = (rng.standard_normal(64) + 1j * rng.standard_normal(64)).astype(np.complex128)
    w = rng.standard_normal(64)

    def loss(np_, lax):
        return lambda z: np_.sum(lax.real(z * np_.conj(z)) * w + lax.imag(z * (1 + 2j)))

    got = fx.jit(fx.grad(loss(fnp, flax)))(z)
    want = jax.jit(jax.grad(loss(jnp, jax.lax)))(z)
    assert_allclose(got, want, rtol=1e-13, atol=1e-13)


# --- the CUDA dialect ------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_complex_kernels_compile_for_sm90_without_spills():
    kernels = []
    for dt in COMPLEX:
        a, b, x = _operands(dt)
        for table in (EXACT, ROUNDED):
            low, impls = _impls(_program(table, fnp, flax), a[:16], b[:16], x[:16],
                                backend="cuda")
            assert impls == {"cuda.fused_elementwise"}, impls
            kernels += low.kernels
    ok, report = compile_cuda_kernels(kernels)
    assert ok, report


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (C++20)")
def test_cuda_complex_kernel_gives_eager_bits():
    # The CUDA source run on the CPU: the aligned {re, im} structs and the prelude's
    # fx_c* functions through the CUDA renderer.
    a, b, x = _operands("complex64")
    args = (a[:16], b[:16], x[:16])
    f = _program(EXACT, fnp, flax)
    low, _ = _impls(f, *args, backend="cuda")
    values = dict(zip(low.jaxpr.invars, args))
    for step in low.steps:
        outs = {v: np.zeros(v.aval.shape, v.aval.dtype) for v in step.outputs}
        run(build(low.source, step.kernel.name),
            [values[v] for v in step.inputs] + list(outs.values()), (2, 1), 64)
        values.update(outs)
    assert_bitwise([values[v] for v in low.jaxpr.outvars], f(*[fnp.asarray(v) for v in args]))
