"""Tests of the reduction primitives against jax.lax: eval, jvp, vjp, vmap over every axis,
second-order gradients, ties and zeros, empty axes, NaN, half precision and errors."""

from __future__ import annotations

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
import fx.lax as lax
from fx.test_util import check_grads

FLOAT_REDUCTIONS = ["reduce_max", "reduce_min", "reduce_prod", "reduce_sum"]
SHAPES_AXES = [
    ((), ()), ((5,), (0,)), ((2, 3), (0,)), ((2, 3), (1,)), ((2, 3), (0, 1)),
    ((2, 3, 4), (0, 2)), ((2, 3, 4), (1,)),
]


def _case(name, shape, axes, dtype=np.float64, lo=-2.0, hi=2.0) -> OpCase:
    return OpCase(
        name=f"{name}{shape}{axes}:{np.dtype(dtype).name}",
        fx_fn=lambda x: getattr(lax, name)(x, axes),
        jax_fn=lambda x: getattr(jax.lax, name)(x, axes),
        args=lambda rng: [rng.uniform(lo, hi, shape).astype(dtype)],
    )


@pytest.mark.parametrize("name", FLOAT_REDUCTIONS)
@pytest.mark.parametrize("shape,axes", SHAPES_AXES)
def test_eval_and_grads(name, shape, axes):
    # Values against jax; derivatives by finite differences and forward/reverse agreement
    # (cheap), and against jax's jvp/vjp below for a representative subset (jax compiles
    # every derivative eagerly, which dominates the run time).
    rng = np.random.default_rng(0)
    check_eval(_case(name, shape, axes, np.float32), [rng.uniform(-2, 2, shape).astype("f4")])
    case = _case(name, shape, axes)
    args = case.args(rng)
    check_eval(case, args)
    check_grads_f64(case, args)


@pytest.mark.parametrize("name", FLOAT_REDUCTIONS[:3])
@pytest.mark.parametrize("shape,axes", [((), ()), ((2, 3, 4), (0, 2)), ((2, 3), (1,))])
def test_jvp_vjp_against_jax(name, shape, axes):
    rng = np.random.default_rng(10)
    case = _case(name, shape, axes)
    args = case.args(rng)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)


@pytest.mark.parametrize("name", FLOAT_REDUCTIONS[:3])
@pytest.mark.parametrize("shape,axes", [((2, 3), (0,)), ((2, 3, 4), (0, 2)), ((4,), (0,))])
def test_vmap_every_axis(name, shape, axes):
    rng = np.random.default_rng(1)
    case = _case(name, shape, axes, np.float32)
    for bdim in range(len(shape) + 1):
        s = list(shape)
        s.insert(bdim, 3)
        check_vmap(case, [rng.uniform(-2, 2, s).astype(np.float32)], (bdim,))


@pytest.mark.parametrize("name", ["reduce_max", "reduce_min"])
def test_ties_share_the_tangent_like_jax(name):
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0], [-1.0, 5.0, -1.0]])
    t = np.array([[1.0, 2.0, 5.0], [1.0, 2.0, 6.0], [4.0, 1.0, 8.0]])
    for axes in [(0,), (1,), (0, 1)]:
        f = lambda v: getattr(lax, name)(v, axes)  # noqa: B023
        jf = lambda v: getattr(jax.lax, name)(v, axes)  # noqa: B023
        assert_allclose(fx.jvp(f, (to_fx(x),), (to_fx(t),)), jax.jvp(jf, (x,), (t,)),
                        what=f"{name} jvp at ties {axes}")
        ct = np.arange(np.asarray(jf(x)).size, dtype=np.float64).reshape(np.shape(jf(x))) + 1
        assert_allclose(fx.vjp(f, to_fx(x))[1](to_fx(ct)), jax.vjp(jf, x)[1](ct),
                        what=f"{name} vjp at ties {axes}")


@pytest.mark.parametrize("x", [
    np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]]),
    np.array([[0.0, 0.0], [0.0, 0.0]]),
    np.array([[1.5, -2.0, 0.0, 3.0, 0.5]]),  # an odd number of factors
], ids=["one_zero_per_row", "all_zero", "odd_length"])
def test_reduce_prod_derivatives_with_zeros(x):
    t = np.ones_like(x) + np.arange(x.size).reshape(x.shape)
    jf = lambda v: jax.lax.reduce_prod(v, (1,))
    # jax's derivatives jitted: eagerly it compiles each primitive of its rule on its own.
    assert_allclose(fx.jvp(lambda v: lax.reduce_prod(v, (1,)), (to_fx(x),), (to_fx(t),)),
                    jax.jit(lambda v, u: jax.jvp(jf, (v,), (u,)))(x, t),
                    what="reduce_prod jvp vs jax")
    assert_allclose(fx.grad(lambda v: lax.reduce_sum(lax.reduce_prod(v, (1,)), (0,)))(to_fx(x)),
                    jax.jit(jax.grad(lambda v: jf(v).sum()))(x), what="reduce_prod grad vs jax")
    for axes in [(0,), (1,), (0, 1)]:
        f = lambda v: lax.reduce_prod(v, axes)  # noqa: B023
        _, got = fx.jvp(f, (to_fx(x),), (to_fx(t),))
        assert_allclose(got, _prod_jvp_reference(x, t, axes), what=f"reduce_prod jvp {axes}")
        g = lambda v: lax.reduce_sum(f(v), tuple(range(2 - len(axes))))  # noqa: B023
        check_grads(g, (to_fx(x),), order=2)
    # The Hessian of the full product: d2/dxi dxj = product of all but entries i and j.
    flat = x.ravel()
    want = np.zeros((flat.size, flat.size))
    for i in range(flat.size):
        for j in range(flat.size):
            if i != j:
                want[i, j] = np.prod(np.delete(flat, [i, j]))
    got = fx.hessian(lambda v: lax.reduce_prod(v, (0, 1)))(to_fx(x))
    assert_allclose(np.asarray(got).reshape(want.shape), want, what="reduce_prod hessian")


