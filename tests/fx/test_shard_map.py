"""fx.shard_map: specs and their errors, jax's check_vma (which mesh axes an output may vary
over), the older ``fx.experimental.shard_map`` spelling, and composition with jit, vmap, scan
and grad (of every collective, against its NumPy meaning by finite differences); a
Megatron-style MLP on a 2x2 (data x model) mesh equals the unsharded one, values and grads.
"""

from __future__ import annotations

import numpy as np
import pytest
import shard_map_cases as cases
from cpu_devices import cpu_devices
from harness import run_doctests

import fx
import fx.lax as flax
import fx.numpy as fnp
from fx.sharding import Mesh, NamedSharding
from fx.sharding import PartitionSpec as P
from fx.spmd import DuplicateSpecError, place_output

DEVICES = np.array([fx.Device("cpu", i) for i in range(8)], dtype=object)
MESH3 = Mesh(DEVICES.reshape(2, 2, 2), ("x", "y", "z"))
MESH2 = Mesh(DEVICES[:4].reshape(2, 2), ("data", "model"))
RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 4))


def smap(f, in_specs, out_specs, mesh=MESH3, **kw):
    return fx.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, **kw)


# --- specs --------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [P(), P("x"), P(None, "y"), P(("x", "z"), "y"),
                                  P(("z", "x")), P("y", ("z", "x"))])
def test_identity_round_trips_every_spec(spec):
    np.testing.assert_array_equal(smap(lambda v: v, spec, spec)(X), X)


def test_each_device_sees_its_block():
    # Device (i, j, k) gets block (i, j) of a (x, y)-split array: tag blocks with their index.
    got = smap(lambda v: v * 0 + flax.axis_index(("x", "y")).astype(v.dtype), P("x", "y"),
               P("x", "y"))(X)
    want = np.kron(np.arange(4.0).reshape(2, 2), np.ones((4, 2)))
    np.testing.assert_array_equal(got, want)


def test_replicated_output_is_tiled_when_the_spec_names_the_axis():
    got = smap(lambda v: flax.psum(v, "x"), P("x"), P("x"))(X)
    np.testing.assert_allclose(got, np.tile(X[:4] + X[4:], (2, 1)), rtol=1e-15)


def test_pytree_arguments_and_prefix_specs():
    def f(d):
        return {"s": flax.psum(d["a"], "x"), "t": (d["b"], d["b"] * 2)}

    out = smap(f, ({"a": P("x"), "b": P()},), {"s": P(), "t": P()})({"a": X, "b": X[0]})
    np.testing.assert_allclose(out["s"], X[:4] + X[4:], rtol=1e-15)
    np.testing.assert_array_equal(out["t"][1], 2 * X[0])


def test_mesh_from_with_and_decorator_form():
    @fx.shard_map(in_specs=P("x"), out_specs=P())
    def total(v):
        return flax.psum(fnp.sum(v), "x")

    with MESH3:
        assert float(total(X)) == pytest.approx(X.sum())
    with pytest.raises(ValueError, match="no mesh"):
        total(X)


def test_experimental_spelling():
    from fx.experimental.shard_map import shard_map

    f = shard_map(lambda v: flax.psum(v, "y"), MESH3, P("y"), P())
    np.testing.assert_allclose(f(X), X[:4] + X[4:], rtol=1e-15)
    with pytest.raises(ValueError, match="vary"):
        shard_map(lambda v: v, MESH3, P("y"), P())(X)
    np.testing.assert_array_equal(shard_map(lambda v: v, MESH3, P("y"), P(), check_rep=False)(X),
                                  X[:4])


def test_axis_names_maps_only_those_axes():
    f = smap(lambda v: flax.psum(v, "x"), P("x"), P(), axis_names={"x"})
    np.testing.assert_allclose(f(X), X[:4] + X[4:], rtol=1e-15)
    with pytest.raises(ValueError, match="must refer to an axis marked as manual"):
        smap(lambda v: v, P("y"), P("y"), axis_names={"x"})(X)


def test_docstring_examples():
    import fx.experimental.shard_map
    import fx.lax.parallel
    import fx.spmd

    assert run_doctests(fx.spmd, fx.experimental.shard_map, fx.lax.parallel) >= 8


