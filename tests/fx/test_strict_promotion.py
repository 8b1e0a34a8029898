"""Strict dtype promotion (``fx.numpy_dtype_promotion("strict")``, ``fx.config.update(
"jax_numpy_dtype_promotion", ...)``) against jax's: every pair of dtypes, weak values and
Python scalars in both modes, the public promotion functions, a table of fx.numpy calls,
tracing under jit/grad/vmap, the jit cache, threads and the error type."""

from __future__ import annotations

import threading

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax._src.lax.lax import _convert_element_type as jax_convert  # weak values of any dtype

import fx
import fx.numpy as fnp
from fx import dtypes, lax

# jax warns when the default mode truncates the 64-bit dtypes of the pair tables.
pytestmark = pytest.mark.filterwarnings("ignore:Explicitly requested dtype")

ALL = [dtypes.bool_, *dtypes.INTEGER, *dtypes.FLOATING, *dtypes.COMPLEX]
PYTHON = [True, 3, 2.5, 1 + 2j]
SPECS = [(d, w) for d in ALL for w in (False, True) if not (w and d == dtypes.bool_)] + PYTHON


@pytest.fixture(params=[False, True], ids=["default", "x64"])
def x64(request):
    saved = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", request.param)
    try:
        with fx.enable_x64(request.param):
            yield request.param
    finally:
        jax.config.update("jax_enable_x64", saved)


def _operand(lib, spec):
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


def _outcome(fn, *args):
    """``(dtype, weak_type)`` of ``fn(*args)``'s result, or the name of the error it raises."""
    try:
        out = fn(*args)
    except (jax.dtypes.TypePromotionError, dtypes.TypePromotionError) as e:
        return type(e).__name__
    return np.dtype(out.dtype), bool(out.weak_type)


@pytest.mark.parametrize("left", SPECS, ids=[_name(s) for s in SPECS])
def test_binary_op_under_strict_matches_jax_for_every_pair(left, x64):
    wrong = []
    for right in SPECS:
        if not isinstance(left, tuple) and not isinstance(right, tuple):
            continue
        ja, jb = _operand("jax", left), _operand("jax", right)
        a, b = _operand("fx", left), _operand("fx", right)
        with jax.numpy_dtype_promotion("strict"):
            want = _outcome(jax.eval_shape, jnp.add, ja, jb)
        with fx.numpy_dtype_promotion("strict"):
            got = _outcome(fnp.add, a, b)
        if got != want:
            wrong.append(f"{_name(left)} + {_name(right)}: fx {got}, jax {want}")
    assert not wrong, "\n".join(wrong)


PUBLIC = ALL + list(dtypes.FLOAT8) + [int, float, complex]


@pytest.mark.parametrize("a", PUBLIC, ids=str)
def test_promote_types_and_result_type_under_strict_match_jax(a, x64):
    for b in PUBLIC:
        for jfn, ffn in ((jnp.promote_types, fnp.promote_types),
                         (jnp.result_type, fnp.result_type)):
            with jax.numpy_dtype_promotion("strict"):
                try:
                    want = np.dtype(jfn(a, b))
                except jax.dtypes.TypePromotionError:
                    want = "TypePromotionError"
            with fx.numpy_dtype_promotion("strict"):
                try:
                    got = np.dtype(ffn(a, b))
                except fx.errors.TypePromotionError:
                    got = "TypePromotionError"
            assert got == want, (jfn.__name__, a, b)


