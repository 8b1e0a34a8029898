"""Tests of the sort and cumulative primitives against jax.lax."""

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
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fx
import fx.lax as lax
from fx.test_util import shapes

fnp = fx.numpy


def _distinct(rng, shape, dtype=np.float64):
    """Values without ties (a shuffled grid plus noise), so sorting is differentiable."""
    n = int(np.prod(shape))
    vals = rng.permutation(n).astype(np.float64) + rng.uniform(0.1, 0.4, n)
    return (vals - n / 2).reshape(shape).astype(dtype)


# --- sort ---------------------------------------------------------------------------------------

# shape, dimension, number of operands, num_keys
SORTS = [
    ((7,), 0, 1, 1),
    ((7,), -1, 2, 1),
    ((3, 5), 0, 1, 1),
    ((3, 5), 1, 3, 1),
    ((3, 5), 1, 3, 2),
    ((2, 3, 4), 1, 2, 2),
    ((2, 3, 4), 2, 1, 1),
]


def _sort_case(shape, dimension, n_ops, num_keys, dtype=np.float64):
    def fx_fn(*ops):
        return lax.sort(ops[0] if n_ops == 1 else ops, dimension, num_keys=num_keys)

    def jax_fn(*ops):
        return jax.lax.sort(ops[0] if n_ops == 1 else ops, dimension=dimension,
                            num_keys=num_keys)

    return OpCase(
        name=f"sort{shape}:d{dimension}:n{n_ops}:k{num_keys}",
        fx_fn=fx_fn,
        jax_fn=jax.jit(jax_fn),
        args=lambda rng: [_distinct(rng, shape, dtype) for _ in range(n_ops)],
        diff_argnums=tuple(range(n_ops)),
    )


@pytest.mark.parametrize("shape,dimension,n_ops,num_keys", SORTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sort_eval_jvp_vjp(shape, dimension, n_ops, num_keys, dtype):
    rng = np.random.default_rng(0)
    case = _sort_case(shape, dimension, n_ops, num_keys, dtype)
    args = case.args(rng)
    check_eval(case, args)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)


@pytest.mark.parametrize("shape,dimension,n_ops,num_keys", SORTS[1::2])
def test_sort_check_grads_order2(shape, dimension, n_ops, num_keys):
    case = _sort_case(shape, dimension, n_ops, num_keys)
    check_grads_f64(case, case.args(np.random.default_rng(1)))


@pytest.mark.parametrize("dimension", [0, 1])
@pytest.mark.parametrize("in_axes", [(0, 0), (1, 0), (2, None), (None, 1)])
def test_sort_vmap(dimension, in_axes):
    rng = np.random.default_rng(2)
    per_example = (3, 4)

    def draw(ax):
        if ax is None:
            return _distinct(rng, per_example)
        shape = list(per_example)
        shape.insert(ax, 2)
        return _distinct(rng, tuple(shape))

    args = [draw(ax) for ax in in_axes]
    for num_keys in (1, 2):
        case = OpCase(
            "sort vmap",
            lambda a, b, k=num_keys: lax.sort((a, b), dimension, num_keys=k),
            jax.jit(lambda a, b, k=num_keys: jax.lax.sort((a, b), dimension=dimension,
                                                          num_keys=k)),
            None,
        )
        check_vmap(case, args, in_axes)


def test_sort_vmap_of_grad_and_grad_of_vmap():
    x = _distinct(np.random.default_rng(3), (3, 5))
    weights = np.arange(5.0)

    def f(v):
        return lax.reduce_sum(lax.mul(lax.sort(v), fnp.asarray(weights)), (0,))

    def jf(v):
        return (jax.lax.sort(v) * weights).sum()

    want = jax.jit(jax.vmap(jax.grad(jf)))(jnp.asarray(x))
    assert_allclose(fx.vmap(fx.grad(f))(fnp.asarray(x)), want)
    assert_allclose(fx.jacrev(fx.vmap(f))(fnp.asarray(x)),
                    jax.jit(jax.jacrev(jax.vmap(jf)))(jnp.asarray(x)))


