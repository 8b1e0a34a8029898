"""Tests of the gather/scatter primitives against jax.lax.gather / jax.lax.scatter*.

Our ``(indices, axes)`` convention is XLA's gather/scatter with every indexed dimension
collapsed, so the oracle is jax.lax with the matching dimension numbers.
"""

from __future__ import annotations

import itertools

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
import fx.numpy as fnp
from fx.lax.indexing import gather_p

# --- the jax oracle ------------------------------------------------------------------------------


def _rest(ndim, axes):
    return tuple(d for d in range(ndim) if d not in axes)


def jax_gather(x, idx, axes, mode="fill", fill_value=None):
    nb = idx.ndim - 1
    rest = _rest(x.ndim, axes)
    dn = jax.lax.GatherDimensionNumbers(
        offset_dims=tuple(range(nb, nb + len(rest))), collapsed_slice_dims=tuple(sorted(axes)),
        start_index_map=tuple(axes),
    )
    sizes = tuple(1 if d in axes else x.shape[d] for d in range(x.ndim))
    return jax.lax.gather(x, idx, dn, sizes, mode=mode, fill_value=fill_value)


JAX_SCATTERS = {
    "scatter": jax.lax.scatter, "scatter_add": jax.lax.scatter_add,
    "scatter_mul": jax.lax.scatter_mul, "scatter_min": jax.lax.scatter_min,
    "scatter_max": jax.lax.scatter_max,
}


def jax_scatter(name, x, idx, upd, axes, mode="drop", unique_indices=False):
    nb = idx.ndim - 1
    rest = _rest(x.ndim, axes)
    dn = jax.lax.ScatterDimensionNumbers(
        update_window_dims=tuple(range(nb, nb + len(rest))),
        inserted_window_dims=tuple(sorted(axes)), scatter_dims_to_operand_dims=tuple(axes),
    )
    return JAX_SCATTERS[name](x, idx, upd, dn, mode=mode, unique_indices=unique_indices)


def _updates_shape(shape, idx, axes):
    return np.shape(idx)[:-1] + tuple(shape[d] for d in _rest(len(shape), axes))


# --- tables -------------------------------------------------------------------------------------

I64 = np.int64
# (operand shape, axes, indices); out-of-range and negative rows exercise the modes.
GATHERS = [
    ("vector", (5,), (0,), np.array([[1], [4], [0]], I64)),
    ("rows_dup", (3, 4), (0,), np.array([[2], [0], [2]], I64)),
    ("cols", (3, 4), (1,), np.array([[3], [0]], np.int32)),
    ("points_unsorted_axes", (3, 4), (1, 0), np.array([[1, 2], [0, 0], [3, 1]], I64)),
    ("batch2d", (2, 3, 4), (2, 0), np.array([[[1, 0], [3, 1]], [[0, 1], [2, 0]]], I64)),
    ("middle_axis", (2, 3, 4), (1,), np.array([[2], [1]], np.uint32)),
    ("scalar_index", (3, 4), (0,), np.array([1], I64)),
    ("empty_batch", (3, 4), (0,), np.zeros((0, 1), I64)),
    ("zero_size_rest", (3, 0), (0,), np.array([[1], [2]], I64)),
    ("no_axes", (3, 2), (), np.zeros((2, 0), I64)),
    ("oob", (4, 3), (0,), np.array([[5], [-1], [3], [-7], [0]], I64)),
    ("oob_points", (3, 4), (0, 1), np.array([[1, 4], [2, 3], [-1, 0], [3, 3]], I64)),
]
MODES = ["clip", "fill", "promise_in_bounds"]
# Out-of-range indices under "promise_in_bounds" break the promise. fx then does what jax (XLA
# on CPU) does, values and derivatives compared with jax: a gather clamps and its transpose
# drops, a scatter drops and its transpose reads back clamped. Its vjp is then not the adjoint
# of its jvp (jax's is not either), so those rows skip the finite-difference check.


