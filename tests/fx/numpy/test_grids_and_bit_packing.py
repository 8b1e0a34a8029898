"""Tests of fx.numpy's geomspace, logspace, fromfunction, packbits and unpackbits against
jax.numpy in both of jax's modes: values (bitwise for the exact ones, to rounding for the
log-spaced grids, which go through pow), dtypes and shapes; grads in start/stop; jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_allclose, assert_bitwise, run_doctests, same_mode

import fx
import fx.numpy as fnp


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def mode(request):
    with same_mode(request.param):
        yield request.param


GRIDS = [
    ("logspace", lambda m: m.logspace(0.0, 2.0, 5)),
    ("logspace-base-noend", lambda m: m.logspace(-1.0, 3.0, 4, endpoint=False, base=2.0)),
    ("logspace-f32", lambda m: m.logspace(np.float32(1), np.float32(2), 3, dtype=np.float32)),
    ("logspace-int", lambda m: m.logspace(0, 3, 4, dtype=np.int32)),
    ("geomspace", lambda m: m.geomspace(1.0, 1000.0, 4)),
    ("geomspace-negative", lambda m: m.geomspace(-2.0, -50.0, 5)),
    ("geomspace-noend", lambda m: m.geomspace(3, 100, 3, endpoint=False)),
    ("geomspace-one", lambda m: m.geomspace(5.0, 7.0, 1)),
    ("geomspace-f32", lambda m: m.geomspace(np.float32(0.5), np.float32(8), 5)),
]


@pytest.mark.parametrize("name,f", GRIDS, ids=[g[0] for g in GRIDS])
def test_grids_match_jax(mode, name, f):
    got, want = f(fnp), f(jnp)
    tol = 1e-12 if np.asarray(want).dtype == np.float64 else 2e-6
    assert_allclose(got, want, rtol=tol, atol=0, what=name)


def test_grids_differentiate_and_jit():
    with same_mode(True):
        for m_fx, m_jax in ((fnp.logspace, jnp.logspace), (fnp.geomspace, jnp.geomspace)):
            want = jax.grad(lambda a, g=m_jax: (g(a, 2.0, 5) ** 2).sum())(0.5)
            assert_allclose(fx.grad(lambda a, g=m_fx: (g(a, 2.0, 5) ** 2).sum())(0.5), want,
                            rtol=1e-9)
        assert_allclose(fx.jit(lambda a: fnp.logspace(a, 2.0, 5))(np.float64(0.5)),
                        jnp.logspace(0.5, 2.0, 5), rtol=1e-12)


EXACT = [
    ("fromfunction", lambda m: m.fromfunction(lambda i, j: i * 10 + j, (2, 3), dtype=int)),
    ("fromfunction-float", lambda m: m.fromfunction(lambda i, j: i - j * 0.5, (3, 2))),
    ("fromfunction-scalar-indices", lambda m: m.fromfunction(
        lambda i, j: m.stack([i, j]).sum(), (2, 2), dtype=np.int32)),
    ("packbits", lambda m: m.packbits(np.array([1, 0, 1, 1, 0, 0, 0, 0, 1], np.int32))),
    ("packbits-little-axis", lambda m: m.packbits(
        np.arange(30).reshape(3, 10) % 3 == 0, axis=1, bitorder="little")),
    ("packbits-axis0", lambda m: m.packbits(np.eye(9, 3, dtype=bool), axis=0)),
    ("unpackbits", lambda m: m.unpackbits(np.array([5, 255, 128], np.uint8))),
    ("unpackbits-count", lambda m: m.unpackbits(np.array([5, 255], np.uint8), count=-3,
                                                bitorder="little")),
    ("unpackbits-count-pad", lambda m: m.unpackbits(np.array([[7], [9]], np.uint8), axis=1,
                                                    count=11)),
    ("pack-unpack", lambda m: m.unpackbits(m.packbits(np.arange(12) % 5 > 1), count=12)),
]


@pytest.mark.parametrize("name,f", EXACT, ids=[e[0] for e in EXACT])
def test_exact_match_jax(mode, name, f):
    assert_bitwise(f(fnp), f(jnp), what=name)


def test_fromfunction_kwargs():
    # (jax's fromfunction maps its keyword arguments too, and fails on scalars.)
    got = fnp.fromfunction(lambda i, j, k=1: i * k + j, (2, 3), dtype=np.float32, k=3.0)
    assert_bitwise(got, np.fromfunction(lambda i, j: i * 3.0 + j, (2, 3), dtype=np.float32))


def test_bits_under_jit_and_vmap():
    bits = np.arange(24).reshape(2, 12) % 3 == 1
    packed = fx.vmap(lambda b: fnp.packbits(b))(bits)
    assert_bitwise(packed, np.stack([np.packbits(b) for b in bits]))
    assert_bitwise(fx.jit(lambda p: fnp.unpackbits(p, axis=1, count=12))(packed),
                   np.unpackbits(np.asarray(packed), axis=1, count=12))


def test_errors():
    cases = [
        (ValueError, r"geomspace: a geometric sequence cannot include zero \(start is 0\)",
         lambda: fnp.geomspace(0.0, 1.0, 3)),
        (ValueError, r"packbits: bitorder must be 'big' or 'little'",
         lambda: fnp.packbits(np.ones(3, bool), bitorder="middle")),
        (TypeError, r"packbits: expected an integer or boolean array",
         lambda: fnp.packbits(np.ones(3, np.float32))),
        (TypeError, r"unpackbits: expected a uint8 array, got int32",
         lambda: fnp.unpackbits(np.ones(3, np.int32))),
        (ValueError, r"logspace: base must be a scalar",
         lambda: fnp.logspace(0.0, 1.0, 3, base=np.ones(2))),
    ]
    for exc, pattern, thunk in cases:
        with pytest.raises(exc, match=pattern):
            thunk()


def test_docstring_examples():
    import fx.numpy.bit_packing
    import fx.numpy.creation

    with same_mode(False):
        assert run_doctests(fx.numpy.creation, fx.numpy.bit_packing) >= 5
