"""Collectives over named vmap axes (psum, pmean, pmax, pmin, all_gather, axis_index) against
jax.vmap with axis_name: batched and unbatched operands, any in_axes, nested named axes, under
jit, and under grad (outside and inside the named vmap).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_allclose

import fx
import fx.lax as flax
import fx.numpy as fnp

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 3))
# Values with ties, so pmax/pmin see equal lanes.
T = np.array([[1.0, 2.0, 2.0], [3.0, 2.0, -1.0], [3.0, 0.0, -1.0], [0.0, 2.0, 5.0]])

OPS = ["psum", "pmean", "pmax", "pmin", "all_gather"]


def _op(lib, name):
    return getattr(flax if lib is fx else jax.lax, name)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("x", [A, T], ids=["normal", "ties"])
def test_collective_matches_jax(name, x):
    got = fx.vmap(lambda v: _op(fx, name)(v, "i"), axis_name="i")(x)
    want = jax.vmap(lambda v: _op(jax, name)(v, "i"), axis_name="i")(x)
    assert_allclose(got, want, what=name)


@pytest.mark.parametrize("name", OPS)
def test_collective_over_in_axes_1_and_unbatched_operand(name):
    got = fx.vmap(lambda v: _op(fx, name)(v, "i"), axis_name="i", in_axes=1)(A)
    want = jax.vmap(lambda v: _op(jax, name)(v, "i"), axis_name="i", in_axes=1)(A)
    assert_allclose(got, want, what="in_axes=1")
    # An operand that does not vary along the axis: every lane holds the same value.
    got = fx.vmap(lambda v, c: _op(fx, name)(c, "i"), axis_name="i", in_axes=(0, None))(A, A[0])
    want = jax.vmap(lambda v, c: _op(jax, name)(c, "i"), axis_name="i", in_axes=(0, None))(
        A, A[0])
    assert_allclose(got, want, what="unbatched operand")


def test_collective_values():
    s = fx.vmap(lambda v: flax.psum(v, "i"), axis_name="i")(A)
    assert_allclose(s, np.broadcast_to(A.sum(0), A.shape), what="every lane gets the total")
    g = fx.vmap(lambda v: flax.all_gather(v, "i"), axis_name="i")(A)
    assert_allclose(g, np.broadcast_to(A, (4, 4, 3)), what="every lane gets the stack")
    idx = fx.vmap(lambda v: flax.axis_index("i"), axis_name="i")(A)
    assert_allclose(idx, np.arange(4, dtype=np.int32), what="axis_index")


def test_axis_index_matches_jax():
    def f(lib, np_):
        return lambda v: v * _op(lib, "axis_index")("i") + np.float64(1.0)

    assert_allclose(fx.vmap(f(fx, fnp), axis_name="i")(A),
                    jax.vmap(f(jax, jnp), axis_name="i")(A), what="axis_index")


@pytest.mark.parametrize("name", OPS)
def test_nested_named_axes(name):
    def f(lib, axis):
        return lambda v: _op(lib, name)(v, axis)

    for axis in ("i", "j"):
        got = fx.vmap(fx.vmap(f(fx, axis), axis_name="j"), axis_name="i")(A)
        want = jax.vmap(jax.vmap(f(jax, axis), axis_name="j"), axis_name="i")(A)
        assert_allclose(got, want, what=f"over {axis} from the inner vmap")
    got = fx.vmap(fx.vmap(lambda v: _op(fx, name)(_op(fx, name)(v, "j"), "i"), axis_name="j"),
                  axis_name="i")(A)
    want = jax.vmap(jax.vmap(lambda v: _op(jax, name)(_op(jax, name)(v, "j"), "i"),
                             axis_name="j"), axis_name="i")(A)
    assert_allclose(got, want, what="over both")


def test_nested_axis_indices_and_shadowing():
    def f(lib):
        ix = _op(lib, "axis_index")
        return lambda v: ix("i") * 10 + ix("j")

    got = fx.vmap(fx.vmap(f(fx), axis_name="j"), axis_name="i")(A)
    want = jax.vmap(jax.vmap(f(jax), axis_name="j"), axis_name="i")(A)
    assert_allclose(got, want, what="two axis indices")
    # An inner vmap with the same name shadows the outer one.
    got = fx.vmap(fx.vmap(lambda v: flax.psum(v, "i"), axis_name="i"), axis_name="i")(A)
    want = jax.vmap(jax.vmap(lambda v: jax.lax.psum(v, "i"), axis_name="i"), axis_name="i")(A)
    assert_allclose(got, want, what="shadowed name")


def _all_collectives(lib, np_):
    def f(v):
        op = lambda n: _op(lib, n)  # noqa: E731
        return (op("psum")(v, "i") + op("pmean")(v, "i") * op("pmax")(v, "i")
                - op("pmin")(v, "i") + np_.sum(op("all_gather")(v, "i"), axis=0)
                + op("axis_index")("i").astype(v.dtype))

    return f


def test_collectives_under_jit():
    want = jax.vmap(_all_collectives(jax, jnp), axis_name="i")(A)
    got = fx.jit(fx.vmap(_all_collectives(fx, fnp), axis_name="i"))(A)
    assert_allclose(got, want, what="jit(vmap)")
    got = fx.vmap(fx.jit(_all_collectives(fx, fnp)), axis_name="i")(A)
    assert_allclose(got, want, what="vmap(jit)")


@pytest.mark.parametrize("name", ["psum", "pmean", "all_gather"])
def test_grad_through_a_named_vmap(name):
    def f(lib, np_):
        vmap = fx.vmap if lib is fx else jax.vmap

        def loss(x):
            y = vmap(lambda r: _op(lib, name)(np_.sin(r), "i") ** 2, axis_name="i")(x)
            return np_.sum(y * np_.cos(x[:, None] if name == "all_gather" else x))

        return loss

    got = fx.grad(f(fx, fnp))(A)
    assert_allclose(got, jax.grad(f(jax, jnp))(A), what="grad(vmap)")
    assert_allclose(fx.jit(fx.grad(f(fx, fnp)))(A), got, what="jit(grad(vmap))")


@pytest.mark.parametrize("name", [
    "psum", "pmean",
    "all_gather",
])
def test_grad_inside_a_named_vmap(name):
    def f(lib, np_):
        def loss(r):
            c = _op(lib, name)(np_.sin(r), "i")
            return np_.sum((c * r[None] if name == "all_gather" else c * r) ** 2)

        return loss

    got = fx.vmap(fx.grad(f(fx, fnp)), axis_name="i")(A)
    want = jax.vmap(jax.grad(f(jax, jnp)), axis_name="i")(A)
    assert_allclose(got, want, what="vmap(grad)")


def test_jvp_through_collectives():
    def f(lib, vmap):
        return vmap(lambda v: _op(lib, "pmean")(v * v, "i") + _op(lib, "psum")(v, "i"),
                    axis_name="i")

    t = RNG.standard_normal(A.shape)
    assert_allclose(fx.jvp(f(fx, fx.vmap), (A,), (t,)), jax.jvp(f(jax, jax.vmap), (A,), (t,)),
                    what="jvp")


def test_axis_index_has_no_gradient():
    got = fx.vmap(fx.grad(lambda v: fnp.sum(v) * flax.axis_index("i").astype(v.dtype)),
                  axis_name="i")(A)
    assert_allclose(got, np.repeat(np.arange(4.0)[:, None], 3, axis=1), what="index as weight")


@pytest.mark.parametrize("name", ["pmax", "pmin"])
def test_pmax_pmin_gradients(name):
    # grad outside the named vmap: the collective is batched into a reduction before it is
    # differentiated, so the gradient is that of max/min over the axis (ties share it equally).
    # jax cannot differentiate this; compare with its jnp.max/min formulation.
    red = jnp.max if name == "pmax" else jnp.min

    def fx_loss(x):
        return fnp.sum(fnp.sin(x) * fx.vmap(lambda r: _op(fx, name)(r, "i"), axis_name="i")(x))

    def jax_loss(x):
        return jnp.sum(jnp.sin(x) * jnp.broadcast_to(red(x, axis=0), x.shape))

    assert_allclose(fx.grad(fx_loss)(T), jax.grad(jax_loss)(T), what="grad(vmap) with ties")
    # Inside the named vmap the lanes' tangents would need a pmax rule: not implemented, as in
    # jax.
    with pytest.raises(NotImplementedError, match=name):
        fx.vmap(fx.grad(lambda r: fnp.sum(_op(fx, name)(r, "i"))), axis_name="i")(A)


# --- errors and gaps --------------------------------------------------------------------------


@pytest.mark.parametrize("name", OPS)
def test_unbound_axis_name(name):
    with pytest.raises(NameError, match=r"unbound axis name:? 'k'.*axis_name='k'"):
        fx.vmap(lambda v: _op(fx, name)(v, "k"), axis_name="i")(A)


def test_unbound_axis_name_outside_vmap_and_under_jit():
    with pytest.raises(NameError, match="unbound axis name 'i'"):
        flax.psum(A, "i")
    with pytest.raises(NameError, match="unbound axis name 'i'"):
        flax.axis_index("i")
    with pytest.raises(NameError, match="unbound axis name 'i'"):
        fx.jit(lambda v: flax.psum(v, "i"))(A)


def test_psum_of_a_pytree():
    got = fx.vmap(lambda v: flax.psum({"a": v, "b": v * 2.0}, "i"), axis_name="i")(A)
    assert_allclose(got, {"a": np.broadcast_to(A.sum(0), A.shape),
                          "b": np.broadcast_to(2 * A.sum(0), A.shape)})


def test_psum_of_a_python_scalar_is_the_axis_size():
    got = fx.vmap(lambda v: v / flax.psum(1.0, "i"), axis_name="i")(A)
    assert_allclose(got, A / 4, what="psum(1)")


def test_psum_over_a_tuple_of_axis_names():
    got = fx.vmap(fx.vmap(lambda v: flax.psum(v, ("i", "j")), axis_name="j"), axis_name="i")(A)
    assert_allclose(got, np.full(A.shape, A.sum()), what="both axes")


@pytest.mark.default_mode  # the expected dtypes are the default mode's
def test_pmean_of_integers_matches_jax():
    x = np.arange(4, dtype=np.int32)
    got = fx.vmap(lambda v: flax.pmean(v, "i"), axis_name="i")(x)
    want = jax.vmap(lambda v: jax.lax.pmean(v, "i"), axis_name="i")(x)
    assert_allclose(got, want, what="int pmean")


@pytest.mark.parametrize("axis,tiled", [(0, False), (1, False), (-1, False), (0, True),
                                        (1, True)])
def test_all_gather_axis_and_tiled_match_jax(axis, tiled):
    x = RNG.standard_normal((4, 2, 3))
    got = fx.vmap(lambda v: flax.all_gather(v, "i", axis=axis, tiled=tiled), axis_name="i")(x)
    want = jax.vmap(lambda v: jax.lax.all_gather(v, "i", axis=axis, tiled=tiled),
                    axis_name="i")(x)
    assert_allclose(got, want, what=f"all_gather axis={axis} tiled={tiled}")


def test_all_gather_axis_out_of_range():
    with pytest.raises(ValueError, match="all_gather: axis 2 is out of range"):
        fx.vmap(lambda v: flax.all_gather(v, "i", axis=2, tiled=True), axis_name="i")(A)


def test_pmean_over_a_tuple_divides_once():
    got = fx.vmap(fx.vmap(lambda v: flax.pmean(v, ("i", "j")), axis_name="j"), axis_name="i")(A)
    want = jax.vmap(jax.vmap(lambda v: jax.lax.pmean(v, ("i", "j")), axis_name="j"),
                    axis_name="i")(A)
    assert_allclose(got, want, what="pmean over both axes")


def test_collective_inside_a_loop_over_unbatched_values_matches_jax():
    # The scan's operands do not vary along "i", but its body sums over "i": the vmap still
    # has to see the psum (as a multiplication by the axis size).
    def f(lib, v, c):
        def step(carry, _):
            return carry + lib.psum(c, "i"), None
        return v + lib.scan(step, c, None, length=3)[0]

    got = fx.vmap(lambda v, c: f(flax, v, c), in_axes=(0, None), axis_name="i")(A, A[0])
    want = jax.vmap(lambda v, c: f(jax.lax, v, c), in_axes=(0, None), axis_name="i")(A, A[0])
    assert_allclose(got, want, what="psum inside scan")
