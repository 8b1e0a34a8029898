"""The batch partitioner behind ``fx.jit(..., in_shardings=...)`` over meshes spanning
processes (``fx.spmd_partition``), run in one process on 8 CPU devices: each program's
partitioned run against the unsharded one, the collectives it inserts, and what it refuses.
Across processes: tests/distributed/mesh_checks.py ("jit partitioned")."""

import warnings

import numpy as np
import pytest
from cpu_devices import cpu_devices
from data_parallel_case import mlp as _mlp
from data_parallel_case import sgd as _sgd

import fx
import fx.numpy as fnp
from fx.sharding import NamedSharding, PartitionSpec
from fx.spmd_partition import Partitioned, describe

P = PartitionSpec


@pytest.fixture(scope="module")
def eight():
    with cpu_devices(8) as devices:
        yield devices


def _close(got, want, rtol=2e-6, atol=1e-6):
    got_l, want_l = fx.tree_util.tree_leaves(got), fx.tree_util.tree_leaves(want)
    assert len(got_l) == len(want_l)
    for g, w in zip(got_l, want_l):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if w.dtype.kind in "iub":
            assert g.tobytes() == w.tobytes()
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("shape,names,batch", [
    ((8,), ("i",), "i"), ((2, 4), ("x", "y"), ("x", "y")), ((2, 4), ("x", "y"), "y"),
    ((4, 2), ("x", "y"), ("y", "x"))])
def test_data_parallel_sgd_step_equals_unsharded(eight, shape, names, batch):
    mesh = fx.make_mesh(shape, names)
    params, x, y = _mlp()
    part = Partitioned(_sgd, mesh, (None, P(batch), P(batch)))
    want = fx.jit(_sgd)(params, x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing runs whole, so no warning
        got = part(params, x, y)
    _close(got, want)
    plan = part.plan(params, x, y)
    # every output replicated, the gradients summed where they are needed, one program; the
    # loss's take_along_axis (a gather of each row's label, and its scatter) stays local
    assert plan.out_dims == [None] * 4
    assert plan.gathered() == [], plan.gathered()
    # two steps: the outputs feed the next call
    _close(part(*[got[0], x, y]), fx.jit(_sgd)(want[0], x, y))


def test_batch_outputs_stay_split_and_sums_become_psums(eight):
    mesh = fx.make_mesh((8,), ("d",))

    def f(x, w):
        h = fnp.tanh(x @ w)                       # split by rows
        return h, fnp.sum(h, axis=0), fnp.max(h), h.T @ h, fnp.sum(w) * fnp.ones(16)

    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 6)).astype(np.float32)
    w = rng.standard_normal((6, 3)).astype(np.float32)
    part = Partitioned(f, mesh, (P("d"), None))
    got = part(x, w)
    _close(got, fx.jit(f)(x, w))
    plan = part.plan(x, w)
    assert plan.out_dims == [0, None, None, None, None]
    assert plan.gathered() == []  # nothing had to run whole
    jaxpr = fx.make_jaxpr(plan.body())(x[:2], w)
    names = [e.primitive.name for e in jaxpr.jaxpr.eqns]
    assert names.count("psum") == 2 and names.count("pmax") == 1, names
    assert "all_gather" not in names, names
    # requested out specs: the split output gathered, a replicated one sliced
    part2 = Partitioned(f, mesh, (P("d"), None), out_specs=(P(), None, None, None, P("d")))
    got2 = part2(x, w)
    _close(got2, fx.jit(f)(x, w))
    assert part2.plan(x, w).out_dims == [None, None, None, None, 0]
    with pytest.raises(ValueError, match=r"output 1 .* shape \(3,\).* not divisible"):
        Partitioned(f, mesh, (P("d"), None), out_specs=(None, P("d"), None, None, None))(x, w)


@pytest.mark.filterwarnings("ignore:.*run whole on every device")  # asserted above
def test_split_operands_meet_replicated_ones(eight):
    mesh = fx.make_mesh((4,), ("d",), devices=eight[:4])

    def f(x, z, c):
        a = x + z                                  # z replicated: sliced to each block
        b = fnp.concatenate([a, x * 2], axis=1)     # along an unsplit dimension
        r = fnp.reshape(b, (4, 2, 2 * x.shape[1]))  # the split dimension leads its group
        t = fnp.transpose(r, (1, 0, 2))
        s = fnp.cumsum(x, axis=0)                   # no rule: run whole (gathered)
        return t, s, c * fnp.sum(x)                 # a partial sum times a replicated scalar

    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    z = rng.standard_normal((8, 3)).astype(np.float32)
    c = np.float32(1.5)
    part = Partitioned(f, mesh, (P("d"), None, None))
    _close(part(x, z, c), fx.jit(f)(x, z, c))
    plan = part.plan(x, z, c)
    assert plan.out_dims == [1, None, None]
    assert [g.split(":")[0] for g in plan.gathered()] == ["cumsum"]
    assert "gathered (run whole on every device): cumsum" in describe(plan)


