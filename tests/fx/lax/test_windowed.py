"""Tests of ``reduce_window`` (max, min, sum) against jax.lax, including gradients with ties
(the whole cotangent goes to the first maximal element of each window), padding, strides,
base and window dilation, vmap; and of the pooling and 1-D convolution wrappers in
``fx.numpy.convolutions`` against jax."""

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
from fx.lax import windowed
from fx.numpy import convolutions as fconv

MONOIDS = {"max": (lax.max, jax.lax.max, -np.inf), "min": (lax.min, jax.lax.min, np.inf),
           "sum": (lax.add, jax.lax.add, 0.0)}

# (name, operand shape, window, strides, padding, base dilation, window dilation)
GEOMETRIES = [
    ("1d_valid", (7,), (3,), (1,), "VALID", None, None),
    ("1d_strided_same", (7,), (3,), (2,), "SAME", None, None),
    ("2d_pool_2x2", (4, 6), (2, 2), (2, 2), "VALID", None, None),
    ("2d_same_lower", (5, 4), (2, 3), (2, 1), "SAME_LOWER", None, None),
    ("explicit_negative_padding", (5, 6), (2, 2), (1, 2), [(1, -1), (-1, 2)], None, None),
    ("window_dilation", (6, 7), (2, 3), (1, 2), [(1, 0), (0, 1)], None, (2, 2)),
    ("base_dilation", (4, 3), (3, 2), (2, 1), [(1, 1), (0, 2)], (2, 3), None),
    ("all_options", (3, 5, 4), (2, 2, 1), (1, 2, 2), [(0, 1), (1, 1), (2, 0)], (1, 2, 1),
     (2, 1, 1)),
    ("window_larger_than_input", (2, 2), (3, 3), (1, 1), "VALID", None, None),
    ("nhwc_pool", (2, 5, 4, 3), (1, 3, 3, 1), (1, 2, 2, 1), "SAME", None, None),
    ("empty", (0, 4), (1, 2), (1, 1), "VALID", None, None),
    ("scalar", (), (), (), "VALID", None, None),
]
IDS = [g[0] for g in GEOMETRIES]


def _fns(kind, geometry, init=None):
    _, _, window, strides, padding, bd, wd = geometry
    fx_op, jax_op, identity = MONOIDS[kind]
    init = identity if init is None else init
    return (lambda x: lax.reduce_window(x, init, fx_op, window, strides, padding, bd, wd),
            lambda x: jax.lax.reduce_window(x, init, jax_op, window, strides, padding, bd, wd))


def _case(kind, geometry, dtype=np.float64, ties=False, init=None) -> OpCase:
    fx_fn, jax_fn = _fns(kind, geometry, init)
    shape = geometry[1]

    def args(rng):
        if ties:  # few distinct values: most windows hold several maxima
            return [rng.integers(-2, 3, shape).astype(dtype)]
        return [rng.permutation(np.arange(np.prod(shape))).reshape(shape).astype(dtype) / 4]

    return OpCase(f"{kind}:{geometry[0]}", fx_fn, jax_fn, args)


@pytest.mark.parametrize("kind", ["max", "min", "sum"])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=IDS)
def test_eval_and_gradients_vs_jax(kind, geometry):
    rng = np.random.default_rng(0)
    check_eval(_case(kind, geometry, np.float32), _case(kind, geometry).args(rng))
    case = _case(kind, geometry, ties=True)
    args = case.args(rng)
    check_eval(case, args)
    distinct = _case(kind, geometry)
    if kind == "sum" or geometry[0] not in NO_JAX_CHOOSER_VJP:
        check_vjp(case, args, rng)  # with ties: the first maximal element gets it all
    else:
        _check_vjp_via_jacobian(distinct, rng)
    # With ties jax's jvp may pick another maximal element than its vjp (XLA's reduction
    # order); fx's jvp picks the vjp's (first) one, so the jvp is compared without ties.
    check_jvp(distinct, distinct.args(rng), rng)


# jax cannot take these max/min-pool vjps (window dilation: NotImplementedError; negative
# padding: an invalid slice; rank 0: an XLA abort). fx's are checked against jax's Jacobian.
NO_JAX_CHOOSER_VJP = {"window_dilation", "all_options", "explicit_negative_padding", "scalar"}


