"""Tests of fx.numpy's sorting, searching, cumulative and quantile functions against
jax.numpy."""

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
import fx.numpy as fnp
from fx.test_util import shapes


def _distinct(rng, shape, dtype=np.float64):
    """Values without ties, so that sorting is differentiable."""
    n = int(np.prod(shape))
    vals = rng.permutation(n).astype(np.float64) + rng.uniform(0.1, 0.4, n)
    return (vals - n / 2).reshape(shape).astype(dtype)


def _uniform(rng, shape, dtype=np.float64):
    return rng.uniform(-2, 2, shape).astype(dtype)


# --- differentiable functions: eval, jvp, vjp, grads, vmap --------------------------------------

_APPEND = np.array([[0.5, -1.0, 2.0]], np.float32)

# name, fx function, jax function, argument shape, draw
DIFFERENTIABLE = [
    ("sort", lambda x: fnp.sort(x), lambda x: jnp.sort(x), (3, 5), _distinct),
    ("sort_axis0", lambda x: fnp.sort(x, axis=0), lambda x: jnp.sort(x, axis=0), (4, 3),
     _distinct),
    ("sort_none", lambda x: fnp.sort(x, axis=None), lambda x: jnp.sort(x, axis=None), (2, 3),
     _distinct),
    ("sort_desc", lambda x: fnp.sort(x, descending=True),
     lambda x: jnp.sort(x, descending=True), (3, 4), _distinct),
    ("cumsum", lambda x: fnp.cumsum(x, axis=1), lambda x: jnp.cumsum(x, axis=1), (3, 4),
     _uniform),
    ("cumsum_none", lambda x: fnp.cumsum(x), lambda x: jnp.cumsum(x), (2, 3), _uniform),
    ("cumprod", lambda x: fnp.cumprod(x, axis=0), lambda x: jnp.cumprod(x, axis=0), (4, 3),
     _uniform),
    ("cumulative_sum", lambda x: fnp.cumulative_sum(x, axis=1, include_initial=True),
     lambda x: jnp.cumulative_sum(x, axis=1, include_initial=True), (2, 3), _uniform),
    ("cumulative_prod", lambda x: fnp.cumulative_prod(x, include_initial=True),
     lambda x: jnp.cumulative_prod(x, include_initial=True), (5,), _uniform),
    ("diff", lambda x: fnp.diff(x), lambda x: jnp.diff(x), (3, 5), _uniform),
    ("diff_n2_axis0", lambda x: fnp.diff(x, n=2, axis=0, prepend=1.5, append=_APPEND),
     lambda x: jnp.diff(x, n=2, axis=0, prepend=1.5, append=_APPEND), (4, 3), _uniform),
    ("quantile", lambda x: fnp.quantile(x, 0.3, axis=1), lambda x: jnp.quantile(x, 0.3, axis=1),
     (3, 6), _distinct),
    ("quantile_q_vector", lambda x: fnp.quantile(x, np.array([0.0, 0.25, 0.9, 1.0]), axis=0),
     lambda x: jnp.quantile(x, jnp.array([0.0, 0.25, 0.9, 1.0]), axis=0), (5, 2), _distinct),
    ("percentile_tuple_axis", lambda x: fnp.percentile(x, 40.0, axis=(0, 2), keepdims=True),
     lambda x: jnp.percentile(x, 40.0, axis=(0, 2), keepdims=True), (2, 3, 4), _distinct),
    ("median", lambda x: fnp.median(x, axis=-1), lambda x: jnp.median(x, axis=-1), (3, 4),
     _distinct),
    ("median_none", lambda x: fnp.median(x), lambda x: jnp.median(x), (3, 3), _distinct),
]


def _case(name, fx_fn, jax_fn, shape, draw, dtype=np.float64):
    # jax under jit: one compile instead of one per eagerly run op (much faster).
    return OpCase(name, fx_fn, jax.jit(jax_fn), lambda rng: [draw(rng, shape, dtype)])


