"""Tests of fx.numpy's array manipulation functions against jax.numpy: values and dtypes,
jvp/vjp and order-2 gradients through them, vmap, property tests over shapes (rank 0 and zero
sizes included), the Array methods that forward to them, and error messages."""

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
    run_doctests,
)
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.numpy as fnp
from fx.test_util import shapes


def _row(name, *shapes_, tag="", diff=(0,), call=None, **kw):
    """``fnp.<name>(*arrays, **kw)`` vs ``jnp.<name>``; ``call(lib)`` overrides the callable."""
    fx_fn = call(fnp) if call else lambda *a: getattr(fnp, name)(*a, **kw)
    jax_fn = call(jnp) if call else lambda *a: getattr(jnp, name)(*a, **kw)
    return OpCase(
        f"{name}{tag}", fx_fn, jax_fn,
        lambda rng: [rng.standard_normal(s).astype(np.float32) for s in shapes_],
        diff_argnums=diff,
    )


def _joined(name, *shapes_, tag="", **kw):
    """A function of a list of arrays (concatenate, stack, ...)."""
    return _row(name, *shapes_, tag=tag, diff=tuple(range(len(shapes_))),
                call=lambda lib: lambda *xs: getattr(lib, name)(list(xs), **kw))


CASES = [
    _row("reshape", (2, 3, 4), shape=(4, -1)),
    _row("reshape", (6,), tag="-int", shape=6),
    _row("reshape", (), tag="-scalar", shape=(1, 1)),
    _row("reshape", (0, 3), tag="-empty", shape=(3, 0, 1)),
    _row("ravel", (2, 3)),
    _row("flatten", (2, 3), call=lambda lib: lib.ravel if lib is jnp else lib.flatten),
    _row("reshape", (2, 3, 4), tag="-F", shape=(4, -1), order="F"),
    _row("reshape", (2, 3, 4), tag="-F-rank-up", shape=(3, 2, 2, 2), order="F"),
    _row("reshape", (5,), tag="-F-rank-down", shape=(5, 1), order="F"),
    _row("reshape", (0, 3), tag="-F-empty", shape=(3, 0, 1), order="F"),
    _row("reshape", (2, 3, 4), tag="-F-method",
         call=lambda lib: lambda x: x.reshape(4, 6, order="F")),
    _row("reshape", (2, 3, 4), tag="-F-method-tuple",
         call=lambda lib: lambda x: x.reshape((6, -1), order="F")),
    _row("ravel", (2, 3, 4), tag="-F", order="F"),
    _row("ravel", (), tag="-F-scalar", order="F"),
    _row("flatten", (2, 3), tag="-F-method", call=lambda lib: lambda x: x.flatten(order="F")),
    _row("ravel", (2, 3), tag="-F-method", call=lambda lib: lambda x: x.ravel(order="F")),
    _row("transpose", (2, 3, 4)),
    _row("transpose", (2, 3, 4), tag="-axes", axes=(1, -1, 0)),
    _row("swapaxes", (2, 3, 4), axis1=0, axis2=-1),
    _row("moveaxis", (2, 3, 4), source=0, destination=-1),
    _row("moveaxis", (2, 3, 4), tag="-many", source=(0, 1), destination=(2, 0)),
    _row("expand_dims", (2, 3), axis=1),
    _row("expand_dims", (2, 3), tag="-many", axis=(0, -1)),
    _row("squeeze", (1, 3, 1)),
    _row("squeeze", (1, 3, 1), tag="-axis", axis=-1),
    _row("broadcast_to", (3, 1), shape=(2, 3, 4)),
    _row("broadcast_arrays", (3, 1), (4,), (), diff=(0, 1, 2)),
    _joined("concatenate", (2, 3), (1, 3), (0, 3)),
    _joined("concatenate", (2, 3), (2, 1), tag="-axis1", axis=-1),
    _joined("concatenate", (2, 3), (4,), tag="-flat", axis=None),
    _joined("stack", (2, 3), (2, 3)),
    _joined("stack", (2, 3), (2, 3), tag="-last", axis=-1),
    _joined("hstack", (3,), (2,)),
    _joined("hstack", (2, 3), (2, 1), tag="-2d"),
    _joined("vstack", (3,), (2, 3)),
    _joined("dstack", (3,), (1, 3)),
    _joined("column_stack", (3,), (3, 2)),
    _row("split", (6, 2), indices_or_sections=3),
    _row("split", (7, 2), tag="-indices", indices_or_sections=[2, 5], axis=0),
    _row("array_split", (2, 7), indices_or_sections=3, axis=1),
    _row("tile", (2, 3), reps=2),
    _row("tile", (3,), tag="-rank-up", reps=(2, 1, 2)),
    _row("tile", (2, 3, 1), tag="-short-reps", reps=(3,)),
    _row("repeat", (2, 3), repeats=2),
    _row("repeat", (2, 3), tag="-per-element", repeats=np.array([1, 0, 3]), axis=1),
    _row("repeat", (4,), tag="-total", repeats=np.array([2, 1, 1, 0]), total_repeat_length=7),
    _row("repeat", (4, 2), tag="-total-cut", repeats=np.array([2, 1, 1, 3]),
         total_repeat_length=3, axis=0),
    _row("pad", (2, 3), pad_width=((1, 2), (0, 3))),
    _row("pad", (2, 3), tag="-per-axis-values", pad_width=1,
         constant_values=((1.5, -2.0), (3.0, 4.0))),
    _row("pad", (2, 3), tag="-edge", pad_width=((1, 2), (3, 0)), mode="edge"),
    _row("pad", (3, 4), tag="-reflect", pad_width=((2, 7), (3, 0)), mode="reflect"),
    _row("pad", (3, 4), tag="-symmetric", pad_width=((2, 7), (5, 1)), mode="symmetric"),
    _row("pad", (3, 4), tag="-wrap", pad_width=((2, 7), (9, 1)), mode="wrap"),
    _row("flip", (2, 3, 4)),
    _row("flip", (2, 3, 4), tag="-axes", axis=(0, -1)),
    _row("fliplr", (2, 3)),
    _row("flipud", (2, 3)),
    _row("roll", (2, 5), shift=3),
    _row("roll", (2, 5), tag="-axes", shift=(1, -7), axis=(0, 1)),
    _row("roll", (2, 5), tag="-same-axis", shift=(2, 2), axis=1),
    _row("atleast_1d", ()),
    _row("atleast_2d", (3,)),
    _row("atleast_3d", (3,)),
    _row("atleast_3d", (2, 3), tag="-2d"),
    _row("atleast_2d", (), (3,), (2, 3), tag="-several", diff=(0, 1, 2)),
    _row("tril", (3, 4)),
    _row("tril", (2, 3, 3), tag="-batched", k=-1),
    _row("triu", (3, 4), k=2),
    _row("diagonal", (3, 4)),
    _row("diagonal", (3, 4), tag="-offset", offset=2),
    _row("diagonal", (3, 4), tag="-below", offset=-2),
    _row("diagonal", (2, 3, 4), tag="-axes", offset=1, axis1=2, axis2=0),
    _row("diagonal", (3, 4), tag="-empty", offset=5),
    _row("diag", (3,)),
    _row("diag", (3,), tag="-below", k=-2),
    _row("diag", (3, 5), tag="-2d", k=1),
    _row("trace", (3, 4)),
    _row("trace", (2, 3, 4), tag="-axes", offset=-1, axis1=1, axis2=2),
]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_eval_and_derivatives(case):
    rng = np.random.default_rng(0)
    args = case.args(rng)
    check_eval(case, args)
    check_jvp(case, args, rng)
    check_vjp(case, args, rng)
    check_grads_f64(case, args)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_vmap(case):
    rng = np.random.default_rng(1)
    draws = [case.args(rng) for _ in range(2)]
    ax = -1 if case.name.startswith("diagonal-axes") else 0
    batched = [np.stack([d[i] for d in draws], ax) for i in range(len(draws[0]))]
    check_vmap(case, batched, (ax,) * len(batched))


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.float16])
def test_dtypes_are_kept(dtype):
    x = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    for name, kw in [("reshape", {"shape": (4, 3)}), ("tile", {"reps": 2}),
                     ("repeat", {"repeats": np.array([2, 0, 1]), "axis": 0}),
                     ("pad", {"pad_width": 2, "mode": "reflect"}), ("pad", {"pad_width": 1}),
                     ("roll", {"shift": 5}), ("tril", {}), ("diagonal", {"offset": 1}),
                     ("flip", {}), ("diag", {"k": -1})]:
        case = OpCase(name, lambda a, n=name, k=kw: getattr(fnp, n)(a, **k),
                      lambda a, n=name, k=kw: getattr(jnp, n)(a, **k), None)
        check_eval(case, [x])