def _check_vjp_via_jacobian(case, rng):
    (x,) = case.args(rng)
    jac = np.asarray(jax.jacfwd(case.jax_fn)(x))
    out_ndim = jac.ndim - x.ndim
    ct = rng.standard_normal(jac.shape[:out_ndim])
    got = fx.vjp(case.fx_fn, *to_fx([x]))[1](to_fx(ct))[0]
    want = np.tensordot(ct, jac, axes=out_ndim)
    assert_allclose(got, want, what=f"{case.name} vjp = J^T ct")


@pytest.mark.parametrize("kind,geometry", [
    (kind, g) for g in GEOMETRIES for kind in ("max", "sum")
    if g[0] in ("1d_strided_same", "explicit_negative_padding", "window_dilation")
    or (kind == "sum" and g[0] in ("base_dilation", "all_options"))
], ids=lambda v: v if isinstance(v, str) else v[0])
def test_check_grads_order2(kind, geometry):
    # Distinct values keep the max locally smooth (and windows holding only base-dilation
    # holes give -inf, which finite differences cannot handle: those are checked for sums).
    case = _case(kind, geometry)
    check_grads_f64(case, case.args(np.random.default_rng(1)))


def test_jvp_with_ties_is_the_transposed_vjp():
    geometry = GEOMETRIES[IDS.index("nhwc_pool")]
    fx_fn, _ = _fns("max", geometry)
    rng = np.random.default_rng(12)
    x = rng.integers(-1, 2, geometry[1]).astype(np.float64)
    t = rng.standard_normal(x.shape)
    _, y_dot = fx.jvp(fx_fn, to_fx([x]), to_fx([t]))
    ct = rng.standard_normal(y_dot.shape)
    x_bar = fx.vjp(fx_fn, *to_fx([x]))[1](to_fx(ct))[0]
    np.testing.assert_allclose(np.vdot(ct, y_dot), np.vdot(x_bar, t))


def test_ties_go_to_the_first_maximal_element():
    x = np.array([1.0, 3.0, 3.0, 2.0, 3.0, 3.0, 1.0])
    f = lambda x: lax.reduce_window(x, -np.inf, lax.max, (3,), (1,), "VALID")
    got = fx.vjp(f, *to_fx([x]))[1](to_fx(np.arange(1.0, 6.0)))[0]
    np.testing.assert_array_equal(got, [0, 3, 3, 0, 9, 0, 0])
    # Padding is a candidate too: a window of padding and -inf sends its cotangent nowhere.
    g = lambda x: lax.reduce_window(x, -np.inf, lax.max, (2,), (1,), [(1, 0)])
    x = np.array([-np.inf, -np.inf])
    np.testing.assert_array_equal(fx.vjp(g, *to_fx([x]))[1](to_fx(np.ones(2)))[0], [1, 0])


@pytest.mark.parametrize("kind,init", [("sum", 1.5), ("max", 0.5), ("min", -0.25)])
@pytest.mark.parametrize("geometry", [GEOMETRIES[i] for i in (1, 5, 6)], ids=lambda g: g[0])
def test_non_identity_init_values(kind, init, geometry):
    # The init value enters each window's result once; padding and holes do not count.
    case = _case(kind, geometry, init=init)
    check_eval(case, case.args(np.random.default_rng(3)))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.float16, "bfloat16"])
@pytest.mark.parametrize("kind", ["max", "min", "sum"])
def test_dtypes(dtype, kind):
    geometry = GEOMETRIES[IDS.index("base_dilation")]
    x = np.random.default_rng(4).integers(0, 9, geometry[1]).astype(dtype)
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    init = 0 if kind == "sum" else (info.min if kind == "max" else info.max) if info else None
    init = None if init is None else np.asarray(init, dtype)[()]  # jax wants a typed scalar
    fx_fn, jax_fn = _fns(kind, geometry, init)
    assert_allclose(fx_fn(*to_fx([x])), jax_fn(x), what=f"{kind} {dtype}")