@pytest.mark.parametrize("name,fx_fn,jax_fn,shape,draw", DIFFERENTIABLE,
                         ids=[d[0] for d in DIFFERENTIABLE])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eval_jvp_vjp(name, fx_fn, jax_fn, shape, draw, dtype):
    rng = np.random.default_rng(0)
    case = _case(name, fx_fn, jax_fn, shape, draw, dtype)
    args = case.args(rng)
    check_eval(case, args)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)


@pytest.mark.parametrize("name,fx_fn,jax_fn,shape,draw", DIFFERENTIABLE[::3],
                         ids=[d[0] for d in DIFFERENTIABLE[::3]])
def test_check_grads_order2(name, fx_fn, jax_fn, shape, draw):
    case = _case(name, fx_fn, jax_fn, shape, draw)
    check_grads_f64(case, case.args(np.random.default_rng(1)))


@pytest.mark.parametrize("name,fx_fn,jax_fn,shape,draw", DIFFERENTIABLE,
                         ids=[d[0] for d in DIFFERENTIABLE])
def test_vmap(name, fx_fn, jax_fn, shape, draw):
    rng = np.random.default_rng(2)
    case = _case(name, fx_fn, jax_fn, shape, draw)
    for axis in range(len(shape) + 1):
        batched = list(shape)
        batched.insert(axis, 2)
        check_vmap(case, [draw(rng, tuple(batched))], (axis,))


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_methods_match_jax(method):
    x = np.array([[4.0, 1.0, 3.0, 2.0, 7.0], [0.5, 0.5, -1.0, 2.0, 9.0]])
    q = np.array([0.0, 0.1, 0.125, 0.375, 0.5, 0.8, 1.0])
    assert_allclose(fnp.quantile(x, q, axis=1, method=method),
                    jnp.quantile(x, q, axis=1, method=method))
    case = OpCase(method, lambda v: fnp.quantile(v, q, axis=0, method=method),
                  lambda v: jnp.quantile(v, q, axis=0, method=method), None)
    check_vjp(case, [_distinct(np.random.default_rng(3), (6, 2))], np.random.default_rng(4))


def test_quantile_nan_and_int_inputs():
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]])
    assert_allclose(fnp.median(x, axis=1), jnp.median(x, axis=1))
    assert np.isnan(np.asarray(fnp.median(x, axis=1))[0])
    ints = np.array([1, 2, 3, 4], np.int32)
    got = fnp.quantile(ints, 0.5)
    assert_allclose(got, jnp.quantile(ints, 0.5))


# --- index-valued functions ---------------------------------------------------------------------


def _check_index(got, want):
    """Index results have jax's dtype (the mode's default int)."""
    assert np.asarray(got).dtype == np.asarray(want).dtype, np.asarray(got).dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


SPECIALS = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, 2.5]


@given(hnp.arrays(np.float64, shapes(), elements=st.sampled_from(SPECIALS)),
       st.sampled_from([None, 0, -1]), st.booleans())
def test_sort_argsort_match_jax_with_ties_nans_and_zero_size(x, axis, descending):
    if axis is not None and x.ndim == 0:
        axis = None
    fx_x, j_x = fnp.asarray(x), jnp.asarray(x)
    assert_allclose(fnp.sort(fx_x, axis=axis, descending=descending),
                    jnp.sort(j_x, axis=axis, descending=descending))
    _check_index(fnp.argsort(fx_x, axis=axis, descending=descending),
                 jnp.argsort(j_x, axis=axis, descending=descending, stable=True))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.bool_, np.float16, "bfloat16"])
def test_sort_argsort_other_dtypes(dtype):
    x = np.random.default_rng(5).integers(0, 4, (3, 7)).astype(dtype)
    for descending in (False, True):
        assert_allclose(fnp.sort(x, descending=descending),
                        jnp.sort(jnp.asarray(x), descending=descending))
        _check_index(fnp.argsort(x, axis=0, descending=descending),
                     jnp.argsort(jnp.asarray(x), axis=0, descending=descending))


def test_argsort_is_stable():
    x = np.array([2, 1, 2, 1, 0, 2, 1], np.int32)
    _check_index(fnp.argsort(x), [4, 1, 3, 6, 0, 2, 5])
    _check_index(fnp.argsort(x, descending=True), [0, 2, 5, 1, 3, 6, 4])


