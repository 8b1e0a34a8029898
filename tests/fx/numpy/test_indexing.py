"""Tests of NumPy indexing (``x[idx]``, ``x.at[idx]``, take, take_along_axis, nonzero) against
jax.numpy and NumPy: values, jvp/vjp (the vjp of indexing is a scatter-add, so repeated indices
accumulate), vmap over the array and/or the indices, out-of-range behaviour, the primitives the
jaxprs use, and error messages (nonzero/argwhere: test_compaction.py)."""

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
import fx.numpy as fnp
from fx.interpreters.eval import eval_jaxpr

s_ = np.s_


def _x(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _for_jax(idx):
    """jax wants arrays where NumPy (and fx) also take lists."""
    items = idx if isinstance(idx, tuple) else (idx,)
    out = tuple(np.asarray(i, dtype=np.int64 if i == [] else None) if isinstance(i, list)
                else i for i in items)
    return out if isinstance(idx, tuple) else out[0]


def _prims(f, *args) -> set[str]:
    return {eqn.primitive.name for eqn in fx.make_jaxpr(f)(*args).jaxpr.eqns}


# --- basic indexing: hypothesis against NumPy, and never a gather ---------------------------------


@st.composite
def _basic_problems(draw):
    shape = tuple(draw(st.lists(st.integers(0, 5), max_size=4)))
    per_dim = []  # the index entries for each dimension (a None may precede one)
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice"] if n else ["slice"]))
        if kind == "int":
            e = draw(st.integers(-n, n - 1))
        else:
            bound = st.none() | st.integers(-n - 2, n + 2)
            e = slice(draw(bound), draw(bound), draw(st.none() | st.integers(-3, 3).filter(bool)))
        per_dim.append(([None] if draw(st.integers(0, 3)) == 0 else []) + [e])
    # Dimensions [a, b) are left to an Ellipsis (or, without one, the trailing ones implicit).
    a = draw(st.integers(0, len(shape)))
    b = draw(st.integers(a, len(shape)))
    ellipsis = draw(st.booleans())
    tail = [Ellipsis] + [e for es in per_dim[b:] for e in es] if ellipsis else []
    trailing_new = [None] if draw(st.booleans()) else []
    return shape, tuple([e for es in per_dim[:a] for e in es] + tail + trailing_new)


@given(_basic_problems())
def test_basic_indexing_matches_numpy_and_uses_no_gather(problem):
    shape, idx = problem
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    got = fnp.asarray(x)[idx]
    want = x[idx]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)
    used = _prims(lambda a: a[idx], fnp.asarray(x))
    assert used <= {"slice", "rev", "squeeze", "broadcast_in_dim"}, used


def test_jaxpr_of_basic_indexing():
    text = str(fx.make_jaxpr(lambda x: x[1:3, None, ::2])(fnp.zeros((4, 5))))
    assert "slice[limit_indices=(3, 5) start_indices=(1, 0) strides=(1, 2)]" in text
    assert "broadcast_in_dim[broadcast_dimensions=(0, 2) shape=(2, 1, 3)]" in text
    assert "gather" not in text
    assert _prims(lambda x: x[1, ::-1], fnp.zeros((4, 5))) == {"slice", "rev", "squeeze"}
    # A traced scalar index is a dynamic_slice (plus jax's wrapping of negative indices).
    assert "dynamic_slice" in _prims(lambda x, i: x[i], fnp.zeros((4, 5)), 1)
    assert "gather" not in _prims(lambda x, i: x[i, 1:], fnp.zeros((4, 5)), 1)


def test_static_int_out_of_range_clamps_like_jax():
    x = np.arange(3.0)
    for i in (3, 10, -4, -10):
        assert_allclose(fnp.asarray(x)[i], jnp.asarray(x)[i])
    with pytest.raises(IndexError, match="index 0 is out of bounds for axis 0 with size 0"):
        fnp.zeros(0)[0]