# fx.numpy calls a real program makes: each runs in both libraries under strict promotion and
# must give the same dtype and weak type, or the same error.
f32, f64, i32 = np.float32, np.float64, np.int32
CALLS = {
    "scalar_int_plus_float": lambda np_, nn: np_.add(1, 2.0),
    "scalar_float_plus_complex": lambda np_, nn: np_.add(1.0, 2j),
    "weak_int_array_plus_float": lambda np_, nn: np_.asarray(1) + 2.0,
    "mean_of_ints": lambda np_, nn: np_.mean(np_.arange(5)),
    "mean_f32": lambda np_, nn: np_.mean(np_.arange(5.0, dtype=f32)),
    "int_array_div_int": lambda np_, nn: np_.arange(5) / 2,
    "true_divide_int32": lambda np_, nn: np_.ones(3, i32) / np_.ones(3, i32),
    "sin_of_ints": lambda np_, nn: np_.sin(np_.arange(3)),
    "where_f32_scalar": lambda np_, nn: np_.where(np_.ones(3) > 0, np_.ones(3, f32), 0.0),
    "f32_pow_int": lambda np_, nn: np_.ones(3, f32) ** 2,
    "i32_pow_float": lambda np_, nn: np_.ones(3, i32) ** 2.0,
    "softmax_f32": lambda np_, nn: nn.softmax(np_.ones(3, f32)),
    "logsumexp_f32": lambda np_, nn: nn.logsumexp(np_.ones(3, f32)),
    "var_f32": lambda np_, nn: np_.var(np_.ones(3, f32)),
    "std_of_ints": lambda np_, nn: np_.std(np_.arange(4)),
    "clip_f32": lambda np_, nn: np_.clip(np_.ones(3, f32), 0, 1),
    "gather_f32": lambda np_, nn: np_.ones(3, f32)[np_.array([0, 1])],
    "at_set_scalar": lambda np_, nn: np_.ones(3, f32).at[0].set(1),
    "at_set_f64_into_f32": lambda np_, nn: np_.ones(3, f32).at[0].set(np_.ones((), f64)),
    "f32_matmul_f64": lambda np_, nn: np_.ones(3, f32) @ np_.ones(3, f64),
    "f32_plus_f64": lambda np_, nn: np_.ones(3, f32) + np_.ones(3, f64),
    "f32_plus_numpy_f64": lambda np_, nn: np_.ones(3, f32) + np.float64(1),
    "concatenate_mixed": lambda np_, nn: np_.concatenate([np_.ones(3, f32), np_.ones(3, f64)]),
    "stack_mixed": lambda np_, nn: np_.stack([np_.ones(3, f32), np_.ones(3, i32)]),
    "array_of_f32_and_float": lambda np_, nn: np_.array([np.float32(1), 2.0]),
    "bool_plus_int": lambda np_, nn: np_.ones(3, bool) + 1,
    "int8_plus_bool": lambda np_, nn: np_.ones(3, np.int8) + True,
    "f32_plus_complex": lambda np_, nn: np_.ones(3, f32) + 1j,
    "bf16_times_float": lambda np_, nn: np_.ones(3, ml_dtypes.bfloat16) * 0.5,
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_numpy_calls_under_strict_match_jax(name):
    call = CALLS[name]
    with jax.numpy_dtype_promotion("strict"):
        want = _outcome(lambda: call(jnp, jax.nn))
    with fx.numpy_dtype_promotion("strict"):
        got = _outcome(lambda: call(fnp, fx.nn))
    assert got == want
    with fx.numpy_dtype_promotion("standard"):  # the standard mode still promotes
        assert not isinstance(_outcome(lambda: call(fnp, fx.nn)), str)


def test_error_type_and_message():
    assert issubclass(fx.errors.TypePromotionError, ValueError)
    assert fx.errors.TypePromotionError.__mro__[1:] == jax.dtypes.TypePromotionError.__mro__[1:]
    assert fx.errors.TypePromotionError is fx.dtypes.TypePromotionError
    with fx.numpy_dtype_promotion("strict"):
        with pytest.raises(fx.errors.TypePromotionError) as info:
            fnp.ones(2, np.float32) + fnp.ones(2, np.int32)
    msg = str(info.value)
    assert "float32" in msg and "int32" in msg and "strict" in msg
    assert "astype" in msg and "numpy_dtype_promotion('standard')" in msg


def test_context_restores_and_nests():
    assert fx.config.jax_numpy_dtype_promotion == "standard"
    with fx.numpy_dtype_promotion("strict"):
        assert fx.config.jax_numpy_dtype_promotion == "strict"
        assert fx.config.read("jax_numpy_dtype_promotion") == "strict"
        with fx.numpy_dtype_promotion("standard"):
            assert (fnp.ones(2, np.float32) + fnp.ones(2, np.int32)).dtype == np.float32
        with pytest.raises(fx.errors.TypePromotionError):
            fnp.ones(2, np.float32) + fnp.ones(2, np.int32)
    assert fx.config.jax_numpy_dtype_promotion == "standard"
    assert (fnp.ones(2, np.float32) + fnp.ones(2, np.int32)).dtype == np.float32


def test_bad_mode_raises_value_error_as_jax():
    for bad in ("bogus", "STRICT"):
        with pytest.raises(ValueError):
            jax.numpy_dtype_promotion(bad).__enter__()
        with pytest.raises(ValueError):
            fx.numpy_dtype_promotion(bad)
        with pytest.raises(ValueError):
            jax.config.update("jax_numpy_dtype_promotion", bad)
        with pytest.raises(ValueError):
            fx.config.update("jax_numpy_dtype_promotion", bad)
    assert fx.config.jax_numpy_dtype_promotion == "standard"


def test_config_update_sets_the_global_mode():
    try:
        fx.config.update("jax_numpy_dtype_promotion", "strict")
        assert fx.config.numpy_dtype_promotion == "strict"
        with pytest.raises(fx.errors.TypePromotionError):
            fnp.ones(2, np.float32) + fnp.ones(2, np.float64)
        with fx.numpy_dtype_promotion("standard"):  # a context overrides the option
            assert (fnp.ones(2, np.float32) + fnp.ones(2, np.float64)).dtype == np.float64
    finally:
        fx.config.update("jax_numpy_dtype_promotion", "standard")
    assert (fnp.ones(2, np.float32) + fnp.ones(2, np.float64)).dtype == np.float64


def _mixed(x, y):
    return fnp.sum(x * y)


def test_strict_applies_under_jit_grad_vmap_and_is_part_of_the_jit_key():
    x32, x64_ = fnp.ones(3, np.float32), fnp.ones(3, np.float64)
    f = fx.jit(_mixed)
    assert f(x32, x64_).dtype == np.float64  # traced and cached under standard
    with fx.numpy_dtype_promotion("strict"):
        for fn in (f, fx.jit(_mixed), fx.grad(_mixed), fx.vmap(_mixed)):
            with pytest.raises(fx.errors.TypePromotionError):
                fn(x32, x64_)
        # Same dtypes and weak scalars still trace, and give the values standard mode gives.
        g = fx.jit(fx.grad(lambda x: fnp.sum(fnp.tanh(2.0 * x) / 3)))
        got = np.asarray(g(x32))
        h = fx.vmap(lambda r: fnp.mean(r ** 2) + 1)(fnp.ones((4, 3), np.float32))
        assert h.dtype == np.float32
    want = np.asarray(fx.jit(fx.grad(lambda x: fnp.sum(fnp.tanh(2.0 * x) / 3)))(x32))
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.float32
    assert f(x32, x64_).dtype == np.float64  # back in standard mode, the cached trace again


def test_mode_is_per_thread_and_context():
    seen = {}
    ready, done = threading.Event(), threading.Event()

    def other():
        # A new thread starts from the global option, not this thread's context.
        ready.wait()
        seen["mode"] = fx.config.jax_numpy_dtype_promotion
        seen["dtype"] = (fnp.ones(2, np.float32) + fnp.ones(2, np.int32)).dtype
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with fx.numpy_dtype_promotion("strict"):
        ready.set()
        done.wait(30)
        with pytest.raises(fx.errors.TypePromotionError):
            fnp.ones(2, np.float32) + fnp.ones(2, np.int32)
    t.join(30)
    assert seen == {"mode": "standard", "dtype": np.float32}


@pytest.mark.parametrize("op", ["set", "add", "mul", "min", "get"])
@pytest.mark.parametrize("value", ["f64", "i32", "float", "f32"])
def test_at_updates_under_strict_match_jax(op, value):
    def run(np_):
        v = {"f64": np_.ones((), f64), "i32": np_.ones((), i32), "float": 1.5,
             "f32": np_.ones((), f32)}[value]
        ref = np_.ones(3, f32).at[0]
        return ref.get() if op == "get" else getattr(ref, op)(v)

    with jax.numpy_dtype_promotion("strict"):
        want = _outcome(lambda: run(jnp))
    with fx.numpy_dtype_promotion("strict"):
        got = _outcome(lambda: run(fnp))
    assert got == want
