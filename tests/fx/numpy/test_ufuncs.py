"""Table-driven tests of fx.numpy's elementwise functions against jax.numpy (x64 enabled).

Every function is checked on a grid of special values (inf, nan, signed zeros, integer edge
cases) for every fx dtype (result dtype and values), with hypothesis-drawn broadcastable
shapes, with Python scalar operands, and, when differentiable, jvp/vjp against jax, check_grads
at order 2 in float64 and vmap against a loop. Inputs are numpy arrays with explicit dtypes:
fx gives Python data float32/int32 where jax-x64 gives 64-bit (tested separately below).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from harness import (
    OpCase,
    assert_allclose,
    check_grads_f64,
    check_jvp,
    check_vjp,
    check_vmap,
    to_fx,
    to_jax,
)
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.numpy as fnp
from fx.numpy import ufuncs
from fx.test_util import broadcastable_shapes, shapes

BOOL, INT, FLOAT = "bool", "int", "float"
DTYPES = {
    BOOL: [np.bool_],
    INT: [np.int32, np.int64, np.uint32],
    FLOAT: [np.float16, ml_dtypes.bfloat16, np.float32, np.float64],
}
SMOOTH, PIECEWISE, NONE = "smooth", "piecewise", "none"


@dataclass(frozen=True)
class Ufunc:
    """One row: ``name`` in fx.numpy and jax.numpy, its arity, the interval(s) where it is
    smooth (for derivative checks), how it differentiates and which dtype kinds it takes."""

    name: str
    nargs: int
    domain: tuple = ((-3.0, 3.0),)
    diff: str = SMOOTH
    kinds: tuple = (BOOL, INT, FLOAT)
    jax_name: str | None = None

    def fx_fn(self):
        return getattr(fnp, self.name)

    def jax_fn(self):
        return getattr(jnp, self.jax_name or self.name)

    def dom(self, i):
        return self.domain[i] if i < len(self.domain) else self.domain[0]

    def __repr__(self):
        return self.name


def U(name, lo=-3.0, hi=3.0, diff=SMOOTH, kinds=(BOOL, INT, FLOAT), jax_name=None):
    return Ufunc(name, 1, ((lo, hi),), diff, kinds, jax_name)


def B(name, dx=(-3.0, 3.0), dy=None, diff=SMOOTH, kinds=(BOOL, INT, FLOAT)):
    return Ufunc(name, 2, (dx, dy or dx), diff, kinds)


NUM = (INT, FLOAT)
INTLIKE = (BOOL, INT)
POS = (0.5, 3.0)

UNARY = [
    U("abs"), U("absolute"), U("arccos", -0.9, 0.9), U("arccosh", 1.1, 4), U("arcsin", -0.9, 0.9),
    U("arcsinh"), U("arctan"), U("arctanh", -0.9, 0.9), U("cbrt", 0.1, 4),
    U("ceil", diff=PIECEWISE), U("cos"), U("cosh"), U("deg2rad"), U("degrees"), U("exp"),
    U("exp2"), U("expm1", -2, 2), U("fix", diff=PIECEWISE, jax_name="trunc"),
    U("floor", diff=PIECEWISE), U("log", 0.1, 4), U("log10", 0.1, 4), U("log1p", -0.5, 3),
    U("log2", 0.1, 4), U("negative", kinds=NUM), U("positive"), U("rad2deg"), U("radians"),
    U("reciprocal", 0.5, 3), U("rint", diff=PIECEWISE),
    U("round", diff=PIECEWISE, kinds=NUM), U("around", diff=PIECEWISE, kinds=NUM),
    U("sign", diff=PIECEWISE, kinds=NUM), U("sin"), U("sinc"), U("sinh"), U("sqrt", 0.1, 4),
    U("square"), U("tan", -1.2, 1.2), U("tanh"), U("trunc", diff=PIECEWISE),
    # Integer- or bool-valued results: no derivatives.
    U("bitwise_not", diff=NONE, kinds=INTLIKE), U("invert", diff=NONE, kinds=INTLIKE),
    U("isfinite", diff=NONE), U("isinf", diff=NONE), U("isnan", diff=NONE),
    U("logical_not", diff=NONE), U("signbit", diff=NONE),
]

BINARY = [
    B("add"), B("subtract", kinds=NUM), B("multiply"), B("divide", dy=POS),
    B("true_divide", dy=POS), B("floor_divide", dy=POS, diff=PIECEWISE),
    B("remainder", dy=POS), B("mod", dy=POS), B("fmod", dy=POS),
    B("power", POS, (-2.0, 2.0)), B("float_power", POS, (-2.0, 2.0)), B("arctan2"),
    B("copysign"), B("fmax"), B("fmin"), B("maximum"), B("minimum"),
    B("heaviside", diff=PIECEWISE), B("hypot"), B("logaddexp"),
    B("nextafter", diff=NONE),  # jax has no derivative for it either
    B("equal", diff=NONE), B("not_equal", diff=NONE), B("less", diff=NONE),
    B("less_equal", diff=NONE), B("greater", diff=NONE), B("greater_equal", diff=NONE),
    B("logical_and", diff=NONE), B("logical_or", diff=NONE), B("logical_xor", diff=NONE),
    B("bitwise_and", diff=NONE, kinds=INTLIKE), B("bitwise_or", diff=NONE, kinds=INTLIKE),
    B("bitwise_xor", diff=NONE, kinds=INTLIKE), B("left_shift", diff=NONE, kinds=INTLIKE),
    B("right_shift", diff=NONE, kinds=INTLIKE),
]
TESTED_ELSEWHERE = {"clip", "where"}  # own tests at the end of this file

ALL = UNARY + BINARY
DIFF = [u for u in ALL if u.diff != NONE]
SMOOTH_FNS = [u for u in ALL if u.diff == SMOOTH]


def test_every_function_is_in_a_table():
    names = {u.name for u in ALL} | TESTED_ELSEWHERE
    assert set(ufuncs.__all__) == names
    assert len(names) == len(ALL) + len(TESTED_ELSEWHERE)


# --- special values, every dtype ------------------------------------------------------------------

F_SPECIAL = np.array([-np.inf, -3.5, -2.5, -1, -0.5, -0.0, 0.0, 0.5, 1, 1.5, 2.5, 3, np.inf,
                      np.nan])
I_SPECIAL = np.array([-7, -3, -2, -1, 0, 1, 2, 3, 5, 31])


def _special(dtype):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.array([True, False])
    if dt.kind == "i":
        return I_SPECIAL.astype(dt)
    if dt.kind == "u":
        return np.unique(np.abs(I_SPECIAL)).astype(dt)
    return F_SPECIAL.astype(dt)


# Inputs where jax and fx legitimately differ (undefined behaviour, jax precision artifacts).
def _keep(u: Ufunc, dt: np.dtype, x, y=None):
    keep = np.ones(np.shape(x), bool)
    if dt.kind in "biu" and u.name in ("floor_divide", "remainder", "mod", "fmod"):
        keep &= y != 0  # integer division by zero is undefined (XLA and numpy differ)
    if dt.kind in "iu" and u.name == "power":
        keep &= y >= 0  # numpy raises; jax returns wrapped garbage
    if dt == ml_dtypes.bfloat16 and u.name == "exp2":
        keep &= np.abs(x.astype(np.float32)) < 8  # jax's bf16 exp2 loses bits for large x
    return keep


def _jax_batch(fn, arg_lists):
    """``[fn(*args) for args in arg_lists]`` in jax, compiled once (one compile per function
    instead of one per dtype keeps this file fast; results equal jax's eager ones)."""
    return jax.jit(lambda lists: [fn(*args) for args in lists])(
        [[jnp.asarray(a) for a in args] for args in arg_lists])


def _special_args(u: Ufunc):
    """Per dtype the function accepts: the special-value grid (all pairs for binary ones)."""
    out = []
    for kind in u.kinds:
        for dtype in DTYPES[kind]:
            dt = np.dtype(dtype)
            v = _special(dt)
            args = [v] if u.nargs == 1 else [a.ravel() for a in np.meshgrid(v, v, indexing="ij")]
            keep = _keep(u, dt, *args)
            out.append((dt, [a[keep] for a in args]))
    return out


@pytest.mark.parametrize("u", ALL, ids=repr)
def test_special_values_every_dtype(u):
    cases = _special_args(u)
    wants = _jax_batch(u.jax_fn(), [args for _, args in cases])
    for (dt, args), want in zip(cases, wants):
        got = u.fx_fn()(*[fnp.asarray(a) for a in args])
        if u.name == "rint" and dt.kind in "biu":
            # jax-x64 converts integers to its default float, float64; fx converts as its
            # other inexact functions do (int64 -> float64, narrower -> float32).
            want = np.rint(args[0].astype(np.float64 if dt == np.int64 else np.float32))
        assert_allclose(got, want, what=f"{u.name}({dt.name})")


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_nextafter_half_precision_is_exact(dtype):
    # Regression: half precision used to step in float32 and round back to x itself.
    x = np.array([1.0, -2.0, np.inf], dtype)
    y = np.array([2.0, 0.0, 0.0], dtype)
    got = np.asarray(fnp.nextafter(fnp.asarray(x), fnp.asarray(y)))
    want = np.asarray(jnp.nextafter(jnp.asarray(x), jnp.asarray(y)))
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("u", [u for u in ALL if FLOAT in u.kinds], ids=repr)
def test_scalar_and_empty_shapes(u):
    rng = np.random.default_rng(0)
    cases = [[rng.uniform(*u.dom(i), shape).astype(np.float32) for i in range(u.nargs)]
             for shape in [(), (0,), (2, 0, 3)]]
    for args, want in zip(cases, _jax_batch(u.jax_fn(), cases)):
        assert_allclose(u.fx_fn()(*to_fx(args)), want, what=f"{u.name} {args[0].shape}")


# --- broadcasting and Python scalars --------------------------------------------------------------

FLOAT_BINARY = [u for u in BINARY if FLOAT in u.kinds]


@given(st.sampled_from(FLOAT_BINARY), shapes(max_dims=3).flatmap(
    lambda s: st.tuples(st.just(s), broadcastable_shapes(s))), st.integers(0, 2**16))
def test_broadcasting_against_jax(u, shape_pair, seed):
    rng = np.random.default_rng(seed)
    args = [rng.uniform(*u.dom(i), s).astype(np.float32) for i, s in enumerate(shape_pair)]
    got = u.fx_fn()(*to_fx(args))
    assert got.shape == np.broadcast_shapes(*shape_pair)
    assert_allclose(got, u.jax_fn()(*to_jax(args)), what=f"{u.name} {shape_pair}")


@pytest.mark.parametrize("u", FLOAT_BINARY, ids=repr)
def test_python_scalar_operands_are_weak(u):
    rng = np.random.default_rng(1)
    s0, s1 = float(np.mean(u.dom(0))) + 0.25, float(np.mean(u.dom(1))) + 0.25
    fns, arrays, names = [], [], []
    for dtype in (np.float16, np.float32, np.float64):
        x = rng.uniform(*u.dom(0), (4,)).astype(dtype)
        y = rng.uniform(*u.dom(1), (4,)).astype(dtype)
        fns += [lambda a, f: f(a, s1), lambda b, f: f(s0, b)]
        arrays += [x, y]
        names += [f"{u.name}(x:{np.dtype(dtype).name}, {s1})", f"{u.name}({s0}, y)"]
    if INT in u.kinds:
        for dtype in (np.int32, np.int64, np.uint32):
            x = np.array([1, 2, 3, 7], dtype)
            fns += [lambda a, f: f(a, 2), lambda b, f: f(3, b)]
            arrays += [x, x]
            names += [f"{u.name}(x:{np.dtype(dtype).name}, 2)", f"{u.name}(3, x)"]
    # Python scalars are closed over (not jit arguments), so jax sees them as weak constants.
    wants = jax.jit(lambda xs: [g(x, u.jax_fn()) for g, x in zip(fns, xs)])(arrays)
    for g, x, want, what in zip(fns, arrays, wants, names):
        assert_allclose(g(fnp.asarray(x), u.fx_fn()), want, what=what)


@pytest.mark.parametrize("mode", ["x64", pytest.param("default",
                                                     marks=pytest.mark.default_mode)])
def test_python_data_defaults_match_jax_in_both_modes(mode):
    cases = [lambda m: m.sin(1), lambda m: m.add(1, 2.5),
             lambda m: m.multiply(m.asarray(np.array([1, 2], np.int32)), 2.5),
             lambda m: m.sin(np.array([1], np.int64)), lambda m: m.sqrt(np.array([4], np.int32)),
             lambda m: m.power(2, 10)]
    for case in cases:
        got, want = case(fnp), case(jnp)
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


# --- derivatives ----------------------------------------------------------------------------------


def _case(u: Ufunc) -> OpCase:
    return OpCase(u.name, u.fx_fn(), u.jax_fn(), None, diff_argnums=tuple(range(u.nargs)))


def _draw(u: Ufunc, rng, shapes_, dtype):
    return [rng.uniform(*u.dom(i), s).astype(dtype) for i, s in enumerate(shapes_)]


@pytest.mark.parametrize("u", DIFF, ids=repr)
def test_jvp_and_vjp_match_jax(u):
    rng = np.random.default_rng(2)
    shapes_ = [(2, 3)] + [(3,)] * (u.nargs - 1)  # the second operand broadcasts
    args = _draw(u, rng, shapes_, np.float64)
    case = _case(u)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)