def test_lexsort_matches_jax():
    rng = np.random.default_rng(6)
    a, b = rng.integers(0, 3, (2, 9)), rng.standard_normal((2, 9)).round(0)
    _check_index(fnp.lexsort((a, b)), jnp.lexsort((jnp.asarray(a), jnp.asarray(b))))
    _check_index(fnp.lexsort((a, b), axis=0), jnp.lexsort((jnp.asarray(a), jnp.asarray(b)),
                                                          axis=0))
    stacked = np.stack([a[0], b[0]])
    _check_index(fnp.lexsort(stacked), jnp.lexsort(jnp.asarray(stacked)))


@given(hnp.arrays(np.float64, st.integers(0, 8),
                  elements=st.sampled_from([0.0, 1.0, 2.0, 3.0, np.inf, np.nan])),
       hnp.arrays(np.float64, shapes(max_dims=2),
                  elements=st.sampled_from([-1.0, 0.0, 1.5, 2.0, 9.0, np.inf, np.nan])),
       st.sampled_from(["left", "right"]))
def test_searchsorted_matches_jax(a, v, side):
    a = np.sort(a)
    _check_index(fnp.searchsorted(a, v, side=side),
                 jnp.searchsorted(jnp.asarray(a), jnp.asarray(v), side=side))


def test_searchsorted_sorter_ints_and_tracing():
    a = np.array([30, 10, 20, 10], np.int32)
    sorter = np.argsort(a, kind="stable").astype(np.int32)
    v = np.array([[5, 10], [25, 40]], np.int32)
    for side in ("left", "right"):
        _check_index(fnp.searchsorted(a, v, side=side, sorter=sorter),
                     jnp.searchsorted(jnp.asarray(a), jnp.asarray(v), side=side,
                                      sorter=jnp.asarray(sorter)))
    # Traceable: vmap over queries and over (sorted) arrays.
    sa = np.sort(np.random.default_rng(7).standard_normal((3, 5)), axis=1)
    q = np.array([-0.5, 0.0, 0.5])
    got = fx.vmap(fnp.searchsorted)(fnp.asarray(sa), fnp.asarray(q))
    want = jax.vmap(jnp.searchsorted)(jnp.asarray(sa), jnp.asarray(q))
    _check_index(got, want)


# --- cumulative dtypes, hypothesis over shapes --------------------------------------------------


@pytest.mark.parametrize("fname", ["cumsum", "cumprod"])
def test_cumulative_dtypes(fname):
    ints = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    for arr in (ints, ints.astype(np.uint32), ints.astype(np.float16)):
        assert_allclose(getattr(fnp, fname)(arr, axis=1), getattr(jnp, fname)(arr, axis=1))
    assert_allclose(getattr(fnp, fname)(ints, dtype=np.float64),
                    getattr(jnp, fname)(ints, dtype=np.float64))
    bools = np.array([True, False, True, True])
    got = getattr(fnp, fname)(bools)
    assert_allclose(got, getattr(jnp, fname)(bools))


@given(hnp.arrays(np.float64, shapes(),
                  elements=st.floats(-3, 3) | st.sampled_from([0.0, np.nan, np.inf])),
       st.sampled_from(["cumsum", "cumprod", "diff"]))
def test_cumulative_and_diff_hypothesis(x, fname):
    if fname == "diff" and x.ndim == 0:
        with pytest.raises(ValueError, match="fx.numpy.diff: requires input that is at least"):
            fnp.diff(x)
        return
    kwargs = {} if fname == "diff" else {"axis": None}
    with np.errstate(all="ignore"):
        want = getattr(jnp, fname)(jnp.asarray(x), **kwargs)
    assert_allclose(getattr(fnp, fname)(x, **kwargs), want, rtol=1e-12, atol=1e-12)


def test_cumprod_gradient_with_zeros_matches_jax():
    x = np.array([2.0, 0.0, 3.0, 0.0, -1.5])
    want = jax.jit(jax.jacrev(jnp.cumprod))(jnp.asarray(x))
    assert_allclose(fx.jacrev(fnp.cumprod)(fnp.asarray(x)), want)
    assert_allclose(fx.jacfwd(fnp.cumprod)(fnp.asarray(x)), want)


