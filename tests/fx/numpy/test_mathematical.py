"""Tests of fx/numpy/mathematical.py against jax.numpy (x64 enabled), with numpy as the
oracle where XLA flushes subnormals (frexp, ldexp): values (bitwise for the exact functions),
dtypes and shapes over a grid of special values, derivatives against jax and finite
differences, vmap against a loop, jit against eager, and the errors.

fx runs in x64 mode here, as the jax oracle does, so dtypes compare exactly; the default
mode's dtypes (float32 results for int32 input) have their own test."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from harness import (
    OpCase,
    assert_allclose,
    assert_bitwise,
    check_grads_f64,
    check_jvp,
    check_vjp,
    check_vmap,
    to_fx,
    to_jax,
)

import fx
import fx.numpy as fnp


@pytest.fixture(autouse=True)
def _x64():
    before = fx.config.enable_x64
    fx.config.update("jax_enable_x64", True)
    yield
    fx.config.update("jax_enable_x64", before)


F32, F64, I32, I64, U32 = (np.dtype(d) for d in ("float32", "float64", "int32", "int64",
                                                 "uint32"))
SPECIAL = np.array([0.0, -0.0, 0.5, -1.5, 3.25, -7.0, 1e10, -1e-3, 1e30, np.inf, -np.inf,
                    np.nan, 2.0, 1.0, -1.0, 1.5e-38])


def _floats(dtype, shape=(16,)):
    return SPECIAL.astype(dtype).reshape(shape)


def _ints(dtype, seed=0, shape=(4, 5), lo=-40, hi=40):
    rng = np.random.default_rng(seed)
    lo = 0 if np.dtype(dtype).kind == "u" else lo
    return rng.integers(lo, hi, shape).astype(dtype)


# --- aliases -------------------------------------------------------------------------------

ALIASES = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh",
           "atan": "arctan", "atanh": "arctanh", "atan2": "arctan2", "pow": "power",
           "bitwise_invert": "invert", "bitwise_left_shift": "left_shift",
           "bitwise_right_shift": "right_shift"}


@pytest.mark.parametrize("name", sorted(ALIASES))
def test_aliases_match_jax(name):
    assert getattr(fnp, name) is getattr(fnp, ALIASES[name])
    rng = np.random.default_rng(1)
    if name.startswith("bitwise"):
        args = [_ints(np.int32, 1), rng.integers(0, 5, (4, 5)).astype(np.int32)]
        args = args[:1] if name == "bitwise_invert" else args
    else:
        lo, hi = (1.1, 3.0) if name == "acosh" else (-0.9, 0.9)
        args = [rng.uniform(lo, hi, (4, 5)).astype(np.float32)]
        if name in ("atan2", "pow"):
            args = [rng.uniform(0.1, 2, (4, 5)).astype(np.float32)] * 2
    assert_allclose(getattr(fnp, name)(*to_fx(args)), getattr(jnp, name)(*to_jax(args)),
                    what=name)


# --- elementwise table: values and dtypes against jax ----------------------------------------

EXACT, CLOSE = "exact", "close"
# name -> (arguments per dtype, comparison)
TABLE = {
    "fabs": (lambda dt: [_floats(dt)], EXACT),
    "modf": (lambda dt: [_floats(dt)], EXACT),
    "spacing": (lambda dt: [_floats(dt)], EXACT),
    "nan_to_num": (lambda dt: [_floats(dt)], EXACT),
    "isposinf": (lambda dt: [_floats(dt)], EXACT),
    "isneginf": (lambda dt: [_floats(dt)], EXACT),
    "divmod": (lambda dt: [_floats(dt), np.full(16, -2.5, dt)], EXACT),
    "frexp": (lambda dt: [_floats(dt)], EXACT),
    "i0": (lambda dt: [np.linspace(-60, 60, 41).astype(dt)], CLOSE),
    "logaddexp2": (lambda dt: [_floats(dt), _floats(dt)[::-1].copy()], CLOSE),
    "isclose": (lambda dt: [_floats(dt), (_floats(dt) * (1 + 1e-6)).astype(dt)], EXACT),
}


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
@pytest.mark.parametrize("name", sorted(TABLE))
def test_float_functions_match_jax(name, dtype):
    make, how = TABLE[name]
    args = make(dtype)
    with np.errstate(all="ignore"):
        got = getattr(fnp, name)(*to_fx(args))
        want = getattr(jnp, name)(*to_jax(args))
    if how == EXACT:
        assert_bitwise(got, want, what=f"{name} {dtype}")
    else:
        assert_allclose(got, want, rtol=1e-6 if dtype == F32 else 1e-13, what=f"{name}")


@pytest.mark.parametrize("name", ["fabs", "i0", "nan_to_num", "isposinf", "isneginf", "modf",
                                  "spacing", "frexp", "logaddexp2"])
@pytest.mark.parametrize("dtype", [np.dtype(np.bool_), I32, I64, U32, np.dtype(np.float16),
                                   np.dtype("bfloat16")], ids=str)
def test_result_dtypes(name, dtype):
    x = np.array([0, 1, 3, 2], dtype)
    args = [x, x] if name == "logaddexp2" else [x]
    got = getattr(fnp, name)(*to_fx(args))
    want = getattr(jnp, name)(*to_jax(args))
    f32 = np.asarray(want[0] if isinstance(want, tuple) else want).dtype == F32
    assert_allclose(got, want, rtol=1e-6 if f32 else None, what=f"{name} {dtype}")


@pytest.mark.parametrize("name", ["fabs", "i0", "spacing", "logaddexp2", "ldexp"])
def test_default_mode_dtypes(name):
    # jax's default mode: integers compute in float32, float32 stays float32.
    with fx.enable_x64(False):
        for dt in (np.int32, np.bool_, np.float32):
            x = to_fx(np.array([0, 1, 2], dt))
            args = [x, x] if name == "logaddexp2" else [x, 2] if name == "ldexp" else [x]
            assert getattr(fnp, name)(*args).dtype == F32, (name, dt)


def test_frexp_ldexp_subnormals_against_numpy():
    # XLA flushes subnormals; numpy (and fx) decompose and build them exactly.
    for dt in (F32, F64):
        tiny = np.finfo(dt).tiny
        x = np.array([tiny / 3, -tiny / 1000, tiny * 0.75, np.finfo(dt).smallest_subnormal],
                     dt)
        m, e = fnp.frexp(to_fx(x))
        nm, ne = np.frexp(x)
        assert_bitwise(m, nm, what=f"frexp mantissa {dt}")
        np.testing.assert_array_equal(np.asarray(e), ne)
        assert_bitwise(fnp.ldexp(m, e), x, what=f"ldexp(frexp(x)) {dt}")
        rng = np.random.default_rng(2)
        v = rng.uniform(-4, 4, 64).astype(dt)
        big = 2 * np.finfo(dt).maxexp + 60
        n = rng.integers(-big, big, 64).astype(np.int32)
        n[:4] = [-big * 10, big * 10, 0, -1]
        with np.errstate(all="ignore"):
            assert_bitwise(fnp.ldexp(to_fx(v), to_fx(n)), np.ldexp(v, n), what=f"ldexp {dt}")


@pytest.mark.parametrize("dtype", [F32, F64, np.dtype(np.float16), np.dtype("bfloat16")],
                         ids=str)
def test_ldexp_matches_jax_in_the_normal_range(dtype):
    rng = np.random.default_rng(3)
    x = rng.uniform(-4, 4, 50).astype(dtype)
    n = rng.integers(-10, 10, 50).astype(np.int32)
    assert_bitwise(fnp.ldexp(to_fx(x), to_fx(n)), jnp.ldexp(to_jax(x), to_jax(n)),
                   what=f"ldexp {dtype}")
    for dt in (np.int32, np.int64, np.bool_):
        ints = np.arange(2, dtype=dt)
        assert fnp.ldexp(to_fx(ints), 2).dtype == jnp.ldexp(ints, 2).dtype
    assert fnp.ldexp(to_fx(x), np.uint32(3)).dtype == dtype


# --- integers ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gcd", "lcm"])
@pytest.mark.parametrize("dtypes_", [(I32, I32), (I64, I64), (U32, U32), (I32, I64)],
                         ids=str)
def test_gcd_lcm_match_jax(name, dtypes_):
    a, b = _ints(dtypes_[0], 4), _ints(dtypes_[1], 5, shape=(5,))
    a[0, :2] = 0
    b[:1] = 0
    assert_bitwise(getattr(fnp, name)(*to_fx([a, b])), getattr(jnp, name)(*to_jax([a, b])),
                   what=f"{name} {dtypes_}")
    # Python scalars are weak: the array's dtype wins.
    assert_bitwise(getattr(fnp, name)(to_fx(a), 12), getattr(jnp, name)(to_jax(a), 12),
                   what=f"{name} scalar")


@pytest.mark.parametrize("dtype", [I32, I64, U32, np.dtype(np.bool_)], ids=str)
def test_bitwise_count(dtype):
    info = np.iinfo(dtype) if dtype.kind != "b" else None
    if info is None:
        x = np.array([True, False])
    else:
        x = np.array([0, 1, 7, 255, info.max, info.min, info.min + 1, 12345], dtype)
    got = fnp.bitwise_count(to_fx(x))
    assert_bitwise(got, jnp.bitwise_count(to_jax(x)), what=f"bitwise_count {dtype}")
    if info is not None:
        np.testing.assert_array_equal(np.asarray(got), np.bitwise_count(x))


def test_integer_errors_name_the_function():
    with pytest.raises(TypeError, match=r"fx\.numpy\.gcd.*integers.*f32"):
        fnp.gcd(to_fx(np.ones(3, np.float32)), 2)
    with pytest.raises(TypeError, match=r"fx\.numpy\.lcm.*bool"):
        fnp.lcm(to_fx(np.array([True])), to_fx(np.array([True])))
    with pytest.raises(TypeError, match=r"fx\.numpy\.ldexp.*exponent.*f32"):
        fnp.ldexp(1.0, to_fx(np.float32(2.5)))
    with pytest.raises(TypeError, match=r"fx\.numpy\.bitwise_count.*f32"):
        fnp.bitwise_count(to_fx(np.float32(2.5)))
    with pytest.raises(TypeError, match=r"fx\.numpy\.isclose.*\(3,\) \(4,\)"):  # as jax's
        fnp.isclose(to_fx(np.ones(3)), to_fx(np.ones(4)))


# --- closeness and predicates ----------------------------------------------------------------

CLOSE_CASES = [
    (np.array([1.0, 1.0001, np.nan, np.inf, -np.inf, 1e-9]),
     np.array([1.0, 1.0, np.nan, np.inf, np.inf, 0.0]), {}),
    (np.array([1.0, np.nan]), np.array([1.0, np.nan]), dict(equal_nan=True)),
    (np.array([1.0, 1.1, 100.0]), np.array([1.05, 1.0, 101.0]), dict(rtol=0.1, atol=0.0)),
    (np.array([[1, 2], [3, 4]], np.int32), np.array([1, 3], np.int32), {}),
    (np.array([100000, 2], np.int32), np.array([100001, 2], np.int32), {}),
    (np.array([True, False]), np.array([True, True]), {}),
    (np.array([1.0, 2.0], np.float32), np.array([1.00000001, 2.1]), dict(atol=0.2)),
]


@pytest.mark.parametrize("i", range(len(CLOSE_CASES)))
def test_isclose_allclose(i):
    a, b, kw = CLOSE_CASES[i]
    assert_bitwise(fnp.isclose(to_fx(a), to_fx(b), **kw), jnp.isclose(a, b, **kw),
                   what="isclose")
    assert_bitwise(fnp.allclose(to_fx(a), to_fx(b), **kw), jnp.allclose(a, b, **kw),
                   what="allclose")


EQUAL_CASES = [
    ([1, 2], [1, 2]), ([1, 2], [1, 3]), ([1, 2], [1, 2, 3]), ([[1, 2]], [1, 2]),
    ([1.0, np.nan], [1.0, np.nan]), ([[1, 2], [1, 2]], [1, 2]), ([1, 2], [[1, 2], [1, 3]]),
    ([1, 2], [1.0, 2.0]), ([], []), (3, [3, 3]),
]


@pytest.mark.parametrize("a,b", EQUAL_CASES, ids=str)
def test_array_equal_and_equiv(a, b):
    a, b = np.asarray(a), np.asarray(b)
    for kw in ({}, dict(equal_nan=True)):
        got = fnp.array_equal(to_fx(a), to_fx(b), **kw)
        assert_bitwise(got, jnp.array_equal(a, b, **kw), what=f"array_equal {kw}")
    # jax 0.10 raises TypeError for shapes that do not broadcast; numpy (and fx) say False.
    assert_bitwise(fnp.array_equiv(to_fx(a), to_fx(b)), np.array(np.array_equiv(a, b)),
                   what="array_equiv")


SCALARS = [1, 1.5, True, np.float32(2), np.int64(3), "a", None, [1], (1,), np.array(2.0),
           np.array([2.0]), np.zeros((1, 1))]


@pytest.mark.parametrize("v", SCALARS, ids=repr)
def test_isscalar(v):
    assert fnp.isscalar(v) == jnp.isscalar(v)
    if isinstance(v, np.ndarray):
        assert fnp.isscalar(to_fx(v)) == jnp.isscalar(to_jax(v))


def test_nan_to_num_replacements():
    x = _floats(F32)
    for kw in (dict(nan=-1.0, posinf=9.0, neginf=-9.0), dict(posinf=1e5),
               dict(nan=np.float32(2.0))):
        assert_bitwise(fnp.nan_to_num(to_fx(x), **kw), jnp.nan_to_num(x, **kw), what=str(kw))
    ints = np.arange(4, dtype=np.int32)
    assert fnp.nan_to_num(to_fx(ints)).dtype == I32
    half = _floats(np.float16)
    assert_bitwise(fnp.nan_to_num(to_fx(half)), jnp.nan_to_num(half), what="float16")


# --- derivatives ---------------------------------------------------------------------------


def _smooth(dt, lo, hi, shape=(3, 4), seed=5):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dt)


GRAD_CASES = [
    OpCase("i0", fnp.i0, jnp.i0, lambda r: [np.linspace(-35, 35, 24).reshape(4, 6)],
           grad_tol=1e-4),
    OpCase("logaddexp2", fnp.logaddexp2, jnp.logaddexp2,
           lambda r: [_smooth(F64, -3, 3), _smooth(F64, -3, 3, seed=6)],
           diff_argnums=(0, 1)),
    OpCase("fabs", fnp.fabs, jnp.fabs, lambda r: [_smooth(F64, 0.5, 3) * np.array([1, -1, 1, -1])]),
    OpCase("modf_frac", lambda x: fnp.modf(x)[0], lambda x: jnp.modf(x)[0],
           lambda r: [_smooth(F64, -3, 3) + 0.01]),
    OpCase("ldexp", lambda x: fnp.ldexp(x, np.int32(3)), lambda x: jnp.ldexp(x, np.int32(3)),
           lambda r: [_smooth(F64, -3, 3)]),
    OpCase("nan_to_num", fnp.nan_to_num, jnp.nan_to_num, lambda r: [_smooth(F64, -3, 3)]),
    OpCase("divmod_rem", lambda x, y: fnp.divmod(x, y)[1], lambda x, y: jnp.divmod(x, y)[1],
           lambda r: [_smooth(F64, 0.1, 0.9), _smooth(F64, 1.5, 2.5, seed=7)],
           diff_argnums=(0, 1)),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=repr)
def test_derivatives(case):
    rng = np.random.default_rng(8)
    args = case.args(rng)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)
    check_grads_f64(case, args)


def test_i0_derivative_is_i1():
    import scipy.special

    x = np.linspace(-50, 50, 101)
    g = fx.vmap(fx.grad(fnp.i0))(to_fx(x))
    np.testing.assert_allclose(np.asarray(g), scipy.special.i1(x), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(np.asarray(fnp.i0(to_fx(x))), scipy.special.i0(x), rtol=1e-13)


# --- vmap and jit --------------------------------------------------------------------------

TRANSFORM_CASES = [
    OpCase("gcd", fnp.gcd, jnp.gcd, lambda r: [_ints(I32, 9, (3, 4)), _ints(I32, 10, (3, 4))]),
    OpCase("lcm", fnp.lcm, jnp.lcm, lambda r: [_ints(I32, 11, (3, 4)), _ints(I32, 12, (3, 4))]),
    OpCase("frexp", fnp.frexp, jnp.frexp, lambda r: [_floats(F32, (4, 4))]),
    OpCase("ldexp", fnp.ldexp, jnp.ldexp,
           lambda r: [_smooth(F32, -3, 3), r.integers(-5, 5, (3, 4)).astype(np.int32)]),
    OpCase("i0", fnp.i0, jnp.i0, lambda r: [_smooth(F32, -30, 30)], tags={"transcendental"}),
    OpCase("isclose", fnp.isclose, jnp.isclose,
           lambda r: [_floats(F32, (4, 4)), _floats(F32, (4, 4))[::-1].copy()]),
    OpCase("bitwise_count", lambda x: fnp.bitwise_count(x).astype(np.int32),
           lambda x: jnp.bitwise_count(x).astype(np.int32), lambda r: [_ints(I64, 13, (3, 4))]),
    OpCase("bitwise_count_u8", fnp.bitwise_count, jnp.bitwise_count,
           lambda r: [_ints(I32, 15, (3, 4))]),
    OpCase("spacing", fnp.spacing, jnp.spacing, lambda r: [_floats(F32, (4, 4))]),
    OpCase("nan_to_num", fnp.nan_to_num, jnp.nan_to_num, lambda r: [_floats(F32, (4, 4))]),
    OpCase("allclose", fnp.allclose, jnp.allclose,
           lambda r: [_smooth(F32, 0, 1), _smooth(F32, 0, 1)]),
]


@pytest.mark.parametrize("case", TRANSFORM_CASES, ids=repr)
def test_vmap_against_loop_and_jit_against_eager(case):
    rng = np.random.default_rng(14)
    args = case.args(rng)
    with np.errstate(all="ignore"):
        eager = case.fx_fn(*to_fx(args))
        jitted = fx.jit(case.fx_fn)(*to_fx(args))
        if "transcendental" in case.tags:  # compiled exp may differ from numpy's by an ulp
            assert_allclose(jitted, eager, rtol=1e-6, what=f"{case.name} jit")
        else:
            assert_bitwise(jitted, eager, what=f"{case.name} jit")
        for axis in (0, 1):
            check_vmap(case, args, (axis,) * len(args))
