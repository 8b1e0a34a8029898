"""Tests of fx.random against jax.random (threefry2x32, partitionable counters).

Keys, split, fold_in, bits, uniform, bernoulli, randint, permutation, categorical, normal,
truncated_normal and gumbel samples must be bit-identical to jax's (the last three use XLA
CPU's own ``erf_inv``/``erf``/``log``, see ``fx/random/xla_math.py``); in float16/bfloat16,
gumbel agrees to rounding only, since XLA keeps float32 between its two logs in one fused
kernel. Dtypes are always explicit, since fx's defaults (float32/int32) differ from jax's
64-bit mode.
"""

from __future__ import annotations

from fractions import Fraction

import jax
import jax.numpy as jnp
import jax.random as jr
import ml_dtypes
import numpy as np
import pytest
from harness import assert_allclose
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.numpy as fnp
import fx.random as fr
from fx import lax
from fx.interpreters.eval import eval_jaxpr
from fx.random.xla_math import fma as _fma
from fx.test_util import shapes

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
SEEDS = [0, 1, 42, 2**40 + 7]
SHAPES = [(), (0,), (7,), (3, 5)]


def assert_bits_equal(got, want, what=""):
    """Same shape, dtype and bit pattern (so NaNs and signed zeros count); a typed key array
    (which, as jax's, refuses np.asarray) by its key_data."""
    got, want = _data(got), _data(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    as_uint = np.dtype(f"u{got.dtype.itemsize}")
    np.testing.assert_array_equal(got.view(as_uint), want.view(as_uint), err_msg=what)


def _jax_fuses_float16() -> bool:
    """Whether XLA on this CPU computes a float16 ``a * b + c`` rounded once (a native float16
    FMA) rather than rounding the product and the sum separately."""
    a = np.linspace(0, 1, 4097).astype(np.float16)
    b, c = np.float16(1000.75), np.float16(-3.5)
    once = (a.astype(np.float32) * np.float32(b) + np.float32(c)).astype(np.float16)
    got = np.asarray(jax.jit(lambda a, b, c: a * b + c)(a, b, c))
    return bool(np.array_equal(got.view(np.uint16), once.view(np.uint16)))


def test_float16_fma_follows_this_cpus_xla():
    # fx decides from the CPU (AVX512-FP16: contracted); jax's answer on this CPU decides.
    from fx.random.xla_rsqrt import float16_fma_fused

    assert float16_fma_fused() == _jax_fuses_float16()


def keys(seed):
    return fr.PRNGKey(seed), jr.PRNGKey(seed)


def _data(x):
    """An array's values as NumPy; a typed key array's (fx's or jax's) raw uint32 data."""
    if isinstance(x, jax.Array):
        return np.asarray(jr.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x)
    return np.asarray(fr.key_data(x) if fnp.issubdtype(x.dtype, fx.dtypes.prng_key) else x)


def test_jax_oracle_uses_the_defaults_fx_matches():
    assert jax.config.jax_threefry_partitionable is True
    assert jax.config.jax_default_prng_impl == "threefry2x32"
    assert jax.config.jax_enable_x64 is True


# --- keys ----------------------------------------------------------------------------------------

SEED_VALUES = [0, 1, 42, -1, 2**31, 2**32 + 5, 2**63 - 1, -(2**63), True,
               np.int32(-1), np.int64(-1), np.uint32(2**32 - 1), np.int64(2**40 + 3)]


@pytest.mark.parametrize("seed", SEED_VALUES, ids=repr)
def test_key_matches_jax(seed):
    want = jr.key_data(jr.key(seed))
    assert_bits_equal(fr.key(seed), want, f"key({seed!r})")
    assert_bits_equal(fr.PRNGKey(seed), jr.PRNGKey(seed), f"PRNGKey({seed!r})")


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32])
def test_key_of_traced_seeds(dtype):
    seeds = np.array([0, 3, 2**31 - 1, 7], dtype) - (2 if dtype != np.uint32 else 0)
    assert_bits_equal(fx.vmap(fr.key)(seeds), jax.vmap(jr.PRNGKey)(seeds))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("num", [2, 3, (2, 3), (), 0, (0, 2)], ids=repr)