def test_joining_promotes_like_jax():
    i = np.arange(3, dtype=np.int32)
    f = np.ones(2, np.float32)
    for name in ("concatenate", "hstack"):
        case = OpCase(name, lambda *a, n=name: getattr(fnp, n)(a),
                      lambda *a, n=name: getattr(jnp, n)(a), None)
        check_eval(case, [i, f])
    assert fnp.stack([i, i], dtype=np.float64).dtype == np.float64
    assert fnp.concatenate([i, np.arange(2, dtype=np.int64)]).dtype == np.int64
    assert fnp.concatenate([fnp.ones((2, 2))]).shape == (2, 2)
    # An array argument is a sequence of its rows.
    check_eval(OpCase("stack(array)", lambda a: fnp.stack(a, axis=1),
                      lambda a: jnp.stack(a, axis=1), None), [np.ones((3, 2), np.float32)])


def test_trace_dtypes():
    x = np.arange(9).reshape(3, 3)
    for dt in (np.int8, np.uint8, np.int32, np.uint32, np.int64, bool, np.float16):
        assert fnp.trace(x.astype(dt)).dtype == jnp.trace(x.astype(dt)).dtype, dt
    assert int(fnp.trace(x.astype(np.int32))) == int(np.trace(x))
    assert int(fnp.trace(np.eye(3, dtype=bool))) == 3
    assert_allclose(fnp.trace(x.astype(np.float32), dtype=np.float64),
                    jnp.trace(x.astype(np.float32), dtype=np.float64), what="trace dtype=")


