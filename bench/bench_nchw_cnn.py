"""The LeNet-style CNN written channels-first (NCHW activations, OIHW kernels, as
``lax.conv_general_dilated``'s default and a PyTorch user write it): value_and_grad, batch 64,
28x28x1, 5x5 convolutions of 16 and 32 features with bias, relu and 2x2 max pooling
(``lax.reduce_window``), then a dense layer and log-softmax.

Prints the transposes of the lowered program with layout assignment and without it (the
``assign_layouts`` pass left out of the pipeline), and the step's time for fx with it, fx
without it and jax, in alternating rounds (each round times every variant once, so drift on a
shared machine falls on all of them alike). Run::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_nchw_cnn.py [--rounds N]

(``--one-thread``: OpenBLAS, OpenMP and XLA on one thread each, for a loaded machine; prefix
``taskset -c 1`` to hold every variant to the same core.)
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from bench_cpu import print_machine, restart_on_one_thread

import fx
import fx.lax as flax
import fx.numpy as fnp
from fx.lowering import pipeline
from fx.lowering.passes.assign_layouts import assign_layouts

DIMENSIONS = ("NCHW", "OIHW", "NCHW")
SHAPES = [(16, 1, 5, 5), (16,), (32, 16, 5, 5), (32,), (32 * 7 * 7, 10), (10,)]


def loss_fn(np_, lax):
    def conv(x, w, b):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DIMENSIONS)
        return np_.maximum(y + b[None, :, None, None], 0.0)

    def pool(x):
        return lax.reduce_window(x, -np_.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def loss(params, x, y):
        w1, b1, w2, b2, w3, b3 = params
        h = pool(conv(pool(conv(x, w1, b1)), w2, b2))
        logits = h.reshape(h.shape[0], -1) @ w3 + b3
        logp = logits - np_.log(np_.sum(np_.exp(logits), axis=1, keepdims=True))
        return -np_.mean(np_.sum(logp * y, axis=1))

    return loss


def data(batch: int = 64):
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal(s) * 0.1).astype(np.float32) for s in SHAPES]
    x = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    return params, x, y


def transposes(low) -> tuple[int, int]:
    """The transposes in the lowered program's text (each one moves data to another layout),
    and the steps that do nothing else."""
    text = low.as_text()
    return text.count("= transpose["), text.count("elementwise[transpose]")


def fx_step(with_layouts: bool):
    """The jitted step, lowered (and compiled) with or without layout assignment."""
    passes = pipeline.PASSES
    if not with_layouts:
        pipeline.PASSES = tuple(p for p in passes if p is not assign_layouts)
    try:
        params, x, y = data()
        args = ([fnp.asarray(a) for a in params], fnp.asarray(x), fnp.asarray(y))
        f = fx.jit(fx.value_and_grad(loss_fn(fnp, flax)))
        low = f.lower(*args)
        run = low.compile()
        run(*args)
    finally:
        pipeline.PASSES = passes
    return low, lambda: run(*args)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20, help="calls per variant per round")
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--one-thread", action="store_true")
    ns = ap.parse_args()
    if ns.one_thread:
        restart_on_one_thread()
    print_machine()
    print(f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    variants = {}
    for name, flag in (("fx, layouts assigned", True), ("fx, without the pass", False)):
        low, run = fx_step(flag)
        n, alone = transposes(low)
        print(f"{name:<22}: {n} transposes ({alone} steps of transposes alone); "
              + low.as_text().splitlines()[0].split(": ", 1)[1])
        variants[name] = run
    if not ns.no_jax:
        import jax
        import jax.numpy as jnp
        params, x, y = data()
        jf = jax.jit(jax.value_and_grad(loss_fn(jnp, jax.lax)))
        jargs = ([jnp.asarray(a) for a in params], jnp.asarray(x), jnp.asarray(y))
        jax.block_until_ready(jf(*jargs))
        variants["jax"] = lambda: jax.block_until_ready(jf(*jargs))
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(ns.rounds):
        for name, fn in variants.items():
            fn()
            start = time.perf_counter()
            for _ in range(ns.calls):
                fn()
            times[name].append((time.perf_counter() - start) / ns.calls)
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<22}: median {med * 1e3:7.2f} ms  (rounds: "
              + " ".join(f"{t * 1e3:.2f}" for t in ts) + ")")
    print(f"load average after: {' '.join(open('/proc/loadavg').read().split()[:3])}")


if __name__ == "__main__":
    main()