def test_integer_programs_are_exact(eight):
    mesh = fx.make_mesh((8,), ("d",))

    def f(x, k):
        return fnp.sum(x * k, axis=0), fnp.max(x, axis=0), x - k

    rng = np.random.default_rng(3)
    x = rng.integers(-1000, 1000, (16, 5)).astype(np.int32)
    k = rng.integers(-5, 5, (16, 5)).astype(np.int32)
    got = Partitioned(f, mesh, (P("d"), P("d")))(x, k)
    _close(got, fx.jit(f)(x, k))


def test_refusals_name_the_argument(eight):
    mesh = fx.make_mesh((2, 4), ("x", "y"))
    x = np.zeros((8, 8), np.float32)
    with pytest.raises(NotImplementedError, match=r"args\[0\].*splitting 2 dimensions"):
        Partitioned(lambda a: a * 2, mesh, (P("x", "y"),))(x)
    with pytest.raises(NotImplementedError, match=r"same mesh axes"):
        Partitioned(lambda a, b: a + b, mesh, (P("x"), P("y")))(x, x)
    with pytest.raises(ValueError, match=r"not divisible by the 8 devices"):
        Partitioned(lambda a: a, mesh, (P(("x", "y")),))(np.zeros((4, 2), np.float32))
    with pytest.raises(NotImplementedError, match=r"out_shardings"):
        Partitioned(lambda a: a, mesh, (P("x"),), out_specs=P("y"))(x)


def test_jit_over_a_spanning_mesh_without_a_partitioner_is_refused(eight, monkeypatch):
    from fx import jit_shardings

    monkeypatch.setattr(jit_shardings, "_partitioner", [])
    mesh = fx.make_mesh((8,), ("d",))
    monkeypatch.setattr(type(mesh), "is_multi_process", property(lambda self: True))
    with pytest.raises(NotImplementedError, match="spanning processes"):
        fx.jit(lambda a: a, in_shardings=NamedSharding(mesh, P("d")))



def test_gathers_of_other_rows_run_whole(eight):
    # x[perm]: rows of other devices, so the gather runs on the gathered operand (and its
    # transpose, a scatter to other rows, too); argmax along an unsplit axis stays split
    mesh = fx.make_mesh((8,), ("d",))
    perm = np.random.default_rng(4).permutation(16).astype(np.int32)

    def f(x):
        return fnp.sum(x[perm] * fnp.arange(16.0)[:, None]), fnp.argmax(x, axis=1)

    x = np.random.default_rng(5).standard_normal((16, 3)).astype(np.float32)
    part = Partitioned(f, mesh, (P("d"),))
    with pytest.warns(UserWarning, match=r"run whole on every device.*gather: \(16, 3\)"):
        got = part(x)
    _close(got, fx.jit(f)(x))
    plan = part.plan(x)
    assert [g.split(":")[0] for g in plan.gathered()] == ["gather"], plan.gathered()
    assert plan.out_dims == [None, 0]
    grads = Partitioned(fx.grad(lambda v: f(v)[0]), mesh, (P("d"),))
    with pytest.warns(UserWarning, match=r"gather: \(16, 3\)"):  # its transpose: replicated
        _close(grads(x), fx.grad(lambda v: f(v)[0])(x))


@pytest.mark.filterwarnings("ignore:.*run whole on every device")  # asserted above
def test_loops_and_custom_derivatives_inside(eight):
    # a loop over a split value runs whole (gathered), a custom_jvp function is inlined and
    # partitioned; both equal the unsharded program, forward and through grad
    mesh = fx.make_mesh((8,), ("d",))

    @fx.custom_jvp
    def softplus(v):
        return fnp.logaddexp(v, 0.0)

    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * fx.nn.sigmoid(p[0])))

    def f(x, w):
        h = softplus(x @ w)
        h = fx.lax.fori_loop(0, 3, lambda i, c: c * 0.5 + fnp.tanh(c), h)
        return fnp.mean(h ** 2)

    rng = np.random.default_rng(6)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    part = Partitioned(f, mesh, (P("d"), None))
    _close(part(x, w), fx.jit(f)(x, w))
    assert [g.split(":")[0] for g in part.plan(x, w).gathered()] == ["scan"]  # fori_loop
    g = Partitioned(fx.grad(f, argnums=1), mesh, (P("d"), None))
    _close(g(x, w), fx.grad(f, argnums=1)(x, w), rtol=1e-5, atol=1e-6)