def test_traced_roll_under_vmap_and_grad():
    x = np.random.default_rng(3).standard_normal((4, 5))
    shifts = np.array([-7, 0, 3, 12], np.int32)
    case = OpCase("roll(traced)", lambda a, s: fnp.roll(a, s, axis=0),
                  lambda a, s: jnp.roll(a, s, axis=0), None)
    check_vmap(case, [x.T.copy(), shifts], (1, 0))
    check_vmap(case, [x, shifts], (None, 0))
    w = np.arange(80.0).reshape(4, 4, 5)

    def loss(vmap, np_, reduce_sum):
        return lambda a: reduce_sum(vmap(lambda s: np_.roll(a, s, axis=0))(shifts) * w, (0, 1, 2))

    got = fx.grad(loss(fx.vmap, fnp, fx.lax.reduce_sum))(x)
    want = jax.grad(loss(jax.vmap, jnp, jax.lax.reduce_sum))(x)
    assert_allclose(got, want, what="grad through traced roll")


def test_array_methods_forward():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = fnp.asarray(x)
    pairs = [
        (a.reshape(4, 6), x.reshape(4, 6)), (a.reshape((6, -1)), x.reshape((6, -1))),
        (a.T, x.T), (a.transpose(1, 0, 2), x.transpose(1, 0, 2)),
        (a.transpose((2, 1, 0)), x.transpose((2, 1, 0))), (a.transpose(), x.transpose()),
        (a.swapaxes(0, 2), x.swapaxes(0, 2)), (a.reshape(1, 2, 1, 3, 4).squeeze(), x),
        (a.reshape(1, 2, 3, 4).squeeze(0), x), (a.ravel(), x.ravel()),
        (a.flatten(), x.flatten()), (a.repeat(2, axis=1), x.repeat(2, axis=1)),
        (a.repeat(2), x.repeat(2)), (a.mT, np.swapaxes(x, -1, -2)),
    ]
    for got, want in pairs:
        assert_allclose(got, want, what="method")


def test_docstring_examples():
    import fx.numpy.diagonals
    import fx.numpy.manipulation

    assert run_doctests(fx.numpy.manipulation, fx.numpy.diagonals) >= 9


# --- property tests -----------------------------------------------------------------------------


@given(st.data(), shapes(0, 3, 0, 4), st.sampled_from(["constant", "edge", "reflect",
                                                       "symmetric", "wrap"]))
