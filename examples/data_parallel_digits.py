"""Data-parallel training of an MLP on scikit-learn's 8x8 digits over several processes.

    mpiexec -n 2 python examples/data_parallel_digits.py            # ~100 steps, seconds
    mpiexec -n 2 python examples/data_parallel_digits.py --steps 20 # a quick smoke run
    python examples/data_parallel_digits.py                         # one process works too

(As root, Open MPI also wants OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; on
fewer cores than processes add --oversubscribe.)

Every process draws the same shuffled global batch of ``--batch`` examples and takes its own
contiguous slice of it (plain NumPy slicing: fx.data's sharding is being reworked), computes
the gradient of its slice's mean loss, and ``fx.lax.pmean`` averages the gradients over the
processes — one MPI all-reduce inside the compiled training step. Since the slices are equal,
the average is the full batch's gradient: process 0 also trains a single-process copy on the
whole global batch and prints both loss curves. Every ``--check-every`` steps the processes
compare their parameters bit for bit (an ``all_gather`` of them) and stop if they differ.

``data_parallel_shard_map.py`` is the same training written with ``fx.shard_map`` over a 1-D
mesh, as JAX code is written today; it also runs on several devices in one process.
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
import fx.random  # noqa: E402


def load_digits():
    from sklearn.datasets import load_digits as sk_load_digits

    d = sk_load_digits()
    return (d.data / 16.0).astype(np.float32), d.target.astype(np.int32)


def init(key, sizes=(64, 128, 10)):
    params = []
    for k, (m, n) in zip(fx.random.split(key, len(sizes) - 1), zip(sizes, sizes[1:])):
        params.append({"w": fx.random.normal(k, (m, n)) * np.float32(np.sqrt(2.0 / m)),
                       "b": fnp.zeros(n)})
    return params


def loss_fn(params, x, y):
    for layer in params[:-1]:
        x = fx.nn.relu(x @ layer["w"] + layer["b"])
    logits = x @ params[-1]["w"] + params[-1]["b"]
    logp = fx.nn.log_softmax(logits)
    return -fnp.mean(fnp.take_along_axis(logp, y[:, None], axis=1))


def sgd(params, grads, lr):
    return fx.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=128, help="the global batch, all processes")
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--check-every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    fx.distributed.initialize()
    rank, n = fx.process_index(), fx.process_count()
    if args.batch % n:
        raise SystemExit(f"--batch {args.batch} must be a multiple of the {n} processes")
    local = args.batch // n
    x_all, y_all = load_digits()
    lr = np.float32(args.lr)

    def dp_step(params, x, y):
        loss, grads = fx.value_and_grad(loss_fn)(params, x, y)
        grads = lax.pmean(grads, "batch")  # the all-reduce: one step of the compiled program
        return sgd(params, grads, lr), lax.pmean(loss, "batch")

    step = fx.pmap(dp_step, axis_name="batch", in_axes=(None, 0, 0), out_axes=None)
    gather = fx.pmap(lambda p: lax.all_gather(p, "batch"), axis_name="batch")

    @fx.jit
    def full_step(params, x, y):  # the single-process reference on the whole global batch
        loss, grads = fx.value_and_grad(loss_fn)(params, x, y)
        return sgd(params, grads, lr), loss

    params = ref = init(fx.random.key(args.seed))  # the same key: the same start everywhere
    rng = np.random.default_rng(args.seed)  # the same batches on every process
    curve, ref_curve, start = [], [], time.perf_counter()
    for s in range(args.steps):
        idx = rng.choice(len(x_all), args.batch, replace=False)
        mine = idx[rank * local:(rank + 1) * local]  # this process's shard of the batch
        params, loss = step(params, x_all[mine][None], y_all[mine][None])
        curve.append(float(loss))
        if rank == 0:
            ref, ref_loss = full_step(ref, x_all[idx], y_all[idx])
            ref_curve.append(float(ref_loss))
        if (s + 1) % args.check_every == 0 or s + 1 == args.steps:
            flat = np.concatenate([np.asarray(v).ravel() for v in
                                   fx.tree_util.tree_leaves(params)])
            rows = np.asarray(gather(flat[None]))[0]
            if any(r.tobytes() != rows[0].tobytes() for r in rows):
                raise SystemExit(f"step {s + 1}: the processes' parameters differ")
    seconds = time.perf_counter() - start
    if rank == 0:
        print(f"{n} process(es), global batch {args.batch} ({local} per process), "
              f"{args.steps} steps in {seconds:.1f} s; parameters identical on every process "
              f"(checked every {args.check_every} steps)")
        print(" step  data-parallel  single-process")
        for s in sorted({0, *range(9, args.steps, 10), args.steps - 1}):
            print(f"{s + 1:5d}  {curve[s]:13.6f}  {ref_curve[s]:14.6f}")
        gap = max(abs(a - b) for a, b in zip(curve, ref_curve))
        print(f"largest difference between the curves: {gap:.2e}")
    fx.distributed.shutdown()


if __name__ == "__main__":
    main()