@pytest.mark.parametrize("u", SMOOTH_FNS, ids=repr)
def test_check_grads_order2_f64(u):
    rng = np.random.default_rng(3)
    check_grads_f64(_case(u), _draw(u, rng, [(4,)] * u.nargs, np.float64))


@pytest.mark.parametrize("u", ALL, ids=repr)
def test_vmap_matches_loop_and_jax(u):
    rng = np.random.default_rng(4)
    if FLOAT in u.kinds:
        x, y = _draw(u, rng, [(3, 4), (4, 3)], np.float32)
    else:
        x, y = rng.integers(0, 9, (3, 4)).astype(np.int32), rng.integers(0, 9, (4, 3)).astype(
            np.int32)
    case = OpCase(u.name, u.fx_fn(), u.jax_fn(), None)
    if u.nargs == 1:
        check_vmap(case, [x], (1,))
        return
    check_vmap(case, [x, y[:, 0]], (0, None))
    check_vmap(case, [x.T.copy(), y.T.copy()], (1, 0))


# Derivatives at kinks, ties and special points follow jax's conventions.
KINKS = [
    ("abs", [1.0, -1.0]), ("sqrt", [0.0]), ("cbrt", [1.0]), ("sign", [0.0]), ("sinc", [0.0]),
    ("floor", [1.0]), ("round", [0.5]), ("reciprocal", [2.0]), ("square", [0.0]),
    ("log", [0.0]), ("arctanh", [1.0]), ("exp2", [0.0]),
]
KINKS2 = [
    ("maximum", [1.0, 2.0, 0.0], [1.0, 1.0, 0.0]), ("minimum", [1.0, 2.0], [1.0, 1.0]),
    ("fmax", [1.0, np.nan], [1.0, 2.0]), ("fmin", [1.0, 3.0], [1.0, np.nan]),
    ("hypot", [1.0, 3.0], [0.0, 4.0]), ("logaddexp", [1.0, 2.0], [1.0, -np.inf]),
    ("power", [0.0, 2.0], [2.0, 0.0]), ("arctan2", [0.0, 1.0], [1.0, 0.0]),
    ("copysign", [1.0, -2.0], [0.0, -0.0]), ("heaviside", [0.0, 1.0], [0.5, 0.5]),
    ("remainder", [3.0, -3.0], [2.0, 2.0]), ("fmod", [-3.0, 3.0], [2.0, -2.0]),
    ("floor_divide", [3.0, -3.0], [2.0, 2.0]), ("divide", [1.0, 0.0], [0.0, 2.0]),
]