def test_pad_any_shape_and_width(data, shape, mode):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    widths = np.array([(data.draw(st.integers(0, 9)), data.draw(st.integers(0, 9)))
                       for _ in shape], int).reshape(len(shape), 2)
    if mode != "constant" and any(d == 0 and (b or a) for d, (b, a) in zip(shape, widths)):
        with pytest.raises(ValueError, match="padding to the empty axis"):
            fnp.pad(x, widths, mode=mode)
        return
    assert_allclose(fnp.pad(x, widths, mode=mode), jnp.pad(x, widths, mode=mode),
                    what=f"pad {mode} {widths}")


@given(st.data(), shapes(0, 3, 0, 4))
def test_reshape_split_roll_any_shape(data, shape):
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    perm = data.draw(st.permutations(range(len(shape))))
    target = tuple(data.draw(st.permutations(shape)))
    assert_allclose(fnp.reshape(x, target), x.reshape(target), what="reshape")
    assert_allclose(fnp.transpose(x, perm), np.transpose(x, perm), what="transpose")
    if shape:
        axis = data.draw(st.integers(-len(shape), len(shape) - 1))
        cuts = data.draw(st.lists(st.integers(-5, 6), max_size=3))
        assert_allclose(fnp.split(x, cuts, axis), np.split(x, cuts, axis), what="split")
        sections = data.draw(st.integers(1, 5))
        assert_allclose(fnp.array_split(x, sections, axis), np.array_split(x, sections, axis),
                        what="array_split")
        shift = data.draw(st.integers(-9, 9))
        assert_allclose(fnp.roll(x, shift, axis), np.roll(x, shift, axis), what="roll")
    assert_allclose(fnp.roll(x, 3), np.roll(x, 3), what="roll flat")
    assert_allclose(fnp.flip(x), np.flip(x), what="flip")


@given(st.data(), shapes(2, 3, 0, 4))
def test_diagonals_any_shape(data, shape):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    k = data.draw(st.integers(-5, 5))
    a1, a2 = data.draw(st.permutations(range(len(shape))))[:2]
    assert_allclose(fnp.diagonal(x, k, a1, a2), np.diagonal(x, k, a1, a2), what="diagonal")
    assert_allclose(fnp.tril(x, k), np.tril(x, k), what="tril")
    assert_allclose(fnp.triu(x, k), np.triu(x, k), what="triu")
    v = x.reshape(-1)[: shape[-1]]
    assert_allclose(fnp.diag(v, k), np.diag(v, k), what="diag")


# --- errors -------------------------------------------------------------------------------------