def test_bool_max_and_min():
    x = np.random.default_rng(5).random((4, 5)) < 0.3
    for kind, op, jop, init in (("max", lax.max, jax.lax.max, False),
                                ("min", lax.min, jax.lax.min, True)):
        got = lax.reduce_window(*to_fx([x]), init, op, (2, 2), (1, 2), "SAME")
        assert_allclose(got, jax.lax.reduce_window(x, init, jop, (2, 2), (1, 2), "SAME"),
                        what=kind)


@pytest.mark.parametrize("kind", ["max", "sum"])
@pytest.mark.parametrize("geometry", [GEOMETRIES[i] for i in (2, 6, 7)], ids=lambda g: g[0])
def test_vmap(kind, geometry):
    case = _case(kind, geometry, ties=True)
    rng = np.random.default_rng(6)
    for axis in range(len(geometry[1]) + 1):
        shape = list(geometry[1])
        shape.insert(axis, 3)
        check_vmap(case, [rng.integers(-2, 3, shape).astype(np.float64)], (axis,))


def test_vmap_of_max_pool_gradient_with_unbatched_operand_reads():
    # grad under vmap batches select_and_scatter_add with its operand and cotangent.
    rng = np.random.default_rng(7)
    xs = rng.integers(-2, 3, (3, 4, 5)).astype(np.float64)

    def loss(m, x):
        y = m.lax.reduce_window(x, -np.inf, m.lax.max, (2, 2), (1, 2), "SAME")
        return (y * y).sum()

    got = fx.vmap(fx.grad(lambda x: loss(fx, x)))(*to_fx([xs]))
    assert_allclose(got, jax.vmap(jax.grad(lambda x: loss(jax, x)))(xs), what="vmap(grad)")
    x = rng.permutation(20).reshape(4, 5).astype(np.float64)  # no ties (see the jvp test)
    hess = fx.jacfwd(fx.grad(lambda x: loss(fx, x)))(*to_fx([x]))
    assert_allclose(hess, jax.jacfwd(jax.grad(lambda x: loss(jax, x)))(x), what="hessian")


def test_jit():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 6, 6, 3))
    f = lambda m, x: m.lax.reduce_window(x, -np.inf, m.lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                                         "SAME")
    assert_allclose(fx.jit(lambda x: f(fx, x))(*to_fx([x])), f(jax, x), what="jit")
    g = fx.jit(fx.grad(lambda x: f(fx, x).sum()))(*to_fx([x]))
    assert_allclose(g, jax.grad(lambda x: f(jax, x).sum())(x), what="jit(grad)")


@given(st.integers(1, 3).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 5), min_size=n, max_size=n),
    st.lists(st.integers(1, 3), min_size=n, max_size=n),
    st.lists(st.integers(1, 2), min_size=n, max_size=n),
    st.lists(st.tuples(st.integers(-1, 2), st.integers(-1, 2)), min_size=n, max_size=n),
    st.lists(st.integers(1, 2), min_size=n, max_size=n),
    st.lists(st.integers(1, 2), min_size=n, max_size=n))), st.integers(0, 2**32 - 1))
def test_random_geometry_against_numpy_loops(params, seed):
    # A direct loop over windows is the oracle here (jax would compile every shape).
    shape, window, strides, padding, bd, wd = map(tuple, params)
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, shape).astype(np.float64)
    for kind in ("max", "sum"):
        got = lax.reduce_window(*to_fx([x]), MONOIDS[kind][2], MONOIDS[kind][0], window,
                                strides, padding, bd, wd)
        np.testing.assert_array_equal(got, _loop_reference(x, kind, window, strides, padding,
                                                           bd, wd))


