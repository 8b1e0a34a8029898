"""CPU benchmarks: fx vs jax.jit vs NumPy in one run, printing times and ratios.

Run: ``python bench/bench_cpu.py`` (add ``--quick`` for fewer repetitions). Timings are the
median of repeated runs after warm-up; ratios above 1 mean fx is faster.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

import fx
import fx.numpy as fnp


def timeit(fn, repeat: int, number: int = 1) -> float:
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def fused_elementwise(np_):
    def f(x):
        return np_.tanh(2 * x + 1) * (1 / (1 + np_.exp(-x))) - np_.exp(-x * x) + 0.5 * x

    return f


def mlp_init(rng, sizes=(784, 512, 512, 10)):
    params = []
    for m, n in zip(sizes[:-1], sizes[1:]):
        w = (rng.standard_normal((m, n)) * np.sqrt(2.0 / m)).astype(np.float32)
        params.append((w, np.zeros(n, np.float32)))
    return params


def mlp_step(np_, grad, log_softmax):
    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = np_.maximum(h @ w + b, 0.0)
        w, b = params[-1]
        logits = h @ w + b
        return -np_.mean(np_.sum(log_softmax(logits) * y, axis=1))

    def step(params, x, y):
        g = grad(loss)(params, x, y)
        return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, g)]

    return step


def fx_log_softmax(z):
    m = fx.lax.stop_gradient(fnp.max(z, axis=1, keepdims=True))
    s = z - m
    return s - fnp.log(fnp.sum(fnp.exp(s), axis=1, keepdims=True))


def row(name, fx_t, jax_t=None, np_t=None, unit="ms"):
    scale = 1e3 if unit == "ms" else 1e6
    cells = [f"{name:<44}", f"{fx_t * scale:9.3f} {unit}"]
    cells.append(f"{jax_t * scale:9.3f} {unit}" if jax_t is not None else f"{'-':>12}")
    cells.append(f"{np_t * scale:9.3f} {unit}" if np_t is not None else f"{'-':>12}")
    cells.append(f"{jax_t / fx_t:7.2f}x" if jax_t is not None else f"{'-':>8}")
    cells.append(f"{np_t / fx_t:7.2f}x" if np_t is not None else f"{'-':>8}")
    print(" | ".join(cells), flush=True)


def first_compile_seconds(cache_dir: str) -> float:
    here = os.path.dirname(os.path.abspath(__file__))
    script = textwrap.dedent(f"""
        import time, sys, numpy as np
        sys.path.insert(0, {here!r})
        from bench_cpu import mlp_init, mlp_step, fx_log_softmax
        import fx, fx.numpy as fnp
        rng = np.random.default_rng(0)
        params = [tuple(fnp.asarray(a) for a in p) for p in mlp_init(rng)]
        x = fnp.asarray(rng.standard_normal((256, 784)).astype(np.float32))
        y = fnp.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 256)])
        step = fx.jit(mlp_step(fnp, fx.grad, fx_log_softmax))
        t = time.perf_counter()
        jax_free = step(params, x, y)
        jax_free[0][0].block_until_ready()
        print(time.perf_counter() - t)
    """)
    env = dict(os.environ, FX_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout.split()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    repeat = 5 if args.quick else 20

    import jax
    import jax.numpy as jnp

    print(f"{'benchmark':<44} | {'fx':>12} | {'jax.jit':>12} | {'numpy':>12} | "
          f"{'jax/fx':>8} | {'np/fx':>8}")
    rng = np.random.default_rng(0)

    # 1. fused elementwise, 4M float32
    x = rng.standard_normal(4_000_000).astype(np.float32)
    xf, xj = fnp.asarray(x), jnp.asarray(x)
    f_fx = fx.jit(fused_elementwise(fnp))
    f_jax = jax.jit(fused_elementwise(jnp))
    row("fused elementwise (4M f32)", timeit(lambda: f_fx(xf), repeat),
        timeit(lambda: f_jax(xj).block_until_ready(), repeat),
        timeit(lambda: fused_elementwise(np)(x), max(repeat // 4, 3)))

    # 2. MLP SGD step 784-512-512-10, batch 256
    params = mlp_init(rng)
    xb = rng.standard_normal((256, 784)).astype(np.float32)
    yb = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 256)]
    p_fx = [tuple(fnp.asarray(a) for a in p) for p in params]
    p_jax = [tuple(jnp.asarray(a) for a in p) for p in params]
    step_fx = fx.jit(mlp_step(fnp, fx.grad, fx_log_softmax))
    step_jax = jax.jit(mlp_step(jnp, jax.grad, jax.nn.log_softmax))
    xbf, ybf, xbj, ybj = fnp.asarray(xb), fnp.asarray(yb), jnp.asarray(xb), jnp.asarray(yb)
    row("MLP SGD step (784-512-512-10, batch 256)", timeit(lambda: step_fx(p_fx, xbf, ybf),
                                                           repeat),
        timeit(lambda: jax.block_until_ready(step_jax(p_jax, xbj, ybj)), repeat))

    # 3. cached dispatch of a tiny jitted function
    tiny_fx, tiny_jax = fx.jit(lambda a: a + 1.0), jax.jit(lambda a: a + 1.0)
    a_fx, a_jax = fnp.ones(4), jnp.ones(4)
    row("cached dispatch, tiny function", timeit(lambda: tiny_fx(a_fx), repeat, 2000),
        timeit(lambda: tiny_jax(a_jax), repeat, 2000), unit="us")

    # 4. compile + first run of the MLP step: cold and warm disk cache (fresh processes)
    with tempfile.TemporaryDirectory() as cache:
        cold = first_compile_seconds(cache)
        warm = first_compile_seconds(cache)
    row("MLP step first call, cold compile cache", cold)
    row("MLP step first call, warm compile cache", warm)

    # 5. memory plan of the MLP step
    mem = step_fx.lower(p_fx, xbf, ybf).compile().memory_analysis()
    print(f"MLP step arena: {mem['arena_bytes'] / 2**20:.2f} MiB, lower bound "
          f"{mem['lower_bound_bytes'] / 2**20:.2f} MiB "
          f"({mem['arena_bytes'] / max(mem['lower_bound_bytes'], 1):.3f}x), naive "
          f"{mem['naive_bytes'] / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()