@pytest.mark.parametrize("name,x", KINKS, ids=[k[0] for k in KINKS])
def test_unary_derivative_conventions(name, x):
    x = np.asarray(x, np.float64)
    case = OpCase(name, getattr(fnp, name), getattr(jnp, name), None)
    rng = np.random.default_rng(5)
    check_jvp(case, [x], rng)
    check_vjp(case, [x], rng)


@pytest.mark.parametrize("name,x,y", KINKS2, ids=[k[0] for k in KINKS2])
def test_binary_derivative_conventions(name, x, y):
    args = [np.asarray(x, np.float64), np.asarray(y, np.float64)]
    case = OpCase(name, getattr(fnp, name), getattr(jnp, name), None, diff_argnums=(0, 1))
    rng = np.random.default_rng(6)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)


@pytest.mark.parametrize("name,args", [("abs", [0.0]), ("hypot", [0.0, 0.0])])
def test_derivative_of_abs_at_zero_is_one(name, args):
    args = [np.asarray(a, np.float64) for a in args]
    case = OpCase(name, getattr(fnp, name), getattr(jnp, name), None,
                  diff_argnums=tuple(range(len(args))))
    check_jvp(case, args, np.random.default_rng(9))


def test_grad_of_python_scalar_power():
    g = fx.grad(lambda x: fnp.power(x, 3))(2.0)
    assert float(g) == 12.0
    g = fx.grad(lambda x: fnp.power(x, -2))(2.0)
    assert float(g) == -0.25


