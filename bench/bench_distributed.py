"""fx.distributed on MPI: all-reduce, all-gather and reduce-scatter bandwidth against raw
mpi4py, data-parallel MLP step time at 1 and 2 processes, and the tensor-parallel MLP step on
meshes of 1, 2 and 4 processes or CPU devices.

    python bench/bench_distributed.py                    # launches its workers itself
    python bench/bench_distributed.py --quick            # fewer sizes and repetitions
    python bench/bench_distributed.py --tensor-parallel  # only the tensor-parallel rows
    python bench/bench_distributed.py --nccl     # NCCL on a GPU (run by bench/gpu_check.sh)

1. All-reduce (float32 sum, 1 KB - 64 MB, 2 processes) on the same preallocated buffers:
   raw ``comm.Allreduce`` from Python (the reference); a psum step of a compiled program (the
   generated C calling MPI_Allreduce under the deadline watchdog, ``fx.distributed.native``),
   timed as the difference between programs of 2K and K chained psums, divided by K (so the
   call into the program is not counted); fx's Python transport (what the collective steps
   generated code does not run call: float pmax/pmin, all_gather, NCCL); and a whole
   ``fx.pmap(psum)`` call (argument slicing, the compiled program, the result array). Bus
   bandwidth = 2(n-1)/n * bytes / time (the nccl-tests convention); ratios are fx / raw.
   The same for all-gather and reduce-scatter (``all_gather``; ``psum_scatter`` tiled):
   MPI_Allgather / MPI_Reduce_scatter_block from Python against fx's step, transport and
   pmap call; bus bandwidth = (n-1)/n * bytes / time, bytes the gathered output or the
   scattered input. Then the ring model on an 8 x 8 mesh (bench/README.md derives it).
2. A data-parallel MLP training step (value_and_grad, ``pmean`` of the gradients, SGD) at 1
   and 2 processes: weak scaling (the same per-process batch: efficiency T1/T2) and strong
   scaling (the same global batch split: efficiency T1/(2 T2)). Times are the fastest of
   the repetitions (the machine is shared), a step's time that of its slowest process.
3. A ring all-reduce model from (1) — t(p, m) = 2(p-1) a + 2(p-1)/p m / B, a from the 1 KB
   time, B the best bus bandwidth — predicts
   the weak-scaling efficiency at 8 and 64 processes: T1 / (T1 + t(p, gradient bytes)).
4. ``examples/tensor_parallel_mlp.py``'s training step (hidden 512, batch 256) as a jitted
   ``fx.shard_map`` on data x model meshes of 1, 2 and 4 devices, each mesh once as
   processes (mpiexec, one device each) and once as CPU devices of one process
   (FX_NUM_CPU_DEVICES), beside the unsharded step jitted on one device in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
SIZES = [2 ** k for k in range(10, 27, 2)]  # 1 KB .. 64 MB


def _best(fs, reps: int, barrier) -> list[float]:
    """Per function of ``fs``: the fastest of ``reps`` timed calls, each started together on
    every process, the functions interleaved (so all see the same load: on a shared machine
    the minimum is the time when the processes were scheduled, the median mostly noise)."""
    times = [[] for _ in fs]
    for _ in range(reps):
        for f, ts in zip(fs, times):
            barrier()
            t = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t)
    return [float(min(ts)) for ts in times]


def worker_allreduce(quick: bool) -> None:
    import fx
    import fx.lax as lax
    from fx.distributed import state
    from fx.distributed.transport import ReduceOp

    fx.distributed.initialize()
    from mpi4py import MPI

    comm, t = MPI.COMM_WORLD, state.group().transport
    psum = fx.pmap(lambda v: lax.psum(v, "i"), axis_name="i")

    def chain(k):  # k dependent psums in one compiled program
        def f(v):
            for _ in range(k):
                v = lax.psum(v, "i")
            return v

        return fx.pmap(f, axis_name="i")

    rows = []
    for nbytes in SIZES[::2] if quick else SIZES:
        x = np.ones(nbytes // 4, np.float32)
        out, out2 = np.empty_like(x), np.empty_like(x)  # preallocated, as a program's arena
        reps = max(10, min(300, 2 ** 26 // nbytes)) // (3 if quick else 1)
        x1 = x[None]
        k = max(1, min(16, 2 ** 18 // nbytes))
        short, long = chain(k), chain(2 * k)
        for f in (psum, short, long):
            f(x1)  # compile once
        raw, mine, step, t_short, t_long = _best(
            [lambda x=x, out=out: comm.Allreduce(x, out, op=MPI.SUM),
             lambda x=x, o=out2: t.allreduce(x, ReduceOp.SUM, "bench", o),
             lambda x1=x1: psum(x1), lambda x1=x1, f=short: f(x1),
             lambda x1=x1, f=long: f(x1)],
            reps, comm.Barrier)
        rows.append((nbytes, raw, mine, step, max((t_long - t_short) / k, 1e-9)))
    if comm.rank == 0:
        print("RESULT " + json.dumps({"n": comm.size, "rows": rows}), flush=True)
    fx.distributed.shutdown()


def worker_gather_scatter(quick: bool) -> None:
    """All-gather and reduce-scatter (float32 sum), raw mpi4py against fx: the step of a
    compiled program (the generated C calling MPI), timed as the difference between programs
    of 2K and K such collectives of one operand, divided by K; fx's Python transport; and a
    whole ``fx.pmap`` call. ``nbytes`` is the total: the gathered output, the scattered
    input."""
    import fx
    import fx.lax as lax
    from fx.distributed import state

    fx.distributed.initialize()
    from mpi4py import MPI

    comm, t, n = MPI.COMM_WORLD, state.group().transport, MPI.COMM_WORLD.size

    def repeated(op, k):  # k collectives of one operand in one compiled program
        def f(v):
            outs = [op(v) for _ in range(k)]
            # Every result read (one element each), so every collective is a kernel of the
            # program; the sum's kernel is one per program, cancelled by the difference.
            return outs[-1] + sum(o.reshape(-1)[0] for o in outs[:-1]) * 0

        return fx.pmap(f, axis_name="i")

    ops = {"all_gather": lambda v: lax.all_gather(v, "i"),
           "psum_scatter": lambda v: lax.psum_scatter(v, "i", tiled=True)}
    rows = {name: [] for name in ops}
    for nbytes in SIZES[::2] if quick else SIZES:
        reps = max(10, min(300, 2 ** 26 // nbytes)) // (3 if quick else 1)
        k = max(1, min(16, 2 ** 18 // nbytes))
        for name, op in ops.items():
            gather = name == "all_gather"
            x = np.ones(nbytes // 4 // n if gather else nbytes // 4, np.float32)
            out = np.empty(nbytes // 4 if gather else nbytes // 4 // n, np.float32)
            x1 = x[None]
            call, short, long = repeated(op, 1), repeated(op, k), repeated(op, 2 * k)
            for f in (call, short, long):
                f(x1)  # compile once
            if gather:
                raw_f, mine_f = (lambda x=x, o=out: comm.Allgather(x, o),
                                 lambda x=x: t.allgather(x, "bench"))
            else:
                raw_f, mine_f = (lambda x=x, o=out: comm.Reduce_scatter_block(x, o, op=MPI.SUM),
                                 lambda x=x: t.reduce_scatter(x.reshape(n, -1), "bench"))
            raw, mine, whole, t_short, t_long = _best(
                [raw_f, mine_f, lambda x1=x1, f=call: f(x1), lambda x1=x1, f=short: f(x1),
                 lambda x1=x1, f=long: f(x1)], reps, comm.Barrier)
            rows[name].append((nbytes, raw, mine, whole, max((t_long - t_short) / k, 1e-9)))
    if comm.rank == 0:
        print("RESULT " + json.dumps({"n": n, "rows": rows}), flush=True)
    fx.distributed.shutdown()


def worker_mlp(global_batch: int, local_batch: int, steps: int) -> None:
    import fx
    import fx.lax as lax
    import fx.numpy as fnp
    import fx.random

    fx.distributed.initialize()
    n = fx.process_count()
    batch = local_batch if local_batch else global_batch // n
    sizes = (256, 512, 512, 10)
    keys = fx.random.split(fx.random.key(0), len(sizes) - 1)
    params = [{"w": fx.random.normal(k, (m, o)) * np.float32(0.05), "b": fnp.zeros(o)}
              for k, (m, o) in zip(keys, zip(sizes, sizes[1:]))]
    rng = np.random.default_rng(fx.process_index())
    x = rng.standard_normal((1, batch, sizes[0])).astype(np.float32)
    y = rng.integers(0, 10, (1, batch)).astype(np.int32)

    def loss_fn(p, x, y):
        for layer in p[:-1]:
            x = fx.nn.relu(x @ layer["w"] + layer["b"])
        logp = fx.nn.log_softmax(x @ p[-1]["w"] + p[-1]["b"])
        return -fnp.mean(fnp.take_along_axis(logp, y[:, None], axis=1))

    def step(p, x, y):
        grads = lax.pmean(fx.grad(loss_fn)(p, x, y), "i")
        return fx.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads)

    def local_step(p, x, y):  # the same step without the all-reduce: what contention costs
        grads = fx.grad(loss_fn)(p, x, y)
        return fx.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads)

    dp = fx.pmap(step, axis_name="i", in_axes=(None, 0, 0), out_axes=None)
    alone = fx.pmap(local_step, axis_name="i", in_axes=(None, 0, 0), out_axes=None)
    for _ in range(3):
        params = alone(dp(params, x, y), x, y)
    from mpi4py import MPI

    times, local = [], []
    for _ in range(steps):
        for f, ts in ((dp, times), (alone, local)):
            MPI.COMM_WORLD.Barrier()
            t = time.perf_counter()
            params = fx.block_until_ready(f(params, x, y))
            ts.append(time.perf_counter() - t)
    times = [max(MPI.COMM_WORLD.allgather(v)) for v in times]  # a step ends on the slowest
    local = [max(MPI.COMM_WORLD.allgather(v)) for v in local]
    grad_bytes = sum(np.asarray(v).nbytes for v in fx.tree_util.tree_leaves(params))
    if fx.process_index() == 0:
        print("RESULT " + json.dumps({"n": n, "batch": batch, "step": float(min(times)),
                                      "compute": float(min(local)),
                                      "grad_bytes": grad_bytes}), flush=True)
    fx.distributed.shutdown()


def worker_tensor_parallel(data: int, model: int, hidden: int, batch: int, steps: int) -> None:
    """``examples/tensor_parallel_mlp.py``'s training step (first weight split by columns over
    ``model``, second by rows, one ``psum``; batch over ``data``; gradients typed, jax's
    ``check_vma=True``) on a ``data`` x ``model`` mesh of every device of the run (processes
    under mpiexec, or FX_NUM_CPU_DEVICES devices of one process), interleaved with the
    unsharded step jitted on one device and, with ``model`` 1, the unsharded step under
    ``fx.jit(in_shardings=...)`` with the batch split over ``data`` (partitioned by
    ``fx.spmd_partition`` across processes). Each runs on every process; a step's time is
    that of its slowest process."""
    sys.path.insert(0, str(HERE.parents[1] / "examples"))
    import tensor_parallel_mlp as tp

    import fx
    import fx.lax as lax
    from fx.experimental import multihost_utils
    from fx.sharding import PartitionSpec as P

    fx.distributed.initialize()
    mesh = fx.make_mesh((data, model), ("data", "model"))
    lr = np.float32(0.01)

    def local_step(params, x, y):  # the example's step
        loss, grads = fx.value_and_grad(
            lambda p: lax.pmean(tp.shard_loss(p, x, y), "data"))(params)
        params = fx.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
        return params, loss

    step = fx.jit(fx.shard_map(local_step, mesh=mesh,
                               in_specs=(tp.SPECS, P("data", None), P("data")),
                               out_specs=(tp.SPECS, P())))

    def full(params, x, y):
        loss, grads = fx.value_and_grad(tp.full_loss)(params, x, y)
        return fx.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), loss

    full_step = fx.jit(full)
    rep, rows = (fx.NamedSharding(mesh, s) for s in (P(), P("data")))
    partitioned = fx.jit(full, in_shardings=(rep, rows, rows), out_shardings=(rep, rep))

    start = tp.init(0, hidden)
    rng = np.random.default_rng(0)  # the same batch on every process
    x = rng.random((batch, 64), dtype=np.float32)
    y = rng.integers(0, 10, batch).astype(np.int32)
    params = tp.place(start, tp.SPECS, mesh)
    xs, ys = tp.place((x, y), (P("data", None), P("data")), mesh)
    ref = fx.tree_util.tree_map(fx.device_put, start)
    dp = fx.tree_util.tree_map(fx.device_put, start)
    with_dp = model == 1
    for _ in range(3):  # compile and warm up
        params, _ = fx.block_until_ready(step(params, xs, ys))
        ref, _ = fx.block_until_ready(full_step(ref, x, y))
        if with_dp:
            dp, _ = fx.block_until_ready(partitioned(dp, x, y))
    times, single, jitted = [], [], []
    for _ in range(steps):
        multihost_utils.sync_global_devices("step")
        t = time.perf_counter()
        params, _ = fx.block_until_ready(step(params, xs, ys))
        times.append(time.perf_counter() - t)
        multihost_utils.sync_global_devices("single")
        t = time.perf_counter()
        ref, _ = fx.block_until_ready(full_step(ref, x, y))
        single.append(time.perf_counter() - t)
        if with_dp:
            multihost_utils.sync_global_devices("partitioned")
            t = time.perf_counter()
            dp, _ = fx.block_until_ready(partitioned(dp, x, y))
            jitted.append(time.perf_counter() - t)
    slowest = multihost_utils.process_allgather(
        np.array([times, single, jitted or single])).max(axis=0)
    if fx.process_index() == 0:
        print("RESULT " + json.dumps({"processes": fx.process_count(),
                                      "devices": fx.device_count(),
                                      "step": float(slowest[0].min()),
                                      "single": float(slowest[1].min()),
                                      "jit_in_shardings": (float(slowest[2].min())
                                                           if with_dp else None)}), flush=True)
    fx.distributed.shutdown()


def nccl_check() -> None:
    """On a GPU machine (bench/gpu_check.sh): the NCCL transport on real cupy.cuda.nccl, one
    process (a communicator of one rank: NCCL allows one rank per GPU, and MPI may be absent
    there), each collective against its one-process meaning, then a pmapped psum compiled
    for CUDA whose collective step hands its device buffers to NCCL."""
    import fx
    import fx.lax as lax
    from fx.devices import cupy_module
    from fx.distributed import state
    from fx.distributed.nccl import NcclTransport
    from fx.distributed.transport import ReduceOp, SelfTransport

    cp = cupy_module()
    t = NcclTransport(SelfTransport(), 0, timeout=30)
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float64, np.int32, np.bool_, np.complex64, np.int16):
        host = (rng.standard_normal(1000) * 10).astype(dt)
        for op in (ReduceOp.SUM, ReduceOp.MAX):
            if op is ReduceOp.MAX and np.dtype(dt).kind == "c":
                continue
            got = cp.asnumpy(t.allreduce(cp.asarray(host), op, "check"))
            assert got.dtype == host.dtype and got.tobytes() == host.tobytes(), (dt, op)
        got = cp.asnumpy(t.allgather(cp.asarray(host), "check"))
        assert got.shape == (1, 1000) and got.tobytes() == host.tobytes(), dt
    print("PASS nccl transport: allreduce/allgather, every dtype (one rank)")
    for nbytes in SIZES:
        x = cp.ones(nbytes // 4, cp.float32)
        out = cp.empty_like(x)
        t.allreduce(x, ReduceOp.SUM, "warm", out)
        cp.cuda.get_current_stream().synchronize()
        start = time.perf_counter()
        for _ in range(20):
            t.allreduce(x, ReduceOp.SUM, "bench", out)
        cp.cuda.get_current_stream().synchronize()
        print(f"  nccl allreduce {nbytes:>9} B: {(time.perf_counter() - start) / 20 * 1e6:8.1f} "
              "us per call (one rank: the call's overhead)")
    state.set_group(state.ProcessGroup(t, (1,)))
    try:
        f = fx.pmap(lambda v: lax.psum(v * 2.0, "i"), axis_name="i", backend="cuda")
        x = np.arange(12, dtype=np.float32).reshape(1, 12)
        assert "collective psum over 'i' (nccl, 1 processes)" in f.lower(x).as_text()
        np.testing.assert_array_equal(np.asarray(f(x)), x * 2.0)
    finally:
        state.set_group(None)
    print("PASS pmap(psum) compiled for cuda: the collective step on NCCL")


WORKER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def launch(n: int, *args: str) -> dict:
    exe = Path(sys.executable).parent / "mpiexec"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               FX_NUM_CPU_DEVICES="1", **WORKER_ENV)
    # No --oversubscribe where the cores suffice: with it Open MPI yields the core in every
    # wait, which on a busy machine costs a scheduler slice per message.
    over = ["--oversubscribe"] if n > (os.cpu_count() or 1) else []
    cmd = [str(exe if exe.exists() else "mpiexec"), *over, "--bind-to", "none",
           "-n", str(n), sys.executable, str(HERE), "--worker", *args]
    return _result(cmd, env)


def launch_devices(devices: int, *args: str) -> dict:
    """One worker process (no mpiexec) with ``devices`` CPU devices."""
    env = dict(os.environ, FX_NUM_CPU_DEVICES=str(devices), **WORKER_ENV)
    return _result([sys.executable, str(HERE), "--worker", *args], env)


def _result(cmd: list[str], env: dict) -> dict:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")


def _fit_ring(rows, n: int) -> tuple[float, float]:
    """The ring model's a (per-step latency) from the smallest message and B (bytes/s) from
    the best bus bandwidth measured (a least-squares fit is at the mercy of one descheduled
    repetition on a shared machine)."""
    a = rows[0][1] / (2 * (n - 1))
    bw = max(2 * (n - 1) / n * r[0] / r[1] for r in rows)
    return a, bw


def ring_time(p: int, nbytes: float, a: float, bw: float) -> float:
    return 2 * (p - 1) * a + 2 * (p - 1) / p * nbytes / bw


def print_gather_scatter(res: dict) -> None:
    n = res["n"]
    factor = (n - 1) / n  # a ring all-gather or reduce-scatter: half an all-reduce
    for name, rows in res["rows"].items():
        print(f"\n{name.replace('_', '-')}, float32{' sum' if 'scatter' in name else ''}, "
              f"{n} processes (bus bandwidth GB/s; bytes: the "
              f"{'gathered output' if name == 'all_gather' else 'scattered input'}; ratio = "
              "fx / raw)")
        print(f"{'bytes':>9} {'raw us':>9} {'raw GB/s':>9} {'step us':>8} {'step GB/s':>10} "
              f"{'ratio':>6} {'transport':>10} {'ratio':>6} {'pmap call':>10} {'ratio':>6}")
        for nbytes, raw, mine, whole, native in rows:
            bw = [factor * nbytes / t / 1e9 for t in (raw, native, mine, whole)]
            print(f"{nbytes:>9} {raw * 1e6:>9.1f} {bw[0]:>9.3f} {native * 1e6:>8.1f} "
                  f"{bw[1]:>10.3f} {bw[1] / bw[0]:>6.2f} {bw[2]:>10.3f} {bw[2] / bw[0]:>6.2f} "
                  f"{bw[3]:>10.3f} {bw[3] / bw[0]:>6.2f}")


def mesh_times(rows: int, cols: int, nbytes: float, a: float, bw: float) -> dict:
    """The ring model on a rows x cols mesh of processes: an all-reduce of ``nbytes`` over
    one axis (rings of ``cols`` processes, all rows at once), over both (a reduce-scatter
    along one axis, an all-reduce of the 1/cols shard along the other, an all-gather back:
    every link busy), and over all rows x cols processes as one flat ring."""
    one = ring_time(cols, nbytes, a, bw)
    half = (cols - 1) * a + (cols - 1) / cols * nbytes / bw  # a reduce-scatter (or gather)
    both = 2 * half + ring_time(rows, nbytes / cols, a, bw)
    return {"one axis": one, "both axes": both, "flat ring": ring_time(rows * cols, nbytes, a,
                                                                        bw)}


def print_mesh_model(a: float, bw: float) -> None:
    print("\nring model on an 8 x 8 mesh (64 processes, this machine's a and B):")
    for mb in (1, 16, 256):
        t = mesh_times(8, 8, mb * 2 ** 20, a, bw)
        print(f"  all-reduce of {mb:>3} MB: over one axis {t['one axis'] * 1e3:8.3f} ms, over "
              f"both {t['both axes'] * 1e3:8.3f} ms (one flat ring of 64: "
              f"{t['flat ring'] * 1e3:8.3f} ms)")


TP_HIDDEN, TP_BATCH = 512, 256


def print_tensor_parallel(quick: bool) -> None:
    """The tensor-parallel step on meshes of 1, 2 and 4 devices, as processes (mpiexec, one
    device each) and as CPU devices of one process, beside the unsharded step."""
    steps = "10" if quick else "30"
    meshes = [(1, 1), (1, 2), (2, 1), (2, 2)] + ([] if quick else [(1, 4), (4, 1)])
    print(f"\ntensor-parallel MLP step (examples/tensor_parallel_mlp.py: 64-{TP_HIDDEN}-10, "
          f"batch {TP_BATCH}, w1 by columns and w2 by rows over 'model', the batch over "
          "'data'; ms, fastest of "
          f"{steps}; single device: the unsharded step, same run; ratio = single / fx; jit "
          "in_shardings: the unsharded step with the batch split over 'data', model 1 only)")
    print(f"{'mesh (data x model)':<20} {'devices as':<22} {'fx step':>9} {'single':>9} "
          f"{'ratio':>6} {'jit in_shardings':>17}")
    for data, model in meshes:
        args = ("tensor_parallel", str(data), str(model), str(TP_HIDDEN), str(TP_BATCH), steps)
        n = data * model
        for where, res in ((f"{n} process{'es' if n > 1 else ''}", launch(n, *args)),
                           (f"{n} device{'s' if n > 1 else ''}, 1 process",
                            launch_devices(n, *args))):
            dp = res.get("jit_in_shardings")
            print(f"{f'{data} x {model}':<20} {where:<22} {res['step'] * 1e3:>9.2f} "
                  f"{res['single'] * 1e3:>9.2f} {res['single'] / res['step']:>6.2f} "
                  f"{'-' if dp is None else f'{dp * 1e3:.2f}':>17}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs="*")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--nccl", action="store_true", help="the NCCL check (needs a GPU, CuPy)")
    ap.add_argument("--tensor-parallel", action="store_true",
                    help="only the tensor-parallel step's rows")
    args = ap.parse_args()
    if args.nccl:
        return nccl_check()
    if args.worker is not None:
        kind, *rest = args.worker
        if kind == "allreduce":
            return worker_allreduce(rest == ["quick"])
        if kind == "gather_scatter":
            return worker_gather_scatter(rest == ["quick"])
        if kind == "tensor_parallel":
            return worker_tensor_parallel(*(int(v) for v in rest))
        return worker_mlp(*(int(v) for v in rest))
    sys.path.insert(0, str(HERE.parent))
    from bench_cpu import blas_kernels, cpu_model, isa_level

    print(f"CPU: {cpu_model()}, {os.cpu_count()} logical cores; ISA level {isa_level()}")
    print(f"{blas_kernels()}; the workers run with "
          + " ".join(f"{k}={v}" for k, v in WORKER_ENV.items()))
    import mpi4py
    from mpi4py import MPI

    print(f"mpi4py {mpi4py.__version__}; {MPI.Get_library_version().splitlines()[0]}")
    if args.tensor_parallel:
        return print_tensor_parallel(args.quick)
    res = launch(2, "allreduce", *(["quick"] if args.quick else []))
    n = res["n"]
    factor = 2 * (n - 1) / n
    print(f"\nall-reduce, float32 sum, {n} processes (bus bandwidth GB/s; ratio = fx / raw)")
    print(f"{'bytes':>9} {'raw us':>9} {'raw GB/s':>9} {'step us':>8} {'step GB/s':>10} "
          f"{'ratio':>6} {'transport':>10} {'ratio':>6} {'pmap(psum)':>11} {'ratio':>6}")
    for nbytes, raw, mine, step, native in res["rows"]:
        bw = [factor * nbytes / t / 1e9 for t in (raw, native, mine, step)]
        print(f"{nbytes:>9} {raw * 1e6:>9.1f} {bw[0]:>9.3f} {native * 1e6:>8.1f} "
              f"{bw[1]:>10.3f} {bw[1] / bw[0]:>6.2f} {bw[2]:>10.3f} {bw[2] / bw[0]:>6.2f} "
              f"{bw[3]:>11.3f} {bw[3] / bw[0]:>6.2f}")
    a, bw = _fit_ring(res["rows"], n)
    print(f"ring model from raw MPI: latency a = {a * 1e6:.1f} us per step, "
          f"bandwidth B = {bw / 1e9:.2f} GB/s")
    print_gather_scatter(launch(2, "gather_scatter", *(["quick"] if args.quick else [])))
    print_mesh_model(a, bw)

    steps = "10" if args.quick else "30"
    print("\ndata-parallel MLP step (256-512-512-10, SGD, pmean of the gradients)")
    weak = [launch(p, "mlp", "0", "128", steps) for p in (1, 2)]
    strong = [launch(p, "mlp", "256", "0", steps) for p in (1, 2)]
    for name, (one, two), eff in (("weak (128 per process)", weak, weak[0]["step"] /
                                   weak[1]["step"]),
                                  ("strong (256 global)", strong, strong[0]["step"] /
                                   (2 * strong[1]["step"]))):
        print(f"{name:<24} 1 process {one['step'] * 1e3:7.2f} ms   2 processes "
              f"{two['step'] * 1e3:7.2f} ms (without the all-reduce "
              f"{two['compute'] * 1e3:6.2f} ms)   efficiency {eff:.2f}")
    t1, g = weak[0]["step"], weak[0]["grad_bytes"]
    print(f"\nring model, weak scaling ({g / 1e6:.2f} MB of gradients, {t1 * 1e3:.2f} ms "
          "compute per step):")
    for p in (2, 8, 64):
        t = ring_time(p, g, a, bw)
        print(f"  {p:>3} processes: all-reduce {t * 1e3:7.3f} ms, efficiency "
              f"{t1 / (t1 + t):.2f}")
    print_tensor_parallel(args.quick)


if __name__ == "__main__":
    main()