def test_errors():
    x = fnp.ones((2, 3), np.float32)
    cases = [
        (ValueError, r"reshape: cannot reshape an array of shape \(2, 3\) \(6 elements\) into "
                     r"shape \(4, -1\)", lambda: fnp.reshape(x, (4, -1))),
        (ValueError, r"reshape: cannot reshape.*\(-1, -1\)", lambda: fnp.reshape(x, (-1, -1))),
        (NotImplementedError, r"reshape: order='A' is not implemented",
         lambda: fnp.reshape(x, 6, order="A")),
        (TypeError, r"transpose: axes \(0,\) don't match an array of rank 2",
         lambda: fnp.transpose(x, (0,))),
        (TypeError, r"transpose: repeated axis", lambda: fnp.transpose(x, (0, -2))),
        (ValueError, r"swapaxes: axis 2 is out of bounds for an array of rank 2",
         lambda: fnp.swapaxes(x, 0, 2)),
        (ValueError, r"moveaxis: source and destination must have the same number",
         lambda: fnp.moveaxis(x, (0, 1), 0)),
        (ValueError, r"squeeze: cannot squeeze axis 1 of size 3", lambda: fnp.squeeze(x, 1)),
        (ValueError, r"expand_dims: axis 3 is out of bounds", lambda: fnp.expand_dims(x, 3)),
        (ValueError, r"broadcast_to: cannot broadcast shape \(2, 3\) to \(2, 4\)",
         lambda: fnp.broadcast_to(x, (2, 4))),
        (ValueError, r"broadcast_arrays: operands could not be broadcast together with shapes "
                     r"\(2, 3\) \(4,\)", lambda: fnp.broadcast_arrays(x, np.ones(4))),
        (TypeError, r"concatenate: array dimensions except the concatenation axis \(0\) must "
                     r"match, but along dimension 1 the array at index 0 has size 3 and the "
                     r"array at index 1 has size 4",
         lambda: fnp.concatenate([x, fnp.ones((2, 4))])),
        (ValueError, r"concatenate: zero-dimensional arrays cannot be concatenated",
         lambda: fnp.concatenate([1.0, 2.0])),
        (TypeError, r"concatenate: all arrays must have the same number of dimensions",
         lambda: fnp.concatenate([x, fnp.ones(3)])),
        (ValueError, r"concatenate: need at least one array", lambda: fnp.concatenate([])),
        (ValueError, r"stack: all input arrays must have the same shape",
         lambda: fnp.stack([x, fnp.ones((3, 2))])),
        (ValueError, r"split: an axis of size 3 does not divide into 2 equal sections",
         lambda: fnp.split(x, 2, axis=1)),
        (ValueError, r"array_split: number of sections must be positive",
         lambda: fnp.array_split(x, 0)),
        (ValueError, r"tile: negative repetitions", lambda: fnp.tile(x, (-1, 2))),
        (ValueError, r"repeat: 2 repeat counts for an axis of size 3",
         lambda: fnp.repeat(x, np.array([1, 2]), axis=1)),
        (ValueError, r"repeat: repeats must be non-negative", lambda: fnp.repeat(x, -1)),
        (fx.core.ConcretizationTypeError, r"repeat: repeats are traced.*total_repeat_length",
         lambda: fx.vmap(lambda r: fnp.repeat(x, r, axis=0))(np.array([[1, 2]] * 2))),
        (ValueError, r"pad: pad widths must be non-negative", lambda: fnp.pad(x, -1)),
        (ValueError, r"pad: pad_width .* does not fit an array of rank 2",
         lambda: fnp.pad(x, ((1, 1),) * 3)),
        (ValueError, r"pad: cannot apply 'edge' padding to the empty axis 0",
         lambda: fnp.pad(fnp.ones((0, 2)), 1, mode="edge")),
        (ValueError, r"fliplr: input must be at least 2-D", lambda: fnp.fliplr(fnp.ones(3))),
        (ValueError, r"flip: axis 2 is out of bounds", lambda: fnp.flip(x, 2)),
        (ValueError, r"roll: shift \(1, 2\) and axis \(0, 1, 0\) don't match",
         lambda: fnp.roll(x, (1, 2), (0, 1, 0))),
        (ValueError, r"tril: input must be at least 2-D", lambda: fnp.tril(fnp.ones(3))),
        (ValueError, r"diagonal: needs an array of at least 2 dimensions",
         lambda: fnp.diagonal(fnp.ones(3))),
        (ValueError, r"diagonal: axis1 and axis2 must differ", lambda: fnp.diagonal(x, 0, 1, 1)),
        (ValueError, r"diag: input must be 1-D or 2-D", lambda: fnp.diag(fnp.ones((1, 2, 3)))),
        (TypeError, r"reshape: shape must be static",
         lambda: fx.vmap(lambda n: fnp.reshape(x, (n, -1)))(np.array([2, 3]))),
    ]
    for exc, pattern, thunk in cases:
        with pytest.raises(exc, match=pattern):
            thunk()


@pytest.mark.parametrize("order", ["A", "K", "c", "f", None, "X"])
def test_unsupported_orders_raise_as_jax(order):
    x = np.arange(6.0).reshape(2, 3)
    calls = [lambda lib, v: lib.reshape(v, (3, 2), order=order),
             lambda lib, v: lib.ravel(v, order=order),
             lambda lib, v: v.reshape((3, 2), order=order),
             lambda lib, v: v.ravel(order=order), lambda lib, v: v.flatten(order=order)]
    for call in calls:
        with pytest.raises(Exception) as want:
            call(jnp, jnp.asarray(x))
        with pytest.raises(want.type, match=repr(order)):
            call(fnp, fnp.asarray(x))


def test_fortran_order_under_jit_is_bitwise_jax():
    x = np.random.default_rng(4).standard_normal((3, 4, 5)).astype(np.float32)
    f = lambda lib: lambda v: (lib.reshape(v, (5, 12), order="F"), lib.ravel(v, order="F"))
    for got, want in zip(fx.jit(f(fnp))(x), jax.jit(f(jnp))(x)):
        np.testing.assert_array_equal(np.asarray(got).view(np.uint32),
                                      np.asarray(want).view(np.uint32))
