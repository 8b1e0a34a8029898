"""Compile-time benchmark: the first call of a jitted function against the program's size, fx vs
jax in one run.

Run: ``python bench/bench_compile.py`` (``--quick`` leaves out the largest sizes). Every
measurement runs in a fresh process with a cold compile cache (``$FX_CACHE_DIR`` a new empty
folder), so nothing is reused between rows. fx's first call is split into its stages, measured
in another fresh process over the same program: tracing, the graph passes
(``optimize``), fusion + operator selection + memory planning, kernel generation + rendering
to C, and the C compile (``Compilation.compile``: gcc over the program's translation units, in
parallel, and loading them). The stages add up to about the first call, which also runs the
program once.

Programs (small arrays, so compiling dominates):

- ``chain N``: ``x = sin(x) + 1.0`` repeated N times (2N equations);
- ``mlp-grad L``: ``jit(grad)`` of an L-layer MLP (width 32, batch 8, tanh);
- ``fori_loop 100, unroll=True``: the body of ``bench_cpu``'s loop benchmark, 100 steps (jax
  unrolls it into straight-line code; fx ignores ``unroll`` and compiles one loop);
- ``mlp train step``: ``bench_cpu``'s MLP step (784-512-512-10, batch 256), for reference.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cpu  # noqa: E402


def chain(np_, n: int):
    def f(x):
        for _ in range(n):
            x = np_.sin(x) + 1.0
        return x
    return f, (np.linspace(-1, 1, 64, dtype=np.float32),)


def mlp_grad(np_, layers: int, grad):
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((32, 32)).astype(np.float32) * 0.2,
               np.zeros(32, np.float32)) for _ in range(layers)]
    x = rng.standard_normal((8, 32)).astype(np.float32)

    def loss(params, x):
        for w, b in params:
            x = np_.tanh(x @ w + b)
        return np_.sum(x * x)

    return grad(loss), (params, x)


def fori_unrolled(np_, steps: int, fori_loop):
    body = bench_cpu.fori_loop_body(np_)

    def f(x):
        return fori_loop(0, steps, body, x, unroll=True)

    return f, (np.linspace(-1, 1, 1024, dtype=np.float32),)


def program(framework: str, case: str, size: int):
    """``(jit, function, args)`` for ``case`` at ``size`` in ``framework``."""
    if framework == "fx":
        import fx
        import fx.numpy as np_
        jit, grad, fori_loop = fx.jit, fx.grad, fx.lax.fori_loop
    else:
        import jax
        import jax.numpy as np_
        jit, grad, fori_loop = jax.jit, jax.grad, jax.lax.fori_loop
    if case == "chain":
        f, args = chain(np_, size)
    elif case == "mlp-grad":
        f, args = mlp_grad(np_, size, grad)
    else:
        f, args = fori_unrolled(np_, size, fori_loop)
    return jit, f, args


def first_call(framework: str, case: str, size: int) -> dict:
    """In this process: the first call of the jitted program (result waited for)."""
    if framework == "jax":
        import jax
        jax.config.update("jax_platforms", "cpu")
    jit, f, args = program(framework, case, size)
    start = time.perf_counter()
    out = jit(f)(*args)
    np.asarray(out[0][0] if isinstance(out, (list, tuple)) else out)
    return {"first_call": time.perf_counter() - start}


def stages(case: str, size: int) -> dict:
    """In this process: fx's first call stage by stage (tracing: what ``lower`` spends
    outside the compiler pipeline)."""
    jit, f, args = program("fx", case, size)
    start = time.perf_counter()
    lowered = jit(f).lower(*args)
    lower_total = time.perf_counter() - start
    start = time.perf_counter()
    lowered.compile()
    compile_ = time.perf_counter() - start
    s = lowered.program.stats
    passes = s.inline + s.optimize
    plan = s.fuse + s.select + s.plan
    gen = s.codegen + s.render
    return {"trace": lower_total - passes - plan - gen, "optimize": passes,
            "fuse_select_plan": plan, "codegen_render": gen, "c_compile": compile_,
            "eqns": s.eqns, "kernels": s.kernels, "units": s.units}


def fresh(what: str, *args) -> dict:
    """``what(*args)`` in a fresh process with an empty compile cache."""
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory(prefix="fx-bench-cache-") as cache:
        script = (f"import sys, json; sys.path.insert(0, {here!r}); import bench_compile; "
                  f"print(json.dumps(bench_compile.{what}(*{args!r})))")
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env=dict(os.environ, FX_CACHE_DIR=cache), check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


CASES = [("chain", 100), ("chain", 1000), ("chain", 10_000), ("mlp-grad", 50),
         ("mlp-grad", 200), ("mlp-grad", 1000), ("fori_loop", 100)]
QUICK_SKIP = {("chain", 10_000), ("mlp-grad", 1000)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="leave out the largest sizes")
    a = parser.parse_args()
    bench_cpu.hold_jax_to_march()
    bench_cpu.print_machine()
    print("first call, cold cache, a fresh process each; seconds")
    head = (f"{'program':<28}{'eqns':>7}{'kernels':>8}{'units':>6} | {'trace':>6}{'opt':>6}"
            f"{'fuse+':>7}{'gen+':>6}{'cc':>6} | {'fx':>7}{'jax':>7}{'jax/fx':>8}")
    print(head)
    print(f"{'':<49} | {'':>6}{'':>6}{'plan':>7}{'rend':>6}{'':>6} |")
    for case, size in CASES:
        if a.quick and (case, size) in QUICK_SKIP:
            continue
        st = fresh("stages", case, size)
        fx_t = fresh("first_call", "fx", case, size)["first_call"]
        jax_t = fresh("first_call", "jax", case, size)["first_call"]
        name = f"{case} {size}" + (", unroll=True" if case == "fori_loop" else "")
        print(f"{name:<28}{st['eqns']:>7}{st['kernels']:>8}{st['units']:>6} | "
              f"{st['trace']:>6.2f}{st['optimize']:>6.2f}{st['fuse_select_plan']:>7.2f}"
              f"{st['codegen_render']:>6.2f}{st['c_compile']:>6.2f} | {fx_t:>7.2f}{jax_t:>7.2f}"
              f"{jax_t / fx_t:>7.2f}x", flush=True)
    with tempfile.TemporaryDirectory(prefix="fx-bench-cache-") as cache:
        fx_t = bench_cpu.first_step_seconds_fresh("fx", {"FX_CACHE_DIR": cache})
    jax_t = bench_cpu.first_step_seconds_fresh("jax")
    print(f"{'mlp train step (bench_cpu)':<49} | {'':>31} | {fx_t:>7.2f}{jax_t:>7.2f}"
          f"{jax_t / fx_t:>7.2f}x")


if __name__ == "__main__":
    main()