def test_split(seed, num):
    fk, jk = keys(seed)
    assert_bits_equal(fr.split(fk, num), jr.split(jk, num), f"split({seed}, {num})")


def test_split_default_and_unpacking():
    fk, jk = keys(5)
    a, b = np.asarray(fr.split(fk))  # numpy keys are accepted too
    ja, jb = jr.split(jk)
    assert_bits_equal(a, ja)
    assert_bits_equal(b, jb)
    assert_bits_equal(fr.split(a, 4), jr.split(ja, 4))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "data", [0, 1, 12345, 2**32 - 1, np.int32(-1), np.uint32(7), np.int64(9)], ids=repr
)
def test_fold_in(seed, data):
    fk, jk = keys(seed)
    assert_bits_equal(fr.fold_in(fk, data), jr.fold_in(jk, data), f"fold_in({seed}, {data!r})")


def test_fold_in_traced_data():
    fk, jk = keys(3)
    data = np.arange(5, dtype=np.uint32)
    assert_bits_equal(fx.vmap(lambda d: fr.fold_in(fk, d))(data),
                      jax.vmap(lambda d: jr.fold_in(jk, d))(data))


@given(seed=st.integers(-(2**63), 2**63 - 1), shape=shapes(max_dims=3, max_side=5))
def test_bits(seed, shape):
    fk, jk = keys(seed)
    assert_bits_equal(fr.bits(fk, shape), jr.bits(jk, shape, jnp.uint32), f"{seed} {shape}")


def test_bits_default_dtype_and_int_shape():
    fk, jk = keys(0)
    assert_bits_equal(fr.bits(fk, 4), jr.bits(jk, 4, jnp.uint32))
    assert_bits_equal(fr.bits(fk), jr.bits(jk, (), jnp.uint32))


# --- uniform and bernoulli -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_uniform(dtype, shape):
    for seed in SEEDS[:2]:
        fk, jk = keys(seed)
        assert_bits_equal(fr.uniform(fk, shape, dtype), jr.uniform(jk, shape, dtype))


