"""Dependency scheduling: a program with independent branches, its steps run in order vs
concurrently (``FX_CONCURRENT=0`` vs the default), beside jax.jit, in one run.

Run: ``python bench/bench_schedule.py`` (``--one-thread``: OpenBLAS, OpenMP and XLA on one
thread each — the case concurrency is for: BLAS calls too small to use every core on their
own). The program is two GEMM towers, ``tanh(x @ a1) @ a2 + tanh(x @ b1) @ b2`` at n = 256,
512 and 1024 (float32), and a four-branch variant. Each row also checks that the concurrent
result is bitwise the serial one. Ratios above 1: the concurrent schedule is faster.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from bench_cpu import hold_jax_to_march, print_machine, restart_on_one_thread, timeit_each

import fx
import fx.numpy as fnp


def towers(np_, branches: int):
    def f(x, *ws):
        total = 0
        for i in range(branches):
            total = total + np_.tanh(x @ ws[2 * i]) @ ws[2 * i + 1]
        return total

    return f


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--one-thread", action="store_true")
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    if args.one_thread:
        restart_on_one_thread()
    hold_jax_to_march()
    import jax
    import jax.numpy as jnp

    print_machine()
    threads = {k: os.environ.get(k, "(unset)") for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    print(f"{threads}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          "medians after a warm-up call")
    print(f"\n{'program':<34} | {'serial':>10} | {'concurrent':>10} | {'jax.jit':>10} | "
          "serial/conc. | jax/conc. | bitwise")
    rng = np.random.default_rng(0)
    for branches in (2, 4):
        for n in (256, 512, 1024):
            xs = [rng.standard_normal((n, n)).astype(np.float32) / np.sqrt(n)
                  for _ in range(1 + 2 * branches)]
            f = towers(fnp, branches)
            os.environ["FX_CONCURRENT"] = "0"  # read when an executable is built
            serial = fx.jit(f)
            serial(*xs)
            os.environ["FX_CONCURRENT"] = "1"
            concurrent = fx.jit(towers(fnp, branches))
            concurrent(*xs)
            jf = jax.jit(towers(jnp, branches))
            jxs = [jnp.asarray(x) for x in xs]
            same = np.array_equal(np.asarray(serial(*xs)).view(np.uint32),
                                  np.asarray(concurrent(*xs)).view(np.uint32))
            ts, tc, tj = timeit_each(
                [lambda f=serial, a=xs: fx.block_until_ready(f(*a)),
                 lambda f=concurrent, a=xs: fx.block_until_ready(f(*a)),
                 lambda f=jf, a=jxs: jax.block_until_ready(f(*a))], args.repeat)
            print(f"{f'{branches} GEMM towers, n={n} f32':<34} | {ts * 1e3:7.2f} ms | "
                  f"{tc * 1e3:7.2f} ms | {tj * 1e3:7.2f} ms | {ts / tc:11.2f}x | "
                  f"{tj / tc:8.2f}x | {same}", flush=True)


if __name__ == "__main__":
    main()
