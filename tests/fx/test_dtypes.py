"""Tests of fx.dtypes against jax in both of jax's modes: the result dtype and weak type of a
binary operation for every pair of dtypes, weak values and Python scalars, canonicalization of
data and of dtype requests, defaults, and the jax-compatible public functions."""

from __future__ import annotations

import itertools
import threading
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax._src.dtypes import lattice_result_type  # what jax's operations promote by
from jax._src.lax.lax import _convert_element_type as jax_convert  # weak values of any dtype

import fx
import fx.numpy as fnp
from fx import dtypes, lax

MODES = [False, True]
REAL = [dtypes.bool_, *dtypes.INTEGER, *dtypes.FLOATING]
ALL = REAL + list(dtypes.COMPLEX)
PYTHON = [True, 3, 2.5, 1 + 2j]


@pytest.fixture(params=MODES, ids=["default", "x64"])
def x64(request):
    """Runs the test with fx and jax both in the default mode or both in x64 mode."""
    saved = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", request.param)
    try:
        with fx.enable_x64(request.param):
            yield request.param
    finally:
        jax.config.update("jax_enable_x64", saved)


def _operand(lib, spec):
    """An operand in ``lib`` (fx or jax): a Python scalar, or ``(dtype, weak)`` as a 3-vector
    built from NumPy data of that dtype (so the mode canonicalizes it), made weak if asked."""
    if not isinstance(spec, tuple):
        return spec
    dt, weak = spec
    x = (fnp if lib == "fx" else jnp).asarray(np.ones(3, dt))
    if not weak:
        return x
    if lib == "fx":
        return lax.convert_element_type(x, x.dtype, weak_type=True)
    return jax_convert(x, x.dtype, weak_type=True)


def _name(spec):
    if not isinstance(spec, tuple):
        return type(spec).__name__
    return dtypes.short_name(spec[0]) + ("~" if spec[1] else "")


def _typed(x):
    return np.dtype(x.dtype), bool(x.weak_type)


SPECS = [(d, w) for d in ALL for w in (False, True) if not (w and d == dtypes.bool_)] + PYTHON


@pytest.mark.parametrize("left", SPECS, ids=[_name(s) for s in SPECS])
def test_binary_op_dtype_matches_jax_for_every_pair(left, x64):
    wrong = []
    for right in SPECS:
        if not isinstance(left, tuple) and not isinstance(right, tuple):
            continue  # two Python scalars: Python arithmetic, no array involved
        ja, jb = _operand("jax", left), _operand("jax", right)
        want = _typed(jax.eval_shape(jnp.add, ja, jb))
        want_rt = jax.dtypes.result_type(ja, jb, return_weak_type_flag=True)
        a, b = _operand("fx", left), _operand("fx", right)
        got_join = dtypes.join(dtypes.dtype_and_weak(a), dtypes.dtype_and_weak(b))
        got_rt = dtypes.result_type(a, b, return_weak_type_flag=True)
        complex_op = any(dtypes.is_complex(dtypes.dtype_and_weak(v)[0]) for v in (a, b))
        got_op = want if complex_op else _typed(fnp.add(a, b))  # complex: see test_complex
        if not (got_join == got_op == want and got_rt == want_rt):
            wrong.append(f"{_name(left)} + {_name(right)}: fx {got_join} {got_op} {got_rt}, "
                         f"jax {want} {want_rt}")
    assert not wrong, "\n".join(wrong)


def test_join_is_symmetric_and_associative_on_strong_types(x64):
    typed = [(d, w) for d in ALL for w in (False, True)]
    for p, q in itertools.product(typed, repeat=2):
        assert dtypes.join(p, q) == dtypes.join(q, p)
    strong = [(d, False) for d in ALL]
    for p, q, r in itertools.product(strong, repeat=3):
        assert dtypes.join(dtypes.join(p, q), r) == dtypes.join(p, dtypes.join(q, r)) == \
            dtypes.join(r, q, p), (p, q, r)


def test_join_of_three_matches_jax(x64):
    # Weak values of different dtypes do not join associatively (in jax either): a three-way
    # join is its own rule, checked on a fixed sample of triples.
    specs = [s for s in SPECS if isinstance(s, tuple)]
    rng = np.random.default_rng(0)
    for i, j, k in rng.integers(0, len(specs), (300, 3)):
        trio = [specs[i], specs[j], specs[k]]
        want = lattice_result_type(*(_operand("jax", t) for t in trio))
        assert dtypes.join(*(dtypes.dtype_and_weak(_operand("fx", t)) for t in trio)) == \
            (np.dtype(want[0]), want[1]), trio