SPECIALS = [np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, 2.5]


@given(
    hnp.arrays(np.float64, shapes(min_dims=1), elements=st.sampled_from(SPECIALS)),
    st.integers(0, 2),
)
def test_sort_nan_placement_and_stability_match_jax(x, dim):
    dim = dim % x.ndim
    iota = np.broadcast_to(
        np.arange(x.shape[dim]).reshape([-1 if i == dim else 1 for i in range(x.ndim)]), x.shape
    ).astype(np.int32)
    got_k, got_i = lax.sort_key_val(fnp.asarray(x), fnp.asarray(iota), dim)
    want_k, want_i = jax.lax.sort_key_val(jnp.asarray(x), jnp.asarray(iota), dim)
    np.testing.assert_array_equal(np.asarray(got_i), np.asarray(want_i))
    np.testing.assert_array_equal(np.asarray(got_k), np.asarray(want_k))
    # NaNs last, and -0.0/0.0 compare equal: the stable order keeps them in index order.
    assert np.all(np.diff(np.isnan(np.asarray(got_k)).astype(int), axis=dim) >= 0)


@given(
    hnp.arrays(np.int32, shapes(min_dims=1), elements=st.integers(-2, 2)),
    st.sampled_from([np.int32, np.uint32, np.float32, np.bool_]),
)
def test_multi_key_sort_with_ties_matches_jax(keys, second_dtype):
    rng = np.random.default_rng(keys.size)
    second = rng.integers(0, 3, keys.shape).astype(second_dtype)
    vals = rng.standard_normal(keys.shape)
    got = lax.sort((fnp.asarray(keys), fnp.asarray(second), fnp.asarray(vals)), 0, num_keys=2)
    want = jax.lax.sort((jnp.asarray(keys), jnp.asarray(second), jnp.asarray(vals)), dimension=0,
                        num_keys=2)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16", np.int32, np.uint32, np.bool_])
def test_sort_other_dtypes(dtype):
    x = np.random.default_rng(4).integers(0, 5, (3, 6)).astype(dtype)
    assert_allclose(lax.sort(fnp.asarray(x)), jax.lax.sort(jnp.asarray(x)))


def test_sort_zero_size_and_derivative():
    x = np.zeros((3, 0))
    case = OpCase("sort zero-size", lambda v: lax.sort(v, 1), lambda v: jax.lax.sort(v), None)
    check_eval(case, [x])
    check_jvp(case, [x], np.random.default_rng(0))


def test_sort_ties_derivative_follows_the_stable_permutation():
    x = np.array([2.0, 1.0, 2.0, 1.0])
    t = np.array([1.0, 2.0, 3.0, 4.0])
    _, got = fx.jvp(lambda v: lax.sort(v), (fnp.asarray(x),), (fnp.asarray(t),))
    _, want = jax.jvp(lambda v: jax.lax.sort(v), (jnp.asarray(x),), (jnp.asarray(t),))
    np.testing.assert_array_equal(np.asarray(got), [2.0, 4.0, 1.0, 3.0])
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.default_mode  # the messages name the default mode's float32
def test_sort_errors():
    x = fnp.ones((2, 3))
    with pytest.raises(ValueError, match=r"sort: dimension 2 is out of range .* rank 2"):
        lax.sort(x, 2)
    with pytest.raises(ValueError, match=r"sort: dimension -1 .* rank 0.*reshap"):
        lax.sort(fnp.asarray(np.float32(1.0)))
    with pytest.raises(TypeError, match=r"sort: all operands must have the same shape.*"
                                        r"f32\[2,3\].*f32\[3\]"):
        lax.sort((x, fnp.ones(3)))
    with pytest.raises(ValueError, match=r"sort: num_keys=3 must be between 1 and .* \(2\)"):
        lax.sort((x, x), num_keys=3)
    with pytest.raises(ValueError, match=r"top_k: k=4"):
        lax.top_k(x, 4)