@given(st.lists(st.integers(0, 4), min_size=0, max_size=4), st.data())
def test_hypothesis_shapes_and_axes(shape, data):
    shape = tuple(shape)
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, max(len(shape) - 1, 0)))
                                  if shape else st.just(set()))))
    rng = np.random.default_rng(len(shape) * 7 + sum(shape))
    # Integers in [-2, 2] (zeros and ties included) stay exact under products. NumPy
    # references stand in for jax here: jax compiles every new shape, which is slow.
    x = rng.integers(-2, 3, shape).astype(np.float64)
    t = rng.standard_normal(shape)
    fxx, fxt = to_fx(x), to_fx(t)
    for name, np_fn, identity, ref in (
        ("reduce_max", np.max, -np.inf, _extremum_jvp_reference(np.max)),
        ("reduce_min", np.min, np.inf, _extremum_jvp_reference(np.min)),
        ("reduce_prod", np.prod, None, _prod_jvp_reference),
    ):
        kw = {} if identity is None else dict(initial=identity)
        f = lambda v: getattr(lax, name)(v, axes)  # noqa: B023
        ans, tan = fx.jvp(f, (fxx,), (fxt,))
        assert_allclose(ans, np.asarray(np_fn(x, axis=axes, **kw)), what=f"{name} eval")
        if name == "reduce_prod" or not any(shape[a] == 0 for a in axes):
            assert_allclose(tan, ref(x, t, axes), what=f"{name} jvp")


def _rows(v, axes):
    """``v`` with the ``axes`` moved to the front and flattened into one."""
    kept = [i for i in range(v.ndim) if i not in axes]
    moved = np.transpose(v, list(axes) + kept)
    n = int(np.prod([v.shape[a] for a in axes]))
    return moved.reshape((n,) + tuple(v.shape[k] for k in kept))


def _prod_jvp_reference(x, t, axes):
    # d prod = sum_k t_k * prod_{j != k} x_j, with no division (exact at zeros).
    xs, ts = _rows(x, axes), _rows(t, axes)
    out = np.zeros(xs.shape[1:])
    for k in range(xs.shape[0]):
        out = out + ts[k] * np.prod(np.delete(xs, k, 0), 0)
    return out


def _extremum_jvp_reference(pick):
    # jax's convention: the tangent averaged over the entries equal to the extremum.
    def ref(x, t, axes):
        xs, ts = _rows(x, axes), _rows(t, axes)
        hit = xs == pick(xs, 0)
        return (ts * hit).sum(0) / hit.sum(0)

    return ref


def test_empty_axes_give_the_identity_like_xla():
    e = np.zeros((0, 3), np.float32)
    for name in ("reduce_max", "reduce_min", "reduce_prod", "reduce_sum"):
        assert_allclose(getattr(lax, name)(to_fx(e), (0,)), getattr(jax.lax, name)(e, (0,)),
                        what=name)
    for dt in (np.int32, np.uint32, np.int64, np.bool_):
        e = np.zeros((3, 0), dt)
        for name in ("reduce_max", "reduce_min", "reduce_and", "reduce_or", "reduce_xor"):
            assert_allclose(getattr(lax, name)(to_fx(e), (1,)), getattr(jax.lax, name)(e, (1,)),
                            what=f"{name} {np.dtype(dt).name}")


def test_nan_propagates():
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]])
    for name in ("reduce_max", "reduce_min", "reduce_prod"):
        f = lambda v: getattr(lax, name)(v, (1,))  # noqa: B023
        jf = lambda v: getattr(jax.lax, name)(v, (1,))  # noqa: B023
        assert_allclose(f(to_fx(x)), jf(x), what=name)
        t = np.ones_like(x)
        assert_allclose(fx.jvp(f, (to_fx(x),), (to_fx(t),)), jax.jvp(jf, (x,), (t,)),
                        what=f"{name} jvp with NaN")