def _sum(x):
    return lax.reduce_sum(x, tuple(range(x.ndim)))


def _x(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _gather_case(name, shape, axes, idx, mode, fill_value=None):
    return OpCase(
        name=f"gather_{name}_{mode}",
        fx_fn=lambda x, i: lax.gather(x, i, axes, mode=mode, fill_value=fill_value),
        jax_fn=lambda x, i: jax_gather(x, i, axes, mode, fill_value),
        args=lambda rng: [_x(shape, seed=int(rng.integers(100))), idx],
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name,shape,axes,idx", GATHERS, ids=[g[0] for g in GATHERS])
def test_gather(name, shape, axes, idx, mode):
    rng = np.random.default_rng(0)
    case = _gather_case(name, shape, axes, idx, mode)
    args = case.args(rng)
    check_eval(case, args)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)
    if name.startswith("oob") and mode == "promise_in_bounds":
        return  # a broken promise (see the note above MODES)
    # Finite differences of a NaN fill are NaN; the derivative there is zero.
    check_grads_f64(_gather_case(name, shape, axes, idx, mode, fill_value=0.0), args)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.bool_, np.float32,
                                   np.float16])
def test_gather_fill_defaults_by_dtype(dtype):
    x = (np.arange(6).reshape(3, 2) % 2).astype(dtype)
    idx = np.array([[1], [3], [-1]], I64)
    case = _gather_case("dtype", (3, 2), (0,), idx, "fill")
    check_eval(case, [x, idx])
    got = lax.gather(fnp.asarray(x), fnp.asarray(idx), (0,), mode="fill", fill_value=7)
    assert_allclose(got, jax_gather(jnp.asarray(x), jnp.asarray(idx), (0,), "fill", 7))


def test_gather_keeps_weak_type():
    x = lax.full((3,), 1.0, np.float32, weak_type=True)
    out = lax.gather(x, fnp.asarray(np.array([[0]], I64)), (0,), mode="clip")
    assert out.weak_type and out.dtype == np.float32


# --- scatters -----------------------------------------------------------------------------------

SCATTERS = [
    ("vector", (5,), (0,), np.array([[1], [4], [0]], I64)),
    ("rows_dup", (3, 4), (0,), np.array([[2], [0], [2], [2]], I64)),
    ("points_unsorted_axes", (3, 4), (1, 0), np.array([[1, 2], [0, 0], [1, 2]], I64)),
    ("batch2d", (2, 3, 4), (2, 0), np.array([[[1, 0], [3, 1]], [[0, 1], [3, 1]]], I64)),
    ("scalar_index", (3, 4), (1,), np.array([2], np.int32)),
    ("empty_batch", (3, 4), (0,), np.zeros((0, 1), I64)),
    ("no_axes", (3, 2), (), np.zeros((2, 0), I64)),
    ("oob", (4, 3), (0,), np.array([[5], [-1], [3], [-7], [0], [3]], I64)),
]
UNIQUE = ("vector", "scalar_index", "empty_batch")  # no position is hit twice


def _scatter_case(kind, name, shape, axes, idx, mode, unique=False, seed=0):
    ushape = _updates_shape(shape, idx, axes)
    return OpCase(
        name=f"{kind}_{name}_{mode}",
        fx_fn=lambda x, i, u: getattr(lax, kind)(x, i, u, axes, mode=mode),
        jax_fn=lambda x, i, u: jax_scatter(kind, x, i, u, axes, mode, unique),
        args=lambda rng: [_x(shape, seed=seed), idx, _x(ushape, seed=seed + 1)],
        diff_argnums=(0, 2),
    )


