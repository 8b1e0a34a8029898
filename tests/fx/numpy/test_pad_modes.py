"""fx.numpy.pad against jax.numpy.pad: every mode (constant, edge, wrap, reflect and symmetric
with even and odd reflection, maximum, minimum, mean, median with stat_length, linear_ramp with
end_values, empty, a function), pads wider than the array, every accepted shape of
constant_values/stat_length/end_values, jit, vmap, gradients and jax's error types.

Values are bitwise jax's, except where jax's own float32 arithmetic is not correctly rounded
on CPU (XLA divides by an approximate reciprocal): ``mean`` of floats and ``linear_ramp``
agree to a few ulps (integer ramps, rounded down, to 1), and exactly where the divisions are
exact (power-of-two widths)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fx
import fx.numpy as fnp

WIDTHS = [((2, 1), (1, 3)), ((7, 9), (0, 5)), 2, (0, 4), ((1, 0),)]
RAGGED = {"mean", "linear_ramp"}  # modes whose float values may differ by ulps (see above)

MODES = [
    ("constant", {}), ("constant", {"constant_values": 2.5}),
    ("constant", {"constant_values": ((1, -2), (3, 4))}), ("edge", {}), ("wrap", {}),
    ("reflect", {}), ("symmetric", {}), ("reflect", {"reflect_type": "odd"}),
    ("symmetric", {"reflect_type": "odd"}), ("maximum", {}), ("minimum", {"stat_length": 2}),
    ("maximum", {"stat_length": ((1, 2), (3, 1))}), ("mean", {}), ("mean", {"stat_length": 3}),
    ("median", {}), ("median", {"stat_length": ((1, 2), (4, 1))}), ("minimum", {}),
    ("linear_ramp", {}), ("linear_ramp", {"end_values": 5}),
    ("linear_ramp", {"end_values": ((1, -2), (3, 4))}), ("empty", {}),
]


def _arrays():
    rng = np.random.default_rng(0)
    xf = (rng.standard_normal((3, 4)) * 3).astype(np.float32)
    return {"f32": xf, "i32": np.round(xf * 3).astype(np.int32), "f32_col": xf[:, :1],
            "i32_row": np.round(xf[:1] * 3).astype(np.int32), "f64": xf.astype(np.float64)}


def _assert_like_jax(got, want, mode: str, what: str):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    if mode in RAGGED and got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(got.dtype).eps, atol=1e-6,
                                   err_msg=what)
    elif mode == "linear_ramp":
        np.testing.assert_allclose(got, want, rtol=0, atol=1, err_msg=what)
    else:
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8), err_msg=what)


@pytest.mark.parametrize("mode,kw", MODES, ids=[f"{m}-{sorted(k.items())}" for m, k in MODES])
def test_values_match_jax(mode, kw):
    for name, x in _arrays().items():
        for widths in WIDTHS:
            want = jnp.pad(x, widths, mode=mode, **kw)
            got = fnp.pad(x, widths, mode=mode, **kw)
            _assert_like_jax(got, want, mode, f"{name} {widths}")


def test_linear_ramp_is_bitwise_where_divisions_are_exact():
    x = np.array([[1.5, -2.25, 3.0], [0.5, 7.0, -1.0]], np.float32)
    for widths, ends in [(((2, 4), (8, 1)), 5.0), (((4, 4), (2, 2)), ((1, -2), (3, 4)))]:
        for dt in (np.float32, np.int32):
            want = np.asarray(jnp.pad(x.astype(dt), widths, "linear_ramp", end_values=ends))
            got = np.asarray(fnp.pad(x.astype(dt), widths, "linear_ramp", end_values=ends))
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("mode,kw", MODES, ids=[f"{m}-{sorted(k.items())}" for m, k in MODES])
def test_jit_and_vmap_match_eager_and_jax(mode, kw):
    x = _arrays()["f32"]
    widths = ((2, 1), (6, 3))
    f = lambda lib: lambda v: lib.pad(v, widths, mode=mode, **kw)  # noqa: E731
    eager = fnp.pad(x, widths, mode=mode, **kw)
    if mode == "mean":  # a sum: jit and eager may add in different orders
        np.testing.assert_allclose(np.asarray(fx.jit(f(fnp))(x)), np.asarray(eager), rtol=1e-6)
    else:
        np.testing.assert_array_equal(np.asarray(fx.jit(f(fnp))(x)), np.asarray(eager))
    batch = np.stack([x, 2 * x, -x])
    one_axis = ((6, 3),)  # vmap pads each row (a vector) of the batch
    g = lambda lib: lambda v: lib.pad(v, one_axis, mode=mode, **kw)  # noqa: E731
    _assert_like_jax(fx.vmap(g(fnp))(batch), jax.vmap(g(jnp))(batch), mode, "vmap")


DIFFERENTIABLE = [(m, k) for m, k in MODES if m != "empty"]


@pytest.mark.parametrize("mode,kw", DIFFERENTIABLE,
                         ids=[f"{m}-{sorted(k.items())}" for m, k in DIFFERENTIABLE])
def test_gradients_match_jax(mode, kw):
    x = _arrays()["f64"]
    widths = ((2, 1), (6, 3))
    loss = lambda lib: lambda v: lib.sum(lib.sin(lib.pad(v, widths, mode=mode, **kw)))  # noqa
    got = fx.grad(loss(fnp))(x)
    want = jax.grad(loss(jnp))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)


def test_traced_constant_values_are_differentiable():
    x = _arrays()["f64"]
    for c in (np.float64(1.5), np.array([0.5, -1.0]), np.array([[1.0, 2.0], [3.0, 4.0]])):
        loss = lambda lib: lambda v, c: lib.sum(lib.pad(v, 2, constant_values=c) ** 2)  # noqa
        got = fx.jit(fx.grad(loss(fnp), (0, 1)))(x, c)
        want = jax.grad(loss(jnp), (0, 1))(x, c)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)


@pytest.mark.parametrize("values", [3, [3], (1, 2), [[1, 2]], [[1, 2], [3, 4]], [[1], [2]],
                                    [[7]], np.array([1.5, -2.5]), [1, 2, 3], [[1, 2, 3]],
                                    [[1, 2], [3, 4], [5, 6]], [[[1, 2]]]])
def test_constant_values_of_every_shape(values):
    x = _arrays()["f32"]
    try:
        want = jnp.pad(x, ((1, 2), (2, 1)), constant_values=values)
    except (ValueError, TypeError) as e:
        with pytest.raises(type(e)):
            fnp.pad(x, ((1, 2), (2, 1)), constant_values=values)
        return
    got = fnp.pad(x, ((1, 2), (2, 1)), constant_values=values)
    _assert_like_jax(got, want, "constant", str(values))


@pytest.mark.parametrize("name,value", [
    ("stat_length", 2), ("stat_length", (3,)), ("stat_length", (1, 2)),
    ("stat_length", ((1, 2),)), ("stat_length", ((1, 2), (3, 4))), ("stat_length", (1, 2, 3)),
    ("stat_length", ((1, 2), (3, 4), (5, 6))), ("stat_length", 0), ("stat_length", 100),
    ("end_values", (1.5,)), ("end_values", ((1, 2),)), ("end_values", (1, 2, 3)),
])
def test_stat_length_and_end_values_shapes(name, value):
    x = _arrays()["f32"]
    mode = "mean" if name == "stat_length" else "linear_ramp"
    try:
        want = jnp.pad(x, ((1, 2), (2, 1)), mode, **{name: value})
    except (ValueError, TypeError) as e:
        with pytest.raises(type(e)):
            fnp.pad(x, ((1, 2), (2, 1)), mode, **{name: value})
        return
    _assert_like_jax(fnp.pad(x, ((1, 2), (2, 1)), mode, **{name: value}), want, mode, name)


def _fill_ends(row, pad_width, iaxis, kwargs):
    before, after = pad_width
    row = row.at[:before].set(kwargs.get("before_value", -1))
    return row.at[len(row) - after:].set(kwargs.get("after_value", 9))


def test_function_mode():
    x = _arrays()["f32"]
    for kw in ({}, {"before_value": 3.0, "after_value": -7.0}):
        want = jnp.pad(x, ((1, 2), (3, 1)), _fill_ends, **kw)
        got = fnp.pad(x, ((1, 2), (3, 1)), _fill_ends, **kw)
        _assert_like_jax(got, want, "function", str(kw))
        got = fx.jit(lambda v, kw=kw: fnp.pad(v, ((1, 2), (3, 1)), _fill_ends, **kw))(x)
        _assert_like_jax(got, want, "function", f"jit {kw}")


def test_rank_zero_is_returned_unchanged():
    for mode in ("constant", "reflect", "mean"):
        got = fnp.pad(np.float32(3.0), 2, mode)
        assert got.shape == () and float(got) == float(jnp.pad(np.float32(3.0), 2, mode))


@pytest.mark.parametrize("name,call", [
    ("unknown mode", lambda lib, x: lib.pad(x, 1, "bogus")),
    ("kwarg for another mode", lambda lib, x: lib.pad(x, 1, "edge", constant_values=1)),
    ("stat_length in constant mode", lambda lib, x: lib.pad(x, 1, stat_length=1)),
    ("reflect_type in wrap mode", lambda lib, x: lib.pad(x, 1, "wrap", reflect_type="odd")),
    ("negative width", lambda lib, x: lib.pad(x, -1)),
    ("float width", lambda lib, x: lib.pad(x, 1.5)),
    ("width of the wrong shape", lambda lib, x: lib.pad(x, ((1, 2), (3, 4), (5, 6)))),
    ("ragged widths", lambda lib, x: lib.pad(x, ((1, 2), (3,)))),
    ("zero stat_length", lambda lib, x: lib.pad(x, 1, "maximum", stat_length=0)),
    ("edge of an empty axis", lambda lib, x: lib.pad(x[:0], 1, "edge")),
    ("wrap of an empty axis", lambda lib, x: lib.pad(x[:0], 1, "wrap")),
    ("reflect of an empty axis", lambda lib, x: lib.pad(x[:0], 1, "reflect")),
    ("a list", lambda lib, x: lib.pad([1.0, 2.0], 1)),
])
def test_errors_as_jax(name, call):
    x = _arrays()["f32"]
    with pytest.raises(Exception) as want:
        call(jnp, jnp.asarray(x))
    with pytest.raises(want.type, match="pad"):
        call(fnp, fnp.asarray(x))


def test_empty_axes_pad_in_constant_and_empty_modes():
    x = np.zeros((0, 3), np.float32)
    for mode in ("constant", "empty"):
        _assert_like_jax(fnp.pad(x, ((1, 2), (0, 1)), mode), jnp.pad(x, ((1, 2), (0, 1)), mode),
                         mode, "empty axis")


def test_traced_pad_width_is_refused():
    with pytest.raises(fx.ConcretizationTypeError, match="pad_width must be static"):
        fx.jit(lambda x, w: fnp.pad(x, w))(np.ones(3, np.float32), np.int32(1))
