"""Launched by test_mpi.py under ``mpiexec -n 4`` (one launch runs every check): collectives
over the axes of meshes spanning the 4 processes (``fx.distributed.mesh.bind``: 2x2 and 1-D
of 4), over every subset of axes (and a tuple out of mesh order), each against its NumPy
meaning computed by every process from the global data. Integers are compared bitwise,
floats to a few ulps (MPI may sum in another order). Each process prints
``PASS <check> rank <r>``; a failing check raises, which aborts every process. With the
argument ``then-raise`` the run ends with rank 1 raising while the others wait in a
collective over the mesh's axes.
"""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

import numpy as np

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.distributed import mesh as dmesh
from fx.experimental import multihost_utils as mhu
from fx.lax import parallel_moves as moves

T0 = time.perf_counter()
fx.distributed.initialize(timeout=60)
R, N = fx.process_index(), fx.process_count()
assert N == 4, "mesh_checks.py runs under mpiexec -n 4"
RNG = np.random.default_rng(11)  # the same global data on every process


def passed(name: str) -> None:
    print(f"PASS {name} rank {R} {time.perf_counter() - T0:.1f}s", flush=True)


def check(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, \
        (what, got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.kind in "iub":
        assert got.tobytes() == want.tobytes(), (what, got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=what)


class Group:
    """The processes a collective over mesh axes ``names`` combines with this one, as the
    NumPy reference sees them: the global array's entries of the group in lane order (row
    major over ``names``) and this process's lane."""

    def __init__(self, mesh, names):
        self.mesh_names = mesh.axis_names
        self.sizes = [mesh.shape[n] for n in names]
        self.pos = [mesh.axis_names.index(n) for n in names]
        grid = np.vectorize(lambda d: d.process_index, otypes=[int])(mesh.devices)
        self.me = tuple(int(c) for c in np.argwhere(grid == R)[0])
        self.n = int(np.prod(self.sizes))
        self.members = []
        for lane in range(self.n):
            c = list(self.me)
            for p, v in zip(self.pos, np.unravel_index(lane, self.sizes)):
                c[p] = int(v)
            self.members.append(tuple(c))
        self.lane = self.members.index(self.me)

    def stack(self, g):
        return np.stack([g[c] for c in self.members])


def mesh_of(shape, names):
    return fx.sharding.Mesh(np.array(fx.devices(), dtype=object).reshape(shape), names)


F32 = {s: RNG.standard_normal(s + (8,)).astype(np.float32) for s in ((2, 2), (4,))}
I32 = {s: RNG.integers(-(2 ** 31), 2 ** 31 - 1, s + (8,)).astype(np.int32)
       for s in ((2, 2), (4,))}


def reductions(mesh, axes, names, jitted):
    """psum, pmean, pmax, pmin, all_gather, axis_index, axis_size over ``names``."""
    grp = Group(mesh, names)
    shape = mesh.devices.shape
    run = (lambda f: axes.jit(f)) if jitted else (lambda f: f)
    for g in (F32[shape], I32[shape]):
        x = g[grp.me]
        st = grp.stack(g)
        check(run(lambda v: lax.psum(v, names))(x), st.sum(0, dtype=st.dtype), f"psum {names}")
        check(run(lambda v: lax.pmax(v, names))(x), st.max(0), f"pmax {names}")
        check(run(lambda v: lax.pmin(v, names))(x), st.min(0), f"pmin {names}")
        check(run(lambda v: lax.all_gather(v, names))(x), st, f"all_gather {names}")
        if g.dtype.kind == "f":
            check(run(lambda v: lax.pmean(v, names))(x), st.mean(0), f"pmean {names}")
    check(run(lambda v: lax.axis_index(names) + v * 0)(np.int32(0)), np.int32(grp.lane),
          f"axis_index {names}")
    check(run(lambda v: lax.psum(1, names) + v * 0)(np.int32(0)), np.int32(grp.n),
          f"psum(1) {names}")
    assert lax.axis_size(names) == grp.n, (names, lax.axis_size(names))


def movers(mesh, axes, name):
    """psum_scatter (tiled or not), ppermute, all_to_all over one axis, jitted."""
    grp = Group(mesh, (name,))
    n, shape = grp.n, mesh.devices.shape
    for g in (F32[shape], I32[shape]):
        blocks = g[..., :n * 2].reshape(shape + (n, 2))
        st = grp.stack(blocks)
        total = st.sum(0, dtype=st.dtype)
        check(axes.jit(lambda v: lax.psum_scatter(v, name))(blocks[grp.me]), total[grp.lane],
              f"psum_scatter {name}")
        flat = blocks.reshape(shape + (2 * n,))
        check(axes.jit(lambda v: lax.psum_scatter(v, name, tiled=True))(flat[grp.me]),
              total[grp.lane], f"psum_scatter tiled {name}")
        check(axes.jit(lambda v: lax.all_to_all(v, name, 0, 0))(blocks[grp.me]),
              st[:, grp.lane], f"all_to_all {name}")
        shift = [(j, (j + 1) % n) for j in range(n)]
        check(axes.jit(lambda v, p=shift: lax.ppermute(v, name, p))(g[grp.me]),
              grp.stack(g)[(grp.lane - 1) % n], f"ppermute {name}")
        partial = [(0, n - 1)]  # one pair: every other lane receives zeros
        want = grp.stack(g)[0] if grp.lane == n - 1 else np.zeros_like(g[grp.me])
        check(axes.jit(lambda v, p=partial: lax.ppermute(v, name, p))(g[grp.me]), want,
              f"ppermute partial {name}")


def tuple_movers(mesh, axes, names):
    """The data-moving primitives bound over a tuple of mesh axes (lanes row-major over the
    names in the order given: in mesh order the generated C calls MPI, out of it the Python
    step reorders the rows)."""
    grp = Group(mesh, names)
    n, shape = grp.n, mesh.devices.shape
    for g in (F32[shape], I32[shape]):
        blocks = g[..., :n * 2].reshape(shape + (n, 2))
        st = grp.stack(blocks)
        got = axes.jit(lambda v: moves.psum_scatter_p.bind(
            v, axis_name=names, axis_size=n, scatter_dimension=0, tiled=False))(blocks[grp.me])
        check(got, st.sum(0, dtype=st.dtype)[grp.lane], f"psum_scatter {names}")
        got = axes.jit(lambda v: moves.all_to_all_p.bind(
            v, axis_name=names, axis_size=n, split_axis=0, concat_axis=0))(blocks[grp.me])
        check(got, st[:, grp.lane], f"all_to_all {names}")
        shift = tuple((j, (j + 1) % n) for j in range(n))
        got = moves.ppermute_p.bind(g[grp.me], axis_name=names, perm=shift)  # eager
        check(got, grp.stack(g)[(grp.lane - 1) % n], f"ppermute {names}")


def grads(mesh, axes, name):
    """grad through all_gather (-> a sum of the cotangents' rows), psum_scatter (-> the
    gathered cotangents), ppermute (-> the cotangent of the lane it sent to) and all_to_all
    (-> row i of lane j's cotangent back to lane i as its chunk j)."""
    grp = Group(mesh, (name,))
    n, shape = grp.n, mesh.devices.shape
    w = F32[shape][..., :2]
    c = RNG.standard_normal(shape + (n, 2)).astype(np.float32)  # each process's cotangent
    cs = grp.stack(c)
    me = w[grp.me]
    got = axes.jit(fx.grad(lambda v, k: fnp.sum(lax.all_gather(v, name) * k)))(me, c[grp.me])
    check(got, cs[:, grp.lane].sum(0), f"grad all_gather {name}")
    wide = F32[shape][..., :2 * n]
    k = c[grp.me].reshape(n, 2)[grp.lane]  # a cotangent for this lane's block
    ks = grp.stack(c.reshape(shape + (n, 2)))[:, :, :]  # every member's
    got = axes.jit(fx.grad(lambda v, k: fnp.sum(lax.psum_scatter(v, name, tiled=True) * k)))(
        wide[grp.me], k)
    check(got, np.concatenate([ks[j, j] for j in range(n)]), f"grad psum_scatter {name}")
    shift = [(j, (j + 1) % n) for j in range(n)]
    got = axes.jit(fx.grad(lambda v, k: fnp.sum(lax.ppermute(v, name, shift) * k)))(
        me, c[grp.me][0])
    check(got, cs[(grp.lane + 1) % n, 0], f"grad ppermute {name}")
    blocks = F32[shape][..., :2 * n].reshape(shape + (n, 2))
    got = axes.jit(fx.grad(lambda v, k: fnp.sum(lax.all_to_all(v, name, 0, 0) * k)))(
        blocks[grp.me], c[grp.me])
    check(got, cs[:, grp.lane], f"grad all_to_all {name}")


for shape, names in (((2, 2), ("x", "y")), ((4,), ("i",))):
    mesh = mesh_of(shape, names)
    with dmesh.bind(mesh) as axes:
        subsets = [s for k in range(1, len(names) + 1)
                   for s in itertools.combinations(names, k)]
        if len(names) > 1:
            subsets.append(tuple(reversed(names)))  # lanes row-major in the order given
        for s in subsets:
            reductions(mesh, axes, s, jitted=True)
        reductions(mesh, axes, names, jitted=False)  # eager: one transport call each
        passed(f"reductions {shape}")
        for name in names:
            movers(mesh, axes, name)
        if len(names) > 1:
            tuple_movers(mesh, axes, names)
            tuple_movers(mesh, axes, tuple(reversed(names)))
        passed(f"movers {shape}")
        for name in names:
            grads(mesh, axes, name)
        passed(f"grads {shape}")

# The compiled program calls MPI from its C for each collective over a sub-communicator.
mesh = mesh_of((2, 2), ("x", "y"))
with dmesh.bind(mesh) as axes:
    def steps(v):
        v = lax.psum_scatter(lax.all_gather(lax.psum(v, "y"), ("x", "y")), "x", tiled=True)
        return lax.all_to_all(lax.ppermute(v, "y", [(0, 1), (1, 0)]), "x", 0, 0, tiled=True)

    text = axes.jit(steps).lower(F32[(2, 2)][0, 0]).as_text()
    both = axes.jit(lambda v: lax.psum(v, ("x", "y"))).lower(F32[(2, 2)][0, 0]).as_text()
    assert "psum over ('x', 'y') as MPI_Allreduce called from the generated code" in both, both
    assert both.count("MPI_Allreduce") == 1, both  # one call on the tuple's communicator
    for what in ("psum over 'y' as MPI_Allreduce", "all_gather over ('x', 'y') as MPI_Allgather",
                 "psum_scatter over 'x' as MPI_Reduce_scatter_block",
                 "ppermute over 'y' as MPI_Sendrecv", "all_to_all over 'x' as MPI_Alltoall"):
        assert f"{what} called from the generated code (mpi, " in text, (what, text)
passed("as_text")

# fx.jit with in_shardings over meshes of the 4 processes: a data-parallel SGD step, the
# program partitioned by its batch (fx.spmd_partition), equal to the unsharded step that every
# process computes from the global data; the outputs feed the next call.
sys.path.insert(0, str(Path(__file__).parents[1]))  # tests/: the shared case
from data_parallel_case import mlp as _mlp  # noqa: E402
from data_parallel_case import sgd as _sgd  # noqa: E402

PARAMS, XS, YS = _mlp(11)
P_ = fx.sharding.PartitionSpec
for shape, names, batch in (((4,), ("i",), "i"), ((2, 2), ("x", "y"), ("x", "y")),
                            ((2, 2), ("x", "y"), "y")):
    mesh = mesh_of(shape, names)
    rep = fx.NamedSharding(mesh, P_())
    rows = fx.NamedSharding(mesh, P_(batch))
    step = fx.jit(_sgd, in_shardings=(rep, rows, rows), out_shardings=(rep, rep))
    params, ref = PARAMS, PARAMS
    for _ in range(2):
        params, loss = step(params, XS, YS)
        ref, ref_loss = fx.jit(_sgd)(ref, XS, YS)
        assert loss.sharding == rep, loss.sharding
        check(loss.addressable_shards[0].data, np.asarray(ref_loss), f"jit loss {batch}")
        for k in ref:
            check(params[k].addressable_shards[0].data, np.asarray(ref[k]), f"jit {k} {batch}")
    # without in_shardings: partitioned as the arguments are placed (as jax's jit follows them)
    placed = [fx.make_array_from_callback(v.shape, s, lambda i, v=v: v[i])
              for v, s in ((XS, rows), (YS, rows))]
    params, loss = fx.jit(_sgd)(PARAMS, *placed)
    ref, ref_loss = fx.jit(_sgd)(PARAMS, XS, YS)
    check(loss.addressable_shards[0].data, np.asarray(ref_loss), f"jit placed loss {batch}")
    check(params["w1"].addressable_shards[0].data, np.asarray(ref["w1"]), f"jit placed {batch}")
passed("jit partitioned")

# multihost_utils across the 4 processes.
mine = {"v": np.full((2,), R, np.int32), "s": np.float32(R) / 3}
got = mhu.process_allgather(mine)
check(got["v"], np.repeat(np.arange(4, dtype=np.int32), 2).reshape(4, 2), "process_allgather")
check(got["s"], np.arange(4, dtype=np.float32) / 3, "process_allgather scalar")
check(mhu.process_allgather(mine["v"], tiled=True), np.repeat(np.arange(4, dtype=np.int32), 2),
      "process_allgather tiled")
check(mhu.broadcast_one_to_all(mine)["v"], np.zeros(2, np.int32), "broadcast from 0")
got = mhu.broadcast_one_to_all(np.arange(3.0, dtype=np.float32) + R, is_source=R == 2)
check(got, np.arange(3.0, dtype=np.float32) + 2, "broadcast from 2")
mhu.sync_global_devices("mesh checks")
passed("multihost_utils")

if sys.argv[1:] == ["then-raise"]:
    with dmesh.bind(mesh) as axes:
        if R == 1:
            raise ValueError("rank 1 fails on purpose")
        # Over both axes: every other process waits for rank 1.
        axes.jit(lambda v: lax.all_gather(v, ("x", "y")))(np.ones(3, np.float32))
    print(f"rank {R} finished: the failure did not stop it", flush=True)
fx.distributed.shutdown()
passed("shutdown")