# --- advanced indexing: a table against jax, with derivatives -------------------------------------

X_SHAPE = (3, 4, 5)
ADVANCED = [
    s_[[0, 2]],
    s_[[2, 0, 2]],  # repeated: the vjp accumulates
    s_[np.array([[0, 1], [2, 2]])],
    s_[[-1, -3]],
    s_[:, [3, 0, 3]],
    s_[..., [4, 1]],
    s_[[0, 1], [1, 2]],
    s_[[0, 1], :, [1, 2]],  # separated: the advanced dims go first
    s_[:, [0, 1], [1, 2]],  # adjacent: they stay in place
    s_[1, :, [0, 4]],  # an int among arrays is advanced: separated
    s_[:, 1, [0, 4]],  # ... adjacent
    s_[[0, 1], None, [0, 1]],  # None separates advanced indices
    s_[None, [0, 2], ..., 1],
    s_[np.array([[0], [2]]), 1:, np.array([1, 3, 4])],  # broadcast index arrays
    s_[[1, 0], ::-2, -1:0:-2],
    s_[np.array([[True, False, True, False]] * 3)],  # a concrete mask (2-d)
    s_[[True, False, True], 2],
    s_[:, True, [1, 0]],
    s_[[]],
    s_[np.zeros((0, 2), np.int64)],
    s_[np.array(1), :, [0, 1]],
    s_[[5, -7]],  # out of range: clamped, as in jax
]


def _getitem_case(idx):
    return OpCase(f"x[{idx}]", lambda x: x[idx], lambda x: x[_for_jax(idx)],
                  lambda rng: [_x(X_SHAPE, seed=int(rng.integers(10)))])


@pytest.mark.parametrize("idx", ADVANCED, ids=[str(i) for i in range(len(ADVANCED))])
def test_advanced_indexing(idx):
    rng = np.random.default_rng(0)
    case = _getitem_case(idx)
    args = case.args(rng)
    check_eval(case, args)
    if jnp.asarray(args[0])[_for_jax(idx)].size:
        check_jvp(case, args, rng)
        if idx is not ADVANCED[-1]:
            check_vjp(case, args, rng)
    if idx is ADVANCED[-1]:
        # Deliberate difference: jax reads clamped positions but transposes to a scatter that
        # drops out-of-range rows, so its gradient there is zero; ours is the derivative of the
        # clamped read.
        check_grads_f64(case, args)
    else:  # NumPy raises for out-of-range indices; otherwise jax, NumPy and fx agree
        assert_allclose(fnp.asarray(args[0])[idx], args[0][idx], what="vs NumPy")