# --- integer specifics ----------------------------------------------------------------------------


def test_integer_power_is_exact_and_wraps():
    x = np.array([3, -3, 2, 7, 0, 1, -1], np.int64)
    y = np.array([39, 39, 62, 23, 0, 5, 7], np.int64)
    got = np.asarray(fnp.power(fnp.asarray(x), fnp.asarray(y)))
    wrapped = [(pow(int(a), int(b)) + 2**63) % 2**64 - 2**63 for a, b in zip(x, y)]
    np.testing.assert_array_equal(got, wrapped)
    x32, y32 = x.astype(np.int32), np.array([30, 20, 31, 12, 0, 5, 7], np.int32)
    want = np.asarray(jnp.power(jnp.asarray(x32), jnp.asarray(y32)))  # wraps mod 2**32
    np.testing.assert_array_equal(np.asarray(fnp.power(fnp.asarray(x32), fnp.asarray(y32))), want)
    u = np.array([3], np.uint32)
    assert int(fnp.power(fnp.asarray(u), fnp.asarray(u * 13))[0]) == pow(3, 39, 2**32)


def test_integer_power_with_negative_python_exponent_raises():
    with pytest.raises(TypeError, match=r"fx.numpy.power: integers cannot be raised to negative "
                                        r"powers \(exponent -2, base i32\[3\]\)"):
        fnp.power(fnp.asarray(np.array([1, 2, 3], np.int32)), -2)
    assert fnp.power(fnp.asarray(np.array([2.0], np.float32)), -2).dtype == np.float32


