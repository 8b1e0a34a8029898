"""vmap against jax.vmap and against a Python loop: in_axes/out_axes (int, None, negative,
pytree prefixes), nested vmaps, axis_size, error messages, the jaxprs it builds, and its
compositions with grad, jvp, vjp and jit.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_allclose
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.numpy as fnp

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 3))
B = RNG.standard_normal((3, 4))
C = RNG.standard_normal(3)

def _loop(f, args, in_axes, size):
    """``f`` applied per example and stacked on axis 0 (the reference for out_axes=0)."""
    outs = []
    for i in range(size):
        row = [a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)]
        outs.append(f(*row))
    return jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *outs)


# --- in_axes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "in_axes, args",
    [
        ((0, 0), (A, A)),
        ((0, 1), (A, B)),
        ((1, 0), (B, A)),
        ((-1, -2), (B, A)),
        ((0, None), (A, C)),
        ((None, 1), (C, B)),
    ],
)
def test_in_axes_int_none_negative(in_axes, args):
    def f(np_):
        return lambda x, y: np_.sin(x) * y + 1.0

    got = fx.vmap(f(fnp), in_axes=in_axes)(*args)
    assert_allclose(got, jax.vmap(f(jnp), in_axes=in_axes)(*args), what="vs jax")
    assert_allclose(got, _loop(f(np), args, in_axes, 4), what="vs loop")


def test_in_axes_list_is_a_tuple_and_single_int_applies_to_all():
    f = lambda x, y: x * y  # noqa: E731
    assert_allclose(fx.vmap(f, in_axes=[0, None])(A, C), A * C, what="list")
    assert_allclose(fx.vmap(f, in_axes=1)(B, B), (B * B).T, what="one int for all")


def test_in_axes_pytree_prefix():
    d = {"a": B, "b": A, "c": (C, A)}

    def f(np_):
        return lambda d, s: np_.sum(d["a"] * d["b"] + d["c"][0] * d["c"][1]) * s

    in_axes = ({"a": 1, "b": 0, "c": (None, 0)}, None)
    got = fx.vmap(f(fnp), in_axes=in_axes)(d, np.float64(2.0))
    want = jax.vmap(f(jnp), in_axes=in_axes)(d, np.float64(2.0))
    assert_allclose(got, want, what="dict/tuple prefix")
    # A prefix: one entry for a whole subtree.
    got = fx.vmap(f(fnp), in_axes=({"a": 1, "b": 0, "c": 0}, None))(
        {"a": B, "b": A, "c": (A, A)}, np.float64(2.0))
    want = jax.vmap(f(jnp), in_axes=({"a": 1, "b": 0, "c": 0}, None))(
        {"a": B, "b": A, "c": (A, A)}, np.float64(2.0))
    assert_allclose(got, want, what="subtree prefix")


@pytest.mark.default_mode  # float32 defaults
def test_axis_size_for_functions_without_batched_inputs():
    got = fx.vmap(lambda: fnp.ones(2), axis_size=5)()
    assert_allclose(got, np.ones((5, 2), np.float32), what="no arguments")
    got = fx.vmap(lambda c: c * 2.0, in_axes=None, axis_size=3)(C)
    assert_allclose(got, jax.vmap(lambda c: c * 2.0, in_axes=None, axis_size=3)(C), what="None")


def test_zero_size_batch_and_constant_outputs():
    assert fx.vmap(fnp.sin)(np.ones((0, 3))).shape == (0, 3)
    got = fx.vmap(lambda a: np.float64(1.0))(A)
    assert_allclose(got, jax.vmap(lambda a: np.float64(1.0))(A), what="constant broadcast")


@given(
    shape=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    data=st.data(),
)
def test_in_axes_out_axes_property(shape, data):
    # For an elementwise function, vmap over any axes is a transposition of the plain result.
    rank = len(shape)
    x_ax = data.draw(st.integers(-rank, rank - 1), label="x_ax")
    y_ax = data.draw(st.one_of(st.none(), st.integers(-rank, rank - 1)), label="y_ax")
    out_ax = data.draw(st.integers(-rank, rank - 1), label="out_ax")
    x = RNG.standard_normal(shape)
    xm = np.moveaxis(x, x_ax, 0)  # batch first
    if y_ax is None:
        y = RNG.standard_normal(xm.shape[1:])
        ym = y
    else:
        ym = RNG.standard_normal(xm.shape)
        y = np.moveaxis(ym, 0, y_ax)
    got = fx.vmap(lambda a, b: fnp.sin(a) * b, in_axes=(x_ax, y_ax), out_axes=out_ax)(x, y)
    want = np.moveaxis(np.sin(xm) * ym, 0, out_ax)
    assert_allclose(got, want, what=f"in_axes=({x_ax}, {y_ax}) out_axes={out_ax}")


# --- out_axes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("out_axes", [0, 1, -1, (1, 0), (-1, None), {"x": 1, "c": None}])
def test_out_axes(out_axes):
    def f(np_):
        def g(a, c):
            return (np_.sin(a), c * 2.0)

        return g

    if isinstance(out_axes, dict):
        fxf = lambda a, c: dict(zip("xc", f(fnp)(a, c)))  # noqa: E731
        jxf = lambda a, c: dict(zip("xc", f(jnp)(a, c)))  # noqa: E731
    else:
        fxf, jxf = f(fnp), f(jnp)
    got = fx.vmap(fxf, in_axes=(0, None), out_axes=out_axes)(A, C)
    want = jax.vmap(jxf, in_axes=(0, None), out_axes=out_axes)(A, C)
    assert_allclose(got, want, what=f"out_axes={out_axes}")


def test_out_axes_none_for_a_batched_output_is_an_error():
    with pytest.raises(ValueError, match=r"output 0 varies along the batch \(axis size 4\) but "
                                         r"out_axes is None"):
        fx.vmap(lambda a: a, out_axes=None)(A)


def test_out_axes_tree_mismatch_is_an_error():
    with pytest.raises(ValueError, match="out_axes does not match the outputs"):
        fx.vmap(lambda a: a, out_axes=(0, 0))(A)


@pytest.mark.parametrize("out_axes", [2, -3, 5])
def test_out_axes_out_of_range_is_an_error(out_axes):
    with pytest.raises(ValueError, match="out_axes"):
        fx.vmap(lambda a: a, out_axes=out_axes)(A)


# --- errors -------------------------------------------------------------------------------------


def test_inconsistent_batch_sizes_name_paths_and_sizes():
    with pytest.raises(ValueError, match=r"inconsistent sizes.*argument\[0\] has size 4.*"
                                         r"argument\[1\] has size 3 along axis 0"):
        fx.vmap(lambda a, b: a)(A, C)
    with pytest.raises(ValueError, match=r"argument\[0\]\['a'\] has size 4.*"
                                         r"argument\[0\]\['b'\] has size 5"):
        fx.vmap(lambda d: d["a"])({"a": A, "b": np.ones((5, 3))})
    with pytest.raises(ValueError, match=r"axis_size has size 7.*argument\[0\] has size 4"):
        fx.vmap(lambda a: a, axis_size=7)(A)


def test_in_axes_out_of_range_names_argument_and_shape():
    with pytest.raises(ValueError, match=r"in_axes 2 is out of range for argument\[1\] of rank 1 "
                                         r"\(shape \(3,\)\)"):
        fx.vmap(lambda a, b: a, in_axes=(0, 2))(A, C)
    with pytest.raises(ValueError, match=r"in_axes -3 .* argument\[0\]\['w'\] of rank 2"):
        fx.vmap(lambda d: d["w"], in_axes=({"w": -3},))({"w": A})


def test_in_axes_tree_mismatch_names_the_path():
    with pytest.raises(ValueError, match=r"in_axes does not match the arguments.*\[0\].*"
                                         r"\['x'\].*\['a'\]"):
        fx.vmap(lambda d: d["a"], in_axes=({"x": 0},))({"a": A})
    with pytest.raises(ValueError, match="in_axes has 1 entries but .* called with 2"):
        fx.vmap(lambda a, b: a, in_axes=(0,))(A, A)


def test_other_vmap_errors():
    with pytest.raises(TypeError, match="in_axes entries must be int or None, got 0.5"):
        fx.vmap(lambda a: a, in_axes=0.5)(A)
    with pytest.raises(ValueError, match="no argument is batched.*axis_size"):
        fx.vmap(lambda c: c, in_axes=None)(C)
    # Keyword arguments are batched along axis 0 (jax's rule), so a scalar one is an error.
    with pytest.raises(ValueError, match=r"in_axes 0 is out of range for argument\['b'\] of "
                                         r"rank 0"):
        fx.vmap(lambda a, b=1: a)(A, b=2)


def test_keyword_arguments_are_batched_along_axis_0_as_jax():
    def f(np_):
        return lambda x, y=1.0, *, z: np_.sin(x) * y + z["a"]

    x = np.arange(6.0).reshape(3, 2)
    kw = {"y": np.linspace(0, 1, 6).reshape(3, 2), "z": {"a": np.arange(3.0)}}
    got = fx.vmap(f(fnp))(x, **kw)
    want = jax.vmap(f(jnp))(x, **kw)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
    with pytest.raises(ValueError, match=r"inconsistent sizes.*argument\['y'\] has size 4"):
        fx.vmap(f(fnp))(x, y=np.ones(4), z=kw["z"])


# --- nesting ------------------------------------------------------------------------------------


def test_nested_vmaps_match_jax():
    def f(np_):
        return lambda x, y: np_.sum(np_.sin(x) * y)

    x = RNG.standard_normal((2, 4, 3))
    y = RNG.standard_normal((4, 3))
    got = fx.vmap(fx.vmap(f(fnp)), in_axes=(0, None))(x, y)
    want = jax.vmap(jax.vmap(f(jnp)), in_axes=(0, None))(x, y)
    assert_allclose(got, want, what="vmap(vmap)")
    got = fx.vmap(fx.vmap(f(fnp), in_axes=(1, 1)), in_axes=(0, None), out_axes=1)(x, y)
    want = jax.vmap(jax.vmap(f(jnp), in_axes=(1, 1)), in_axes=(0, None), out_axes=1)(x, y)
    assert_allclose(got, want, what="vmap(vmap) with axes")


def test_nested_vmap_outer_product():
    got = fx.vmap(fx.vmap(lambda a, b: a * b, in_axes=(None, 0)), in_axes=(0, None))(C, C)
    assert_allclose(got, np.outer(C, C), what="outer product")


def test_nested_vmap_scalar_lane_times_unbatched_row():
    got = fx.vmap(fx.vmap(lambda a, b: a * b, in_axes=(0, None)), in_axes=(None, 0))(C, A)
    want = jax.vmap(jax.vmap(lambda a, b: a * b, in_axes=(0, None)), in_axes=(None, 0))(C, A)
    assert_allclose(got, want, what="(4, 3, 3)")


# --- the jaxprs vmap builds ---------------------------------------------------------------------


def _prims(f, *args):
    return [e.primitive.name for e in fx.make_jaxpr(f)(*args).jaxpr.eqns]


def test_vmap_of_elementwise_adds_no_transposes_or_broadcasts():
    f = lambda x, y: fnp.sin(x) * y  # noqa: E731
    assert _prims(fx.vmap(f), A, A) == ["sin", "mul"]
    assert _prims(fx.vmap(f, in_axes=1, out_axes=1), A, A) == ["sin", "mul"]
    assert _prims(fx.vmap(fx.vmap(f)), A, A) == ["sin", "mul"]
    assert _prims(fx.vmap(lambda x, y: f(x, y) + 2.0), A, A) == ["sin", "mul", "add"]
    assert _prims(fx.vmap(lambda x, y: fnp.sum(f(x, y))), A, A) == ["sin", "mul", "reduce_sum"]
    # An unbatched operand is broadcast once, as numpy broadcasting would.
    assert _prims(fx.vmap(f, in_axes=(0, None)), A, C) == ["sin", "broadcast_in_dim", "mul"]


# --- compositions -------------------------------------------------------------------------------


def _mlp_loss(np_):
    def loss(p, x, y):
        h = np_.tanh(x @ p["w1"] + p["b1"])
        out = h @ p["w2"] + p["b2"]
        return np_.sum((out - y) ** 2)

    return loss


MLP = {
    "w1": RNG.standard_normal((3, 5)) * 0.5,
    "b1": RNG.standard_normal(5) * 0.1,
    "w2": RNG.standard_normal((5, 2)) * 0.5,
    "b2": RNG.standard_normal(2) * 0.1,
}
XS = RNG.standard_normal((6, 3))
YS = RNG.standard_normal((6, 2))


def test_per_example_gradients_of_an_mlp():
    got = fx.vmap(fx.grad(_mlp_loss(fnp)), in_axes=(None, 0, 0))(MLP, XS, YS)
    want = jax.vmap(jax.grad(_mlp_loss(jnp)), in_axes=(None, 0, 0))(MLP, XS, YS)
    assert_allclose(got, want, rtol=1e-10, atol=1e-12, what="vs jax")
    loop = [fx.grad(_mlp_loss(fnp))(MLP, x, y) for x, y in zip(XS, YS)]
    stacked = jax.tree_util.tree_map(lambda *g: np.stack([np.asarray(a) for a in g]), *loop)
    assert_allclose(got, stacked, rtol=1e-12, atol=1e-14, what="vs loop of grad")
    # ... and their mean is the gradient of the mean loss.
    mean_grad = fx.grad(lambda p: fnp.mean(fx.vmap(_mlp_loss(fnp), in_axes=(None, 0, 0))(
        p, XS, YS)))(MLP)
    assert_allclose(mean_grad, jax.tree_util.tree_map(lambda g: np.mean(g, 0), want),
                    rtol=1e-10, atol=1e-12, what="grad(vmap) == mean of vmap(grad)")


def test_jacrev_via_vmap_of_vjp():
    def f(np_):
        return lambda x: np_.sin(x) * np_.sum(x**2)

    x = C
    y, pull = fx.vjp(f(fnp), x)
    (jac,) = fx.vmap(pull)(np.eye(3))
    assert_allclose(jac, jax.jacrev(f(jnp))(x), what="vmap(vjp)")
    assert_allclose(jac, fx.jacrev(f(fnp))(x), what="== jacrev")


def test_jvp_of_vmap_and_vmap_of_jvp():
    def f(np_):
        return lambda x, y: np_.tanh(x) * y

    got = fx.jvp(fx.vmap(f(fnp)), (A, A), (B.T, A))
    want = jax.jvp(jax.vmap(f(jnp)), (A, A), (B.T, A))
    assert_allclose(got, want, what="jvp(vmap)")
    got = fx.vmap(lambda x, t: fx.jvp(lambda v: f(fnp)(v, v), (x,), (t,)))(A, B.T)
    want = jax.vmap(lambda x, t: jax.jvp(lambda v: f(jnp)(v, v), (x,), (t,)))(A, B.T)
    assert_allclose(got, want, what="vmap(jvp)")


def test_vmap_and_jit_in_both_orders():
    def f(np_):
        return lambda x, y: np_.sum(np_.sin(x) * y, axis=-1)

    want = jax.vmap(f(jnp), in_axes=(0, None))(A, C)
    assert_allclose(fx.vmap(fx.jit(f(fnp)), in_axes=(0, None))(A, C), want, what="vmap(jit)")
    assert_allclose(fx.jit(fx.vmap(f(fnp), in_axes=(0, None)))(A, C), want, what="jit(vmap)")


def test_grad_of_vmap_with_unbatched_parameter():
    def f(np_, vmap):
        return lambda w, xs: np_.sum(vmap(lambda x: np_.tanh(w * x), in_axes=0)(xs) ** 2)

    got = fx.grad(f(fnp, fx.vmap), argnums=(0, 1))(C, A)
    want = jax.grad(f(jnp, jax.vmap), argnums=(0, 1))(C, A)
    assert_allclose(got, want, what="grad(vmap) sums the unbatched parameter's cotangent")