def test_outputs_are_placed_by_their_out_specs():
    with cpu_devices(8):
        v = place_output(fnp.arange(8.0), MESH3, P("x"))
        assert v.sharding == NamedSharding(MESH3, P("x"))
        out = smap(lambda a: (a * 2, flax.psum(a, ("x", "y", "z"))), P(("x", "y"), "z"),
                   (P(("x", "y"), "z"), P()))(X)
        assert out[0].sharding == NamedSharding(MESH3, P(("x", "y"), "z"))
        assert out[1].sharding.is_fully_replicated
        np.testing.assert_array_equal(np.asarray(out[0]), X * 2)
        for shard in out[0].addressable_shards:  # each device's block of the result
            np.testing.assert_array_equal(np.asarray(shard.data), (X * 2)[shard.index])
        total = float(out[1].addressable_shards[3].data[0, 0])  # a 0-d shard's data reads
        np.testing.assert_allclose(total, X.reshape(4, 2, 2, 2).sum(axis=(0, 2))[0, 0])


# --- errors -------------------------------------------------------------------------------------


def test_dimension_not_divisible():
    with pytest.raises(ValueError, match=r"args\[0\].*\('x', 'y', 'z'\).*8 does not evenly "
                                         r"divide 4"):
        smap(lambda v: v, P(None, ("x", "y", "z")), P(None, ("x", "y", "z")))(X)


def test_axis_named_twice():
    with pytest.raises(DuplicateSpecError, match="'x' more than once"):
        smap(lambda v: v, P("x", "x"), P("x"))(X)
    with pytest.raises(DuplicateSpecError, match="'y' more than once"):
        smap(lambda v: v, P("y"), P(("y", "y")))(X)


def test_axis_not_in_mesh():
    with pytest.raises(ValueError, match="in_specs .* refers to 'w'"):
        smap(lambda v: v, P("w"), P())(X)
    with pytest.raises(ValueError, match="out_specs .* refers to 'w'"):
        smap(lambda v: v, P("x"), P("w"))(X)


def test_collective_over_an_axis_not_in_the_mesh():
    with pytest.raises(NameError, match="unbound axis name 'w'"):
        smap(lambda v: flax.psum(v, "w"), P("x"), P("x"))(X)


def test_specs_not_a_prefix():
    with pytest.raises(ValueError, match="in_specs must be a pytree prefix of the arguments"):
        smap(lambda v: v, (P("x"), P("y")), P("x"))(X)
    with pytest.raises(ValueError, match="out_specs must be a pytree prefix of the outputs"):
        smap(lambda v: (v, v), P("x"), (P("x"), P("x"), P("x")))(X)


def test_spec_longer_than_rank():
    with pytest.raises(ValueError, match="has 3 entries but the value .* rank 2"):
        smap(lambda v: v, P("x", None, None), P("x"))(X)
    with pytest.raises(ValueError, match="has 2 entries but the value .* rank 0"):
        smap(lambda v: fnp.sum(v), P("x"), P("x", None))(X)


# --- check_vma ----------------------------------------------------------------------------------


@pytest.mark.parametrize("body,in_spec,out_spec", [
    (lambda v: v, P("x"), P()),
    (lambda v: flax.psum(v, "y"), P("x", "y"), P(None, "y")),    # still varies over x
    (lambda v: flax.all_gather(v, "x"), P("x"), P()),            # jax: all_gather varies
    (lambda v: v * flax.axis_index("z"), P(), P()),              # axis_index adds its axis
    (lambda v: fnp.where(flax.axis_index("y") > 0, v, 0.0), P(), P()),
])
def test_check_vma_rejects_a_varying_output(body, in_spec, out_spec):
    with pytest.raises(ValueError, match="out_specs which require replication"):
        smap(body, in_spec, out_spec)(X)


@pytest.mark.parametrize("body,in_spec,out_spec", [
    (lambda v: flax.psum(v, ("x", "y")), P("x", "y"), P()),
    (lambda v: flax.pmax(flax.pmean(v, "x"), "y"), P("x", "y"), P()),
    (lambda v: v * 2, P(), P()),
    (lambda v: flax.psum(v * flax.axis_index("z"), "z"), P(), P()),
    (lambda v: flax.scan(lambda c, r: (c + flax.psum(r, "x"), None), fnp.zeros(4), v)[0],
     P("x"), P()),
    (lambda v: fx.jit(lambda u: flax.psum(u, "x"))(v), P("x"), P()),
])
def test_check_vma_accepts_a_replicated_output(body, in_spec, out_spec):
    unchecked = smap(body, in_spec, out_spec, check_vma=False)(X)
    np.testing.assert_array_equal(smap(body, in_spec, out_spec)(X), unchecked)


def test_scan_carry_that_becomes_varying_is_caught():
    def body(v):
        return flax.scan(lambda c, r: (c + r, None), v[0] * 0 + 1.0, v)[0]

    with pytest.raises(ValueError, match="vary"):
        smap(body, P("x"), P())(X)