def test_shifts_beyond_width():
    x = np.array([-7, 7, -1, 1 << 30], np.int32)
    for s in (0, 3, 31, 32, 40, -1):
        shift = np.full(4, s, np.int32)
        for f, g in ((fnp.right_shift, jnp.right_shift), (fnp.left_shift, jnp.left_shift)):
            got = f(fnp.asarray(x), fnp.asarray(shift))
            assert_allclose(got, g(jnp.asarray(x), jnp.asarray(shift)), what=f"{f.__name__} {s}")


def test_bool_arithmetic_like_numpy():
    t, f = np.array([True, False, True, False]), np.array([True, True, False, False])
    for name in ("add", "multiply", "maximum", "minimum", "power", "floor_divide", "square",
                 "remainder"):
        args = (t, f) if name != "square" else (t,)
        if name in ("floor_divide", "remainder"):
            args = (t, np.ones(4, bool))  # integer division by zero is undefined
        got = getattr(fnp, name)(*to_fx(args))
        assert_allclose(got, getattr(jnp, name)(*to_jax(args)), what=f"{name}(bool)")


# --- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,args,message", [
    ("bitwise_and", (np.ones(3, np.float32), np.ones(3, np.float32)),
     r"fx.numpy.bitwise_and requires integer or bool operands, got f32\[3\], f32\[3\]"),
    ("invert", (np.ones(2, np.float64),), r"fx.numpy.bitwise_not requires integer or bool"),
    ("left_shift", (np.ones(2, np.float32), np.ones(2, np.int32)),
     r"fx.numpy.left_shift requires integer or bool operands, got f32\[2\], f32\[2\]"),
    ("right_shift", (np.ones(2, np.float32), 1), r"fx.numpy.right_shift requires integer"),
    ("subtract", (np.ones(2, bool), np.ones(2, bool)),
     r"fx.numpy.subtract requires numeric \(not bool\) operands, got bool\[2\], bool\[2\]"),
    ("negative", (np.ones(2, bool),), r"fx.numpy.negative requires numeric \(not bool\)"),
])
def test_dtype_errors_name_the_function(name, args, message):
    with pytest.raises(TypeError, match=message):
        getattr(fnp, name)(*[fnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args])


