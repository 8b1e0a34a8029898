"""fx.test_util: check_grads accepts correct derivatives and rejects wrong ones (with the
expected and actual values and the direction in the message), at every order and in both
modes; the hypothesis strategies draw what they promise.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.numpy as fnp
from fx.core import Primitive
from fx.interpreters import transpose
from fx.test_util import arrays, broadcastable_shapes, check_grads, check_jvp, check_vjp, shapes

X = np.array([0.3, -1.2, 2.0])


# --- check_grads on correct functions -----------------------------------------------------------


@pytest.mark.parametrize(
    "f, args",
    [
        (lambda x: fnp.sin(x) * fnp.exp(x), (X,)),
        (lambda x, y: fnp.tanh(x * y) + x**2, (X, X[::-1].copy())),
        (lambda x: fnp.sum(x**3) / (1.0 + fnp.sum(x * x)), (X,)),
        (lambda p: {"a": fnp.sin(p["w"]) * p["b"], "b": (p["b"] ** 2,)},
         ({"w": X, "b": np.float64(0.5)},)),
        (lambda x: fnp.logaddexp(x, 0.0), (np.float64(0.7),)),
    ],
)
@pytest.mark.parametrize("order", [1, 2])
def test_check_grads_passes_on_correct_functions(f, args, order):
    check_grads(f, args, order=order)
    check_grads(f, args, order=order, modes=("fwd",))
    check_grads(f, args, order=order, modes=("rev",))


def test_check_grads_third_order_and_float32():
    check_grads(lambda x: fnp.sin(x) * x, (X,), order=3)
    check_grads(lambda x: fnp.sin(x) * x, (X.astype(np.float32),), order=1)


def test_check_grads_passes_on_correct_custom_rules():
    @fx.custom_jvp
    def f(x):
        return fnp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), fnp.cos(p[0]) * t[0]))
    check_grads(f, (X,), order=2)


# --- check_grads on wrong derivatives -----------------------------------------------------------


def _wrong_custom_jvp(scale):
    @fx.custom_jvp
    def f(x):
        return fnp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), scale * fnp.cos(p[0]) * t[0]))
    return f


def test_check_grads_fails_on_a_wrong_custom_jvp_rule():
    with pytest.raises(AssertionError) as info:
        check_grads(_wrong_custom_jvp(2.0), (X,), order=1)
    msg = str(info.value)
    assert "jvp vs finite differences mismatch" in msg
    assert "expected:" in msg and "got:" in msg and "direction:" in msg
    # The expected row is the finite difference and the got row is twice it.
    exp_row = msg.split("expected:\n")[1].split("\ngot:")[0]
    got_row = msg.split("got:\n")[1]
    exp = np.array(exp_row.strip("[] \n").split(), float)
    got = np.array(got_row.strip("[] \n").split(), float)
    np.testing.assert_allclose(got, 2 * exp, rtol=1e-4)


def test_check_grads_tolerances():
    slightly_off = _wrong_custom_jvp(1.0 + 1e-3)
    with pytest.raises(AssertionError):
        check_grads(slightly_off, (X,), order=1)
    check_grads(slightly_off, (X,), order=1, atol=1e-2, rtol=1e-2)


def test_check_grads_catches_a_wrong_second_derivative():
    # cos with a wrong-signed derivative: first derivatives of f are right, second are not.
    @fx.custom_jvp
    def bad_cos(x):
        return fnp.cos(x)

    bad_cos.defjvp(lambda p, t: (bad_cos(p[0]), fnp.sin(p[0]) * t[0]))

    @fx.custom_jvp
    def f(x):
        return fnp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), bad_cos(p[0]) * t[0]))
    check_grads(f, (X,), order=1)
    with pytest.raises(AssertionError, match="mismatch"):
        check_grads(f, (X,), order=2, modes=("fwd",))


# A linear primitive (doubling) whose transpose rule is wrong (it triples): forward mode is
# right, reverse mode is not, and only the jvp/vjp consistency check can see it.
bad_double_p = Primitive("test_util_bad_double")
bad_double_p.def_abstract_eval(lambda x: x)
bad_double_p.def_impl(lambda x: x * 2)
transpose.deflinear(bad_double_p, lambda ct, x: [ct * 3.0])


def test_check_grads_catches_a_wrong_transpose_rule():
    f = lambda x: fnp.sin(bad_double_p.bind(x))  # noqa: E731
    check_grads(f, (X,), order=1, modes=("fwd",))
    with pytest.raises(AssertionError) as info:
        check_grads(f, (X,), order=1, modes=("rev",))
    msg = str(info.value)
    assert "vjp inconsistent with finite differences" in msg and "direction t:" in msg
    with pytest.raises(AssertionError, match="vjp inconsistent"):
        check_vjp(f, (X,))
    check_jvp(f, (X,))


def _custom_vjp_sin(scale):
    @fx.custom_vjp
    def f(x):
        return fnp.sin(x)

    f.defvjp(lambda x: (f(x), x), lambda x, g: (scale * fnp.cos(x) * g,))
    return f


def test_check_grads_fails_on_a_wrong_custom_vjp_rule():
    with pytest.raises(AssertionError, match="(?s)expected.*got.*direction"):
        check_grads(_custom_vjp_sin(2.0), (X,), order=1, modes=("rev",))


def test_check_grads_passes_on_a_correct_custom_vjp_rule():
    check_grads(_custom_vjp_sin(1.0), (X,), order=1, modes=("rev",))


# --- hypothesis strategies ----------------------------------------------------------------------


@given(shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
def test_shapes_strategy_respects_bounds(shape):
    assert isinstance(shape, tuple) and 1 <= len(shape) <= 3
    assert all(0 <= s <= 4 for s in shape)


def test_shapes_strategy_includes_zero_size_by_default():
    from hypothesis import find  # noqa: PLC0415

    assert 0 in find(shapes(), lambda s: 0 in s)


@given(st.data())
def test_broadcastable_shapes_broadcast(data):
    base = data.draw(shapes(max_dims=3, min_side=1), label="base")
    other = data.draw(broadcastable_shapes(base), label="other")
    np.broadcast_shapes(base, other)  # raises if they do not broadcast


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "int32", "bool"])
def test_arrays_strategy_dtype_and_bounds(dtype):
    @given(arrays(shape=(3, 2), dtype=dtype, min_value=-2, max_value=2))
    def check(a):
        assert isinstance(a, fx.Array)
        assert a.shape == (3, 2) and a.dtype == np.dtype(dtype)
        v = np.asarray(a).astype(np.float64)
        assert np.all(np.isfinite(v)) and np.all(v >= -2) and np.all(v <= 2)

    check()


@given(arrays(dtype="float64"))
def test_arrays_strategy_draws_shapes_by_default(a):
    assert isinstance(a, fx.Array) and a.ndim <= 3


# The property test from fx/test_util.py's docstring. It finds a real bug: hypothesis draws
# x = 0 first, where fx.numpy.logaddexp's second derivative is 0 (jax: 0.25).
@given(arrays(shape=(3,), dtype="float64", min_value=-2, max_value=2))
def test_softplus_grads(x):
    check_grads(lambda v: fnp.logaddexp(v, 0.0), (x,), order=2)


@given(arrays(shape=(3,), dtype="float64", min_value=-2, max_value=2))
def test_softplus_grads_away_from_ties(x):
    check_grads(lambda v: fnp.logaddexp(v, 3.0), (x,), order=2)


@given(arrays(shape=shapes(max_dims=2, max_side=3), dtype="float64", min_value=-1, max_value=1))
def test_property_check_grads_on_drawn_shapes(x):
    check_grads(lambda v: fnp.tanh(v) * fnp.exp(v), (x,), order=2)
