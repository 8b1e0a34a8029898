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
fx.distributed.shutdown()
