"""Tests of fx.numpy's array creation functions against jax.numpy, both in x64 mode (the
default-mode defaults are tested on their own, marked ``default_mode``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from harness import OpCase, assert_allclose, check_grads_f64, check_jvp, check_vjp, check_vmap
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.numpy import creation
from fx.test_util import shapes

DTYPES = [np.bool_, np.int32, np.int64, np.uint32, np.float16, ml_dtypes.bfloat16, np.float32,
          np.float64]
DT_IDS = [np.dtype(d).name for d in DTYPES]

# name -> calls (fx and jax take the same arguments; every dtype is explicit)
CALLS = {
    "zeros": [((3,), {}), ((2, 0), {}), ((), {}), (4, {})],
    "ones": [((3,), {}), ((0,), {}), ((2, 3, 1), {})],
    "empty": [((2, 3), {})],  # compared with zeros: fx's empty is zero-filled
    "full": [((2, 3), {"fill_value": 7}), ((3,), {"fill_value": -1.5}), ((), {"fill_value": 1})],
    "eye": [(3, {}), (3, {"M": 4, "k": 1}), (4, {"M": 3, "k": -2}), (0, {}), (2, {"k": 5})],
    "identity": [(3, {}), (1, {})],
    "tri": [(3, {}), (3, {"M": 5, "k": -1}), (4, {"M": 2, "k": 1}), (0, {"M": 2})],
}


def _jax(name):
    return jnp.zeros if name == "empty" else getattr(jnp, name)


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_filled_arrays_match_jax(name, dtype):
    for arg, kw in CALLS[name]:
        got = getattr(fnp, name)(arg, dtype=dtype, **kw)
        want = _jax(name)(arg, dtype=dtype, **kw)
        assert_allclose(got, want, what=f"{name}({arg}, {kw})")


LIKE_INPUTS = [np.arange(6, dtype=np.float64).reshape(2, 3), np.array(3, np.int32),
               np.zeros((0, 2), np.float16)]


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
@pytest.mark.parametrize("dtype", [None, np.int32, np.float16, np.bool_])
@pytest.mark.parametrize("shape", [None, (4,), (2, 0)])
def test_like_functions_match_jax(name, dtype, shape):
    fx_fn, jax_fn = getattr(fnp, name), getattr(jnp, name.replace("empty", "zeros"))
    extra = (2.5,) if name == "full_like" else ()
    for x in LIKE_INPUTS:
        got = fx_fn(fnp.asarray(x), *extra, dtype=dtype, shape=shape)
        want = jax_fn(jnp.asarray(x), *extra, dtype=dtype, shape=shape)
        assert_allclose(got, want, what=f"{name}({x.dtype}{x.shape}, {dtype}, {shape})")
        assert got.weak_type == want.weak_type


def test_weak_types_follow_jax():
    assert fnp.full((2,), 1.5).weak_type and jnp.full((2,), 1.5).weak_type
    assert not fnp.full((2,), 1.5, dtype=np.float32).weak_type
    weak = fnp.asarray(1.0)
    for name in ("zeros_like", "ones_like", "full_like"):
        extra = (3,) if name == "full_like" else ()
        assert getattr(fnp, name)(weak, *extra).weak_type
        assert not getattr(fnp, name)(weak, *extra, dtype=np.float32).weak_type
    assert fnp.asarray(2).weak_type and not fnp.asarray(np.int32(2)).weak_type


def test_full_broadcasts_array_fill():
    fill = np.array([1.0, 2.0, 3.0])
    assert_allclose(fnp.full((2, 3), fnp.asarray(fill)), jnp.full((2, 3), fill))
    assert_allclose(fnp.full((2, 3), fill, dtype=np.int32), jnp.full((2, 3), fill, np.int32))
    with pytest.raises(ValueError, match=r"fx.numpy.full: cannot broadcast shape \(4,\) to "
                                         r"\(2, 3\)"):
        fnp.full((2, 3), np.ones(4))


ARANGE = [(5,), (1, 6), (0, 10, 3), (10, 0, -3), (3, 1), (0.5, 3), (0, 1, 0.1), (-1, 1, 0.25),
          (0, 5, 1.5), (2.5,), (1, 10, 2), (0,), (-3, 3)]


@pytest.mark.parametrize("args", ARANGE, ids=str)
def test_arange_matches_jax(args):
    for dtype in (np.int32, np.int64, np.uint32, np.float16, np.float32, np.float64):
        if np.dtype(dtype).kind == "u" and min(args) < 0 and not (len(args) == 3 and
                                                                   args[2] < 0 <= args[1]):
            continue  # negative values wrap: unspecified
        got, want = fnp.arange(*args, dtype=dtype), jnp.arange(*args, dtype=dtype)
        assert_allclose(got, want, what=f"arange{args} {np.dtype(dtype).name}")
    # Without a dtype: the mode's defaults, as jax's (int64 / float64 in x64 mode).
    got, want = fnp.arange(*args), jnp.arange(*args)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_arange_accepts_concrete_arrays_and_rejects_traced_bounds():
    assert_allclose(fnp.arange(fnp.asarray(np.int32(4))), np.arange(4, dtype=np.int32))
    with pytest.raises(TypeError, match="fx.numpy.arange: bounds must be concrete numbers"):
        fx.make_jaxpr(lambda n: fnp.arange(n))(3)
    with pytest.raises(ValueError, match="fx.numpy.arange: step must not be zero"):
        fnp.arange(0, 5, 0)


LINSPACE = [
    (0, 1, {"num": 5}), (0, 1, {"num": 5, "endpoint": False}), (-2.5, 7, {"num": 7}),
    (3, -3, {"num": 4}), (1, 2, {"num": 1}), (1, 2, {"num": 0}),
    (0, 1, {"num": 1, "endpoint": False}),
    (0, 12, {"num": 7, "dtype": np.int32}), (-4, 4, {"num": 5, "dtype": np.int64}),
    (0, 1, {"num": 4, "dtype": np.float64}), (0, 1, {"num": 3, "dtype": np.float16}),
]


@pytest.mark.parametrize("start,stop,kw", LINSPACE, ids=str)
def test_linspace_matches_jax(start, stop, kw):
    kw = dict(kw)
    kw.setdefault("dtype", np.float32)
    assert_allclose(fnp.linspace(start, stop, **kw), jnp.linspace(start, stop, **kw),
                    what="linspace")
    got = fnp.linspace(start, stop, retstep=True, **kw)
    want = jnp.linspace(start, stop, retstep=True, **kw)
    assert_allclose(got[0], want[0], what="linspace values")
    assert_allclose(got[1], want[1], what="linspace step")


@pytest.mark.default_mode
def test_linspace_default_dtype_and_integer_floor():
    assert fnp.linspace(0, 1, 3).dtype == np.float32
    # Integer results round down (numpy 2 and jax), not toward zero.
    np.testing.assert_array_equal(np.asarray(fnp.linspace(-2.5, 7, 7, dtype=np.int32)),
                                  [-3, -1, 0, 2, 3, 5, 7])


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_linspace_array_endpoints(axis):
    start, stop = np.array([0.0, 1.0]), np.array([[1.0], [3.0], [-5.0]])
    got = fnp.linspace(start, stop, 4, axis=axis, dtype=np.float64)
    assert_allclose(got, jnp.linspace(start, stop, 4, axis=axis, dtype=np.float64))
    step = fnp.linspace(start, stop, 4, retstep=True, dtype=np.float64)[1]
    assert_allclose(step, jnp.linspace(start, stop, 4, retstep=True, dtype=np.float64)[1])


def test_linspace_errors():
    with pytest.raises(ValueError, match="fx.numpy.linspace: num must be non-negative, got -1"):
        fnp.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="fx.numpy.linspace: num must be an integer, got 2.5"):
        fnp.linspace(0, 1, 2.5)
    with pytest.raises(ValueError, match="fx.numpy.linspace: axis 2 is out of bounds"):
        fnp.linspace(0, 1, 3, axis=2)
    with pytest.raises(ValueError, match=r"fx.numpy.linspace: operands could not be broadcast "
                                         r"together with shapes \(2,\) \(3,\)"):
        fnp.linspace(np.zeros(2), np.ones(3), 4)


# --- array / asarray ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_array_with_explicit_dtype_matches_jax(dtype):
    for data in ([[1, 2], [3, 4]], [0.5, 1.5], np.array([1.0, 2.5]), 3, [True, False], [[]]):
        got, want = fnp.array(data, dtype=dtype), jnp.array(data, dtype=dtype)
        assert_allclose(got, want, what=f"array({data!r}, {np.dtype(dtype).name})")
        assert_allclose(fnp.asarray(data, dtype=dtype), want, what="asarray")


@pytest.mark.parametrize("ndmin", [0, 1, 3])
def test_array_ndmin(ndmin):
    for data in (np.float32(2.0), np.ones(2, np.float32), np.ones((2, 3), np.float32)):
        assert_allclose(fnp.array(data, ndmin=ndmin), jnp.array(data, ndmin=ndmin))


@pytest.mark.default_mode
def test_asarray_passes_fx_arrays_through():
    x = fnp.ones(3)
    assert fnp.asarray(x) is x
    y = fnp.asarray(x, dtype=np.int32)
    assert y.dtype == np.int32 and x.dtype == np.float32


def test_array_of_nested_fx_values_stacks():
    a, b = fnp.asarray(np.array([1.0, 2.0], np.float32)), np.array([3.0, 4.0], np.float64)
    got = fnp.array([a, b])
    assert_allclose(got, jnp.array([jnp.asarray(np.asarray(a)), b]))
    got = fnp.array([[fnp.asarray(np.int32(1)), 2], [3, 4]])
    want = jnp.array([[jnp.asarray(np.int32(1)), 2], [3, 4]])
    assert got.dtype == want.dtype and got.shape == (2, 2)


@given(shapes(max_dims=3, max_side=3), st.sampled_from(DTYPES))
def test_array_round_trips_numpy_data(shape, dtype):
    host = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape).astype(dtype)
    out = fnp.array(host)
    assert out.shape == shape and out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(np.asarray(out), host)


@pytest.mark.parametrize("bad,err,message", [
    ([[1, 2], [3]], TypeError, "fx.numpy.asarray: cannot convert ragged or non-numeric data"),
    ({"a": 1}, TypeError, "fx.numpy.asarray: cannot convert ragged or non-numeric data"),
    (["a"], TypeError, "fx does not support dtype <U1"),
])
def test_array_rejects_bad_data(bad, err, message):
    with pytest.raises(err, match=message):
        fnp.array(bad)


def test_ragged_fx_values_are_rejected():
    with pytest.raises(ValueError, match=r"fx.numpy.asarray: ragged nested sequence with shapes"):
        fnp.array([fnp.ones(2), fnp.ones(3)])


@pytest.mark.parametrize("call,err,message", [
    (lambda: fnp.zeros((2, -1)), ValueError, r"fx.numpy.zeros: negative dimension in shape"),
    (lambda: fnp.ones((2, None)), TypeError, r"fx.numpy.ones: shape must be a tuple of ints"),
    (lambda: fnp.zeros(2.5), TypeError, r"fx.numpy.zeros: shape must be a tuple of ints"),
    (lambda: fnp.full(-1, 0.0), ValueError, r"fx.numpy.full: negative dimension"),
    (lambda: fnp.eye(-1), ValueError, r"fx.numpy.eye: negative dimension in shape \(-1, -1\)"),
    (lambda: fnp.tri(2, -3), ValueError, r"fx.numpy.tri: negative dimension"),
    (lambda: fnp.zeros(2, dtype="U3"), TypeError, "fx does not support dtype <U3"),
])
def test_shape_and_dtype_errors(call, err, message):
    with pytest.raises(err, match=message):
        call()


# --- defaults ------------------------------------------------------------------------------------


@pytest.mark.default_mode
def test_default_dtypes():
    # The default mode, as jax's: defaults are float32 / int32 and 64-bit data is narrowed.
    for name in ("zeros", "ones", "empty"):
        assert getattr(fnp, name)(2).dtype == np.float32
    assert fnp.eye(2).dtype == fnp.identity(2).dtype == fnp.tri(2).dtype == np.float32
    assert fnp.full(2, 3).dtype == np.int32 and fnp.full(2, 3.0).dtype == np.float32
    assert fnp.array([1.0]).dtype == np.float32 and fnp.array([1]).dtype == np.int32
    assert fnp.array(np.array([1.0])).dtype == np.float32
    with fx.enable_x64():
        assert fnp.array(np.array([1.0])).dtype == np.float64 == fnp.zeros(2).dtype


def test_traced_creation_uses_no_constants():
    # Filled arrays are broadcast scalars and ranges are iotas: no constant buffers.
    def f(x):
        return (x + fnp.arange(3.0) + fnp.zeros(3) + fnp.ones(3) + fnp.full(3, 2.0)
                + fnp.linspace(0.0, 1.0, 3) + fnp.eye(3)[0] + fnp.tri(3)[1])

    closed = fx.make_jaxpr(f)(fnp.ones(3))
    assert closed.consts == []


# --- transformations -----------------------------------------------------------------------------


def test_gradients_through_creation():
    rng = np.random.default_rng(0)
    cases = [
        OpCase("array", lambda x: fnp.array([x, 2 * x, fnp.sin(x)]),
               lambda x: jnp.array([x, 2 * x, jnp.sin(x)]), None),
        OpCase("full", lambda x: fnp.full((2, 3), x), lambda x: jnp.full((2, 3), x), None),
        OpCase("full_like", lambda x: fnp.full_like(np.zeros(3), x) * x,
               lambda x: jnp.full_like(np.zeros(3), x) * x, None),
        OpCase("zeros_like", lambda x: fnp.zeros_like(x) + fnp.ones_like(x) * x,
               lambda x: jnp.zeros_like(x) + jnp.ones_like(x) * x, None),
        OpCase("linspace", lambda a, b: fnp.linspace(a, b, 5, dtype=np.float64),
               lambda a, b: jnp.linspace(a, b, 5, dtype=np.float64), None, diff_argnums=(0, 1)),
        OpCase("linspace_noend", lambda a, b: fnp.linspace(a, b, 4, endpoint=False,
                                                           dtype=np.float64),
               lambda a, b: jnp.linspace(a, b, 4, endpoint=False, dtype=np.float64), None,
               diff_argnums=(0, 1)),
    ]
    for case in cases:
        nargs = 2 if case.name.startswith("linspace") else 1
        args = [np.float64(0.7), np.float64(-1.3)][:nargs]
        check_jvp(case, args, rng)
        check_vjp(case, args, rng)
        check_grads_f64(case, args)


@pytest.mark.default_mode
def test_vmap_through_creation():
    cases = [
        (OpCase("full", lambda s: fnp.full((3,), s), lambda s: jnp.full((3,), s), None), (0,)),
        (OpCase("array", lambda s: fnp.array([s, 1.0, s * s]),
                lambda s: jnp.array([s, 1.0, s * s]), None), (0,)),
        (OpCase("zeros_like", lambda s: fnp.zeros_like(s) + s, lambda s: jnp.zeros_like(s) + s,
                None), (0,)),
        (OpCase("linspace", lambda a, b: fnp.linspace(a, b, 4),
                lambda a, b: jnp.linspace(a, b, 4, dtype=np.float32), None), (0, None)),
    ]
    for case, in_axes in cases:
        args = [np.array([0.5, -1.0, 2.0], np.float32), np.float32(3.0)][: len(in_axes)]
        check_vmap(case, args, in_axes)


def test_coverage_of_creation_functions():
    tested = set(CALLS) | {"zeros_like", "ones_like", "empty_like", "full_like", "arange",
                           "linspace", "array", "asarray"}
    tested |= {"logspace", "geomspace", "fromfunction"}  # in test_grids_and_bit_packing.py
    tested |= {"copy"}  # in test_joining_editing_and_selection.py
    assert set(creation.__all__) == tested


def test_jvp_of_creation_has_zero_tangent():
    # Nothing flows from the shape argument; tangents of created constants are zero.
    y, t = fx.jvp(lambda x: fnp.ones(3) * x + lax.full((3,), 1.0, np.float32), (2.0,), (1.0,))
    np.testing.assert_array_equal(np.asarray(t), [1.0, 1.0, 1.0])
    jy, jt = jax.jvp(lambda x: jnp.ones(3, np.float32) * x + 1.0, (2.0,), (1.0,))
    np.testing.assert_allclose(np.asarray(y), np.asarray(jy))