# --- top_k --------------------------------------------------------------------------------------


def test_top_k_matches_jax_with_ties_and_nan():
    x = np.array([[1.0, np.nan, 3.0, 3.0, 2.0], [0.0, -1.0, 5.0, 5.0, 5.0]])
    for k in (0, 2, 5):
        assert_allclose(lax.top_k(fnp.asarray(x), k), jax.lax.top_k(jnp.asarray(x), k))
    ints = np.array([3, 1, 3, 7, 0], np.uint32)
    assert_allclose(lax.top_k(fnp.asarray(ints), 3), jax.lax.top_k(jnp.asarray(ints), 3))


def test_top_k_derivatives():
    case = OpCase("top_k", lambda v: lax.top_k(v, 3)[0], jax.jit(lambda v: jax.lax.top_k(v, 3)[0]),
                  lambda rng: [_distinct(rng, (2, 6))])
    args = case.args(np.random.default_rng(5))
    check_jvp(case, args, np.random.default_rng(6))
    check_vjp(case, args, np.random.default_rng(7))
    check_vmap(case, args, (0,))


# --- cumulative reductions ----------------------------------------------------------------------

CUMULATIVE = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]
# shape, axis
CUM_SHAPES = [((6,), 0), ((3, 5), 1), ((2, 3, 4), 1)]


def _cum_case(name, shape, axis, reverse, dtype=np.float64):
    return OpCase(
        name=f"{name}{shape}:a{axis}:r{reverse}",
        fx_fn=lambda v: getattr(lax, name)(v, axis, reverse),
        jax_fn=jax.jit(lambda v: getattr(jax.lax, name)(v, axis, reverse)),
        args=lambda rng: [rng.uniform(-2, 2, shape).astype(dtype)],
    )


@pytest.mark.parametrize("name", CUMULATIVE)
@pytest.mark.parametrize("shape,axis", CUM_SHAPES)
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_eval_jvp_vjp(name, shape, axis, reverse):
    rng = np.random.default_rng(8)
    case = _cum_case(name, shape, axis, reverse)
    args = case.args(rng)
    check_eval(case, args)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)


@pytest.mark.parametrize("name", CUMULATIVE)
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_check_grads_order2(name, reverse):
    case = _cum_case(name, (2, 5), 1, reverse)
    args = case.args(np.random.default_rng(9))
    if name in ("cummax", "cummin"):
        args = [_distinct(np.random.default_rng(9), (2, 5))]  # no ties: differentiable
    check_grads_f64(case, args)


@pytest.mark.parametrize("name", CUMULATIVE)
@pytest.mark.parametrize("vmap_axis", [0, 1, 2])
def test_cumulative_vmap(name, vmap_axis):
    shape = [3, 4]
    shape.insert(vmap_axis, 2)
    case = _cum_case(name, (3, 4), 1, vmap_axis == 1)
    x = np.random.default_rng(10).uniform(-2, 2, shape)
    check_vmap(case, [x], (vmap_axis,))


@pytest.mark.parametrize("name,dtype", [
    (n, d) for n in CUMULATIVE for d in (np.float32, np.float16, "bfloat16", np.int32, np.uint32)
    if n != "cumlogsumexp" or d not in (np.int32, np.uint32)  # floating only
])
def test_cumulative_dtypes(name, dtype):
    x = np.random.default_rng(11).integers(1, 4, (3, 5)).astype(dtype)
    got = getattr(lax, name)(fnp.asarray(x), 1)
    want = getattr(jax.lax, name)(jnp.asarray(x), 1)
    assert_allclose(got, want)


@given(hnp.arrays(np.float64, shapes(min_dims=1),
                  elements=st.floats(-3, 3) | st.sampled_from([0.0, -np.inf, np.inf, np.nan])),
       st.sampled_from(CUMULATIVE), st.booleans())
