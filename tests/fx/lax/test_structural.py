"""Table-driven tests of the structural primitives against jax.lax: iota, slice, concatenate,
pad, squeeze/expand_dims/collapse, rev, dynamic_slice and dynamic_update_slice, reshape with
``dimensions`` and broadcast_in_dim with broadcast dimensions in any order.

Every row is checked for eval, jvp and vjp against jax, vmap over every axis of every argument
(against a loop and jax.vmap), and ``check_grads`` at order 2 in float64. Start indices are
drawn out of range on purpose (XLA clamps them; negative ones count from the end).
"""

from __future__ import annotations

import jax
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
    run_doctests,
)
from hypothesis import assume, given
from hypothesis import strategies as st

import fx
import fx.lax as lax
from fx.test_util import check_grads, shapes

I32 = np.int32


def _normal(*shape):
    return lambda rng: rng.standard_normal(shape).astype(np.float32)


def _index(lo, hi):
    return lambda rng: I32(rng.integers(lo, hi))


def _case(name, fx_fn, jax_fn, *draws, diff=(0,)):
    return OpCase(name, fx_fn, jax_fn, lambda rng: [d(rng) for d in draws], diff_argnums=diff)


def _same(name, *params):
    """A row calling ``fx.lax.<name>`` and ``jax.lax.<name>`` with the same static params."""
    return lambda *draws, diff=(0,), tag="": _case(
        f"{name}{tag}", lambda *a: getattr(lax, name)(*a, *params),
        lambda *a: getattr(jax.lax, name)(*a, *params), *draws, diff=diff,
    )


def _ds(sizes):
    return (lambda x, *s: lax.dynamic_slice(x, s, sizes),
            lambda x, *s: jax.lax.dynamic_slice(x, s, sizes))


def _permuted_broadcast(shape, dims, draw, tag):
    perm = sorted(range(len(dims)), key=dims.__getitem__)
    return _case(f"broadcast_in_dim{tag}", lambda x: lax.broadcast_in_dim(x, shape, dims),
                 lambda x: jax.lax.broadcast_in_dim(x.transpose(perm), shape, sorted(dims)),
                 draw)