@pytest.mark.parametrize("name", ["reduce_and", "reduce_or", "reduce_xor", "reduce_max",
                                  "reduce_min"])
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.uint32, np.int64])
def test_logical_and_integer_reductions(name, dtype):
    rng = np.random.default_rng(2)
    x = rng.integers(0, 2 if dtype == np.bool_ else 64, (3, 4, 5)).astype(dtype)
    for axes in [(0,), (1, 2), (0, 1, 2)]:
        case = OpCase(name, lambda v: getattr(lax, name)(v, axes),  # noqa: B023
                      lambda v: getattr(jax.lax, name)(v, axes), None)  # noqa: B023
        check_eval(case, [x])
    case = OpCase(name, lambda v: getattr(lax, name)(v, (1,)),
                  lambda v: getattr(jax.lax, name)(v, (1,)), None)
    check_vmap(case, [x], (1,))


@pytest.mark.parametrize("name", ["reduce_max", "reduce_prod"])
@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_half_precision(name, dtype):
    # Values against jax; the pullback against fx's own in float64, within half tolerance.
    rng = np.random.default_rng(3)
    case = _case(name, (4, 6), (1,), np.dtype(dtype), 0.5, 1.5)
    args = case.args(rng)
    check_eval(case, args)
    ct = rng.standard_normal(4).astype(dtype)
    f = lambda v: getattr(lax, name)(v, (1,))
    got = fx.vjp(f, to_fx(args[0]))[1](to_fx(ct))
    want = fx.vjp(f, to_fx(args[0].astype(np.float64)))[1](to_fx(ct.astype(np.float64)))
    assert_allclose(got[0], np.asarray(want[0]).astype(dtype), what="half vjp")


ARG_INPUTS = [
    np.array([[1.0, 3.0, 3.0, 0.0], [2.0, -1.0, -1.0, 5.0], [0.0, 0.0, 0.0, 0.0]]),  # ties
    np.array([[1.0, np.nan, 3.0, np.nan], [np.nan, 1.0, 9.0, -9.0], [1.0, 2.0, 3.0, 4.0]]),
    np.array([[-0.0, 0.0, 1.0, 1.0], [np.inf, -np.inf, np.inf, 0.0], [2.0, 2.0, 1.0, 1.0]]),
    np.array([[3, 1, 3, 2], [0, 0, -1, -1], [5, 5, 5, 5]], np.int32),
    np.array([[True, False, True, False], [False, False, True, True], [False] * 4]),
]


@pytest.mark.parametrize("x", ARG_INPUTS, ids=["ties", "nan", "signed_zero_inf", "int", "bool"])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_argmax_argmin_first_index_and_first_nan(x, name, index_dtype):
    for axis in (0, 1):
        case = OpCase(name, lambda v: getattr(lax, name)(v, axis, index_dtype),  # noqa: B023
                      lambda v: getattr(jax.lax, name)(v, axis, index_dtype), None)  # noqa: B023
        check_eval(case, [x])
    check_vmap(case, [np.stack([x, x[::-1]], 2)], (2,))


def test_argmax_vmap_every_axis():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 3, (3, 4, 5)).astype(np.float32)
    for axis in (0, 1):
        case = OpCase("argmax", lambda v: lax.argmax(v, axis, np.int32),  # noqa: B023
                      lambda v: jax.lax.argmax(v, axis, np.int32), None)  # noqa: B023
        for bdim in range(3):
            check_vmap(case, [x], (bdim,))


def test_argmax_has_zero_gradient_through_its_use():
    x = np.array([1.0, 5.0, 2.0])
    f = lambda v: lax.mul(lax.convert_element_type(lax.argmax(v, 0, np.int32), np.float64),
                          lax.reduce_sum(v, (0,)))
    assert_allclose(fx.grad(f)(to_fx(x)), np.array([1.0, 1.0, 1.0]), what="grad")


def test_errors_name_the_primitive():
    f32 = fx.numpy.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match=r"reduce_prod: requires numeric \(not bool\) operands "
                                        r"\(got bool\[2\]\)"):
        lax.reduce_prod(fx.numpy.asarray(np.array([True, False])), (0,))
    with pytest.raises(TypeError, match=r"reduce_and: requires bool or integer.*f32\[2,3\]"):
        lax.reduce_and(f32, (0,))
    with pytest.raises(ValueError, match=r"reduce_max: axis 2 is out of bounds.*rank 2"):
        lax.reduce_max(f32, (2,))
    with pytest.raises(ValueError, match=r"reduce_max: repeated axis"):
        lax.reduce_max(f32, (0, -2))
    with pytest.raises(ValueError, match=r"argmax: the reduced dimension 0 is empty"):
        lax.argmax(fx.numpy.zeros((0, 3)), 0, np.int32)
    with pytest.raises(TypeError, match=r"argmin: index_dtype must be an integer dtype"):
        lax.argmin(f32, 0, np.float32)
    # The primitive itself insists on canonical (sorted) axes.
    from fx.lax.reductions import reduce_max_p

    with pytest.raises(TypeError, match=r"reduce_max: axes \(1, 0\) must be sorted"):
        reduce_max_p.bind(f32, axes=(1, 0))


def test_negative_axes_and_empty_axes_tuple():
    x = np.arange(6.0).reshape(2, 3)
    assert_allclose(lax.reduce_max(to_fx(x), (-1,)), jnp.max(x, -1), what="negative axis")
    assert_allclose(lax.reduce_prod(to_fx(x), ()), x, what="no axes")
