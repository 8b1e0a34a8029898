"""NF4 fused dequantize-in-GEMM vs float32 GEMM at a 4096x4096 weight, batch 1-16, on CPU.

Columns: fx NF4 (``fx.jit`` of ``fx.quant.nf4.matmul``: the ``cpu.nf4_gemm`` kernel reading
the 8.4 MiB of packed codes and scales), fx float32 (``fx.jit`` of ``x @ w`` with ``w`` a
constant: the BLAS GEMM reading 64 MiB), NumPy float32 (``x @ w``), jax float32
(``jax.jit``), and NumPy's dequantize-then-matmul (what the NF4 product costs without the
fused kernel). Medians; the ratios are fx float32 / fx NF4 (above 1: NF4 faster). At batch 1
the float product is bound by memory bandwidth, so reading ~7.1x fewer bytes can pay for the
unpacking; the goal was >= 2x there.

Run: ``python bench/bench_nf4.py`` (``--one-thread``: OpenBLAS, OpenMP and XLA on one thread
each; ``--repeat N``; ``--size K``). The machine header is bench_cpu's; the load average before
and after is printed, since a busy 2-core machine moves every row.
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_cpu import print_machine, restart_on_one_thread, timeit_each

import fx
from fx.quant import nf4

BATCHES = (1, 2, 4, 8, 16)


def _load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--one-thread", action="store_true")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--size", type=int, default=4096)
    args = ap.parse_args()
    if args.one_thread:
        restart_on_one_thread()
    import jax

    print_machine()
    print(f"load average before: {_load()}")
    k = n = args.size
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((k, n)) * 0.02).astype(np.float32)
    q = nf4.quantize(w)
    print(f"weight {k}x{n}: float32 {w.nbytes / 2**20:.1f} MiB, NF4 {q.nbytes / 2**20:.2f} MiB "
          f"({w.nbytes / q.nbytes:.2f}x smaller)")
    fx_nf4 = fx.jit(lambda x: nf4.matmul(x, q))
    fx_f32 = fx.jit(lambda x: x @ w)
    wj = jax.device_put(w)
    jax_f32 = jax.jit(lambda x: x @ wj)
    print(f"{'':9} | {'fx NF4':>10} | {'fx f32':>10} | {'NumPy f32':>10} | {'jax f32':>10} | "
          f"{'NumPy deq+mm':>12} | fx f32 / fx NF4 | jax f32 / fx NF4")
    for batch in BATCHES:
        x = rng.standard_normal((batch, k)).astype(np.float32)
        got = np.asarray(fx_nf4(x))
        if batch <= 2:  # bit-equal to the in-order reference (slow in NumPy: K steps)
            assert np.array_equal(got.view(np.uint32),
                                  nf4.reference_matmul(x, q).view(np.uint32))
        fns = [lambda x=x: fx_nf4(x).block_until_ready(),
               lambda x=x: fx_f32(x).block_until_ready(), lambda x=x: x @ w,
               lambda x=x: jax_f32(x).block_until_ready(), lambda x=x: x @ nf4.dequantize(q)]
        times = timeit_each(fns, args.repeat)
        cells = [f"{t * 1e3:7.2f} ms" for t in times[:4]] + [f"{times[4] * 1e3:9.1f} ms"]
        print(f"batch {batch:<3} | " + " | ".join(cells)
              + f" | {times[1] / times[0]:14.2f}x | {times[3] / times[0]:15.2f}x", flush=True)
    print(f"load average after: {_load()}")
    print(fx_nf4.lower(np.zeros((1, k), np.float32)).as_text("selection"))


if __name__ == "__main__":
    main()
