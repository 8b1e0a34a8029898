"""Tests of the ``fx.numpy`` reductions against jax.numpy: values, derivatives, vmap, dtype
rules (with fx's 32-bit defaults), ``where``/``initial``, empty and 0-d inputs, errors, and the
array methods that forward to them."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import (
    OpCase,
    assert_allclose,
    check_eval,
    check_grads_f64,
    check_jvp,
    check_vjp,
    check_vmap,
    to_fx,
)
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.numpy as fnp
from fx.test_util import shapes

FLOAT_FNS = ["sum", "mean", "var", "std", "max", "min", "prod", "ptp", "amax", "amin"]
AXES = [(None, False), (0, False), (1, True), (-1, False), ((0, 2), True), ((), False)]
DERIVATIVE_AXES = [(None, False), (1, True), ((0, 2), True)]


def _case(name, axis, keepdims, dtype=np.float64, shape=(2, 3, 4), **kw) -> OpCase:
    return OpCase(
        name=f"{name}(axis={axis},keepdims={keepdims}):{np.dtype(dtype).name}",
        fx_fn=lambda x: getattr(fnp, name)(x, axis=axis, keepdims=keepdims, **kw),
        jax_fn=lambda x: getattr(jnp, name)(x, axis=axis, keepdims=keepdims, **kw),
        args=lambda rng: [rng.uniform(0.5, 2.0, shape).astype(dtype)],
    )


@pytest.mark.parametrize("name", FLOAT_FNS)
@pytest.mark.parametrize("axis,keepdims", AXES)
def test_float_reductions(name, axis, keepdims):
    rng = np.random.default_rng(0)
    check_eval(_case(name, axis, keepdims, np.float32), [rng.uniform(0.5, 2, (2, 3, 4))
                                                         .astype(np.float32)])
    case = _case(name, axis, keepdims)
    args = case.args(rng)
    check_eval(case, args)
    if (axis, keepdims) in DERIVATIVE_AXES:
        # jax compiles each derivative eagerly (slow): compare with it once per function,
        # and check the other derivatives numerically.
        if axis == 1 and name in ("sum", "mean", "var", "max"):
            check_jvp(case, args, rng)
            check_vjp(case, args, rng)
        else:
            check_grads_f64(case, args)


@pytest.mark.parametrize("name", ["sum", "mean", "var", "max", "prod", "argmax", "any"])
def test_vmap_every_axis(name):
    rng = np.random.default_rng(2)
    case = OpCase(name, lambda x: getattr(fnp, name)(x, axis=1),
                  lambda x: getattr(jnp, name)(x, axis=1), None)
    for bdim in range(3):
        s = [3, 4]
        s.insert(bdim, 2)
        check_vmap(case, [rng.uniform(-1, 1, s).astype(np.float32)], (bdim,))


def test_ddof_and_correction():
    x = np.random.default_rng(3).standard_normal((4, 5))
    for kw in [dict(ddof=1), dict(ddof=2), dict(correction=1), dict(ddof=5)]:
        for fn in ("var", "std"):
            assert_allclose(getattr(fnp, fn)(to_fx(x), axis=1, **kw),
                            getattr(jnp, fn)(x, axis=1, **kw), what=f"{fn} {kw}")
    assert_allclose(fnp.var(to_fx(x), axis=0, ddof=4), jnp.var(x, axis=0, ddof=4), what="inf")
    with pytest.raises(ValueError, match="ddof or correction"):
        fnp.var(to_fx(x), ddof=1, correction=1)


# --- dtype rules ------------------------------------------------------------------------------

REDUCTIONS = ["sum", "prod", "mean", "var", "max", "argmax", "count_nonzero", "any"]
REDUCED_DTYPES = [np.dtype(d) for d in ("bool", "int8", "uint8", "int16", "uint16", "int32",
                                        "uint32", "int64", "uint64", "float16", "bfloat16",
                                        "float32", "float64")]
BOTH_MODES = pytest.mark.parametrize(
    "mode", ["x64", pytest.param("default", marks=pytest.mark.default_mode)])


@BOTH_MODES
@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dtype", REDUCED_DTYPES, ids=str)
def test_dtype_rules(name, dtype, mode):
    # jax's result dtypes in its mode: small integers sum in the default integer, means of
    # integers are float32 (float64 for 64-bit integers in x64 mode), indices are int_.
    rng = np.random.default_rng(4)
    x = rng.integers(0, 3, (3, 5)).astype(dtype)
    got = getattr(fnp, name)(to_fx(x), axis=1)
    want = getattr(jnp, name)(x, axis=1)
    assert got.dtype == want.dtype
    assert_allclose(got, want, what=f"{name} {dtype}")


def test_explicit_dtype():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    for name, dt in [("sum", np.float16), ("sum", np.int64), ("mean", np.float64),
                     ("prod", np.float32), ("var", np.float64), ("sum", np.bool_),
                     ("prod", np.bool_)]:
        assert_allclose(getattr(fnp, name)(to_fx(x), axis=0, dtype=dt),
                        getattr(jnp, name)(x, axis=0, dtype=dt), what=f"{name} dtype={dt}")


def test_half_precision_sums_accumulate_in_float32():
    x = np.full(4096, 0.1, np.float16)
    for name in ("sum", "mean"):
        got = getattr(fnp, name)(to_fx(x))
        assert_allclose(got, getattr(jnp, name)(x), what=name)
    # Accumulating in float16 itself would stall far from the true sum (409.6).
    assert abs(float(fnp.sum(to_fx(x))) - 409.5) < 1.0


# --- where / initial -------------------------------------------------------------------------


WHERE_CASES = [
    ("sum", {}), ("sum", dict(initial=2.0)), ("prod", {}), ("prod", dict(initial=3.0)),
    ("mean", {}), ("var", {}), ("std", {}), ("max", dict(initial=-5.0)),
    ("min", dict(initial=5.0)), ("max", dict(initial=0.5)), ("any", {}), ("all", {}),
]


@pytest.mark.parametrize("name,kw", WHERE_CASES, ids=[f"{n}{k}" for n, k in WHERE_CASES])
def test_where(name, kw):
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (3, 4))
    mask = np.array([True, False, True, True])  # broadcast against x
    for axis in (None, 0, 1):
        case = OpCase(f"{name} where",
                      lambda v, axis=axis: getattr(fnp, name)(v, axis=axis, where=mask, **kw),
                      lambda v, axis=axis: getattr(jnp, name)(v, axis=axis, where=mask, **kw),
                      None)
        check_eval(case, [x])
    if name not in ("any", "all"):
        check_vjp(case, [x], rng)


def test_initial_without_where_and_on_empty_axes():
    x = np.arange(6.0).reshape(2, 3)
    for name, init in [("sum", 10.0), ("max", 4.0), ("min", 1.0), ("prod", 0.5)]:
        assert_allclose(getattr(fnp, name)(to_fx(x), axis=1, initial=init),
                        getattr(jnp, name)(x, axis=1, initial=init), what=name)
    e = np.zeros((0, 3))
    assert_allclose(fnp.max(to_fx(e), axis=0, initial=-1.0), jnp.max(e, axis=0, initial=-1.0),
                    what="max of empty with initial")


def test_empty_reductions():
    e = np.zeros((2, 0))
    for name in ("sum", "prod", "mean", "var", "any", "all", "count_nonzero"):
        for axis in (None, 1):
            assert_allclose(getattr(fnp, name)(to_fx(e), axis=axis),
                            getattr(jnp, name)(e, axis=axis), check_dtype=False,
                            what=f"{name} of empty, axis={axis}")
    # Reducing only the non-empty axis of a zero-size array is fine for max.
    assert_allclose(fnp.max(to_fx(e), axis=0), jnp.max(e, axis=0), what="max over axis 0")


def test_zero_dim_inputs():
    x = np.float32(2.5)
    for name in ("sum", "mean", "var", "max", "min", "prod", "any", "all", "argmax"):
        got = getattr(fnp, name)(to_fx(x))
        assert_allclose(got, getattr(jnp, name)(x), check_dtype=False, what=f"{name} 0-d")
        assert got.shape == ()
    assert fnp.sum(2.0).weak_type  # a Python scalar stays weakly typed, as in jax


# --- argmax / argmin, any / all, count_nonzero -------------------------------------------------


ARG_X = np.array([[1.0, 3.0, 3.0, np.nan], [2.0, -1.0, -1.0, 5.0], [0.0, 0.0, np.nan, 0.0]])


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (None, True), (0, False), (1, True),
                                           (-1, False)])
def test_argmax_argmin(name, axis, keepdims):
    for x in (ARG_X, np.nan_to_num(ARG_X), np.array([[3, 1, 3], [0, 7, 7]], np.int32)):
        got = getattr(fnp, name)(to_fx(x), axis=axis, keepdims=keepdims)
        want = getattr(jnp, name)(x, axis=axis, keepdims=keepdims)
        assert got.dtype == want.dtype
        assert_allclose(got, want, what=f"{name} axis={axis}")


def test_any_all_count_nonzero():
    # NaN counts as nonzero; numpy is the oracle for the sweep (the same semantics as jax),
    # jax for one axis.
    x = np.array([[0.0, np.nan, 0.0], [0.0, 0.0, 0.0], [1.0, 2.0, -0.0]])
    for name in ("any", "all", "count_nonzero"):
        for xv in (x, x.astype(bool), (np.nan_to_num(x) * 3).astype(np.int32)):
            for axis in (None, 0, 1, (0, 1)):
                assert_allclose(getattr(fnp, name)(to_fx(xv), axis=axis),
                                getattr(np, name)(xv, axis=axis), check_dtype=False,
                                what=f"{name} axis={axis} {xv.dtype}")
        assert_allclose(getattr(fnp, name)(to_fx(x), axis=1), getattr(jnp, name)(x, axis=1),
                        check_dtype=False, what=f"{name} vs jax")
    assert_allclose(fnp.count_nonzero(to_fx(x), axis=1, keepdims=True),
                    jnp.count_nonzero(x, axis=1, keepdims=True), check_dtype=False, what="kd")


# --- average --------------------------------------------------------------------------------


def test_average():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 4))
    w_full = rng.uniform(0.5, 2, (3, 4))
    w_axis = rng.uniform(0.5, 2, 4)
    cases = [
        (dict(), None), (dict(axis=0), None), (dict(axis=None, returned=True), None),
        (dict(axis=1, returned=True), None), (dict(), w_full), (dict(axis=0), w_full),
        (dict(axis=1), w_axis), (dict(axis=-1, returned=True), w_axis),
        (dict(axis=1, keepdims=True), w_axis), (dict(axis=1), w_axis.astype(np.int32)),
    ]
    # numpy is the value oracle for the sweep; jax for one case and the derivatives.
    for kw, w in cases:
        got = fnp.average(to_fx(x), weights=None if w is None else to_fx(w), **kw)
        assert_allclose(got, np.average(x, weights=w, **kw), check_dtype=False, what=str(kw))
    f = lambda a, w: fnp.average(a, axis=1, weights=w)
    g = lambda a, w: jnp.average(a, axis=1, weights=w)
    case = OpCase("average", f, g, None, diff_argnums=(0, 1))
    check_eval(case, [x, w_axis])
    check_vjp(case, [x, w_axis], rng)
    assert fnp.average(to_fx(np.arange(3, dtype=np.int32))).dtype == np.float32  # as jax


def test_average_errors():
    x = to_fx(np.ones((3, 4)))
    with pytest.raises(TypeError, match=r"average: weights of shape \(4,\) differ.*axis="):
        fnp.average(x, weights=to_fx(np.ones(4)))
    with pytest.raises(TypeError, match=r"must be 1-D"):
        fnp.average(x, axis=1, weights=to_fx(np.ones((1, 4))))
    with pytest.raises(ValueError, match=r"3 weights for axis 1 of length 4"):
        fnp.average(x, axis=1, weights=to_fx(np.ones(3)))


# --- errors, methods, shapes ------------------------------------------------------------------


def test_errors():
    x = to_fx(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"fx.numpy.max: zero-size array to reduction operation "
                                         r"max which has no identity \(shape \(0, 3\)"):
        fnp.max(to_fx(np.zeros((0, 3))), axis=0)
    with pytest.raises(ValueError, match=r"fx.numpy.min: reduction operation min does not have "
                                         r"an identity.*'initial'"):
        fnp.min(x, where=np.array([True, False, True]))
    with pytest.raises(ValueError, match=r"fx.numpy.argmax: attempt to get argmax of an empty"):
        fnp.argmax(to_fx(np.zeros((0,))))
    with pytest.raises(ValueError, match=r"fx.numpy.sum: axis 2 is out of bounds.*rank 2"):
        fnp.sum(x, axis=2)
    with pytest.raises(ValueError, match=r"fx.numpy.mean: repeated axis"):
        fnp.mean(x, axis=(1, -1))
    with pytest.raises(NotImplementedError, match=r"fx.numpy.sum: the out= argument"):
        fnp.sum(x, out=x)
    with pytest.raises(ValueError, match=r"fx.numpy.sum \(where=\): cannot broadcast"):
        fnp.sum(x, where=np.ones(4, bool))
    with pytest.raises(ValueError, match=r"initial must be a scalar"):
        fnp.max(x, initial=np.ones(2))
    with pytest.raises(TypeError, match=r"fx.numpy.ptp: bool input"):
        fnp.ptp(np.ones(3, bool))
    with pytest.raises(TypeError, match=r"fx.numpy.sum: expected an array"):
        fnp.sum("abc")


def test_array_methods_forward_to_the_functions():
    x = np.random.default_rng(7).standard_normal((3, 4))
    fxx = to_fx(x)
    checks = [
        (fxx.sum(1), x.sum(1)), (fxx.sum(), x.sum()), (fxx.mean(axis=0), x.mean(axis=0)),
        (fxx.max(axis=0, keepdims=True), x.max(axis=0, keepdims=True)), (fxx.min(), x.min()),
        (fxx.prod(1), x.prod(1)), (fxx.var(ddof=1), x.var(ddof=1)), (fxx.std(0), x.std(0)),
        (fxx.argmax(), np.int64(x.argmax())), (fxx.argmin(0), x.argmin(0).astype(np.int64)),
        (fxx.any(), x.any()), (fxx.all(1), x.all(1)),
    ]
    for got, want in checks:
        assert_allclose(got, np.asarray(want), what="method")


def test_grad_of_max_splits_ties_like_jax():
    x = np.array([[1.0, 4.0, 4.0], [2.0, 2.0, 0.0]])
    for axis in (None, 0, 1):
        g = fx.grad(lambda v: fnp.sum(fnp.max(v, axis=axis) ** 2))(to_fx(x))  # noqa: B023
        jg = jax.grad(lambda v: jnp.sum(jnp.max(v, axis=axis) ** 2))(x)  # noqa: B023
        assert_allclose(g, jg, what=f"grad max ties axis={axis}")


@given(shapes(max_dims=3, max_side=3), st.data())
def test_hypothesis_shapes_axes_keepdims(shape, data):
    nd = len(shape)
    axis = data.draw(st.one_of(st.none(), st.sets(st.integers(-nd, nd - 1) if nd else
                                                   st.nothing(), max_size=nd)
                               .map(lambda s: tuple({a % nd for a in s}) if nd else ())))
    keepdims = data.draw(st.booleans())
    x = np.random.default_rng(sum(shape) + 11 * nd).uniform(-2, 2, shape)
    reduced = range(nd) if axis is None else axis
    empty_reduction = any(shape[a] == 0 for a in reduced)
    # numpy is the oracle here (jax's values are the same, and it compiles every shape).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in ("sum", "mean", "prod", "any", "var"):
            assert_allclose(getattr(fnp, name)(to_fx(x), axis=axis, keepdims=keepdims),
                            np.asarray(getattr(np, name)(x, axis=axis, keepdims=keepdims)),
                            what=f"{name}{shape} axis={axis}")
    for name in ("max", "min"):
        if empty_reduction:
            with pytest.raises(ValueError, match="zero-size"):
                getattr(fnp, name)(to_fx(x), axis=axis)
        else:
            assert_allclose(getattr(fnp, name)(to_fx(x), axis=axis, keepdims=keepdims),
                            np.asarray(getattr(np, name)(x, axis=axis, keepdims=keepdims)),
                            what=f"{name}{shape} axis={axis}")