# Bounds whose products and sums round: XLA fuses ``floats * span + minval`` into an FMA
# for float32/float64 and computes float16 in float32, which fx must reproduce exactly.
BOUNDS = [(-3.5, 7.25), (0.1, 0.3), (-1e3, 1e-3), (1 / 3, 1000.7), (2.0, 2.0), (5.0, -1.0)]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("bounds", BOUNDS, ids=str)
def test_uniform_bounds(dtype, bounds):
    fk, jk = keys(3)
    lo, hi = bounds
    assert_bits_equal(fr.uniform(fk, (500,), dtype, lo, hi),
                      jr.uniform(jk, (500,), dtype, lo, hi), f"{dtype} {bounds}")


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_uniform_array_bounds(dtype):
    fk, jk = keys(11)
    lo = np.linspace(-2, 1, 6).astype(dtype)
    hi = (lo.astype(np.float64) + np.arange(1, 7) * 0.37).astype(dtype)
    for shape, lo_, hi_ in [((4, 6), lo, hi), ((3, 6), lo[:1].reshape(1, 1), hi)]:
        assert_bits_equal(fr.uniform(fk, shape, dtype, lo_, hi_),
                          jr.uniform(jk, shape, dtype, lo_, hi_), f"{shape}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_is_correctly_rounded(dtype):
    ulp = Fraction(2) ** -np.finfo(dtype).nmant
    # a * b + c lands just below a midpoint that a plain double rounding would round up to.
    a = [1 + ulp, 1.5, 0.1, 1 + 2 * ulp]
    b = [(1 - ulp) * ulp / 2, 3.0, 1e-30, -(1 - ulp)]
    c = [1 + ulp, -4.5, 1.0, 1 + ulp]
    rng = np.random.default_rng(0)
    a += list(rng.uniform(-2, 2, 40))
    b += list(rng.uniform(-5, 5, 40))
    c += list(rng.uniform(-3, 3, 40) * 10.0 ** rng.integers(-8, 8, 40))
    a, b, c = (np.array([float(v) for v in vs], dtype) for vs in (a, b, c))
    got = np.asarray(_fma(*(fx.numpy.asarray(v) for v in (a, b, c))))
    exact = [Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
             for x, y, z in zip(a, b, c)]
    # Correct rounding of the exact value: the nearer of the two floats around its float64.
    want = []
    for e in exact:
        near = np.array(float(e), dtype)
        cands = [near, np.nextafter(near, dtype(np.inf)), np.nextafter(near, dtype(-np.inf))]
        dist = [abs(Fraction(float(v)) - e) for v in cands]
        best = min(dist)
        ties = [v for v, d in zip(cands, dist) if d == best]
        uint = f"u{np.dtype(dtype).itemsize}"
        even = [v for v in ties if int(np.array(v).view(uint)) % 2 == 0]
        want.append((even or ties)[0])
    assert_bits_equal(got, np.array(want, dtype))


def test_float16_fma_rounds_as_xla_here_and_differentiates_as_mul_add():
    from fx.random.xla_rsqrt import float16_fma_fused

    rng = np.random.default_rng(1)
    a, b, c = (rng.uniform(-30, 30, 2000).astype(np.float16) for _ in range(3))
    got = np.asarray(_fma(*(fx.numpy.asarray(v) for v in (a, b, c))))
    once = (a.astype(np.float32) * b.astype(np.float32) + c.astype(np.float32))
    assert not np.array_equal(once.astype(np.float16), a * b + c)  # the two roundings differ
    assert_bits_equal(got, once.astype(np.float16) if float16_fma_fused() else a * b + c)
    big = np.float16(60000.0)
    assert np.isinf(np.asarray(_fma(*(fx.numpy.asarray(v) for v in (big, big, big)))))
    da = fx.grad(lambda x: _fma(x, np.float16(3.0), np.float16(1.0)).astype(np.float32))
    assert float(da(np.float16(2.0))) == 3.0


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_bernoulli(dtype):
    fk, jk = keys(2)
    p = np.asarray(0.3, dtype)
    for shape in [None, (0,), (3, 5)]:
        assert_bits_equal(fr.bernoulli(fk, p, shape), jr.bernoulli(jk, p, shape), f"{shape}")
    ps = np.array([0.0, 0.2, 0.5, 0.9, 1.0], dtype)
    assert_bits_equal(fr.bernoulli(fk, ps), jr.bernoulli(jk, ps))
    assert_bits_equal(fr.bernoulli(fk, ps, (3, 5)), jr.bernoulli(jk, ps, (3, 5)))


def test_bernoulli_python_float_is_float32():
    # fx reads Python floats as float32 (jax's 64-bit mode as float64).
    fk, jk = keys(2)
    assert_bits_equal(fr.bernoulli(fk, 0.5, (20,)), jr.bernoulli(jk, np.float32(0.5), (20,)))
    assert_bits_equal(fr.bernoulli(fk, shape=(4,)), jr.bernoulli(jk, np.float32(0.5), (4,)))


# --- randint -------------------------------------------------------------------------------------

INT_BOUNDS = [(0, 10), (-5, 5), (3, 3), (7, 2), (0, 2**31), (-(2**31), 2**31 - 1), (0, 2**32),
              (-(2**62), 2**62), (-(2**63), 2**63 - 1), (5, 1000003), (-7, 2**40)]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32], ids=lambda d: d.__name__)
@pytest.mark.parametrize("bounds", INT_BOUNDS, ids=str)
def test_randint(dtype, bounds):
    lo, hi = bounds
    if dtype == np.uint32 and lo < 0:
        lo = 0
    for seed in SEEDS[:2]:
        fk, jk = keys(seed)
        for shape in [(), (7,)]:
            assert_bits_equal(fr.randint(fk, shape, lo, hi, dtype),
                              jr.randint(jk, shape, lo, hi, dtype), f"{seed} {shape}")


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32], ids=lambda d: d.__name__)
def test_randint_array_bounds(dtype):
    fk, jk = keys(4)
    lo = np.array([0, 1, 5, 10], dtype)
    hi = np.array([[3], [100], [2**31 - 1]], np.int64)
    for shape, lo_, hi_ in [((3, 4), lo, hi), ((0,), np.int32(2), 3)]:
        assert_bits_equal(fr.randint(fk, shape, lo_, hi_, dtype),
                          jr.randint(jk, shape, lo_, hi_, dtype), f"{shape}")
    assert_bits_equal(fr.randint(fk, (5,), 1.7, 9.2, dtype),
                      jr.randint(jk, (5,), 1.7, 9.2, dtype), "float bounds truncate")