@st.composite
def _mixed_problems(draw):
    """Shapes and indices mixing arrays (of broadcastable shapes), ints, slices, None, masks."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    common = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    per_dim = []  # the index entries for each dimension (a None may precede one)
    for n in shape:
        kind = draw(st.sampled_from(["array", "int", "slice", "mask"]))
        if kind == "array":
            ndim = draw(st.integers(0, len(common)))
            ashape = tuple(d if draw(st.booleans()) else 1 for d in common[len(common) - ndim:])
            size = int(np.prod(ashape))
            e = np.asarray(draw(st.lists(st.integers(-n, n - 1), min_size=size,
                                         max_size=size))).reshape(ashape)
        elif kind == "int":
            e = draw(st.integers(-n, n - 1))
        elif kind == "slice":
            e = slice(draw(st.none() | st.integers(-n, n)), draw(st.none() | st.integers(-n, n)),
                      draw(st.sampled_from([None, 1, 2, -1, -2])))
        else:
            e = np.asarray(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        per_dim.append(([None] if draw(st.integers(0, 3)) == 0 else []) + [e])
    # Dimensions [a, b) are left to an Ellipsis (or, without one, the trailing ones implicit).
    a = draw(st.integers(0, len(shape)))
    b = draw(st.integers(a, len(shape)))
    tail = [Ellipsis] + [e for es in per_dim[b:] for e in es] if draw(st.booleans()) else []
    return shape, tuple([e for es in per_dim[:a] for e in es] + tail)


@given(_mixed_problems())
def test_mixed_indexing_matches_numpy(problem):
    shape, idx = problem
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    try:
        want = x[idx]
    except IndexError:  # e.g. masks selecting counts that do not broadcast with the arrays
        with pytest.raises(IndexError, match="could not be broadcast"):
            fnp.asarray(x)[idx]
        return
    got = fnp.asarray(x)[idx]
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want)
    # .at[idx] writes exactly those positions; .add accumulates repeated ones like np.add.at.
    marks = np.zeros(shape, np.float32)
    marks[idx] = 1.0
    got = fnp.asarray(np.zeros(shape, np.float32)).at[idx].set(1.0)
    np.testing.assert_array_equal(np.asarray(got), marks)
    counts = np.zeros(shape, np.float32)
    np.add.at(counts, idx, 1.0)
    got = fnp.asarray(np.zeros(shape, np.float32)).at[idx].add(1.0)
    np.testing.assert_array_equal(np.asarray(got), counts)


def test_vjp_of_repeated_indices_is_scatter_add():
    x = fnp.asarray(np.arange(4.0))
    g = fx.grad(lambda x: _total(x[[1, 1, 3, 1]]))(x)
    np.testing.assert_array_equal(np.asarray(g), [0.0, 3.0, 0.0, 1.0])
    assert "scatter_add" in {e.primitive.name for e in fx.make_jaxpr(
        fx.grad(lambda x: _total(x[[1, 1]])))(x).jaxpr.eqns}


def _total(x):
    return fx.lax.reduce_sum(x, tuple(range(x.ndim)))


def test_second_order_grads_through_indexing():
    x = _x((3, 4))
    for idx in (s_[[0, 2], 1:], s_[1, ::-1], s_[:, [3, 3]]):
        case = OpCase("grads", lambda x: fnp.sin(x[idx]), None, None)  # noqa: B023
        check_grads_f64(case, [x])


# --- traced indices and vmap ------------------------------------------------------------------


TRACED_FNS = [lambda x, i: x[i], lambda x, i: x[i, ::-1], lambda x, i: x[:, i],
              lambda x, i: x[i, i]]


def _staged(f, *args):
    """``f`` traced to a jaxpr (so the indices are abstract) and then evaluated."""
    closed = fx.make_jaxpr(f)(*args)
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)[0]


@pytest.mark.parametrize("f", TRACED_FNS, ids=["x[i]", "x[i, ::-1]", "x[:, i]", "x[i, i]"])
def test_traced_integer_indices(f):
    x = _x((4, 5))
    for i in (np.int64(2), np.int64(-1), np.array([3, -2, 0]), np.array([[1], [7]])):
        want = f(jnp.asarray(x), jnp.asarray(i))
        assert_allclose(_staged(f, *to_fx([x, i])), want)
        if np.all(np.abs(i) < 4):  # jax's gradient drops clamped reads (see above)
            g = fx.grad(lambda x: _total(f(x, fnp.asarray(i))))(fnp.asarray(x))  # noqa: B023
            assert_allclose(g, jax.grad(lambda x: f(x, i).sum())(jnp.asarray(x)))  # noqa: B023
    assert_allclose(fx.jit(f)(*to_fx([x, i])), want)


VMAP_FNS = [
    ("x[i]", lambda x, i: x[i]),
    ("x[:, i]", lambda x, i: x[:, i]),
    ("x[i, 1:]", lambda x, i: x[i, 1:]),
    ("x[i, None, ::-1]", lambda x, i: x[i, None, ::-1]),
    ("x[1, i]", lambda x, i: x[1, i]),
]


@pytest.mark.parametrize("name,f", VMAP_FNS, ids=[v[0] for v in VMAP_FNS])
@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (1, 0)], ids=str)
@pytest.mark.parametrize("index_shape", [(), (2, 2)], ids=str)
def test_vmap_of_indexing(name, f, in_axes, index_shape):
    rng = np.random.default_rng(1)
    x = _x((3, 4, 5) if in_axes[0] == 0 else (4, 3, 5))
    if in_axes[0] is None:
        x = x[0]
    shape = ((3,) if in_axes[1] is not None else ()) + index_shape
    i = rng.integers(-4, 4, shape)
    check_vmap(OpCase(name, f, f, None), [x, i], in_axes)


def test_vmap_of_at_updates():
    x, i, v = _x((3, 4)), np.array([[0, 2, 0], [1, 1, 3], [3, 0, 9]]), _x((3, 3), seed=1)
    for name in ("set", "add", "max"):
        f = lambda x, i, v: getattr(x.at[i], name)(v)  # noqa: E731, B023
        for in_axes in [(0, 0, 0), (None, 0, 0), (0, None, 0), (0, 0, None)]:
            args = [x if in_axes[0] == 0 else x[0], i if in_axes[1] == 0 else i[0],
                    v if in_axes[2] == 0 else v[0]]
            check_vmap(OpCase(name, f, f, None), args, in_axes)


def test_transformations_compose_through_indexing_and_updates():
    x = _x((4, 5))
    i = np.array([0, 2, 2, -1])

    def f(x):  # a read, a repeated-index write of it, and a sum: works for fx and jax arrays
        y = x.at[i, 1:].set(x[i, :-1] * 2.0)
        return (y * y).sum() if isinstance(y, jax.Array) else _total(y * y)

    want = jax.jit(jax.grad(f))(x)  # jitted: eager jax compiles op by op, slowly
    for name, g in [("grad", fx.grad(f)), ("grad(jit)", fx.grad(fx.jit(f))),
                    ("jit(grad)", fx.jit(fx.grad(f)))]:
        assert_allclose(g(fnp.asarray(x)), want, what=name)
    xs = _x((2, 4, 5), seed=1)
    assert_allclose(fx.vmap(fx.grad(f))(fnp.asarray(xs)), jax.jit(jax.vmap(jax.grad(f)))(xs))
    assert_allclose(fx.hessian(f)(fnp.asarray(x)), jax.jit(jax.hessian(f))(x))


# --- .at[] ------------------------------------------------------------------------------------

AT_INDICES = [
    s_[1],
    s_[-1],
    s_[10],  # out of range: the update is dropped
    s_[-10],
    s_[1:3],
    s_[::-2],
    s_[[0, 0, 2]],  # repeated
    s_[[4, -1, -9]],
    s_[:, [1, 1]],
    s_[[0, 2], 1:],
    s_[[0, 1], [1, 2]],
    s_[None, 1],
    s_[..., ::2],
    s_[np.array([True, False, True, True])],
    s_[:],
]
# Every index with set and add (and their derivatives); a few with each other update.
AT_CASES = [(i, op) for i in range(len(AT_INDICES)) for op in ("set", "add")] + [
    (i, op) for i in (3, 5, 6, 9, 13) for op in ("subtract", "multiply", "divide", "min", "max")]


@pytest.mark.parametrize("which,op", AT_CASES, ids=[f"{i}-{op}" for i, op in AT_CASES])
def test_at_updates(which, op):
    idx = AT_INDICES[which]
    x = _x((4, 3))
    shape = np.shape(np.asarray(jnp.asarray(x)[_for_jax(idx)]))
    v = _x(shape[-1:], seed=1)  # broadcast against x[idx]
    case = OpCase(f"at{idx}.{op}", lambda x, v: getattr(x.at[idx], op)(v),
                  lambda x, v: getattr(x.at[_for_jax(idx)], op)(v), None, diff_argnums=(0, 1))
    check_eval(case, [x, v])
    if op in ("set", "add"):
        check_jvp(case, [x, v], np.random.default_rng(0))
        check_vjp(case, [x, v], np.random.default_rng(1))
    elif op in ("multiply", "min", "max"):
        case.diff_argnums = (0,)  # jax differentiates these in x only (for repeated indices)
        check_vjp(case, [x, v], np.random.default_rng(1))


def test_at_get_modes_and_fill():
    x = np.arange(5.0)
    fxx = fnp.asarray(x)
    idx = np.array([0, 7, -1, -9])
    for kw in ({}, {"mode": "clip"}, {"mode": "fill"}, {"mode": "fill", "fill_value": -1.0}):
        assert_allclose(fxx.at[idx].get(**kw), jnp.asarray(x).at[idx].get(**kw), what=str(kw))
    assert_allclose(fxx.at[7].get(mode="fill"), jnp.asarray(x).at[7].get(mode="fill"))
    assert_allclose(fxx.at[7].set(1.0, mode="clip"), jnp.asarray(x).at[7].set(1.0, mode="clip"))


@pytest.mark.parametrize("op", ["get", "set", "add", "multiply", "min", "max"])
def test_at_promise_in_bounds_matches_jax(op):
    # In range the promise changes nothing; out of range (a broken promise) fx does what jax
    # does on CPU: a gather clamps, a scatter drops. Eager, jit, vmap and grad.
    x = _x((5, 3))
    v = _x((4, 3), seed=1)
    for idx in (np.array([0, 4, 2, 2]), np.array([0, 7, -1, -9])):
        def run(np_, x, v, idx=idx):
            ref = x.at[idx]
            if op == "get":
                return ref.get(mode="promise_in_bounds")
            return getattr(ref, op)(v, mode="promise_in_bounds")

        want = run(jnp, jnp.asarray(x), jnp.asarray(v))
        assert_allclose(run(fnp, fnp.asarray(x), fnp.asarray(v)), want, what=f"{op} {idx}")
        assert_allclose(fx.jit(lambda x, v: run(fnp, x, v))(x, v), want, what=f"jit {op}")
        got = fx.vmap(lambda x, v: run(fnp, x, v), (2, 1))(x[..., None].repeat(2, 2),
                                                          v[:, None].repeat(2, 1))
        assert_allclose(got[1], want, what=f"vmap {op}")
        if op in ("get", "set", "add") and idx.min() >= 0 and idx.max() < 5:
            gfx = fx.grad(lambda x, v: fnp.sum(fnp.sin(run(fnp, x, v))), (0, 1))(x, v)
            gjx = jax.grad(lambda x, v: jnp.sum(jnp.sin(run(jnp, x, v))), (0, 1))(x, v)
            assert_allclose(gfx, gjx, what=f"grad {op}")


def test_gather_scatter_mode_names_as_jax():
    from fx.lax import GatherScatterMode as Mode

    assert {"CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS"} <= set(Mode.__members__)
    assert {"CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS"} <= set(
        jax.lax.GatherScatterMode.__members__)
    for text, name in [("clip", "CLIP"), ("fill", "FILL_OR_DROP"), ("drop", "FILL_OR_DROP"),
                       (None, "FILL_OR_DROP"), ("promise_in_bounds", "PROMISE_IN_BOUNDS")]:
        assert Mode.from_any(text).name == jax.lax.GatherScatterMode.from_any(text).name == name
        assert Mode.parse(getattr(Mode, name)) is getattr(Mode, name)
    with pytest.raises(ValueError, match="promise_in_bounds"):
        Mode.parse("bogus")


def test_at_set_repeated_index_last_wins_and_gradients():
    x = fnp.zeros(3, np.float64)
    v = fnp.asarray(np.array([1.0, 2.0, 3.0]))
    out = x.at[[1, 1, 1]].set(v)
    np.testing.assert_array_equal(np.asarray(out), [0.0, 3.0, 0.0])
    gx, gv = fx.grad(lambda x, v: _total(x.at[[1, 1, 1]].set(v) * 2.0), argnums=(0, 1))(x, v)
    np.testing.assert_array_equal(np.asarray(gx), [2.0, 0.0, 2.0])
    np.testing.assert_array_equal(np.asarray(gv), [0.0, 0.0, 2.0])


# jax warns that casting the float values to int32 is unsafe; fx converts silently, like jax does.
@pytest.mark.filterwarnings("ignore:scatter inputs have incompatible types:FutureWarning")
def test_at_dtype_conversion_and_broadcasting():
    xi = np.ones(3, np.int32)
    assert_allclose(fnp.asarray(xi).at[0].set(2.7), jnp.asarray(xi).at[0].set(2.7))
    assert_allclose(fnp.asarray(xi).at[0].add(np.float64(2.7)),
                    jnp.asarray(xi).at[0].add(np.float64(2.7)))
    xf = fnp.ones((2, 3), np.float32)
    out = xf.at[:, 1].set(np.array([5.0, 6.0]))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(out), [[1, 5, 1], [1, 6, 1]])
    with pytest.raises(ValueError, match=r"at\[\].set: cannot broadcast values of shape \(1, 3\)"):
        xf.at[0].set(np.ones((1, 3)))
    assert fnp.asarray(np.zeros(3, bool)).at[1].max(True).tolist() == [False, True, False]


def test_at_multiply_grad_in_values_matches_jax_for_unique_indices():
    x, v = _x((5,)), _x((2,), seed=1)
    g = fx.grad(lambda v: _total(fnp.asarray(x).at[[1, 3]].multiply(v)))(fnp.asarray(v))
    jg = jax.grad(lambda v: jnp.asarray(x).at[np.array([1, 3])].multiply(
        v, unique_indices=True).sum())(jnp.asarray(v))
    assert_allclose(g, jg)


# --- take, take_along_axis, nonzero -----------------------------------------------------------

TAKES = [
    ([2, 0, 2], None, None),
    ([[1, -1], [7, -9]], None, None),  # fill for out of range
    ([[1, -1], [7, -9]], 1, "clip"),
    ([1, 5, -6], 0, "wrap"),
    ([3, 0], -1, "fill"),
    (2, 1, None),
]


@pytest.mark.parametrize("indices,axis,mode", TAKES, ids=str)
def test_take(indices, axis, mode):
    i = np.asarray(indices)
    case = OpCase("take", lambda x: fnp.take(x, i, axis=axis, mode=mode),
                  lambda x: jnp.take(x, i, axis=axis, mode=mode),
                  lambda rng: [_x((3, 4))])
    args = case.args(None)
    check_eval(case, args)
    check_vjp(case, args, np.random.default_rng(0))
    assert_allclose(fnp.asarray(args[0]).take(i, axis=axis, mode=mode),
                    jnp.take(args[0], i, axis=axis, mode=mode))


@pytest.mark.parametrize("ishape,axis", [((3, 2), 1), ((1, 4), 0), ((3, 1), 1), ((5,), None),
                                         ((2, 4), 0)], ids=str)
def test_take_along_axis(ishape, axis):
    rng = np.random.default_rng(0)
    i = rng.integers(-4, 5, ishape)
    case = OpCase("take_along_axis", lambda x: fnp.take_along_axis(x, i, axis),
                  lambda x: jnp.take_along_axis(x, i, axis), lambda rng: [_x((3, 4))])
    check_eval(case, case.args(None))
    check_vjp(case, case.args(None), rng)
    ia = np.abs(i) % 3
    f = lambda x: fnp.take_along_axis(x, ia, axis, mode="clip")  # noqa: E731
    assert_allclose(f(fnp.asarray(_x((3, 4)))),
                    jnp.take_along_axis(_x((3, 4)), ia, axis, mode="clip"))


def test_take_along_axis_vmap_and_argsort_pattern():
    x = _x((2, 3, 4))
    i = np.argsort(x, axis=-1)
    f = lambda x, i: fnp.take_along_axis(x, i, -1)  # noqa: E731
    jf = lambda x, i: jnp.take_along_axis(x, i, -1)  # noqa: E731
    check_vmap(OpCase("tal", f, jf, None), [x, i], (0, 0))
    check_vmap(OpCase("tal", f, jf, None), [x, i[0]], (0, None))
    np.testing.assert_array_equal(np.asarray(f(*to_fx([x, i]))), np.sort(x, -1))


# --- errors -----------------------------------------------------------------------------------


def test_index_errors():
    x = fnp.zeros((2, 3))
    with pytest.raises(IndexError, match=r"too many indices for array: array is 2-dimensional, "
                                         r"but 3 were indexed"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match=r"too many indices"):
        x[np.zeros((2, 3, 1), bool)]
    with pytest.raises(IndexError, match=r"single ellipsis"):
        x[..., ...]
    with pytest.raises(TypeError, match=r"position 0 has dtype float64; indices must have "
                                        r"integer or boolean type"):
        x[np.array([1.0])]
    with pytest.raises(TypeError, match=r"invalid index 1.0 of type float"):
        x[1.0]
    with pytest.raises(TypeError, match=r"invalid index 'a'"):
        x["a"]
    with pytest.raises(TypeError, match=r"use a tuple, x\[tuple\(seq\)\]"):
        x[[0, slice(None)]]
    with pytest.raises(IndexError, match=r"could not be broadcast together with shapes \(2,\) "
                                         r"\(3,\)"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match=r"boolean index did not match"):
        x[np.array([True, False, True])]
    with pytest.raises(ValueError, match=r"slice step cannot be zero"):
        x[::0]


def test_traced_mask_and_slice_errors():
    x = fnp.asarray(np.arange(3.0))
    with pytest.raises(fx.ConcretizationTypeError,
                       match=r"boolean mask indexing needs a concrete mask.*fx.numpy.where"):
        fx.make_jaxpr(lambda x: x[x > 1])(x)
    with pytest.raises(fx.ConcretizationTypeError, match=r"boolean mask"):
        fx.jit(lambda x, m: x[m])(x, x > 1)
    with pytest.raises(fx.ConcretizationTypeError, match=r"boolean mask"):
        fx.vmap(lambda x: x[x > 1])(fnp.ones((2, 3)))
    with pytest.raises(IndexError, match=r"slice entries must be static integers.*dynamic_slice"):
        fx.jit(lambda x, i: x[i:i + 1])(x, 1)
    # Under grad alone, the mask is concrete, so it works.
    g = fx.grad(lambda x: _total(x[np.asarray(x) > 0.5]))(x)
    np.testing.assert_array_equal(np.asarray(g), [0.0, 1.0, 1.0])


def test_take_errors():
    x = fnp.zeros((2, 3))
    with pytest.raises(IndexError, match=r"take: cannot take a non-empty selection from an "
                                         r"empty axis"):
        fnp.take(fnp.zeros((0, 3)), np.array([0]))
    with pytest.raises(TypeError, match=r"take: indices must be integers"):
        fnp.take(x, np.array([0.5]))
    with pytest.raises(ValueError, match=r"take: invalid mode 'bogus'"):
        fnp.take(x, np.array([0]), mode="bogus")
    with pytest.raises(ValueError, match=r"take_along_axis: indices must be 1-D when axis=None"):
        fnp.take_along_axis(x, np.zeros((2, 3), int), None)
    with pytest.raises(ValueError, match=r"same number of dimensions; 1 vs. 2"):
        fnp.take_along_axis(x, np.zeros(3, int), 0)
    with pytest.raises(ValueError, match=r"do not broadcast outside axis 0"):
        fnp.take_along_axis(x, np.zeros((1, 4), int), 0)