CASES = [
    _same("slice", (1,), (4,))(_normal(5)),
    _same("slice", (0, 1), (4, 6), (3, 2))(_normal(4, 6), tag="-strided"),
    _same("slice", (2, 2), (2, 5))(_normal(4, 6), tag="-empty"),
    _same("slice_in_dim", 1, 5, 2, 1)(_normal(4, 6)),
    _case("concatenate", lambda *xs: lax.concatenate(xs, 1),
          lambda *xs: jax.lax.concatenate(xs, 1),
          _normal(2, 3), _normal(2, 0), _normal(2, 1), diff=(0, 1, 2)),
    _case("concatenate-dim0", lambda *xs: lax.concatenate(xs, 0),
          lambda *xs: jax.lax.concatenate(xs, 0), _normal(1), _normal(4), diff=(0, 1)),
    _same("pad", [(1, 2, 0), (0, -1, 2)])(_normal(3, 4), _normal(), diff=(0, 1)),
    _same("pad", [(-4, 2, 0)])(_normal(3), _normal(), diff=(0, 1), tag="-crop"),
    _same("pad", [(-1, -1, 1)])(_normal(4), _normal(), diff=(0, 1), tag="-crop-interior"),
    _same("pad", [(2, 1, 3)])(_normal(0), _normal(), diff=(0, 1), tag="-empty"),
    _same("squeeze", (0, 2))(_normal(1, 3, 1)),
    _same("squeeze", (0,))(_normal(1), tag="-to-scalar"),
    _same("squeeze", (-2,))(_normal(2, 1, 3), tag="-negative"),
    _same("expand_dims", (0, 2))(_normal(3)),
    _same("expand_dims", (-1,))(_normal(2, 3), tag="-negative"),
    _same("expand_dims", (0,))(_normal(), tag="-scalar"),
    _same("collapse", 0, 2)(_normal(2, 3, 4)),
    _same("collapse", 1)(_normal(2, 3, 4), tag="-to-end"),
    _same("collapse", 0, 3)(_normal(2, 0, 3), tag="-empty"),
    _same("rev", (0, 1))(_normal(4, 5)),
    _same("rev", (1,))(_normal(4, 5), tag="-one"),
    _same("rev", (0,))(_normal(0, 3), tag="-empty"),
    _case("dynamic_slice", *_ds((3,)), _normal(6), _index(-9, 10)),
    _case("dynamic_slice-2d", *_ds((2, 3)), _normal(4, 6), _index(-6, 7), _index(-8, 9)),
    _case("dynamic_slice-empty", *_ds((0, 6)), _normal(4, 6), _index(-6, 7), _index(-8, 9)),
    _case("dynamic_slice-whole", *_ds((5,)), _normal(5), _index(-7, 8)),
    _case("dynamic_update_slice", lambda x, u, s: lax.dynamic_update_slice(x, u, (s,)),
          lambda x, u, s: jax.lax.dynamic_update_slice(x, u, (s,)),
          _normal(6), _normal(3), _index(-9, 10), diff=(0, 1)),
    _case("dynamic_update_slice-2d", lambda x, u, s, t: lax.dynamic_update_slice(x, u, (s, t)),
          lambda x, u, s, t: jax.lax.dynamic_update_slice(x, u, (s, t)),
          _normal(4, 6), _normal(2, 3), _index(-6, 7), _index(-8, 9), diff=(0, 1)),
    _case("dynamic_update_slice-full-rows",
          lambda x, u, s, t: lax.dynamic_update_slice(x, u, (s, t)),
          lambda x, u, s, t: jax.lax.dynamic_update_slice(x, u, (s, t)),
          _normal(3, 5), _normal(3, 2), _index(-4, 5), _index(-7, 8), diff=(0, 1)),
    _same("dynamic_slice_in_dim")(_normal(3, 7), _index(-9, 10), lambda rng: 4,
                                  lambda rng: 1),
    _same("dynamic_index_in_dim", 0, False)(_normal(4, 3), _index(-5, 6)),
    _same("dynamic_update_slice_in_dim")(_normal(3, 7), _normal(3, 2), _index(-9, 10),
                                         lambda rng: 1, diff=(0, 1)),
    _same("dynamic_update_index_in_dim")(_normal(4, 3), _normal(3), _index(-5, 6),
                                         lambda rng: 0, diff=(0, 1)),
    _same("reshape", (4, 6), (2, 1, 0))(_normal(2, 3, 4), tag="-dimensions"),
    _same("reshape", (6, 4), (1, 0, 2))(_normal(2, 3, 4), tag="-dimensions-partial"),
    _same("reshape", (3, 2), (0, 1))(_normal(2, 3), tag="-dimensions-identity"),
    # jax's own vjp of unordered broadcast dimensions fails (its transpose rule assumes them
    # increasing): the oracle is the transpose and broadcast they mean (eval against jax's
    # broadcast_in_dim itself: test_broadcast_in_dim_accepts_what_jax_accepts).
    _permuted_broadcast((3, 2), (1, 0), _normal(2, 3), "-transposed"),
    _permuted_broadcast((4, 3, 2), (2, 0), _normal(2, 4), "-permuted"),
    _permuted_broadcast((3, 5, 2), (2, 1), _normal(1, 5), "-permuted-size1"),
]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_eval_jvp_vjp(case):
    rng = np.random.default_rng(0)
    for _ in range(3):  # a few draws of the start indices
        args = case.args(rng)
        check_eval(case, args)
        check_jvp(case, args, rng)
        check_vjp(case, args, rng)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_check_grads_order2(case):
    check_grads_f64(case, case.args(np.random.default_rng(1)))