def test_diff_bool_and_n0():
    b = np.array([True, False, False, True])
    assert_allclose(fnp.diff(b), jnp.diff(jnp.asarray(b)))
    x = np.arange(4.0)
    assert_allclose(fnp.diff(x, n=0), jnp.diff(jnp.asarray(x), n=0))
    assert_allclose(fnp.diff(x, n=6), jnp.diff(jnp.asarray(x), n=6))


# --- array methods and errors -------------------------------------------------------------------


def test_array_methods_forward():
    x = _distinct(np.random.default_rng(8), (3, 4))
    fx_x, j_x = fnp.asarray(x), jnp.asarray(x)
    assert_allclose(fx_x.sort(axis=0), j_x.sort(axis=0))
    _check_index(fx_x.argsort(), j_x.argsort())
    assert_allclose(fx_x.cumsum(1), j_x.cumsum(1))
    assert_allclose(fx_x.cumprod(), j_x.cumprod())


def test_jaxpr_of_sort_functions():
    jaxpr = str(fx.make_jaxpr(lambda v: fnp.argsort(v, descending=True))(fnp.ones((2, 3))))
    assert "sort" in jaxpr and "num_keys=2" in jaxpr


def test_errors():
    x = fnp.ones((2, 3))
    with pytest.raises(ValueError, match=r"fx.numpy.sort: axis 2 is out of bounds .* rank 2"):
        fnp.sort(x, axis=2)
    with pytest.raises(ValueError, match=r"fx.numpy.argsort: axis -1 .* rank-0.*axis=None"):
        fnp.argsort(fnp.asarray(np.float32(1.0)))
    with pytest.raises(NotImplementedError, match=r"fx.numpy.sort: the 'order' argument"):
        fnp.sort(x, order="f0")
    with pytest.raises(ValueError, match=r"fx.numpy.searchsorted: a must be 1-dimensional, got "
                                         r"shape \(2, 3\)"):
        fnp.searchsorted(x, 1.0)
    with pytest.raises(ValueError, match=r"searchsorted: side must be 'left' or 'right'"):
        fnp.searchsorted(fnp.ones(3), 1.0, side="middle")
    with pytest.raises(ValueError, match=r"searchsorted: sorter must be an integer permutation"):
        fnp.searchsorted(fnp.ones(3), 1.0, sorter=fnp.ones(3))
    with pytest.raises(ValueError, match=r"fx.numpy.diff: order must be non-negative, got n=-1"):
        fnp.diff(x, n=-1)
    with pytest.raises(ValueError, match=r"fx.numpy.quantile: method must be one of"):
        fnp.quantile(x, 0.5, method="cubic")
    with pytest.raises(ValueError, match=r"fx.numpy.median: cannot take a quantile over zero"):
        fnp.median(fnp.ones((2, 0)), axis=1)
    with pytest.raises(ValueError, match=r"fx.numpy.lexsort: all keys need the same shape"):
        fnp.lexsort((fnp.ones(3), fnp.ones(4)))
    with pytest.raises(ValueError, match=r"fx.numpy.cumulative_sum: axis must be given"):
        fnp.cumulative_sum(x)
    with pytest.raises(NotImplementedError, match=r"fx.numpy.cumsum: 'out' is not supported"):
        fnp.cumsum(x, out=x)


def test_sort_of_python_data():
    # A list is not an array argument: jax's sort raises TypeError (ensure_arraylike), so does
    # fx's; asarray first.
    with pytest.raises(TypeError):
        jnp.sort([3.0, 1.0, 2.0])
    with pytest.raises(TypeError, match="sort"):
        fnp.sort([3.0, 1.0, 2.0])
    got = fnp.sort(fnp.asarray([3.0, 1.0, 2.0]))
    assert got.dtype == jnp.sort(jnp.asarray([3.0, 1.0, 2.0])).dtype
    np.testing.assert_array_equal(np.asarray(got), [1.0, 2.0, 3.0])