@pytest.mark.parametrize("u", FLOAT_BINARY, ids=repr)
def test_broadcast_errors_name_the_function_and_shapes(u):
    name = u.fx_fn().__name__  # divide is true_divide, mod is remainder
    with pytest.raises(ValueError, match=rf"fx.numpy.{name}: operands could not be broadcast "
                                         r"together with shapes \(2, 3\) \(4,\)"):
        u.fx_fn()(fnp.ones((2, 3)), fnp.ones(4))


def test_non_array_arguments_are_rejected():
    with pytest.raises(TypeError, match="fx.numpy.sin: expected an array, scalar or nested list, "
                                        "got str"):
        fnp.sin("x")
    with pytest.raises(TypeError, match="fx.numpy.add: expected an array.*got NoneType"):
        fnp.add(fnp.ones(2), None)


# --- where and clip -------------------------------------------------------------------------------


@given(shapes(max_dims=3), st.integers(0, 2**16))
def test_where_broadcasts_like_jax(shape, seed):
    rng = np.random.default_rng(seed)
    c = rng.uniform(size=shape) > 0.5
    x = rng.standard_normal(shape[-1:] if shape else ()).astype(np.float32)
    y = np.float64(rng.standard_normal())
    assert_allclose(fnp.where(*to_fx([c, x, y])), jnp.where(*to_jax([c, x, y])), what="where")


def test_where_scalars_dtypes_and_nonbool_condition():
    x = np.array([1.0, 2.0, 3.0], np.float16)
    c = np.array([0, 2, -1], np.int32)
    assert_allclose(fnp.where(fnp.asarray(c), fnp.asarray(x), 0.0),
                    jnp.where(jnp.asarray(c), jnp.asarray(x), 0.0), what="where")
    assert_allclose(fnp.where(fnp.asarray(c), 1, fnp.asarray(x)),
                    jnp.where(jnp.asarray(c), 1, jnp.asarray(x)), what="where")
    i = np.array([4, 5, 6], np.int64)
    assert_allclose(fnp.where(fnp.asarray(c), fnp.asarray(i), fnp.asarray(x)),
                    jnp.where(jnp.asarray(c), jnp.asarray(i), jnp.asarray(x)), what="where")


def test_where_gradients_flow_to_the_chosen_branch():
    x = np.array([-1.0, 0.5, 2.0])
    case = OpCase("where", lambda a, b: fnp.where(a > 0, fnp.sin(a), b * b),
                  lambda a, b: jnp.where(a > 0, jnp.sin(a), b * b), None, diff_argnums=(0, 1))
    args = [x, np.array([3.0, 4.0, 5.0])]
    rng = np.random.default_rng(7)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)
    check_grads_f64(case, args)
    check_vmap(case, [np.stack([x, -x]), np.ones((2, 3))], (0, 0))


def test_where_three_argument_form_refuses_size():
    # The one-argument form is nonzero (tests/fx/numpy/test_compaction_jit.py).
    with pytest.raises(ValueError, match=r"fx.numpy.where: size and fill_value apply only"):
        fnp.where(fnp.ones(3) > 0, 1.0, 0.0, size=3)
    with pytest.raises(TypeError, match=r"fx.numpy.where: pass both x and y, or neither"):
        fnp.where(fnp.ones(3) > 0, 1.0)


@pytest.mark.parametrize("lo,hi", [(-1.0, 1.0), (None, 0.5), (-0.5, None), (1.0, -1.0)])
def test_clip(lo, hi):
    x = np.array([-2.0, -0.75, 0.0, 0.3, 0.9, 5.0, np.nan], np.float32)
    got = fnp.clip(fnp.asarray(x), lo, hi)
    assert_allclose(got, jnp.clip(jnp.asarray(x), lo, hi), what=f"clip {lo} {hi}")
    assert_allclose(fnp.clip(fnp.asarray(x), min=lo, max=hi), got, what="clip keywords")
    xi = np.array([-5, 0, 5], np.int32)
    assert_allclose(fnp.clip(fnp.asarray(xi), -1, 1), jnp.clip(jnp.asarray(xi), -1, 1),
                    what="clip int")
    lo_arr = np.array([0.0, 1.0, -1.0, 0.0, 0.0, 0.0, 0.0], np.float64)
    assert_allclose(fnp.clip(fnp.asarray(x), fnp.asarray(lo_arr)),
                    jnp.clip(jnp.asarray(x), jnp.asarray(lo_arr)), what="clip array bound")