def _vmap_axes(args):
    """Each argument batched alone along each of its axes, then all batched at axis 0."""
    arrays = [i for i, a in enumerate(args) if isinstance(a, (np.ndarray, np.generic))]
    for i in arrays:
        for ax in range(np.ndim(args[i]) + 1):
            yield tuple(ax if j == i else None for j in range(len(args)))
    if len(arrays) > 1:
        yield tuple(0 if j in arrays else None for j in range(len(args)))


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_vmap_every_axis(case):
    rng = np.random.default_rng(2)
    for in_axes in _vmap_axes(case.args(rng)):
        draws = [case.args(rng) for _ in range(3)]
        batched = [
            draws[0][i] if ax is None else np.stack([np.asarray(d[i]) for d in draws], ax)
            for i, ax in enumerate(in_axes)
        ]
        check_vmap(case, batched, in_axes)


# --- iota ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.float32, np.float64])
def test_iota(dtype):
    assert_allclose(lax.iota(dtype, 5), jax.lax.iota(dtype, 5), what="iota")
    for dim in (0, 1, 2):
        assert_allclose(lax.broadcasted_iota(dtype, (2, 3, 4), dim),
                        jax.lax.broadcasted_iota(dtype, (2, 3, 4), dim), what="broadcasted_iota")
    assert np.asarray(lax.iota(dtype, 0)).shape == (0,)


# --- property tests over shapes, including rank 0 and zero sizes --------------------------------

_DTYPES = st.sampled_from([np.float32, np.int32, np.bool_])


def _check_vmap_vs_loop(f, args, in_axes):
    """vmap equals a loop over the batch (eval is checked against jax separately; skipping
    jax.vmap keeps these property tests cheap)."""
    got = fx.vmap(f, in_axes=in_axes)(*args)
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    rows = [f(*[a if ax is None else np.take(a, i, ax) for a, ax in zip(args, in_axes)])
            for i in range(size)]
    want = [np.stack([np.asarray(r[k]) for r in rows]) for k in range(len(rows[0]))]
    assert_allclose(list(got), want, what="vmap vs loop")


def _draw_array(data, shape, dtype):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    return (rng.standard_normal(shape) * 3).astype(dtype)


@given(st.data(), shapes(0, 3, 0, 4), _DTYPES)
def test_dynamic_slice_and_update_any_shape(data, shape, dtype):
    x = _draw_array(data, shape, dtype)
    sizes = tuple(data.draw(st.integers(0, d), label="size") for d in shape)
    batch = 3
    starts = [np.asarray(data.draw(st.lists(st.integers(-6, 8), min_size=batch,
                                             max_size=batch)), I32) for _ in shape]
    u = _draw_array(data, (batch,) + sizes, dtype)

    def f(x, u, *s):
        return lax.dynamic_slice(x, s, sizes), lax.dynamic_update_slice(x, u, s)

    def g(x, u, *s):
        return jax.lax.dynamic_slice(x, s, sizes), jax.lax.dynamic_update_slice(x, u, s)

    case = OpCase("dynamic slicing", f, g, None)
    check_eval(case, [x, u[0]] + [s[0] for s in starts])
    _check_vmap_vs_loop(f, [x, u] + starts, (None, 0) + (0,) * len(shape))
    if shape:  # operand batched, one start batched, the rest shared
        xb = np.stack([x, x[::-1] if shape[0] else x], -1)
        axes = (x.ndim, None, 0) + (None,) * (len(shape) - 1)
        _check_vmap_vs_loop(f, [xb, u[0], starts[0][:2]] + [s[0] for s in starts[1:]], axes)


@given(st.data(), shapes(0, 3, 0, 4), _DTYPES)
def test_rev_squeeze_expand_any_shape(data, shape, dtype):
    x = _draw_array(data, shape, dtype)
    rev_dims = data.draw(st.sets(st.integers(0, max(len(shape) - 1, 0)))) if shape else set()
    ones = tuple(i for i, d in enumerate(shape) if d == 1)
    new = data.draw(st.sets(st.integers(0, len(shape)), max_size=2))
    new = tuple(sorted(new))

    def f(x):
        return lax.rev(x, tuple(rev_dims)), lax.squeeze(x, ones), lax.expand_dims(x, new)

    def g(x):
        return jax.lax.rev(x, tuple(rev_dims)), jax.lax.squeeze(x, ones), jax.lax.expand_dims(
            x, new)

    case = OpCase("rev/squeeze/expand_dims", f, g, None)
    check_eval(case, [x])
    _check_vmap_vs_loop(f, [np.stack([x, x], 0)], (0,))