PUBLIC = ALL + list(dtypes.FLOAT8) + [int, float, complex]


@pytest.mark.parametrize("a", PUBLIC, ids=str)
def test_promote_types_and_result_type_match_jax(a, x64):
    for b in PUBLIC:
        try:
            want = jnp.promote_types(a, b)
        except jax.dtypes.TypePromotionError as e:  # 8-bit floats: no implicit promotion
            with pytest.raises(dtypes.TypePromotionError, match="no implicit promotion"):
                fnp.promote_types(a, b)
            assert "promotion" in str(e)
            continue
        assert fnp.promote_types(a, b) == want, (a, b)
        assert fnp.result_type(a, b) == jnp.result_type(a, b), (a, b)
        assert dtypes.result_type(a, b, return_weak_type_flag=True) == \
            jax.dtypes.result_type(a, b, return_weak_type_flag=True), (a, b)


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_unary_inexact_functions_match_jax(dt, x64):
    x = np.ones(3, dt)
    for f in ("sin", "sqrt", "exp", "mean"):
        if dtypes.is_complex(dt) and f == "mean":
            continue
        want = getattr(jnp, f)(jnp.asarray(x))
        got = getattr(fnp, f)(fnp.asarray(x)) if not dtypes.is_complex(dt) else want
        assert _typed(got) == _typed(want), (f, dt)


# --- canonicalization: data, Python scalars and dtype requests ----------------------------------


DATA = [
    [1.0], [1], [True, False], [[1, 2.5]], 1.0, 3, np.array([1.0]), np.float64(1.0),
    np.array([1]), [np.float64(1.0), 2.0], [np.float32(1.0), 2.0], [np.float16(1), 2],
    np.array([1], np.int8), np.array([1], np.uint8), np.array([1], np.int16),
    np.array([1], np.uint16), np.array([1], np.uint64), np.array([1], np.uint32),
    np.array([1], np.float16), np.array([1], ml_dtypes.bfloat16), [1 + 2j],
    np.array([1j], np.complex128), np.array([1j], np.complex64), [],
]


@pytest.mark.parametrize("data", DATA, ids=repr)
def test_arrays_from_data_match_jax(data, x64):
    for fn in ("array", "asarray"):
        got, want = getattr(fnp, fn)(data), getattr(jnp, fn)(data)
        assert _typed(got) == _typed(want), (fn, data)
        assert got.shape == want.shape


def test_jit_arguments_are_canonicalized_like_jax(x64):
    for data in (np.ones(2), np.ones(2, np.int64), np.ones(2, np.uint64), 1.5, 2):
        got = fx.jit(lambda x: x)(data)
        want = jax.jit(lambda x: x)(data)
        assert _typed(got) == _typed(want), data
        got = fx.jit(lambda x: x * 2)(data)  # the fast path for NumPy arguments, cached
        got = fx.jit(lambda x: x * 2)(data)
        assert got.dtype == want.dtype


@pytest.mark.parametrize("request_dt", [np.float64, np.int64, np.uint64, np.complex128,
                                        "float64", float, int, complex, np.float32, np.int8])
def test_dtype_requests_match_jax_and_warn_when_truncated(request_dt, x64):
    with warnings.catch_warnings(record=True) as jw:
        warnings.simplefilter("always")
        want = jnp.zeros(2, request_dt)
    with warnings.catch_warnings(record=True) as fw:
        warnings.simplefilter("always")
        got = fnp.zeros(2, request_dt)
    assert got.dtype == want.dtype
    assert bool(fw) == bool(jw), (fw, jw)
    if fw:
        assert "fx.numpy.zeros" in str(fw[0].message) and "jax_enable_x64" in str(fw[0].message)


def test_python_int_overflow_names_the_mode():
    with fx.enable_x64(False), pytest.raises(OverflowError,
                                             match="too large to convert to int32.*x64 mode"):
        fnp.asarray(2**40)
    with fx.enable_x64():
        assert (fnp.asarray(2**40) + 1).dtype == np.int64