@pytest.mark.parametrize("mode", ["clip", "drop", "promise_in_bounds"])
@pytest.mark.parametrize("kind", ["scatter_add", "scatter"])
@pytest.mark.parametrize("name,shape,axes,idx", SCATTERS, ids=[s[0] for s in SCATTERS])
def test_scatter_add_and_set(kind, name, shape, axes, idx, mode):
    rng = np.random.default_rng(0)
    case = _scatter_case(kind, name, shape, axes, idx, mode)
    args = case.args(rng)
    check_eval(case, args)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)
    if name == "oob" and mode == "promise_in_bounds":
        return  # a broken promise (see the note above MODES)
    case.grad_order = 2 if mode == "drop" else 1  # second order once per case is enough
    check_grads_f64(case, args)


def test_scatter_set_last_write_wins():
    x = fnp.zeros(3, np.float64)
    idx = fnp.asarray(np.array([[1], [1], [0], [1]], I64))
    u = fnp.asarray(np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(np.asarray(lax.scatter(x, idx, u, (0,))), [3.0, 4.0, 0.0])
    # Only the winning update receives a gradient; the overwritten operand entries none.
    gx, gu = fx.grad(lambda x, u: _sum(lax.scatter(x, idx, u, (0,)) * fnp.asarray(
        np.array([10.0, 20.0, 30.0]))), argnums=(0, 1))(x, u)
    np.testing.assert_array_equal(np.asarray(gx), [0.0, 0.0, 30.0])
    np.testing.assert_array_equal(np.asarray(gu), [0.0, 0.0, 10.0, 20.0])


@pytest.mark.parametrize("mode", ["clip", "drop"])
@pytest.mark.parametrize("kind", ["scatter_mul", "scatter_min", "scatter_max"])
@pytest.mark.parametrize("name,shape,axes,idx", SCATTERS, ids=[s[0] for s in SCATTERS])
def test_scatter_combining(kind, name, shape, axes, idx, mode):
    rng = np.random.default_rng(0)
    case = _scatter_case(kind, name, shape, axes, idx, mode)
    args = case.args(rng)
    check_eval(case, args)
    # jax's scatter_min/max jvp reads positions back in fill mode even under mode='clip' and
    # gives inf there; only finite differences (below) check ours on that case.
    jax_ok = kind == "scatter_mul" or mode != "clip" or name != "oob"
    if kind == "scatter_mul":
        if name in UNIQUE:
            case = _scatter_case(kind, name, shape, axes, idx, mode, unique=True)
        else:
            # jax differentiates scatter_mul in its updates only for unique indices: compare
            # the operand derivative with jax; finite differences check the rest below.
            case.diff_argnums = (0,)
    if jax_ok:
        check_jvp(case, args, rng)
        check_vjp(case, args, rng)
    case.diff_argnums = (0, 2)
    case.grad_order = 2 if mode == "drop" else 1  # second order once per case is enough
    check_grads_f64(case, args)


def test_scatter_mul_grad_with_repeated_and_zero_updates():
    # d/du of x * u0 * u1 * u2 at one position, with zeros among the factors. First derivatives
    # are exact everywhere; higher ones only away from zero updates (see fx.lax.indexing).
    x = fnp.asarray(np.array([2.0, 3.0]))
    idx = fnp.asarray(np.array([[0], [0], [0], [1]], I64))
    f = lambda u: lax.scatter_mul(x, idx, u, (0,))  # noqa: E731
    for u, order in (([1.5, 0.0, 4.0, 5.0], 1), ([0.0, 0.0, 2.0, 0.0], 1),
                     ([1.5, -2.0, 4.0, 0.5], 2)):
        u = np.asarray(u)
        g = fx.grad(lambda u: _sum(f(u)))(fnp.asarray(u))
        want = [2.0 * u[1] * u[2], 2.0 * u[0] * u[2], 2.0 * u[0] * u[1], 3.0]
        np.testing.assert_allclose(np.asarray(g), want)
        check_grads_f64(OpCase("mul", f, None, None, grad_order=order), [u])


@pytest.mark.parametrize("kind", ["scatter_min", "scatter_max"])
def test_scatter_extremal_ties_split_like_jax(kind):
    x = np.array([1.0, 2.0, 3.0])
    idx = np.array([[0], [0], [1], [2], [2]], I64)
    u = np.array([1.0, 1.0, 0.5, 3.0, 7.0]) if kind == "scatter_max" else np.array(
        [1.0, 1.0, 5.0, 3.0, -1.0])
    case = _scatter_case(kind, "ties", (3,), (0,), idx, "drop")
    check_eval(case, [x, idx, u])
    check_jvp(case, [x, idx, u], np.random.default_rng(0))
    check_vjp(case, [x, idx, u], np.random.default_rng(1))


def test_scatter_bool_and_int_dtypes():
    idx = np.array([[0], [2], [0]], I64)
    for kind, dtype in [("scatter", np.bool_), ("scatter_max", np.bool_),
                        ("scatter_add", np.int32), ("scatter_mul", np.uint32),
                        ("scatter_min", np.int64), ("scatter_add", np.float16)]:
        x = (np.arange(3) % 2).astype(dtype)
        u = np.array([1, 1, 3]).astype(dtype)
        got = getattr(lax, kind)(*to_fx([x, idx, u]), (0,))
        assert_allclose(got, jax_scatter(kind, jnp.asarray(x), jnp.asarray(idx),
                                         jnp.asarray(u), (0,)), what=f"{kind} {dtype}")


# --- batching -----------------------------------------------------------------------------------

B = 3


def _batched(a, ax):
    """``a`` stacked B times along ``ax`` with different contents (None: unbatched)."""
    if ax is None:
        return a
    rows = [a + i if a.dtype.kind == "f" else (a + i) % 4 - (i == 2) for i in range(B)]
    return np.stack(rows, axis=ax)


GATHER_VMAP = [(0, None), (None, 0), (0, 0), (1, 1), (2, None), (None, 2), (1, 2)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("in_axes", GATHER_VMAP, ids=str)
def test_gather_vmap(in_axes, mode):
    x, idx = _x((3, 4)), np.array([[1, 2], [0, 3]], I64)
    case = _gather_case("vmap", (3, 4), (1, 0), idx, mode)
    check_vmap(case, [_batched(x, in_axes[0]), _batched(idx, in_axes[1])], in_axes)


SCATTER_VMAP = [d for d in itertools.product([0, None], repeat=3) if d != (None,) * 3] + [
    (1, 2, 1), (1, None, 0), (None, 1, 1)]


@pytest.mark.parametrize("kind", ["scatter_add", "scatter", "scatter_max"])
@pytest.mark.parametrize("in_axes", SCATTER_VMAP, ids=str)
def test_scatter_vmap(kind, in_axes):
    idx = np.array([[1, 2], [0, 3], [1, 2]], I64)
    case = _scatter_case(kind, "vmap", (3, 4), (1, 0), idx, "drop")
    x, _, u = case.args(None)
    check_vmap(case, [_batched(x, in_axes[0]), _batched(idx, in_axes[1]),
                      _batched(u, in_axes[2])], in_axes)


def test_vmap_of_grad_of_gather():
    idx = fnp.asarray(np.array([[2], [0], [2]], I64))
    f = lambda x: _sum(fnp.sin(lax.gather(x, idx, (0,), mode="clip")))  # noqa: E731
    xs = _x((2, 3, 4))
    got = fx.vmap(fx.grad(f))(fnp.asarray(xs))
    jidx = jnp.asarray(np.asarray(idx))
    want = jax.vmap(jax.grad(lambda x: jnp.sum(jnp.sin(jax_gather(x, jidx, (0,), "clip")))))(xs)
    assert_allclose(got, want)


# --- hypothesis: random shapes, axes and indices ------------------------------------------------


@st.composite
def _gather_problems(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    axes = tuple(draw(st.permutations(range(len(shape))))[: draw(st.integers(1, len(shape)))])
    batch = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    idx = draw(st.lists(st.integers(-2, 5), min_size=int(np.prod(batch)) * len(axes),
                        max_size=int(np.prod(batch)) * len(axes)))
    return shape, axes, np.asarray(idx, I64).reshape(batch + (len(axes),))


@given(_gather_problems(), st.sampled_from(MODES))
def test_gather_and_scatter_add_random(problem, mode):
    shape, axes, idx = problem
    x = _x(shape)
    got = lax.gather(fnp.asarray(x), fnp.asarray(idx), axes, mode=mode)
    assert_allclose(got, jax_gather(jnp.asarray(x), jnp.asarray(idx), axes, mode))
    u = _x(_updates_shape(shape, idx, axes), seed=1)
    smode = "clip" if mode == "clip" else "drop"
    got = lax.scatter_add(*to_fx([x, idx, u]), axes, mode=smode)
    assert_allclose(got, jax_scatter("scatter_add", *map(jnp.asarray, (x, idx, u)), axes, smode))


# --- jaxprs and errors --------------------------------------------------------------------------


def test_jaxpr_shows_axes_and_mode():
    idx = fnp.asarray(np.array([[1]], I64))
    text = str(fx.make_jaxpr(lambda x: lax.gather(x, idx, (0,), mode="clip"))(fnp.zeros(3)))
    assert "gather[axes=(0,) fill_value=None mode=clip]" in text
    text = str(fx.make_jaxpr(lambda x: lax.scatter_add(x, idx, fnp.ones(1), (0,)))(fnp.zeros(3)))
    assert "scatter_add[axes=(0,) mode=fill_or_drop]" in text


def test_grad_of_gather_is_scatter_add():
    idx = fnp.asarray(np.array([[1], [1]], I64))
    jaxpr = fx.make_jaxpr(fx.grad(lambda x: _sum(lax.gather(x, idx, (0,)))))(fnp.zeros(3))
    assert "scatter_add" in str(jaxpr)


@pytest.mark.default_mode  # the messages name the default mode's float32
def test_errors():
    x = fnp.zeros((3, 4))
    i = fnp.asarray(np.array([[1]], I64))
    with pytest.raises(TypeError, match=r"gather: indices must have an integer dtype.*f32\[1,1\]"):
        lax.gather(x, fnp.zeros((1, 1)), (0,))
    with pytest.raises(TypeError, match=r"gather: indices must have shape batch \+ \(2,\)"):
        lax.gather(x, i, (0, 1))
    with pytest.raises(TypeError, match=r"gather: axes=\(0, 0\) must be distinct"):
        lax.gather(x, fnp.asarray(np.array([[1, 1]], I64)), (0, 0))
    with pytest.raises(TypeError, match=r"gather: cannot clamp an index into a zero-size"):
        lax.gather(fnp.zeros((0, 2)), i, (0,), mode="clip")
    with pytest.raises(ValueError, match=r"unknown gather/scatter mode 'wrap'"):
        lax.gather(x, i, (0,), mode="wrap")
    with pytest.raises(ValueError, match=r"gather: mode must be GatherScatterMode.CLIP or "
                                         r"FILL_OR_DROP, got 'clip'"):
        gather_p.bind(x, i, axes=(0,), mode="clip", fill_value=None)
    with pytest.raises(TypeError, match=r"scatter_add: updates must have shape .* = \(1, 4\)"):
        lax.scatter_add(x, i, fnp.zeros((1, 3)), (0,))
    with pytest.raises(TypeError, match=r"scatter: updates must have the operand's dtype"):
        lax.scatter(x, i, fnp.zeros((1, 4), np.int32), (0,))
    with pytest.raises(TypeError, match=r"scatter_add: does not accept bool"):
        lax.scatter_add(fnp.zeros(3, bool), i, fnp.zeros(1, bool), (0,))