@given(st.data(), shapes(0, 3, 0, 4), _DTYPES)
def test_slice_and_pad_any_shape(data, shape, dtype):
    x = _draw_array(data, shape, dtype)
    start = [data.draw(st.integers(0, d)) for d in shape]
    limit = [data.draw(st.integers(s, d)) for s, d in zip(start, shape)]
    strides = [data.draw(st.integers(1, 3)) for _ in shape]
    config = [(data.draw(st.integers(-2, 3)), data.draw(st.integers(-2, 3)),
               data.draw(st.integers(0, 2))) for _ in shape]
    assume(all(lo + hi + d + max(d - 1, 0) * i >= 0 for d, (lo, hi, i) in zip(shape, config)))
    value = np.asarray(7, dtype)

    def f(x, v):
        return lax.slice(x, start, limit, strides), lax.pad(x, v, config)

    def g(x, v):
        return jax.lax.slice(x, start, limit, strides), jax.lax.pad(x, v, config)

    case = OpCase("slice/pad", f, g, None)
    check_eval(case, [x, value])
    _check_vmap_vs_loop(f, [np.stack([x, x], -1), np.asarray([1, 0], dtype)], (x.ndim, 0))


# --- batched start indices: exactness and composition -------------------------------------------


def test_batched_dynamic_slice_is_exact():
    # The select-based batching never does arithmetic on the operand: NaN, inf, -0.0 survive.
    x = np.array([np.nan, -0.0, np.inf, -np.inf, 1.5, -2.0], np.float32)
    starts = np.array([0, 1, 2, 3, 4, -1, 100, -100], I32)
    got = fx.vmap(lambda i: lax.dynamic_slice(x, (i,), (2,)))(starts)
    want = jax.vmap(lambda i: jax.lax.dynamic_slice(x, (i,), (2,)))(starts)
    np.testing.assert_array_equal(np.signbit(np.asarray(got)), np.signbit(np.asarray(want)))
    assert_allclose(got, want, what="batched dynamic_slice of special values")
    upd = fx.vmap(lambda i: lax.dynamic_update_slice(x, x[:2][::-1].copy(), (i,)))(starts)
    jupd = jax.vmap(lambda i: jax.lax.dynamic_update_slice(x, x[:2][::-1].copy(), (i,)))(starts)
    np.testing.assert_array_equal(np.signbit(np.asarray(upd)), np.signbit(np.asarray(jupd)))
    assert_allclose(upd, jupd, what="batched dynamic_update_slice of special values")


def test_grad_of_nested_vmap_with_batched_starts():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 9))
    s = np.array([[0, 7, -2, 3], [5, 1, 9, -9], [2, 2, 6, 4]], I32)
    w = np.array([1.0, -2.0, 3.0])

    def make(vmap, dynamic_slice, reduce_sum):
        def loss(x, s):
            rows = vmap(vmap(lambda r, i: dynamic_slice(r, (i,), (3,))))(x, s)
            return reduce_sum(rows * rows * w, (0, 1, 2))

        return loss

    got = fx.grad(make(fx.vmap, lax.dynamic_slice, lax.reduce_sum))(x, s)
    want = jax.grad(make(jax.vmap, jax.lax.dynamic_slice, jax.lax.reduce_sum))(x, s)
    assert_allclose(got, want, what="grad of nested vmap of dynamic_slice")


def test_check_grads_through_batched_update():
    rng = np.random.default_rng(6)
    s = fx.numpy.asarray(np.array([3, -1, 0, 8], I32))

    def f(x, u):
        return fx.vmap(lambda x, u, i: lax.dynamic_update_slice(x, u, (i,)))(x, u, s)

    check_grads(f, (rng.standard_normal((4, 7)), rng.standard_normal((4, 3))), order=2)