def test_unchecked_output_is_one_devices_value():
    got = smap(lambda v: v, P("x"), P(), check_vma=False)(X)
    np.testing.assert_array_equal(got, X[:4])


# --- composition --------------------------------------------------------------------------------


def test_jit_equals_eager_bitwise():
    def body(w, v):
        h = v * w + 1.0
        return flax.psum(h, "x"), flax.all_gather(flax.pmax(h, "z"), "y", tiled=True)

    f = smap(body, (P(), P("x", None)), (P(), P("x", "y")))
    w = RNG.standard_normal((4,))
    eager, compiled = f(w, X), fx.jit(f)(w, X)
    for a, b in zip(eager, compiled):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_jit_makes_one_program_of_kernels():
    f = smap(lambda v: flax.all_gather(flax.psum(v, "x") * 2, "y", tiled=True), P("x", "y"),
             P(None, "y"))
    text = fx.jit(f).lower(X).as_text("selection")
    steps = [line for line in text.splitlines() if line.lstrip().startswith("impl:")]
    assert steps and all(" cpu." in line.split("->")[0] for line in steps), text


def test_axis_size_and_a_collective_over_an_enclosing_vmap_axis():
    got = smap(lambda v: v * flax.axis_size(("x", "y")), P("x"), P("x"))(X)
    np.testing.assert_array_equal(got, 4 * X)
    g = fx.vmap(smap(lambda v: flax.psum(v, ("i", "x")), P("x"), P()), axis_name="i")
    xs = np.stack([X, 2 * X])
    np.testing.assert_allclose(g(xs), np.broadcast_to(3 * (X[:4] + X[4:]), (2, 4, 4)),
                               rtol=1e-14, atol=1e-15)


def test_an_error_inside_f_leaves_no_trace_behind():
    def bad(v):
        raise RuntimeError("inside f")

    with pytest.raises(RuntimeError, match="inside f"):
        smap(bad, P("x"), P("x"))(X)
    with pytest.raises(NameError, match="unbound axis name 'x'"):
        flax.psum(X, "x")  # the mesh axes are no longer bound
    np.testing.assert_array_equal(smap(lambda v: v, P("x"), P("x"))(X), X)


def test_vmap_around_shard_map():
    f = smap(lambda v: flax.psum(v, "x") * flax.axis_index("y"), P("x"), P("y"))
    xs = RNG.standard_normal((3, 8, 4))
    got = fx.vmap(f)(xs)
    np.testing.assert_allclose(got, np.stack([f(x) for x in xs]), rtol=1e-15)


def test_scan_inside_and_shard_map_inside_scan():
    def body(v):
        return flax.scan(lambda c, r: (c + flax.psum(r, "y"), c), fnp.zeros(4), v)

    carry, ys = smap(body, P("y"), (P(), P("y")))(X)
    np.testing.assert_allclose(carry, X.sum(0), rtol=1e-14)
    np.testing.assert_allclose(ys[:4], np.cumsum(X[:4] + X[4:], 0) - (X[:4] + X[4:]),
                               rtol=1e-14, atol=1e-15)
    inner = smap(lambda v: flax.pmax(v, "z")[0], P("z"), P())
    out = flax.scan(lambda c, r: (c + inner(r), None), fnp.zeros(4), X.reshape(4, 2, 4))[0]
    np.testing.assert_allclose(out, X.reshape(4, 2, 4).max(1).sum(0), rtol=1e-14)


GRAD_ROWS = [(names, case) for names in (("y",), ("z", "x"), ("x", "y", "z"))
             for case in cases.CASES if case != "axis_index"]


@pytest.mark.parametrize("names,case", GRAD_ROWS,
                         ids=[f"{'_'.join(n)}-{c}" for n, c in GRAD_ROWS])
