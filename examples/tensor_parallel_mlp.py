"""Tensor-parallel training of an MLP on scikit-learn's 8x8 digits: a 2x2 mesh of devices,
data parallel along one axis and Megatron-style model parallel along the other.

    FX_NUM_CPU_DEVICES=4 python examples/tensor_parallel_mlp.py     # 4 devices, one process
    mpiexec -n 4 python examples/tensor_parallel_mlp.py              # 4 processes, one device each
    python examples/tensor_parallel_mlp.py --steps 20                # a quick smoke run

(As root, Open MPI also wants OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; on
fewer cores than processes add --oversubscribe.)

The mesh has axes ``data`` (2) and ``model`` (2). The first layer's weight is split by columns
over ``model`` and the second's by rows, so each device holds half of the hidden units: its
hidden activations need no communication, and one ``psum`` over ``model`` adds the two halves
of the logits (Megatron's MLP block). The batch is split over ``data``; the gradients are
averaged over it with ``pmean``. Every array lives sharded (``NamedSharding``); the training
step is one ``fx.shard_map`` inside ``fx.jit``. Process 0 (or the one process) also trains an
unsharded copy from the same start on the same batches and prints both loss curves.

Gradients are taken inside the mapped function with jax's typed meaning (``check_vma=True``):
the gradient of a parameter comes out summed over the devices that share it.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny kernels: one thread each (see mlp_digits)

import numpy as np  # noqa: E402

import fx  # noqa: E402
import fx.lax as lax  # noqa: E402
import fx.numpy as fnp  # noqa: E402
from fx.sharding import NamedSharding  # noqa: E402
from fx.sharding import PartitionSpec as P  # noqa: E402

# Where each parameter lives: w1 by columns and w2 by rows over "model"; b1 follows w1's
# columns; b2 is whole on every device.
SPECS = {"w1": P(None, "model"), "b1": P("model"), "w2": P("model", None), "b2": P()}


def load_digits():
    from sklearn.datasets import load_digits as sk_load_digits

    d = sk_load_digits()
    return (d.data / 16.0).astype(np.float32), d.target.astype(np.int32)


def init(seed: int, hidden: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"w1": (rng.standard_normal((64, hidden)) * np.sqrt(2 / 64)).astype(np.float32),
            "b1": np.zeros(hidden, np.float32),
            "w2": (rng.standard_normal((hidden, 10)) * np.sqrt(2 / hidden)).astype(np.float32),
            "b2": np.zeros(10, np.float32)}


def nll(logits, y):
    logp = fx.nn.log_softmax(logits)
    return -fnp.mean(fnp.take_along_axis(logp, y[:, None], axis=1))


def full_loss(params, x, y):  # the unsharded model
    h = fx.nn.relu(x @ params["w1"] + params["b1"])
    return nll(h @ params["w2"] + params["b2"], y)


def shard_loss(params, x, y):
    """The loss seen by one device: its rows of the batch, its half of the hidden units."""
    h = fx.nn.relu(x @ params["w1"] + params["b1"])  # [local batch, hidden / 2]
    logits = lax.psum(h @ params["w2"], "model") + params["b2"]  # both halves added
    return nll(logits, y)


def place(tree, specs, mesh):
    """Each leaf of ``tree`` (the same NumPy value on every process) as a sharded array."""
    def put(value, spec):
        sharding = NamedSharding(mesh, spec)
        return fx.make_array_from_callback(value.shape, sharding, lambda idx: value[idx])

    return fx.tree_util.tree_map(put, tree, specs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=128, help="the global batch")
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    fx.distributed.initialize()
    if fx.device_count() != 4:
        raise SystemExit(f"this example wants 4 devices, the run has {fx.device_count()}: "
                         "set FX_NUM_CPU_DEVICES=4, or launch 4 processes with mpiexec -n 4")
    mesh = fx.make_mesh((2, 2), ("data", "model"))
    lr = np.float32(args.lr)

    def local_step(params, x, y):
        # Derivatives inside shard_map have jax's typed meaning (check_vma=True): the loss,
        # averaged over the batch halves, is one value; each parameter's gradient comes out
        # typed as the parameter: w1, b1 and w2 split over "model" as they are, b2 (whole on
        # every device) summed over the devices that used it, all of them summed over "data".
        loss, grads = fx.value_and_grad(
            lambda p: lax.pmean(shard_loss(p, x, y), "data"))(params)
        params = fx.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
        return params, loss

    step = fx.jit(fx.shard_map(local_step, mesh=mesh,
                               in_specs=(SPECS, P("data", None), P("data")),
                               out_specs=(SPECS, P())))

    @fx.jit
    def full_step(params, x, y):  # the unsharded reference
        loss, grads = fx.value_and_grad(full_loss)(params, x, y)
        return fx.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), loss

    x_all, y_all = load_digits()
    start_params = init(args.seed, args.hidden)
    params, ref = place(start_params, SPECS, mesh), start_params
    rng = np.random.default_rng(args.seed)  # the same batches on every process
    curve, ref_curve, start = [], [], time.perf_counter()
    for _ in range(args.steps):
        idx = rng.choice(len(x_all), args.batch, replace=False)
        xb, yb = place((x_all[idx], y_all[idx]), (P("data", None), P("data")), mesh)
        params, loss = step(params, xb, yb)
        curve.append(float(loss.addressable_shards[0].data))
        ref, ref_loss = full_step(ref, x_all[idx], y_all[idx])
        ref_curve.append(float(ref_loss))
    seconds = time.perf_counter() - start
    if fx.process_index() == 0:
        where = (f"{fx.process_count()} processes" if fx.process_count() > 1
                 else "one process")
        print(f"mesh {dict(mesh.shape)} on {where}: w1 {SPECS['w1']}, w2 {SPECS['w2']}; "
              f"global batch {args.batch}, {args.steps} steps in {seconds:.1f} s")
        print(" step  tensor-parallel  single-device")
        for s in sorted({0, *range(9, args.steps, 10), args.steps - 1}):
            print(f"{s + 1:5d}  {curve[s]:15.6f}  {ref_curve[s]:13.6f}")
        gap = max(abs(a - b) for a, b in zip(curve, ref_curve))
        print(f"largest difference between the curves: {gap:.2e}")
        if gap > 1e-4:
            raise SystemExit("the tensor-parallel loss curve left the single-device one")
    fx.distributed.shutdown()


if __name__ == "__main__":
    main()