def test_jit_composes_with_batched_starts():
    x = np.arange(12.0).reshape(2, 6)
    s = np.array([[0, 5], [-1, 3]], I32)

    def f(lib, vmap):
        g = lambda r, i: lib.dynamic_update_slice(r, lib.slice(r, (0,), (2,)) * 2.0, (i,))  # noqa: E731
        return vmap(vmap(g, (None, 0)), (None, 0))

    got = fx.jit(f(lax, fx.vmap))(x[0], s)
    assert_allclose(got, jax.jit(f(jax.lax, jax.vmap))(x[0], s), what="jit(vmap(vmap(dus)))")
    g = fx.grad(fx.jit(lambda x: lax.reduce_sum(f(lax, fx.vmap)(x, s) ** 2, (0, 1, 2))))(x[0])
    jg = jax.grad(lambda x: jax.lax.reduce_sum(f(jax.lax, jax.vmap)(x, s) ** 2, (0, 1, 2)))(x[0])
    assert_allclose(g, jg, what="grad(jit(...)) with batched starts")


def test_start_indices_as_an_array():
    x = np.arange(20.0).reshape(4, 5)
    starts = np.array([3, -2], I32)
    want = jax.lax.dynamic_slice(x, jax.numpy.asarray(starts), (2, 2))
    assert_allclose(lax.dynamic_slice(x, fx.numpy.asarray(starts), (2, 2)), want, what="fx array")
    assert_allclose(lax.dynamic_slice(x, starts, (2, 2)), want, what="numpy array")
    got = fx.vmap(lambda s: lax.dynamic_slice(x, s, (2, 2)))(np.stack([starts, starts[::-1]]))
    assert_allclose(got[0], want, what="batched array of starts")


def test_docstring_examples():
    import fx.lax.dynamic_slicing
    import fx.lax.structural

    assert run_doctests(fx.lax.structural, fx.lax.dynamic_slicing) >= 6


def test_jaxprs_use_no_gather():
    f = fx.vmap(lambda x, i: lax.dynamic_slice(x, (i,), (2,)), (None, 0))
    jaxpr = str(fx.make_jaxpr(f)(np.arange(6.0), np.arange(3, dtype=I32)))
    assert "select_n" in jaxpr and "gather" not in jaxpr
    assert "broadcast_in_dim" in str(fx.make_jaxpr(lambda x: lax.expand_dims(x, (0,)))(
        np.ones(3)))


# --- errors -------------------------------------------------------------------------------------


