"""Table-driven tests of the elementwise primitives against jax.lax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import OpCase, check_eval, check_grads_f64, check_jvp, check_vjp, check_vmap
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.lax as lax


def _uniform(lo, hi):
    def draw(rng, shape, dtype):
        return rng.uniform(lo, hi, shape).astype(dtype)

    return draw


UNARY = [
    # name, domain for values, differentiable
    ("neg", _uniform(-3, 3), True),
    ("sign", _uniform(-3, 3), True),
    ("floor", _uniform(-3, 3), True),
    ("ceil", _uniform(-3, 3), True),
    ("abs", _uniform(-3, 3), True),
    ("exp", _uniform(-3, 3), True),
    ("exp2", _uniform(-3, 3), True),
    ("log", _uniform(0.1, 4), True),
    ("log1p", _uniform(-0.5, 3), True),
    ("expm1", _uniform(-2, 2), True),
    ("sqrt", _uniform(0.1, 4), True),
    ("rsqrt", _uniform(0.1, 4), True),
    ("cbrt", _uniform(0.1, 4), True),
    ("tanh", _uniform(-3, 3), True),
    ("logistic", _uniform(-5, 5), True),
    ("sin", _uniform(-3, 3), True),
    ("cos", _uniform(-3, 3), True),
    ("tan", _uniform(-1.2, 1.2), True),
    ("asin", _uniform(-0.9, 0.9), True),
    ("acos", _uniform(-0.9, 0.9), True),
    ("atan", _uniform(-3, 3), True),
    ("sinh", _uniform(-3, 3), True),
    ("cosh", _uniform(-3, 3), True),
    ("asinh", _uniform(-3, 3), True),
    ("acosh", _uniform(1.1, 4), True),
    ("atanh", _uniform(-0.9, 0.9), True),
    ("erf", _uniform(-2, 2), True),
    ("erfc", _uniform(-2, 2), True),
    ("erf_inv", _uniform(-0.9, 0.9), True),
    ("lgamma", _uniform(0.2, 5), True),
    ("digamma", _uniform(0.2, 5), True),
]

BINARY = [
    ("add", _uniform(-3, 3), _uniform(-3, 3)),
    ("sub", _uniform(-3, 3), _uniform(-3, 3)),
    ("mul", _uniform(-3, 3), _uniform(-3, 3)),
    ("div", _uniform(-3, 3), _uniform(0.5, 3)),
    ("rem", _uniform(-3, 3), _uniform(0.5, 3)),
    ("pow", _uniform(0.5, 3), _uniform(-2, 2)),
    ("max", _uniform(-3, 3), _uniform(-3, 3)),
    ("min", _uniform(-3, 3), _uniform(-3, 3)),
    ("atan2", _uniform(-3, 3), _uniform(-3, 3)),
]

JAX_NAMES = {"and_": "bitwise_and"}


def _unary_case(name, draw, dtype, shape):
    return OpCase(
        name=f"{name}:{np.dtype(dtype).name}{shape}",
        fx_fn=getattr(lax, name),
        jax_fn=getattr(jax.lax, name),
        args=lambda rng: [draw(rng, shape, dtype)],
    )


@pytest.mark.parametrize("name,draw,diff", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3)])
def test_unary_eval_and_derivatives(name, draw, diff, dtype, shape):
    rng = np.random.default_rng(0)
    case = _unary_case(name, draw, dtype, shape)
    args = case.args(rng)
    check_eval(case, args)
    if diff:
        check_jvp(case, args, rng)
        check_vjp(case, args, rng)


@pytest.mark.parametrize("name,draw,diff", UNARY, ids=[u[0] for u in UNARY])
def test_unary_check_grads_order2(name, draw, diff):
    if name in ("sign", "floor", "ceil"):
        pytest.skip("piecewise constant: finite differences are zero except at jumps")
    case = _unary_case(name, draw, np.float64, (4,))
    check_grads_f64(case, case.args(np.random.default_rng(1)))


@pytest.mark.parametrize("name,draw,_", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("axis", [0, 1])
def test_unary_vmap(name, draw, _, axis):
    case = _unary_case(name, draw, np.float32, (3, 4))
    check_vmap(case, case.args(np.random.default_rng(2)), (axis,))


@pytest.mark.parametrize("name,dx,dy", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes", [((), ()), ((4,), (4,)), ((2, 3), ()), ((), (2, 3))])
def test_binary(name, dx, dy, dtype, shapes):
    rng = np.random.default_rng(3)
    case = OpCase(
        name=f"{name}:{np.dtype(dtype).name}{shapes}",
        fx_fn=getattr(lax, name),
        jax_fn=getattr(jax.lax, name),
        args=lambda rng: [dx(rng, shapes[0], dtype), dy(rng, shapes[1], dtype)],
        diff_argnums=(0, 1),
    )
    args = case.args(rng)
    check_eval(case, args)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)
    if dtype == np.float64 and name not in ("rem",):
        check_grads_f64(case, args)


@pytest.mark.parametrize("name,dx,dy", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("in_axes", [(0, 0), (1, 0), (0, None), (None, 1)])
def test_binary_vmap(name, dx, dy, in_axes):
    rng = np.random.default_rng(4)
    shape = lambda ax: (3, 2) if ax is not None else (2,)  # noqa: E731
    x = dx(rng, shape(in_axes[0]), np.float32)
    y = dy(rng, shape(in_axes[1]), np.float32)
    if in_axes[0] == 1:
        x = x.T.copy()
    if in_axes[1] == 1:
        y = y.T.copy()
    case = OpCase(name, getattr(lax, name), getattr(jax.lax, name), None)
    check_vmap(case, [x, y], in_axes)


def test_max_splits_ties_like_jax():
    x = np.array([1.0, 2.0, 3.0])
    f = lambda a, b: lax.reduce_sum(lax.max(a, b), (0,))  # noqa: E731
    g = fx.grad(f, argnums=(0, 1))(fx.numpy.asarray(x), fx.numpy.asarray(x))
    jg = jax.grad(lambda a, b: jax.lax.max(a, b).sum(), argnums=(0, 1))(jnp.asarray(x),
                                                                       jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(g[0]), np.asarray(jg[0]))
    np.testing.assert_allclose(np.asarray(g[0]), 0.5)


@given(st.integers(-2**31, 2**31 - 1), st.integers(-2**31, 2**31 - 1))
def test_integer_div_rem_round_toward_zero(a, b):
    x, y = np.int32(a), np.int32(b)
    got_div = np.asarray(lax.div(fx.numpy.asarray(x), fx.numpy.asarray(y)))
    got_rem = np.asarray(lax.rem(fx.numpy.asarray(x), fx.numpy.asarray(y)))
    want_div = np.asarray(jax.lax.div(jnp.int32(a), jnp.int32(b)))
    want_rem = np.asarray(jax.lax.rem(jnp.int32(a), jnp.int32(b)))
    if b != 0 and not (a == -2**31 and b == -1):
        assert got_div == want_div and got_rem == want_rem


def test_type_errors_name_the_primitive():
    x32 = fx.numpy.ones(3, np.float32)
    x64 = fx.numpy.ones(3, np.float64)
    with pytest.raises(TypeError, match=r"add.*same dtype.*f32\[3\].*f64\[3\]"):
        lax.add(x32, x64)
    with pytest.raises(TypeError, match=r"mul.*equal shapes"):
        lax.mul(x32, fx.numpy.ones(4, np.float32))
    with pytest.raises(TypeError, match=r"sin requires floating"):
        lax.sin(fx.numpy.ones(3, np.int32))