def test_grad_through_each_collective_matches_finite_differences(names, case):
    """d/dx sum(w * shard_map(collective)(x)) against central differences of the NumPy
    meaning (exact for the linear collectives up to rounding; pmax/pmin at distinct values)."""
    shape, axis_names = cases.MESHES["3d"]
    mesh = Mesh(DEVICES.reshape(shape), axis_names)
    n = int(np.prod([mesh.shape[a] for a in names]))
    body = cases.CASES[case](flax, names, n)
    every = P(tuple(axis_names))
    f = fx.shard_map(lambda v: body(v)[None], mesh=mesh, in_specs=every, out_specs=every)
    x = np.random.default_rng(1).standard_normal((64, 3))  # distinct values: no ties
    w = np.random.default_rng(2).standard_normal(np.asarray(f(x)).shape)
    got = fx.grad(lambda v: fnp.sum(w * f(v)))(x)

    def loss(v):
        return float(np.sum(w * cases.reference(case, cases.shards_of(v), shape, axis_names,
                                                names)))

    want = np.zeros_like(x)
    eps = 1e-6
    for i in np.ndindex(*x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        want[i] = (loss(x + d) - loss(x - d)) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_nested_transformations_agree():
    f = smap(lambda v: flax.psum(fnp.sin(v) * flax.axis_index("z"), ("x", "z")), P("x", "z"),
             P(None, None))

    def loss(v):
        return fnp.sum(f(v) ** 2)

    xs = RNG.standard_normal((3, 8, 4))
    per_example = fx.vmap(fx.grad(loss))(xs)
    np.testing.assert_allclose(per_example, np.stack([fx.grad(loss)(x) for x in xs]),
                               rtol=1e-13)
    np.testing.assert_allclose(fx.jit(fx.vmap(fx.grad(loss)))(xs), per_example, rtol=1e-13)
    np.testing.assert_allclose(fx.grad(fx.jit(loss))(xs[0]), per_example[0], rtol=1e-13)


def test_grad_inside_without_check_is_pmaps_meaning():
    # jax.shard_map(..., check_vma=False) gives n: the transpose of psum is psum.
    f = smap(lambda v: fx.grad(lambda u: flax.psum(fnp.sum(u), "x"))(v), P("x"), P("x"),
             check_vma=False)
    np.testing.assert_array_equal(f(X), np.full(X.shape, 2.0))


def test_grad_inside_of_all_gather_and_ppermute_match_jax():
    # jax.shard_map gives 2 * n * u for the first (all_gather transposes to psum_scatter)
    # and the inverse permutation of the weights for the second (values from jax 0.10).
    f = smap(lambda v: fx.grad(lambda u: fnp.sum(flax.all_gather(u, "x") ** 2))(v), P("x"),
             P("x"))
    np.testing.assert_allclose(f(X), 4 * X, rtol=1e-15)
    mesh = Mesh(DEVICES[:4], ("i",))
    perm = [(0, 1), (1, 2), (2, 3), (3, 0)]
    g = fx.shard_map(lambda v: fx.grad(lambda u: fnp.sum(flax.ppermute(u, "i", perm) *
                                                         fnp.arange(2.0)))(v),
                     mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    np.testing.assert_array_equal(g(np.arange(8.0)), np.tile([0.0, 1.0], 4))


def test_grad_of_psum_inside_with_check_vma_is_jaxs_typed_meaning():
    # jax.shard_map(..., check_vma=True) gives 1: psum of a varying value transposes to a
    # broadcast (tests/fx/test_shard_map_vma.py compares many more with jax).
    f = smap(lambda v: fx.grad(lambda u: flax.psum(fnp.sum(u), "x"))(v), P("x"), P("x"))
    np.testing.assert_array_equal(f(X), np.ones(X.shape))


# --- a tensor-parallel MLP ----------------------------------------------------------------------


def _mlp(w1, w2, x):
    return fnp.tanh(x @ w1) @ w2


def _tp_mlp(w1, w2, x):
    # Megatron: w1 split by columns over "model", w2 by rows; one psum joins the partial
    # products. The batch is split over "data".
    def block(w1, w2, x):
        return flax.psum(fnp.tanh(x @ w1) @ w2, "model")

    return fx.shard_map(block, mesh=MESH2, in_specs=(P(None, "model"), P("model", None),
                                                     P("data", None)),
                        out_specs=P("data", None))(w1, w2, x)


@pytest.mark.parametrize("jit", [False, True])
def test_tensor_parallel_mlp_equals_unsharded(jit):
    rng = np.random.default_rng(3)
    w1, w2 = rng.standard_normal((5, 8)), rng.standard_normal((8, 3))
    x, y = rng.standard_normal((6, 5)), rng.standard_normal((6, 3))

    def loss(model, w1, w2):
        return fnp.mean((model(w1, w2, x) - y) ** 2)

    wrap = fx.jit if jit else (lambda f: f)
    np.testing.assert_allclose(wrap(_tp_mlp)(w1, w2, x), _mlp(w1, w2, x), rtol=1e-13)
    got = wrap(fx.value_and_grad(lambda a, b: loss(_tp_mlp, a, b), argnums=(0, 1)))(w1, w2)
    want = fx.value_and_grad(lambda a, b: loss(_mlp, a, b), argnums=(0, 1))(w1, w2)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