def _loop_reference(x, kind, window, strides, padding, bd, wd):
    full = np.full([lo + (max(n - 1, 0) * b + 1 if n else 0) + hi
                    for n, b, (lo, hi) in zip(x.shape, bd, padding)], np.nan)
    full = np.full([max(s, 0) for s in full.shape], np.nan)
    for idx in np.ndindex(*x.shape):
        pos = tuple(lo + i * b for i, b, (lo, _) in zip(idx, bd, padding))
        if all(0 <= p < s for p, s in zip(pos, full.shape)):
            full[pos] = x[idx]
    out_shape = [0 if s < (w - 1) * r + 1 else (s - (w - 1) * r - 1) // st + 1
                 for s, w, r, st in zip(full.shape, window, wd, strides)]
    out = np.empty(out_shape)
    for o in np.ndindex(*out_shape):
        vals = [full[tuple(oi * st + k * r for oi, st, k, r in zip(o, strides, ks, wd))]
                for ks in np.ndindex(*window)]
        vals = [v for v in vals if not np.isnan(v)]
        out[o] = (max(vals, default=-np.inf) if kind == "max" else sum(vals))
    return out


def test_select_and_scatter_add_is_the_transpose_of_gather():
    rng = np.random.default_rng(9)
    x = rng.integers(-2, 3, (5, 4)).astype(np.float64)
    params = dict(window_dimensions=(2, 3), window_strides=(2, 1), padding=((1, 0), (1, 1)),
                  base_dilation=(1, 2), window_dilation=(2, 1))
    t = rng.standard_normal(x.shape)
    gathered = windowed.select_and_gather_add(*to_fx([t, x]), "max", **params)
    ct = rng.standard_normal(gathered.shape)
    scattered = windowed.select_and_scatter_add(*to_fx([ct, x]), "max", **params)
    np.testing.assert_allclose(np.vdot(np.asarray(gathered), ct), np.vdot(t, scattered))