def test_randint_default_dtype_is_the_modes_int():
    fk, jk = keys(4)
    assert_bits_equal(fr.randint(fk, (6,), 0, 7), jr.randint(jk, (6,), 0, 7))  # int64 (x64)
    jax.config.update("jax_enable_x64", False)
    try:
        with fx.enable_x64(False):
            assert_bits_equal(fr.randint(fr.PRNGKey(4), (6,), 0, 7),
                              jr.randint(jr.PRNGKey(4), (6,), 0, 7))  # int32
    finally:
        jax.config.update("jax_enable_x64", True)


# --- normal, truncated normal, gumbel ------------------------------------------------------------

# Tolerances for the 16-bit types (see the module docstring).
CLOSE = {np.dtype(np.float16): 5e-3, BF16: 3e-2, np.dtype(np.float32): 2e-5,
         np.dtype(np.float64): 1e-13}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_normal(dtype):
    for seed in SEEDS[:2]:
        fk, jk = keys(seed)
        for shape in [(), (0,), (500,)]:
            got, want = fr.normal(fk, shape, dtype), jr.normal(jk, shape, dtype)
            assert_bits_equal(got, want)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_truncated_normal(dtype):
    fk, jk = keys(6)
    cases = [(-1.5, 0.7, (500,)), (0.5, 3.0, ()),
             (np.array([[-1.0], [0.0]], dtype), np.array([0.5, 1.0, 4.0], dtype), (4, 2, 3))]
    for lo, hi, shape in cases:
        got = fr.truncated_normal(fk, lo, hi, shape, dtype)
        want = jr.truncated_normal(jk, lo, hi, shape, dtype)
        assert_bits_equal(got, want)
        g = np.asarray(got).astype(np.float64)
        lo64, hi64 = (np.asarray(b, dtype).astype(np.float64) for b in (lo, hi))
        if np.dtype(dtype).itemsize >= 4:
            assert np.all((lo64 < g) & (g < hi64))
        else:  # see test_truncated_normal_open_interval_16bit
            assert np.all((lo64 <= g) & (g <= hi64))


@pytest.mark.parametrize("dtype", FLOATS[:2], ids=str)
def test_truncated_normal_open_interval_16bit(dtype):
    # erf rounds both bounds to 1, so every draw is clipped to just below ``upper``.
    fk, jk = keys(0)
    got = fr.truncated_normal(fk, 5.0, 5.05, (3,), dtype)
    assert np.all(np.asarray(got).astype(np.float64) < np.asarray(5.05, dtype).astype(float))
    assert_bits_equal(got, jr.truncated_normal(jk, 5.0, 5.05, (3,), dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_gumbel(dtype):
    fk, jk = keys(8)
    tol = CLOSE[np.dtype(dtype)]
    for shape in [(), (0,), (500,)]:
        got, want = fr.gumbel(fk, shape, dtype), jr.gumbel(jk, shape, dtype)
        if np.dtype(dtype).itemsize >= 4:
            assert_bits_equal(got, want)
        else:  # XLA keeps float32 between the two logs of its fused kernel; fx rounds
            assert_allclose(got, want, rtol=tol, atol=tol, what=f"{shape}")


# --- categorical, permutation, choice ------------------------------------------------------------

LOGITS = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32))


@pytest.mark.parametrize(
    "logits, axis, shape",
    [(LOGITS, -1, None), (LOGITS, 0, None), (LOGITS.T, 0, (3, 4, 2)), (LOGITS[0], 0, (100,)),
     (LOGITS[:1], -1, (6, 4)), (LOGITS.astype(np.float64), -1, (7, 2)),
     (np.zeros((2, 0, 3), np.float32), -1, None)],
)
def test_categorical(logits, axis, shape):
    for seed in SEEDS[:3]:
        fk, jk = keys(seed)
        got = fr.categorical(fk, logits, axis, shape)
        want = jr.categorical(jk, logits, axis, shape)
        assert np.asarray(got).dtype == np.int32  # jax's 64-bit mode gives int64
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [0, 1, 5, 2000])
def test_permutation_of_range(n):
    fk, jk = keys(3)
    got = fr.permutation(fk, n)
    assert np.asarray(got).dtype == np.int32  # jax's 64-bit mode gives int64
    np.testing.assert_array_equal(got, jr.permutation(jk, n))


