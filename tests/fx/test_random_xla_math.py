"""fx/random/xla_math.py: XLA CPU's log, log1p, exp, expm1, erf, erf_inv, tan, pow and lgamma,
and fx/random/xla_rsqrt.py: its rsqrt.

Each function against jax's ``jnp.log`` etc. under ``jax.jit`` on edge cases (zeros of both
signs, subnormals, which XLA's CPU threads flush to zero, the overflow and underflow
thresholds, infinities, NaN) and on random points: random bit patterns over every exponent,
uniform (0, 1) draws (what the samplers feed these functions), their negatives and normal
draws. float32 in both modes, float64 in 64-bit mode; eagerly, under ``fx.jit`` and under
``fx.vmap``. The default run checks the edge cases and 500 points of each of the five kinds
per case; the slow run 200,000 of each.
Derivatives are the true functions' (compared with jax's grads).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_bitwise, same_mode

import fx
from fx.random import xla_math as xm
from fx.random.xla_rsqrt import rsqrt, uses_hardware_approximation

ORACLE = {"log": jnp.log, "log1p": jnp.log1p, "exp": jnp.exp, "expm1": jnp.expm1,
          "erf": jax.lax.erf, "erf_inv": jax.lax.erf_inv, "tan": jnp.tan}
EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 1e-45, -1e-45, 1e-40,
         1e-310, -1e-310, 1.1754944e-38, 2.2250738585072014e-308, 88.7, 88.8, -87.3, -87.8,
         -103.0, 709.7, -745.1, 710.0, 20.0, 40.0, -40.0, 0.41421357, -0.2928932, 3e-4,
         1 - 2**-24, -1 + 2**-24, 1e30, -1e30, 3.4e38, 1e300]
MODES = [pytest.param(False, marks=pytest.mark.default_mode), True]


def points(dtype, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ib = np.uint32 if dtype == np.float32 else np.uint64
    bits = rng.integers(0, np.iinfo(ib).max, n, dtype=ib, endpoint=True)
    u = rng.random(n).astype(dtype)
    with np.errstate(all="ignore"):
        edges = np.array(EDGES, np.float64).astype(dtype)
    return np.concatenate([edges, bits.view(dtype), u, -u, (rng.standard_normal(n) * 3)
                           .astype(dtype), u * 2 - 1])


@functools.cache
def _jax_jit(name):
    return jax.jit(ORACLE[name])


def _check(name, dtype, n, how="eager"):
    x = points(dtype, n)
    fn = getattr(xm, name)
    if how == "jit":
        fn = fx.jit(fn)
    elif how == "vmap":
        fn = fx.vmap(fn)
    with np.errstate(all="ignore"):
        got = fn(x)
    assert_bitwise(got, _jax_jit(name)(x), f"{name} {np.dtype(dtype)} {how}")


@pytest.mark.parametrize("x64", MODES, ids=["default", "x64"])
@pytest.mark.parametrize("name", sorted(ORACLE))
def test_matches_xla_bitwise(name, x64):
    with same_mode(x64):
        for dtype in [np.float32] + ([np.float64] if x64 else []):
            _check(name, dtype, 500)


@pytest.mark.parametrize("how", ["jit", "vmap"])
def test_matches_xla_under_jit_and_vmap(how):
    with same_mode(True):
        for name in ["log1p"] if how == "jit" else ["log", "erf_inv", "expm1"]:
            for dtype in [np.float32, np.float64]:
                _check(name, dtype, 300, how)


@pytest.mark.slow
@pytest.mark.parametrize("x64", [False, True], ids=["default", "x64"])
@pytest.mark.parametrize("name", sorted(ORACLE))
def test_matches_xla_bitwise_many_points(name, x64):
    with same_mode(x64):
        for dtype in [np.float32] + ([np.float64] if x64 else []):
            _check(name, dtype, 200_000)
            _check(name, dtype, 20_000, "jit")


@pytest.mark.parametrize("n", [500, pytest.param(200_000, marks=pytest.mark.slow)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rsqrt_matches_xla_bitwise(dtype, n):
    """The hardware approximation and XLA's Newton steps: eagerly, under jit and vmap; every
    float32 in [1/4, 4) (every table entry, both exponent parities) in the slow run."""
    if not uses_hardware_approximation(dtype):
        pytest.skip(f"XLA CPU computes {np.dtype(dtype)} rsqrt as 1 / sqrt(x) on this CPU (no "
                    "AVX for float32, no AVX-512F for float64): fx does too, checked only by "
                    "FX_MARCH=x86-64-v3 against --xla_cpu_max_isa=AVX2 on an AVX-512 CPU")
    with same_mode(True):
        x = points(dtype, n)
        if n > 500 and dtype == np.float32:
            lo, hi = np.array([0.25, 4.0], np.float32).view(np.uint32)
            x = np.concatenate([x, np.arange(lo, hi, dtype=np.uint32).view(np.float32)])
        with np.errstate(all="ignore"):
            want = jax.jit(jax.lax.rsqrt)(x)
            assert_bitwise(rsqrt(x), want, f"rsqrt {np.dtype(dtype)}")
            assert_bitwise(fx.jit(rsqrt)(x), want, f"rsqrt {np.dtype(dtype)} jit")
            assert_bitwise(fx.vmap(rsqrt)(x[:300]), want[:300], f"rsqrt {np.dtype(dtype)} vmap")
        if dtype == np.float32:
            h = np.linspace(0.01, 300, 97).astype(np.float16)
            assert_bitwise(rsqrt(h), jax.jit(jax.lax.rsqrt)(h), "rsqrt float16")
        g = fx.vmap(fx.grad(rsqrt))(np.array([0.3, 2.0, 7.0], dtype))
        np.testing.assert_allclose(np.asarray(g), jax.vmap(jax.grad(jax.lax.rsqrt))(
            np.array([0.3, 2.0, 7.0], dtype)), rtol=1e-6)


def test_pow_matches_xla_bitwise():
    rng = np.random.default_rng(3)
    with same_mode(True):
        for dtype in [np.float32, np.float64]:
            x = np.concatenate([rng.random(500), rng.random(500) * 100, [0.0, 1.0, np.inf]])
            y = np.concatenate([rng.random(500) * 6 - 3, rng.random(500) * 0.2 - 0.1,
                                [2.0, -0.5, 0.5]])
            x, y = x.astype(dtype), y.astype(dtype)
            assert_bitwise(xm.pow(x, y), jax.jit(jnp.power)(x, y), f"pow {np.dtype(dtype)}")


def test_lgamma_matches_xla_bitwise_from_one_half():
    """Bitwise for x >= 1/2 (poisson's lgamma(k + 1)); the reflection below uses fx's sin."""
    rng = np.random.default_rng(4)
    with same_mode(True):
        for dtype in [np.float32, np.float64]:
            x = np.concatenate([np.arange(1, 300), rng.random(2000) * 100 + 0.5,
                                rng.random(200) * 1e6, [0.5, np.inf, np.nan]]).astype(dtype)
            assert_bitwise(xm.lgamma(x), jax.jit(jax.lax.lgamma)(x), f"lgamma {np.dtype(dtype)}")
            below = (rng.random(200) * 9 - 8.7).astype(dtype)
            np.testing.assert_allclose(np.asarray(xm.lgamma(below)),
                                       np.asarray(jax.jit(jax.lax.lgamma)(below)), rtol=1e-4)


def test_scalars_and_half_precision():
    with same_mode(True):
        for v in [0.3, -0.7]:
            for dtype in [np.float32, np.float64]:
                x = np.asarray(v, dtype)
                assert_bitwise(xm.erf_inv(x), jax.lax.erf_inv(x), f"erf_inv({v}) {dtype}")
        x = np.linspace(0.01, 3, 50).astype(np.float16)
        assert_bitwise(xm.log(x), jax.jit(jnp.log)(x), "float16 log")


def test_fma_keeps_signed_zeros():
    z = np.array([-0.0, 0.0], np.float32)
    assert_bitwise(xm.fma(z, np.ones(2, np.float32), z), np.array([-0.0, 0.0], np.float32))


def test_grads_are_the_functions_derivatives():
    with same_mode(True):
        x = np.array([0.3, 0.7, 0.9])
        for name in ["log1p", "expm1", "erf_inv", "tan"]:
            got = fx.vmap(fx.grad(getattr(xm, name)))(x)
            want = jax.vmap(jax.grad(ORACLE[name]))(x)
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-14,
                                       err_msg=name)