# --- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("call,exc,match", [
    (lambda x: lax.reduce_window(x, 1.0, lax.mul, (2,), (1,), "VALID"), NotImplementedError,
     r"only computation=fx.lax.add, fx.lax.max or fx.lax.min"),
    (lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1,), "VALID"), ValueError,
     r"window_dimensions \(2, 2\) needs one entry per operand dimension \(1\)"),
    (lambda x: lax.reduce_window(x, 0.0, lax.add, (0,), (1,), "VALID"), TypeError,
     r"reduce_window_sum: window_dimensions \(0,\) must be positive \(got f32\[5\]\)"),
    (lambda x: lax.reduce_window(x, 0.0, lax.add, (2,), (0,), "VALID"), TypeError,
     r"window_strides \(0,\) must be positive"),
    (lambda x: lax.reduce_window(x, 0.0, lax.add, (2,), (1,), "FULL"), ValueError,
     r"padding must be 'VALID', 'SAME', 'SAME_LOWER'"),
    (lambda x: lax.reduce_window(x, np.float64(1.0), lax.add, (2,), (1,), "VALID"), TypeError,
     r"init_value of dtype float64 does not match the operand's f32\[5\]"),
    (lambda x: lax.reduce_window(x > 0, False, lax.add, (2,), (1,), "VALID"), TypeError,
     r"reduce_window_sum: requires numeric \(not bool\) operands"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call(fx.numpy.ones(5, np.float32))


def _doctest(module, n):
    import doctest

    result = doctest.testmod(module, extraglobs={"fx": fx},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= n and result.failed == 0, module.__name__


def test_docstring_examples():
    _doctest(windowed, 2)


@pytest.mark.xfail(not hasattr(fx.numpy, "max_pool"), strict=True,
                   reason="the examples use fx.numpy.max_pool & co., exported once fx.numpy "
                          "star-imports fx.numpy.convolutions")
def test_numpy_docstring_examples():
    _doctest(fconv, 4)


# --- pooling and 1-D convolutions (fx.numpy.convolutions) -----------------------------------------


def _pool_reference(x, kind, window, strides, padding, channels_last, count_include_pad=True):
    nsp = len(window)
    batched = x.ndim == nsp + 2
    xb = x if batched else x[None]
    first = 1 if channels_last else 2
    dims, steps = [1] * xb.ndim, [1] * xb.ndim
    dims[first:first + nsp], steps[first:first + nsp] = window, strides or (1,) * nsp
    pads = padding
    if not isinstance(padding, str):
        pads = [(0, 0)] * xb.ndim
        pads[first:first + nsp] = padding
    if kind == "max":
        out = jax.lax.reduce_window(xb, -jnp.inf, jax.lax.max, dims, steps, pads)
    else:
        out = jax.lax.reduce_window(xb, 0.0, jax.lax.add, dims, steps, pads)
        if count_include_pad:
            out = out / np.prod(window)
        else:
            out = out / jax.lax.reduce_window(jnp.ones_like(xb), 0.0, jax.lax.add, dims, steps,
                                              pads)
    return out if batched else out[0]


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("shape,window,strides,padding,channels_last", [
    ((2, 6, 5, 3), (2, 2), (2, 2), "VALID", True),
    ((2, 3, 6, 5), (3, 3), (2, 1), "SAME", False),
    ((6, 5, 3), (2, 3), None, [(1, 0), (1, 1)], True),
    ((2, 7, 2), (3,), (2,), "SAME", True),
])
def test_pooling(kind, shape, window, strides, padding, channels_last):
    rng = np.random.default_rng(10)
    x = rng.integers(-2, 3, shape).astype(np.float64)  # ties
    pool = fconv.max_pool if kind == "max" else fconv.avg_pool
    f = lambda x: pool(x, window, strides, padding, channels_last=channels_last)
    ref = lambda x: _pool_reference(x, kind, window, strides, padding, channels_last)
    assert_allclose(f(*to_fx([x])), ref(x), what="eval")
    ct = rng.standard_normal(np.shape(ref(x)))
    assert_allclose(fx.vjp(f, *to_fx([x]))[1](to_fx(ct)), jax.vjp(ref, x)[1](ct), what="vjp")


def test_avg_pool_without_padding_in_the_count_and_of_integers():
    x = np.arange(30).reshape(1, 5, 6, 1)
    got = fconv.avg_pool(*to_fx([x]), (3, 3), (2, 2), "SAME", count_include_pad=False)
    want = _pool_reference(x.astype(np.float32), "avg", (3, 3), (2, 2), "SAME", True,
                           count_include_pad=False)
    assert_allclose(got, want, what="count_include_pad=False (int64 input promoted)",
                    check_dtype=False)
    assert got.dtype == np.float64


def test_pooling_errors():
    with pytest.raises(ValueError, match=r"max_pool: a 2-D window needs inputs of shape"):
        fconv.max_pool(fx.numpy.ones((4,)), (2, 2))
    with pytest.raises(ValueError, match=r"avg_pool: strides \(1,\) need one entry per window"):
        fconv.avg_pool(fx.numpy.ones((1, 4, 4, 1)), (2, 2), (1,))


@pytest.mark.parametrize("fn", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("na,nv", [(6, 3), (3, 6), (5, 4), (1, 1)])
def test_convolve_and_correlate(fn, mode, na, nv):
    rng = np.random.default_rng(11)
    a, v = rng.standard_normal(na), rng.standard_normal(nv)
    case = OpCase(fn, lambda a, v: getattr(fconv, fn)(a, v, mode),
                  lambda a, v: getattr(jnp, fn)(a, v, mode), lambda r: [a, v],
                  diff_argnums=(0, 1))
    check_eval(case, [a, v])
    check_vjp(case, [a, v], rng)


def test_convolve_dtypes_and_errors():
    a, v = np.arange(5, dtype=np.int32), np.array([1, 2], np.int32)
    assert_allclose(fconv.convolve(*to_fx([a, v])), jnp.convolve(a, v), what="ints -> float")
    assert_allclose(fconv.correlate(*to_fx([a, v]), "full", preferred_element_type=np.int32),
                    jnp.correlate(a, v, "full", preferred_element_type=np.int32),
                    what="preferred_element_type keeps integers")
    with pytest.raises(ValueError, match=r"convolve: only 1-D inputs"):
        fconv.convolve(fx.numpy.ones((2, 2)), fx.numpy.ones(2))
    with pytest.raises(ValueError, match=r"correlate: inputs cannot be empty"):
        fconv.correlate(fx.numpy.ones(0), fx.numpy.ones(2))
    with pytest.raises(ValueError, match=r"mode must be 'full', 'same' or 'valid'"):
        fconv.convolve(fx.numpy.ones(3), fx.numpy.ones(2), "circular")