@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("independent", [False, True])
def test_permutation_of_array(axis, independent):
    x = np.arange(24.0).reshape(4, 6)
    for seed in SEEDS[:2]:
        fk, jk = keys(seed)
        assert_bits_equal(fr.permutation(fk, x, axis, independent),
                          jr.permutation(jk, x, axis, independent))


def test_permutation_3d_and_shuffle():
    fk, jk = keys(1)
    y = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    assert_bits_equal(fr.permutation(fk, y, 1), jr.permutation(jk, y, 1))
    assert_bits_equal(fr.shuffle(fk, y, 1), jr.permutation(jk, y, 1, True))


def test_permutation_edge_shapes():
    fk, jk = keys(1)
    for x in [np.zeros((0, 3)), np.arange(1.0), np.arange(3.0).reshape(1, 3)]:
        assert_bits_equal(fr.permutation(fk, x), jr.permutation(jk, x))


def test_choice():
    fk, jk = keys(9)
    a = np.arange(12.0).reshape(3, 4)
    # Uniform with replacement draws randint indices of the mode's int (here int64), as jax's.
    want = jnp.take(a, jr.randint(jk, (2, 3), 0, 4), 1)
    assert_bits_equal(fr.choice(fk, a, (2, 3), axis=1), want)
    assert_bits_equal(fr.choice(fk, a, (2, 3), axis=1), jr.choice(jk, a, (2, 3), axis=1))
    np.testing.assert_array_equal(fr.choice(fk, 7, (3, 2)), jr.randint(jk, (3, 2), 0, 7))
    for arr, shape, axis in [(a, (2,), 1), (7, (2, 2), 0)]:
        np.testing.assert_array_equal(fr.choice(fk, arr, shape, False, axis=axis),
                                      jr.choice(jk, arr, shape, False, axis=axis))
    p = np.array([0.125, 0.25, 0.5, 0.125])  # cumulative sums are exact
    for replace, arr in [(True, 4), (False, np.arange(40.0, 44.0))]:
        np.testing.assert_array_equal(fr.choice(fk, arr, (3,), replace, p),
                                      jr.choice(jk, arr, (3,), replace, p))
    assert np.asarray(fr.choice(fk, a, (0,), axis=1)).shape == (3, 0)


# --- transformations -----------------------------------------------------------------------------

VMAPPED = [
    ("normal", lambda k: fr.normal(k, (3,), np.float32), lambda k: jr.normal(k, (3,), jnp.float32),
     2e-5),
    ("uniform", lambda k: fr.uniform(k, (3,), np.float32, -2.0, 5.0),
     lambda k: jr.uniform(k, (3,), jnp.float32, -2.0, 5.0), 0),
    ("uniform64", lambda k: fr.uniform(k, (2, 2), np.float64, 0.5, 3.0),
     lambda k: jr.uniform(k, (2, 2), jnp.float64, 0.5, 3.0), 0),
    ("randint", lambda k: fr.randint(k, (3,), -4, 100, np.int64),
     lambda k: jr.randint(k, (3,), -4, 100, jnp.int64), 0),
    ("split", lambda k: fr.split(k, 3), lambda k: jr.split(k, 3), 0),
    ("fold_in", lambda k: fr.fold_in(k, 7), lambda k: jr.fold_in(k, 7), 0),
    ("bits", lambda k: fr.bits(k, (2,)), lambda k: jr.bits(k, (2,), jnp.uint32), 0),
    ("bernoulli", lambda k: fr.bernoulli(k, np.float32(0.4), (5,)),
     lambda k: jr.bernoulli(k, np.float32(0.4), (5,)), 0),
    ("permutation", lambda k: fr.permutation(k, 10), lambda k: jr.permutation(k, 10), 0),
    ("categorical", lambda k: fr.categorical(k, LOGITS), lambda k: jr.categorical(k, LOGITS), 0),
    ("scalar", lambda k: fr.uniform(k), lambda k: jr.uniform(k), 0),  # both float64 (x64)
    ("scalar64", lambda k: fr.uniform(k, (), np.float64, 0.5, 2.0),
     lambda k: jr.uniform(k, (), jnp.float64, 0.5, 2.0), 0),
    ("scalar_randint", lambda k: fr.randint(k, (), -3, 10, np.int64),
     lambda k: jr.randint(k, (), -3, 10, jnp.int64), 0),
]


