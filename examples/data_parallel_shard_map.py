"""Data-parallel training of an MLP on scikit-learn's 8x8 digits, written with ``fx.shard_map``
over a 1-D mesh: the same model, data and start as ``data_parallel_digits.py`` (its ``pmap``
version), as JAX code is written today.

    FX_NUM_CPU_DEVICES=2 python examples/data_parallel_shard_map.py   # 2 devices, one process
    mpiexec -n 2 python examples/data_parallel_shard_map.py            # 2 processes, 1 device each
    python examples/data_parallel_shard_map.py --steps 20              # one device: a smoke run

(As root, Open MPI also wants OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; on
fewer cores than processes add --oversubscribe.)

The mesh has one axis, ``batch``, over every device of the run. Each global batch is placed
with ``NamedSharding(mesh, P("batch"))``: every process hands over its own rows
(``fx.make_array_from_process_local_data``), the rows its devices hold. The parameters are
replicated (``P()``). The training step is one ``fx.shard_map`` inside ``fx.jit``: each device
takes the gradient of its rows' mean loss and ``pmean`` over ``batch`` averages the gradients,
which, the shards being equal, is the whole batch's gradient. Process 0 (or the one process)
also trains an unsharded copy on the whole batch and prints both loss curves; at the end the
processes compare their parameters bit for bit.

Gradients are taken inside the mapped function, per device (``check_vma=False``, the meaning
``pmap`` gives them): the ``pmean`` says how they are combined.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny kernels: one thread each (see mlp_digits)

import numpy as np  # noqa: E402
from data_parallel_digits import init, load_digits, loss_fn, sgd  # noqa: E402

import fx  # noqa: E402
import fx.lax as lax  # noqa: E402
import fx.random  # noqa: E402
from fx.experimental import multihost_utils  # noqa: E402
from fx.sharding import NamedSharding  # noqa: E402
from fx.sharding import PartitionSpec as P  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=128, help="the global batch, all devices")
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    fx.distributed.initialize()
    n = fx.device_count()
    if args.batch % n:
        raise SystemExit(f"--batch {args.batch} must be a multiple of the {n} devices")
    mesh = fx.make_mesh((n,), ("batch",))
    rows = NamedSharding(mesh, P("batch"))  # the batch, split by rows over the devices
    replicated = NamedSharding(mesh, P())  # the parameters, whole on every device
    lr = np.float32(args.lr)

    def local_step(params, x, y):  # one device: its rows of the batch, all the parameters
        loss, grads = fx.value_and_grad(loss_fn)(params, x, y)
        grads = lax.pmean(grads, "batch")  # the all-reduce: one step of the compiled program
        return sgd(params, grads, lr), lax.pmean(loss, "batch")

    step = fx.jit(fx.shard_map(local_step, mesh=mesh, in_specs=(P(), P("batch"), P("batch")),
                               out_specs=(P(), P()), check_vma=False))

    @fx.jit
    def full_step(params, x, y):  # the single-device reference on the whole global batch
        loss, grads = fx.value_and_grad(loss_fn)(params, x, y)
        return sgd(params, grads, lr), loss

    # The same key: the same start on every process.
    start_params = fx.tree_util.tree_map(np.asarray, init(fx.random.key(args.seed)))
    ref = start_params
    params = fx.tree_util.tree_map(
        lambda p: fx.make_array_from_callback(p.shape, replicated, lambda idx: p[idx]),
        start_params)
    x_all, y_all = load_digits()
    # This process's rows of each global batch: the block its devices hold.
    local = args.batch // fx.process_count()
    mine = slice(fx.process_index() * local, (fx.process_index() + 1) * local)
    rng = np.random.default_rng(args.seed)  # the same batches on every process
    curve, ref_curve, start = [], [], time.perf_counter()
    for _ in range(args.steps):
        idx = rng.choice(len(x_all), args.batch, replace=False)
        xb = fx.make_array_from_process_local_data(rows, x_all[idx[mine]])
        yb = fx.make_array_from_process_local_data(rows, y_all[idx[mine]])
        params, loss = step(params, xb, yb)
        curve.append(float(loss.addressable_shards[0].data))
        if fx.process_index() == 0:
            ref, ref_loss = full_step(ref, x_all[idx], y_all[idx])
            ref_curve.append(float(ref_loss))
    seconds = time.perf_counter() - start
    flat = np.concatenate([np.asarray(p.addressable_shards[0].data).ravel()
                           for p in fx.tree_util.tree_leaves(params)])
    copies = multihost_utils.process_allgather(flat)  # every process's parameters
    if any(c.tobytes() != copies[0].tobytes() for c in copies):
        raise SystemExit("the processes' parameters differ")
    if fx.process_index() == 0:
        where = (f"{fx.process_count()} processes" if fx.process_count() > 1
                 else "one process")
        print(f"mesh {dict(mesh.shape)} on {where}: batch {rows.spec}, parameters "
              f"{replicated.spec}; global batch {args.batch}, {args.steps} steps in "
              f"{seconds:.1f} s; parameters identical on every process")
        print(" step  data-parallel  single-device")
        for s in sorted({0, *range(9, args.steps, 10), args.steps - 1}):
            print(f"{s + 1:5d}  {curve[s]:13.6f}  {ref_curve[s]:13.6f}")
        gap = max(abs(a - b) for a, b in zip(curve, ref_curve))
        print(f"largest difference between the curves: {gap:.2e}")
        if gap > 1e-4:
            raise SystemExit("the data-parallel loss curve left the single-device one")
    fx.distributed.shutdown()


if __name__ == "__main__":
    main()