def test_cumulative_hypothesis_shapes_and_specials(x, name, reverse):
    axis = x.ndim - 1
    with np.errstate(all="ignore"):
        want = getattr(jax.lax, name)(jnp.asarray(x), axis, reverse)
    assert_allclose(getattr(lax, name)(fnp.asarray(x), axis, reverse), want, rtol=1e-12,
                    atol=1e-12)


@pytest.mark.parametrize("reverse", [False, True])
def test_cumprod_gradient_with_zeros_matches_jax(reverse):
    x = np.array([[2.0, 0.0, 3.0, 0.0, -1.5, 4.0], [0.0, 0.0, 1.0, 2.0, 3.0, 0.5]])

    def f(v):
        return lax.cumprod(v, 1, reverse)

    def jf(v):
        return jax.lax.cumprod(v, 1, reverse)

    want = jax.jit(jax.jacfwd(jf))(jnp.asarray(x))
    assert np.all(np.isfinite(np.asarray(want)))
    assert_allclose(fx.jacfwd(f)(fnp.asarray(x)), want)
    assert_allclose(fx.jacrev(f)(fnp.asarray(x)), want)
    assert_allclose(fx.hessian(lambda v: lax.reduce_sum(f(v), (0, 1)))(fnp.asarray(x)),
                    jax.jit(jax.hessian(lambda v: jf(v).sum()))(jnp.asarray(x)))


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("reverse", [False, True])
def test_cummax_cummin_ties_split_like_jax(name, reverse):
    x = np.array([1.0, 1.0, 1.0, 0.0, 2.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    if name == "cummin":
        x = -x

    def f(v):
        return getattr(lax, name)(v, 0, reverse)

    want = jax.jit(jax.jacfwd(lambda v: getattr(jax.lax, name)(v, 0, reverse)))(jnp.asarray(x))
    assert_allclose(fx.jacfwd(f)(fnp.asarray(x)), want)
    assert_allclose(fx.jacrev(f)(fnp.asarray(x)), want)
    assert np.any((np.asarray(want) > 0) & (np.asarray(want) < 1))  # ties really split


@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_non_commutative(reverse):
    # Composition of affine maps x -> a x + b is associative but not commutative.
    rng = np.random.default_rng(12)
    a, b = rng.uniform(0.5, 1.5, 7), rng.uniform(-1, 1, 7)

    def compose(first, second):
        (a1, b1), (a2, b2) = first, second
        return lax.mul(a1, a2), lax.add(lax.mul(a2, b1), b2)

    def jcompose(first, second):
        (a1, b1), (a2, b2) = first, second
        return a1 * a2, a2 * b1 + b2

    got = lax.associative_scan(compose, (fnp.asarray(a), fnp.asarray(b)), reverse=reverse)
    want = jax.lax.associative_scan(jcompose, (jnp.asarray(a), jnp.asarray(b)), reverse=reverse)
    assert_allclose(got, want)


def test_cumsum_transpose_is_reverse_cumsum():
    jaxpr = fx.make_jaxpr(fx.grad(lambda v: lax.reduce_sum(lax.cumsum(v), (0,))))(fnp.ones(4))
    assert "cumsum" in str(jaxpr) and "reverse=True" in str(jaxpr)


def test_cumulative_errors():
    with pytest.raises(TypeError, match=r"cumsum requires a numeric operand, got bool"):
        lax.cumsum(fnp.asarray(np.array([True, False])))
    with pytest.raises(TypeError, match=r"cumlogsumexp requires a floating operand.*i32\[2\]"):
        lax.cumlogsumexp(fnp.asarray(np.array([1, 2], np.int32)))
    with pytest.raises(ValueError, match=r"cummax: dimension 1 is out of range .* rank 1"):
        lax.cummax(fnp.ones(3), 1)