@pytest.mark.parametrize("name, f, g, tol", VMAPPED, ids=[v[0] for v in VMAPPED])
@pytest.mark.parametrize("typed", [False, True], ids=["raw", "typed"])
def test_vmap_over_keys(name, f, g, tol, typed):
    fkey, jkey = (fr.key, jr.key) if typed else (fr.PRNGKey, jr.PRNGKey)
    fks, jks = fr.split(fkey(0), 4), jr.split(jkey(0), 4)
    got, want = fx.vmap(f)(fks), jax.vmap(g)(jks)
    assert str(got.dtype).startswith("key") == str(want.dtype).startswith("key")
    if tol:
        assert_allclose(_data(got), _data(want), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(_data(got), _data(want))
    # Also equal to a loop over the keys.
    for i in range(4):
        np.testing.assert_array_equal(_data(got)[i], _data(f(fks[i])))


@pytest.mark.parametrize("shape", [(), (3,)])
def test_vmap_over_bounds(shape):
    lo = np.arange(4, dtype=np.float32) - 1.5
    got = fx.vmap(lambda m: fr.uniform(fr.key(0), shape, np.float32, m, 5.0))(lo)
    want = jax.vmap(lambda m: jr.uniform(jr.PRNGKey(0), shape, jnp.float32, m, 5.0))(lo)
    assert_bits_equal(got, want)
    hi = np.arange(4, dtype=np.int32) + 3
    got = fx.vmap(lambda m: fr.randint(fr.key(0), shape, 0, m, np.int32))(hi)
    want = jax.vmap(lambda m: jr.randint(jr.PRNGKey(0), shape, 0, m, jnp.int32))(hi)
    assert_bits_equal(got, want)


@pytest.mark.default_mode  # fx's defaults for Python data
def test_list_arguments_use_fx_defaults():
    fk, jk = keys(2)
    got = fr.categorical(fk, [[0.0, 1.0], [2.0, -1.0]])  # float32 logits
    np.testing.assert_array_equal(got, jr.categorical(jk, np.float32([[0, 1], [2, -1]])))
    assert_bits_equal(fr.bernoulli(fk, [0.25, 0.75]), jr.bernoulli(jk, np.float32([0.25, 0.75])))


def test_make_jaxpr_of_uniform():
    closed = fx.make_jaxpr(lambda k: fr.uniform(k, (3,), np.float32, -1.0, 2.0))(fr.key(0))
    assert [str(a.dtype) + str(a.shape) for a in closed.out_avals] == ["float32(3,)"]
    text = str(closed)
    assert "shift_right_logical" in text and "xor" in text
    (out,) = eval_jaxpr(closed.jaxpr, closed.consts, fr.key(7))
    assert_bits_equal(out, jr.uniform(jr.PRNGKey(7), (3,), jnp.float32, -1.0, 2.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grad_through_bounds(dtype):
    def total(x):
        return lax.reduce_sum(x, tuple(range(np.ndim(x))))

    args = (np.asarray(-1.0, dtype), np.asarray(3.0, dtype))
    got = fx.grad(lambda lo, hi: total(fr.uniform(fr.key(0), (5,), dtype, lo, hi)),
                  argnums=(0, 1))(*args)
    want = jax.grad(lambda lo, hi: jr.uniform(jr.PRNGKey(0), (5,), dtype, lo, hi).sum(),
                    argnums=(0, 1))(*args)
    assert_allclose(got, want)
    got = fx.grad(lambda lo, hi: total(fr.truncated_normal(fr.key(0), lo, hi, (5,), dtype)),
                  argnums=(0, 1))(*args)
    want = jax.grad(lambda lo, hi: jr.truncated_normal(jr.PRNGKey(0), lo, hi, (5,), dtype).sum(),
                    argnums=(0, 1))(*args)
    tol = CLOSE[np.dtype(dtype)] * 10
    assert_allclose(got, want, rtol=tol, atol=tol)


# --- errors --------------------------------------------------------------------------------------

KEY = fr.key(0)
ERRORS = [
    (lambda: fr.uniform(np.zeros(2, np.float32)), TypeError, "uint32 array of shape \\(2,\\)"),
    (lambda: fr.normal(np.zeros(3, np.uint32)), TypeError, "got u32\\[3\\]"),
    (lambda: fr.normal(fr.split(KEY, 3)), ValueError, "single key.*fx.vmap"),
    (lambda: fr.split(0), TypeError, "fx.random.key\\(0\\)"),
    (lambda: fr.uniform(jr.key(0)), TypeError, "key_data"),
    (lambda: fr.key(1.5), TypeError, "must be an integer"),
    (lambda: fr.key(np.float32(1.0)), TypeError, "must be an integer"),
    (lambda: fr.key(np.arange(2)), TypeError, "scalar seed"),
    (lambda: fr.key(2**63), OverflowError, "int64"),
    (lambda: fr.fold_in(KEY, -1), OverflowError, "uint32"),
    (lambda: fr.fold_in(KEY, np.arange(2)), TypeError, "scalar"),
    (lambda: fr.bits(KEY, (2,), np.uint8), TypeError, "uint32"),
    (lambda: fr.bits(KEY, (2,), np.int32), TypeError, "uint32"),
    (lambda: fr.uniform(KEY, (2,), np.int32), TypeError, "float dtype"),
    (lambda: fr.uniform(KEY, (-1,)), ValueError, "negative"),
    (lambda: fr.uniform(KEY, (2.5,)), TypeError, "shape must be"),
    (lambda: fr.uniform(KEY, (2,), np.float32, np.zeros(3)), ValueError, "broadcast"),
    (lambda: fr.normal(KEY, (2,), np.int32), TypeError, "float dtype"),
    (lambda: fr.randint(KEY, (2,), 0, 5, np.float32), TypeError, "integer dtype"),
    (lambda: fr.randint(KEY, (2,), np.zeros(3, np.int32), 5), ValueError, "broadcast"),
    (lambda: fr.bernoulli(KEY, 1), TypeError, "floating dtype"),
    (lambda: fr.bernoulli(KEY, np.zeros(3, np.float32), (2,)), ValueError, "broadcast"),
    (lambda: fr.truncated_normal(KEY, np.zeros(2), np.ones(3)), ValueError, "broadcast"),
    (lambda: fr.categorical(KEY, np.zeros(3, np.int32)), TypeError, "floating"),
    (lambda: fr.categorical(KEY, np.zeros((2, 3), np.float32), 2), ValueError, "out of range"),
    (lambda: fr.categorical(KEY, np.zeros((2, 3), np.float32), shape=(3,)), ValueError,
     "broadcast"),
    (lambda: fr.permutation(KEY, 2.5), TypeError, "integer or at least 1-dimensional"),
    (lambda: fr.permutation(KEY, np.zeros(3), axis=1), ValueError, "out of bounds"),
    (lambda: fr.choice(KEY, 3, (5,), replace=False), ValueError, "larger sample"),
    (lambda: fr.choice(KEY, 0, (2,)), ValueError, "greater than 0"),
    (lambda: fr.choice(KEY, 3, (2,), p=np.ones(2)), ValueError, "same size"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    fn, exc, match = ERRORS[i]
    with pytest.raises(exc, match=match):
        fn()


def test_default_dtypes_follow_the_mode_as_jax():
    # jax's samplers default to the mode's float/int (64-bit with x64 enabled, as here).
    fk, jk = keys(0)
    pairs = [(fr.uniform(fk), jr.uniform(jk)), (fr.normal(fk), jr.normal(jk)),
             (fr.gumbel(fk), jr.gumbel(jk)), (fr.exponential(fk), jr.exponential(jk)),
             (fr.truncated_normal(fk, -1.0, 1.0), jr.truncated_normal(jk, -1.0, 1.0)),
             (fr.randint(fk, (), 0, 5), jr.randint(jk, (), 0, 5))]
    for got, want in pairs:
        assert got.dtype == want.dtype
    assert_bits_equal(fr.uniform(fk, (5,)), jr.uniform(jk, (5,)))