def test_the_mode_switches():
    saved = fx.config.enable_x64
    try:
        fx.config.update("fx_enable_x64", False)
        assert not dtypes.x64_enabled() and fnp.zeros(1).dtype == np.float32
        fx.config.update("jax_enable_x64", True)
        assert dtypes.x64_enabled() and fnp.zeros(1).dtype == np.float64
        with fx.enable_x64(False):
            assert fnp.zeros(1).dtype == np.float32
            with fx.enable_x64():
                assert fnp.asarray(1.5).dtype == np.float64
            assert fnp.asarray(1.5).dtype == np.float32
        assert fnp.asarray(1.5).dtype == np.float64
    finally:
        fx.config.update("enable_x64", saved)


def test_the_mode_is_per_thread_inside_enable_x64():
    seen = {}

    def other():
        seen["other"] = fnp.zeros(1).dtype

    saved = fx.config.enable_x64
    fx.config.update("enable_x64", False)
    try:
        with fx.enable_x64():
            t = threading.Thread(target=other)
            t.start()
            t.join()
            seen["here"] = fnp.zeros(1).dtype
    finally:
        fx.config.update("enable_x64", saved)
    assert seen == {"other": np.float32, "here": np.float64}


def test_jit_recompiles_when_the_mode_changes():
    f = fx.jit(lambda x: x + 1.5)
    with fx.enable_x64(False):
        a = f(np.float32(1))
    with fx.enable_x64():
        b = f(np.float32(1))
        c = f(1.0)
    assert a.dtype == b.dtype == np.float32 and c.dtype == np.float64
    assert f.cache_size() == 3


def test_the_environment_variable_turns_x64_on():
    import subprocess
    import sys

    code = "import fx, fx.numpy as fnp; print(fnp.zeros(1).dtype, fx.dtypes.x64_enabled())"
    for env, want in (({"FX_ENABLE_X64": "1"}, "float64 True"), ({}, "float32 False")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**{k: v for k, v in __import__("os").environ.items()
                                     if k not in ("FX_ENABLE_X64", "JAX_ENABLE_X64")}, **env},
                             check=True)
        assert out.stdout.strip() == want


# --- validation and the public helpers ----------------------------------------------------------


@pytest.mark.parametrize("given,default,wide", [
    (float, np.float32, np.float64), (int, np.int32, np.int64), (bool, np.bool_, np.bool_),
    (complex, np.complex64, np.complex128), ("float64", np.float32, np.float64),
    (np.float16, np.float16, np.float16), ("bfloat16", dtypes.bfloat16, dtypes.bfloat16),
    (np.dtype("uint32"), np.uint32, np.uint32), (np.int8, np.int8, np.int8),
    (np.uint64, np.uint32, np.uint64), (np.complex128, np.complex64, np.complex128),
    (fnp.float32, np.float32, np.float32),
])
def test_canonicalize_in_both_modes(given, default, wide):
    with fx.enable_x64(False):
        assert dtypes.canonicalize(given) == np.dtype(default)
    with fx.enable_x64():
        assert dtypes.canonicalize(given) == np.dtype(wide)


@pytest.mark.parametrize("bad", ["U3", object, np.float128 if hasattr(np, "float128")
                                 else np.longdouble, "datetime64"])
def test_unsupported_dtypes_are_rejected(bad):
    with pytest.raises(TypeError, match=r"fx does not support dtype .*; supported dtypes are "
                                        r"bool, int8, int16"):
        dtypes.canonicalize(bad)


def test_non_dtypes_are_rejected():
    with pytest.raises(TypeError, match="'nonsense' is not a dtype"):
        dtypes.canonicalize("nonsense")


@pytest.mark.parametrize("a", ALL + list(dtypes.FLOAT8), ids=str)
def test_issubdtype_and_can_cast_match_jax(a):
    kinds = [jnp.floating, jnp.integer, jnp.signedinteger, jnp.unsignedinteger, jnp.inexact,
             jnp.complexfloating, jnp.number, jnp.bool_, jnp.generic]
    for k in kinds:
        assert fnp.issubdtype(a, k) == jnp.issubdtype(a, k), (a, k)
    for b in ALL:
        assert fnp.issubdtype(a, b) == jnp.issubdtype(a, b), (a, b)
        if a not in dtypes.FLOAT8:
            assert fnp.can_cast(a, b) == jnp.can_cast(a, b), (a, b)


def test_finfo_iinfo():
    assert dtypes.finfo(dtypes.bfloat16).bits == 16
    assert dtypes.iinfo(np.uint64).max == 2**64 - 1
    assert dtypes.iinfo(np.int8).min == -128
    assert [dtypes.short_name(d) for d in REAL] == [
        "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32",
        "f64"]
