"""Run under ``mpiexec -n 2`` with ``FX_NUM_CPU_DEVICES=2`` (``test_sharding_mpi.py``): each
process reports its devices and an array split over both processes' devices; prints one
``PASS name rank r`` line per check that holds."""

import numpy as np

import fx
from fx.sharding import NamedSharding
from fx.sharding import PartitionSpec as P

fx.distributed.initialize()
me, n = fx.process_index(), fx.process_count()


def check(name: str, ok: bool) -> None:
    print(f"{'PASS' if ok else 'FAIL'} {name} rank {me} ", flush=True)


devs = fx.devices()
check("devices", fx.local_device_count() == 2 and fx.device_count() == 2 * n
      and [d.process_index for d in devs] == [p for p in range(n) for _ in range(2)])
mesh = fx.make_mesh((n, 2), ("proc", "dev"))
s = NamedSharding(mesh, P(("proc", "dev")))
value = np.arange(4.0 * n)
x = fx.make_array_from_process_local_data(s, value[4 * me:4 * me + 4])
check("shards", x.shape == value.shape and not x.is_fully_addressable and all(
    np.array_equal(np.asarray(sh.data), value[sh.index]) for sh in x.addressable_shards))
check("ready", fx.block_until_ready(x) is x and x.block_until_ready() is x)
try:
    np.asarray(x)
    check("unreadable", False)
except RuntimeError as e:
    check("unreadable", "non-addressable" in str(e))
try:
    fx.pmap(lambda v: fx.lax.psum(v, "i"), axis_name="i")(np.ones((2, 3), np.float32))
    check("pmap refused", False)
except NotImplementedError as e:
    check("pmap refused", "one device per process, and this process has 2" in str(e))
y = fx.make_array_from_callback(value.shape, NamedSharding(mesh, P("dev")), lambda i: value[i])
check("replicated", np.array_equal(np.asarray(y), value))

# shard_map over the mesh of both processes' two devices: "proc" an MPI communicator, "dev" the
# devices of each process, in one program per process. Each device (p, d) holds row 2p + d.
lax, fnp = fx.lax, fx.numpy
g = np.arange(2 * n * 3, dtype=np.float32).reshape(2 * n, 3) ** 1.5
rows = P(("proc", "dev"))
cases = [  # (function, out_specs, the expected global value)
    (lambda v: lax.psum(v, "dev"), P("proc"), g.reshape(n, 2, 3).sum(1)),
    (lambda v: lax.psum(v, ("proc", "dev")), P(), g.sum(0, keepdims=True)),
    (lambda v: lax.all_gather(v, ("proc", "dev"), tiled=True), P(), g),
    (lambda v: lax.all_gather(v, "proc", tiled=True), P("dev"),
     g.reshape(n, 2, 3).transpose(1, 0, 2).reshape(-1, 3)),
    (lambda v: v * 0 + lax.axis_index(("proc", "dev")), rows,
     np.repeat(np.arange(2 * n, dtype=np.float32)[:, None], 3, 1)),
    (lambda v: lax.ppermute(v, "dev", [(0, 1), (1, 0)]), rows,
     g.reshape(n, 2, 3)[:, ::-1].reshape(-1, 3)),
    (lambda v: lax.ppermute(v, "proc", [(i, (i + 1) % n) for i in range(n)]), rows,
     np.roll(g.reshape(n, 2, 3), 1, 0).reshape(-1, 3)),
]
placed = fx.make_array_from_callback(g.shape, NamedSharding(mesh, rows), lambda i: g[i])
ok = True
for fn, out_spec, want in cases:
    for arg in (g, placed):  # a value every process holds whole, and the placed array
        out = fx.shard_map(fn, mesh=mesh, in_specs=rows, out_specs=out_spec,
                           check_vma=False)(arg)  # all_gather's result varies, as in jax
        ok &= out.shape == want.shape and all(
            np.allclose(np.asarray(sh.data), want[sh.index], rtol=1e-6)
            for sh in out.addressable_shards)
check("shard_map two devices per process", ok)

# a derivative inside a checked shard_map: a replicated weight, the rows' mean loss
w = np.linspace(-1, 1, 3).astype(np.float32)
grad = fx.shard_map(
    lambda v, u: fx.grad(lambda u: lax.pmean(fnp.sum(v * u), ("proc", "dev")))(u),
    mesh=mesh, in_specs=(rows, P()), out_specs=P())(g, w)
check("grad two devices per process",
      np.allclose(np.asarray(grad.addressable_shards[0].data), g.mean(0), rtol=1e-6))

# fx.jit partitioned by the batch over both axes (fx.spmd_partition)
step = fx.jit(lambda u, v: (fnp.mean(fnp.tanh(v @ u[:, None])), v * 2.0),
              in_shardings=(NamedSharding(mesh, P()), NamedSharding(mesh, rows)))
loss, twice = step(w, g)
check("jit two devices per process",
      np.allclose(np.asarray(loss.addressable_shards[0].data), np.tanh(g @ w).mean(), rtol=1e-6)
      and all(np.allclose(np.asarray(sh.data), 2 * g[sh.index])
              for sh in twice.addressable_shards))
fx.distributed.shutdown()