def test_clip_gradients():
    x = np.array([-2.0, -0.5, 0.25, 3.0])
    case = OpCase("clip", lambda a: fnp.clip(a, -1.0, 1.0), lambda a: jnp.clip(a, -1.0, 1.0),
                  None)
    rng = np.random.default_rng(8)
    check_jvp(case, [x], rng)
    check_vjp(case, [x], rng)
    ties = np.array([-1.0, 1.0])  # gradient at the bounds follows jax
    check_jvp(case, [ties], rng)
    check_vjp(case, [ties], rng)


# --- methods and operators route through these functions ----------------------------------------


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "//", "%", "**", "<", "<=", "==", "!=",
                                ">", ">=", "&", "|", "^", "<<", ">>"])
def test_operators_match_jax(op):
    is_bits = op in ("&", "|", "^", "<<", ">>")
    dt = np.int32 if is_bits else np.float32
    x = np.array([1, 2, 3, 6], dt)
    y = np.array([3, 2, 1, 4], dt)
    for a, b in itertools.product([x, 2], [y, 3]):
        if not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray):
            continue
        code = f"a {op} b"
        got = eval(code, {"a": to_fx(a) if isinstance(a, np.ndarray) else a,
                          "b": to_fx(b) if isinstance(b, np.ndarray) else b})
        want = eval(code, {"a": to_jax(a) if isinstance(a, np.ndarray) else a,
                           "b": to_jax(b) if isinstance(b, np.ndarray) else b})
        assert_allclose(got, want, what=code)
    for uop, name in (("-", "negative"), ("+", "positive"), ("abs", "absolute")):
        code = f"abs(a)" if uop == "abs" else f"{uop}a"  # noqa: F541
        assert_allclose(eval(code, {"a": to_fx(x)}), getattr(jnp, name)(jnp.asarray(x)))


@pytest.mark.default_mode
def test_logaddexp_keeps_the_small_term_in_float32():
    # max + log1p(exp(-|x - y|)), as jax: softplus(-20) is 2.06e-9, not log(1 + 2e-9) = 0, and
    # softplus(-10.7) (a GP's noise parameter) is not 0.3% off. Values within a few ulp of jax's
    # (exp and log1p differ in the last bits), relative error against float64 as jax's.
    x = np.concatenate([-np.logspace(-6, 2, 300), np.logspace(-6, 2, 300)]).astype(np.float32)
    for y in (np.float32(0.0), np.float32(3.5), x[::-1].copy()):
        ours = np.asarray(fnp.logaddexp(x, y), np.float64)
        ref = np.logaddexp(x.astype(np.float64), np.asarray(y, np.float64))
        theirs = np.asarray(jnp.logaddexp(x, y), np.float64)
        normal = np.abs(ref) > np.finfo(np.float32).tiny  # jax flushes subnormal results
        err_ours, err_jax = (np.max(np.abs(v - ref)[normal] / np.abs(ref[normal]))
                             for v in (ours, theirs))
        assert err_ours < 5e-7 and err_ours <= 2 * err_jax
        np.testing.assert_allclose(ours[normal], theirs[normal], rtol=4e-7, atol=0)
    np.testing.assert_array_equal(fnp.logaddexp(np.float32(-120.0), np.float32(0.0)),
                                  jnp.logaddexp(np.float32(-120.0), np.float32(0.0)))


@pytest.mark.default_mode
def test_logaddexp_derivatives_at_infinities_and_ties_as_jax():
    # jax's rule: each tangent weighted by exp(operand - out), +inf read as 0.
    vals = np.array([-20.0, -1.0, 0.0, 3.0, np.inf, -np.inf, np.nan], np.float32)
    for y in (0.0, np.inf, -np.inf, 3.0):
        args = (vals, np.full_like(vals, y))
        f = fx.vmap(fx.grad(fnp.logaddexp, argnums=(0, 1)))
        j = jax.vmap(jax.grad(jnp.logaddexp, argnums=(0, 1)))
        for ours, theirs in zip(f(*args), j(*args)):
            np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
        second = fx.vmap(fx.grad(fx.grad(fnp.logaddexp)))(*args)
        np.testing.assert_allclose(np.asarray(second),
                                   np.asarray(jax.vmap(jax.grad(jax.grad(jnp.logaddexp)))(*args)),
                                   rtol=1e-5, atol=1e-12)