def test_errors_name_the_operation_and_shapes():
    # The types are jax's (tests/fx/test_error_types.py checks them against jax).
    x = fx.numpy.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"squeeze: cannot remove dimension 1 of size 3.*f32"):
        lax.squeeze(x, (1,))
    with pytest.raises(ValueError, match=r"squeeze: axis 2 is out of bounds.*rank 2"):
        lax.squeeze(x, (2,))
    with pytest.raises(TypeError, match=r"rev: repeated axis"):
        lax.rev(x, (0, -2))
    with pytest.raises(ValueError, match=r"expand_dims: axis 3 is out of bounds"):
        lax.expand_dims(x, (3,))
    with pytest.raises(ValueError, match=r"collapse: empty dimension range"):
        lax.collapse(x, 2, 1)
    with pytest.raises(TypeError, match=r"dynamic_slice: slice_sizes \(3, 3\) must fit.*f32"):
        lax.dynamic_slice(x, (0, 0), (3, 3))
    with pytest.raises(ValueError, match=r"dynamic_slice: got 1 start indices.*rank 2"):
        lax.dynamic_slice(x, (0,), (1, 1))
    with pytest.raises(TypeError, match=r"dynamic_slice: start indices must be integer scalars"):
        lax.dynamic_slice(x, (fx.numpy.ones((), np.float32), 0), (1, 1))
    with pytest.raises(TypeError, match=r"dynamic_update_slice: the update must have the "
                                        r"operand's dtype.*f32\[2,3\], i32\[1,1\]"):
        lax.dynamic_update_slice(x, fx.numpy.ones((1, 1), np.int32), (0, 0))
    with pytest.raises(TypeError, match=r"dynamic_update_slice: the update must have the "
                                        r"operand's rank and fit"):
        lax.dynamic_update_slice(x, fx.numpy.ones((3, 1), np.float32), (0, 0))
    with pytest.raises(TypeError, match=r"concatenate: operands must agree in every dimension "
                                        r"but 0.*f32\[2,3\], f32\[2,4\]"):
        lax.concatenate([x, fx.numpy.ones((2, 4), np.float32)], 0)
    with pytest.raises(TypeError, match=r"concatenate: operands must have the same dtype"):
        lax.concatenate([x, fx.numpy.ones((2, 3), np.int32)], 0)
    with pytest.raises(ValueError, match=r"pad: padding_config needs 2"):
        lax.pad(x, 0.0, [(1, 1, 0)])
    with pytest.raises(ValueError, match=r"pad: padding \(-3, -3, 0\) leaves a negative size"):
        lax.pad(x, 0.0, [(0, 0, 0), (-3, -3, 0)])
    with pytest.raises(TypeError, match=r"slice: invalid slice \[1:4:1\] of a dimension of size 3"):
        lax.slice(x, (0, 1), (2, 4))
    with pytest.raises(TypeError, match=r"iota: dtype must be an integer or floating"):
        lax.iota(np.bool_, 3)
    with pytest.raises(TypeError, match=r"iota: negative dimension"):
        lax.broadcasted_iota(np.int32, (2, -1), 0)


def test_broadcast_in_dim_accepts_what_jax_accepts():
    # Every operand rank/shape against every target and every tuple of dimensions (negative,
    # repeated, out of range, unordered): the same result shape and values, or both refuse.
    import itertools

    rng = np.random.default_rng(3)
    for xs in [(), (1,), (3,), (1, 3), (3, 1), (3, 3), (1, 1)]:
        x = rng.standard_normal(xs).astype(np.float32)
        for shape in [(3,), (3, 3), (3, 3, 3), (1, 3, 3), (3, 1, 3), (0, 3), (3, 1), (1, 1),
                      (1, 3)]:
            for dims in itertools.product(range(-1, len(shape) + 1), repeat=len(xs)):
                try:
                    want = np.asarray(jax.lax.broadcast_in_dim(x, shape, dims))
                except TypeError:
                    with pytest.raises(TypeError, match="broadcast_in_dim"):
                        lax.broadcast_in_dim(fx.numpy.asarray(x), shape, dims)
                    continue
                got = lax.broadcast_in_dim(fx.numpy.asarray(x), shape, list(dims),
                                           out_sharding=None)
                np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{xs} {dims}")
    got = lax.broadcast_in_dim(2.0, (2,), ())  # a Python scalar stays weak, as jax's
    assert got.weak_type == jax.lax.broadcast_in_dim(2.0, (2,), ()).weak_type


def test_reshape_dimensions_errors_as_jax():
    x = np.arange(24.0).reshape(2, 3, 4)
    for dims in [(0, 1), (0, 0, 1), (0, 1, 3)]:
        with pytest.raises(TypeError):
            jax.lax.reshape(x, (4, 6), dims)
        with pytest.raises(TypeError, match=r"reshape: dimensions .* must be a permutation"):
            lax.reshape(fx.numpy.asarray(x), (4, 6), dims)
    with pytest.raises(TypeError):
        jax.lax.reshape(x, (-1,))
    with pytest.raises(TypeError, match="reshape"):
        lax.reshape(fx.numpy.asarray(x), (-1,))
    got = fx.jit(lambda v: lax.reshape(v, (4, 6), np.array([2, 0, 1]), out_sharding=None))(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(jax.lax.reshape(x, (4, 6),
                                                                              (2, 0, 1))))


def test_base_docstring_examples():
    import fx.core_primitives

    assert run_doctests(fx.core_primitives) >= 2
