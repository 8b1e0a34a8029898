"""CPU benchmarks: fx vs jax.jit vs NumPy in one run, printing times and ratios.

Run: ``python bench/bench_cpu.py`` (add ``--quick`` for fewer repetitions). Timings are the
median of repeated runs after warm-up; ratios above 1 mean fx is faster. The machines here are
shared and their speed drifts: run it twice before believing a ratio.

The output starts with the CPU model, its x86-64 ISA level (from /proc/cpuinfo) and the
``-march`` fx compiles its kernels for (``$FX_MARCH``, default ``native``). To see what a CPU
without AVX-512 gets, run the AVX2 code on an AVX-512 machine::

    FX_MARCH=x86-64-v3 python bench/bench_cpu.py

(the same cores and memory; only the kernels' instruction set, and GCC's generic tuning for
it, change). The hand-written C reference loop is compiled for the same ``-march``, and jax is
held to the same ISA (``XLA_FLAGS=--xla_cpu_max_isa=AVX2`` for x86-64-v3, ``SSE4_2`` for
x86-64-v2, unless ``XLA_FLAGS`` is set).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import fx
import fx.numpy as fnp
from fx.runtime import cc, peaks


def timeit(fn, repeat: int, number: int = 1) -> float:
    return timeit_each([fn], repeat, number)[0]


def timeit_each(fns, repeat: int, number: int = 1) -> list[float]:
    """Median seconds per call of each function, one function's runs after the other's. (Not
    interleaved: XLA's worker threads keep spinning a while after a call and would slow
    whatever runs next.)"""
    out = []
    for fn in fns:
        fn()
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            samples.append((time.perf_counter() - start) / number)
        out.append(statistics.median(samples))
    return out


def fused_elementwise(np_):
    def f(x):
        return np_.tanh(2 * x + 1) * (1 / (1 + np_.exp(-x))) - np_.exp(-x * x) + 0.5 * x

    return f


# The fused elementwise expression written by hand in C, the reference fx's generated kernel is
# held to: -ffast-math lets GCC call glibc's vector expf/tanhf, and OpenMP gives it the same
# threads fx's kernel has.
HAND_WRITTEN_C = r"""
#include <math.h>
void fused(const float* restrict x, float* restrict y, long n) {
  #pragma omp parallel for simd schedule(static)
  for (long i = 0; i < n; i++) {
    float v = x[i];
    y[i] = tanhf(2.0f * v + 1.0f) * (1.0f / (1.0f + expf(-v))) - expf(-v * v) + 0.5f * v;
  }
}
"""


def hand_written_fused(tmp: str):
    """The hand-written loop, compiled ``-O3 -march=<fx's> -ffast-math -fopenmp`` into a shared
    library in ``tmp``: a function ``(x, y)`` writing the expression of float32 ``x`` to ``y``."""
    src, lib = os.path.join(tmp, "fused.c"), os.path.join(tmp, "fused.so")
    with open(src, "w") as f:
        f.write(HAND_WRITTEN_C)
    subprocess.run([cc.compiler() or "gcc", "-O3", f"-march={cc.MARCH}", "-ffast-math",
                    "-fopenmp", "-fPIC", "-shared", src, "-o", lib, "-lm"], check=True)
    fn = ctypes.CDLL(lib).fused
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]

    def call(x: np.ndarray, y: np.ndarray) -> None:
        fn(x.ctypes.data, y.ctypes.data, x.size)

    return call


def cpu_model() -> str:
    """The model name in /proc/cpuinfo, with the family/model numbers (a VM may show only a
    generic name)."""
    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if not line.strip():
                    break  # the first processor is enough
                info.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = info.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in info and "model" in info:
        name += f" (family {info['cpu family']}, model {info['model']})"
    return name


_X86_LEVELS = (  # psABI levels: the cpuinfo flags each adds
    ("x86-64-v2", {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"}),
    ("x86-64-v3", {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}),
    ("x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}),
)


def isa_level() -> str:
    """The highest x86-64 psABI level the CPU supports (or the machine name elsewhere)."""
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    if not flags or platform.machine() not in ("x86_64", "AMD64"):
        return platform.machine()
    level = "x86-64"
    for name, needs in _X86_LEVELS:
        if not needs <= flags:
            break
        level = name
    return level


_XLA_ISA = {"x86-64-v2": "SSE4_2", "x86-64-v3": "AVX2"}


def restart_on_one_thread() -> None:
    """Run this script again with OpenBLAS, OpenMP and XLA on one thread each (thread pools
    size themselves when their libraries load, so the process must start with them set)."""
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        os.environ.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", XLA_FLAGS=(
            os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false "
            "intra_op_parallelism_threads=1").strip())
        os.execv(sys.executable, [sys.executable, *sys.argv])


def hold_jax_to_march() -> None:
    """Cap XLA's CPU code at the ISA fx compiles for (call before jax is first used)."""
    isa = _XLA_ISA.get(cc.MARCH)
    if isa and "XLA_FLAGS" not in os.environ:
        os.environ["XLA_FLAGS"] = f"--xla_cpu_max_isa={isa}"


def blas_kernels() -> str:
    """The BLAS libraries loaded, with their kernel (architecture) and thread count."""
    try:
        import threadpoolctl
    except ImportError:
        return "BLAS: (threadpoolctl not installed)"
    found = [f"{i.get('internal_api')} {i.get('version')} {i.get('architecture', '?')} kernel, "
             f"{i.get('num_threads')} threads" for i in threadpoolctl.threadpool_info()
             if i.get("user_api") == "blas"]
    env = [f"{k}={os.environ[k]}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                            "OPENBLAS_NUM_THREADS") if k in os.environ]
    return "BLAS: " + ("; ".join(found) or "none loaded") + (
        f" (environment: {' '.join(env)})" if env else "")


def print_machine() -> peaks.Peaks:
    """Print the machine and measure its peaks now (the roofline of the compute-bound rows)."""
    import jax

    print(f"CPU: {cpu_model()}, {os.cpu_count()} logical cores; ISA level {isa_level()}")
    print(f"fx kernels: -march={cc.MARCH} (FX_MARCH={os.environ.get('FX_MARCH', '(unset)')}); "
          f"{cc.compiler_version()}; jax {jax.__version__} "
          f"(XLA_FLAGS={os.environ.get('XLA_FLAGS', '(unset)')}); NumPy {np.__version__}; "
          f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}")
    print(blas_kernels())
    p = peaks.measure(refresh=True)
    print(f"peaks measured now: {p.flops / 1e9:.0f} GFLOP/s float32 FMA on {p.threads} threads, "
          f"{p.bytes_per_s / 1e9:.1f} GB/s stream (fx.runtime.peaks)")
    return p


@contextlib.contextmanager
def busy_core():
    """Another process spinning on one core for the duration."""
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)  # let it start
        yield
    finally:
        spin.kill()
        spin.wait()


def peak_share(name: str, flops: float, seconds: float, p: peaks.Peaks) -> None:
    """The line under a compute-bound row: its FLOPs per call and fx's share of the peak."""
    rate = flops / seconds
    print(f"  ({name}: {flops / 1e9:.3f} GFLOP per call; fx {rate / 1e9:.1f} GFLOP/s, "
          f"{100 * rate / p.flops:.0f}% of the float32 FMA peak)", flush=True)


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


def cnn(stax_lib):
    """The issue's CNN: conv 5x5x16 -> pool -> conv 5x5x32 -> pool -> dense 128 -> 10 (NHWC)."""
    s = stax_lib
    return s.serial(
        s.Conv(16, (5, 5), padding="SAME"), s.Relu, s.MaxPool((2, 2), (2, 2)),
        s.Conv(32, (5, 5), padding="SAME"), s.Relu, s.MaxPool((2, 2), (2, 2)),
        s.Flatten, s.Dense(128), s.Relu, s.Dense(10), s.LogSoftmax)


def residual_cnn(stax_lib):
    """The issue's residual CNN (NHWC, 3x3 convs of 32 and 64 channels, 32x32x3 inputs): a
    stem, a residual block, a strided conv to 64 channels, a residual block, global average
    pooling, a dense layer."""
    s = stax_lib

    def block(c):
        body = s.serial(s.Conv(c, (3, 3), padding="SAME"), s.Relu,
                        s.Conv(c, (3, 3), padding="SAME"))
        return s.serial(s.FanOut(2), s.parallel(body, s.Identity), s.FanInSum, s.Relu)

    return s.serial(s.Conv(32, (3, 3), padding="SAME"), s.Relu, block(32),
                    s.Conv(64, (3, 3), (2, 2), padding="SAME"), s.Relu, block(64),
                    s.AvgPool((16, 16)), s.Flatten, s.Dense(10), s.LogSoftmax)


def cnn_steps(model, shape, key: int, rng):
    """A value-and-grad step of ``model`` (``cnn`` or ``residual_cnn``) on a batch of
    ``shape`` with 10 one-hot classes, for fx and for jax from the same initial weights (jax's
    init with ``PRNGKey(key)``): ``(fx_call, jax_call, flops)``, the calls taking no
    arguments, the flops fx's count of its step."""
    import jax
    import jax.example_libraries.stax as jstax
    import jax.numpy as jnp

    from fx.example_libraries import stax as fstax

    _, apply_fx = model(fstax)
    init_jax, apply_jax = model(jstax)
    _, params_j = init_jax(jax.random.PRNGKey(key), shape)
    params_f = fx.tree_util.tree_map(lambda a: fnp.asarray(np.asarray(a)), params_j)
    x = rng.standard_normal(shape).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, shape[0])]
    vg_fx = fx.jit(cnn_value_and_grad(fnp, fx.value_and_grad, apply_fx))
    vg_jax = jax.jit(cnn_value_and_grad(jnp, jax.value_and_grad, apply_jax))
    xf, yf, xj, yj = fnp.asarray(x), fnp.asarray(y), jnp.asarray(x), jnp.asarray(y)
    flops = vg_fx.lower(params_f, xf, yf).cost_analysis()["flops"]
    return (lambda: vg_fx(params_f, xf, yf),
            lambda: jax.block_until_ready(vg_jax(params_j, xj, yj)), flops)


def cnn_value_and_grad(np_, value_and_grad, apply):
    def loss(params, x, y):
        return -np_.mean(np_.sum(apply(params, x) * y, axis=1))

    return value_and_grad(loss)


def row(name, fx_t, jax_t=None, np_t=None, unit="ms"):
    scale = 1e3 if unit == "ms" else 1e6
    cells = [f"{name:<44}", f"{fx_t * scale:9.3f} {unit}"]
    cells.append(f"{jax_t * scale:9.3f} {unit}" if jax_t is not None else f"{'-':>12}")
    cells.append(f"{np_t * scale:9.3f} {unit}" if np_t is not None else f"{'-':>12}")
    cells.append(f"{jax_t / fx_t:7.2f}x" if jax_t is not None else f"{'-':>8}")
    cells.append(f"{np_t / fx_t:7.2f}x" if np_t is not None else f"{'-':>8}")
    print(" | ".join(cells), flush=True)


def first_step_seconds(framework: str) -> float:
    """Build the MLP step with ``framework`` ("fx" or "jax") in this process and time its first
    call (tracing, compiling and running it)."""
    if framework == "fx":
        lib, jit, grad, log_softmax = fnp, fx.jit, fx.grad, fx_log_softmax
    else:
        import jax
        import jax.numpy as jnp
        lib, jit, grad, log_softmax = jnp, jax.jit, jax.grad, jax.nn.log_softmax
    rng = np.random.default_rng(0)
    params = [tuple(lib.asarray(a) for a in p) for p in mlp_init(rng)]
    x = lib.asarray(rng.standard_normal((256, 784)).astype(np.float32))
    y = lib.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 256)])
    step = jit(mlp_step(lib, grad, log_softmax))
    start = time.perf_counter()
    np.asarray(step(params, x, y)[0][0])  # waits for the result in either framework
    return time.perf_counter() - start


def first_step_seconds_fresh(framework: str, env: dict | None = None) -> float:
    """:func:`first_step_seconds` in a fresh process (no in-memory compile cache)."""
    here = os.path.dirname(os.path.abspath(__file__))
    script = (f"import sys; sys.path.insert(0, {here!r}); import bench_cpu; "
              f"print(bench_cpu.first_step_seconds({framework!r}))")
    out = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, **(env or {})),
                         capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def digits_epoch(repeat: int, cnn: bool = False):
    """Seconds for one epoch of the examples' MLP (or, with ``cnn``, examples/cnn_digits.py's
    LeNet on 8x8x1 images) on the digits (fx and jax, same batches)."""
    import jax
    import jax.example_libraries.stax as jstax
    import jax.numpy as jnp
    from sklearn.datasets import load_digits

    from fx import optim
    from fx.example_libraries import stax as fstax

    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[data.target]
    n = (len(x) // 64) * 64

    def net(s):
        if cnn:
            return s.serial(
                s.Conv(16, (3, 3), padding="SAME"), s.Relu, s.MaxPool((2, 2), (2, 2)),
                s.Conv(32, (3, 3), padding="SAME"), s.Relu, s.MaxPool((2, 2), (2, 2)),
                s.Flatten, s.Dense(128), s.Relu, s.Dense(10), s.LogSoftmax)
        return s.serial(s.Dense(256), s.Relu, s.Dense(256), s.Relu, s.Dense(10), s.LogSoftmax)

    shape = (64, 8, 8, 1) if cnn else (64, 64)
    if cnn:
        x = x.reshape(-1, 8, 8, 1)

    def make(lib_np, vg, apply, adam_init, adam_update):
        def loss(p, xb, yb):
            return -lib_np.mean(lib_np.sum(apply(p, xb) * yb, axis=1))

        def step(p, state, xb, yb):
            value, g = vg(loss)(p, xb, yb)
            p, state = adam_update(g, state, p)
            return p, state, value

        return step

    # fx: optax-style adam; jax: the same update written out (optax is not a dependency).
    fopt = optim.adam(1e-3)

    def fx_update(g, state, p):
        updates, state = fopt.update(g, state, p)
        return optim.apply_updates(p, updates), state

    def jax_adam_init(p):
        z = jax.tree_util.tree_map(jnp.zeros_like, p)
        return (z, z, jnp.zeros((), jnp.int32))

    def jax_update(g, state, p):
        m, v, t = state
        t = t + 1
        m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
        v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
        mh, vh = 1 - 0.9 ** t, 1 - 0.999 ** t
        p = jax.tree_util.tree_map(
            lambda p, m, v: p - 1e-3 * (m / mh) / (jnp.sqrt(v / vh) + 1e-8), p, m, v)
        return p, (m, v, t)

    f_init, f_apply = net(fstax)
    j_init, j_apply = net(jstax)
    _, pj = j_init(jax.random.PRNGKey(0), shape)
    pf = fx.tree_util.tree_map(lambda a: fnp.asarray(np.asarray(a)), pj)
    fstep = fx.jit(make(fnp, fx.value_and_grad, f_apply, None, fx_update))
    jstep = jax.jit(make(jnp, jax.value_and_grad, j_apply, None, jax_update))
    fb = [(fnp.asarray(x[i:i + 64]), fnp.asarray(y[i:i + 64])) for i in range(0, n, 64)]
    jb = [(jnp.asarray(x[i:i + 64]), jnp.asarray(y[i:i + 64])) for i in range(0, n, 64)]

    def fx_epoch():
        p, st = pf, fopt.init(pf)
        for xb, yb in fb:
            p, st, _ = fstep(p, st, xb, yb)
        return p

    def jax_epoch():
        p, st = pj, jax_adam_init(pj)
        for xb, yb in jb:
            p, st, _ = jstep(p, st, xb, yb)
        return jax.block_until_ready(p)

    return timeit_each([fx_epoch, jax_epoch], repeat)


def fori_loop_body(np_):
    """A small loop body: one step of a damped rotation on a 64-vector."""
    def body(i, x):
        return np_.tanh(0.9 * x + 0.01 * np_.roll(x, 1)) + 0.001 * i

    return body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    repeat = 5 if args.quick else 20

    hold_jax_to_march()
    import jax
    import jax.numpy as jnp

    machine_peaks = print_machine()
    print(f"{'benchmark':<44} | {'fx':>12} | {'jax.jit':>12} | {'numpy':>12} | "
          f"{'jax/fx':>8} | {'np/fx':>8}")
    rng = np.random.default_rng(0)

    # 1. fused elementwise, 4M float32
    x = rng.standard_normal(4_000_000).astype(np.float32)
    xf, xj = fnp.asarray(x), jnp.asarray(x)
    f_fx = fx.jit(fused_elementwise(fnp))
    f_jax = jax.jit(fused_elementwise(jnp))
    row("fused elementwise (4M f32)",
        *timeit_each([lambda: f_fx(xf), lambda: f_jax(xj).block_until_ready()], repeat),
        timeit(lambda: fused_elementwise(np)(x), max(repeat // 4, 3)))
    with tempfile.TemporaryDirectory() as tmp:
        hand, y = hand_written_fused(tmp), np.empty_like(x)
        hand(x, y)
        np.testing.assert_allclose(y, np.asarray(f_fx(xf)), rtol=1e-4, atol=1e-5)
        t_fx, t_hand = timeit_each([lambda: f_fx(xf), lambda: hand(x, y)], repeat)
    row("  hand-written C loop, -O3 -ffast-math", t_hand)
    print(f"  (-march={cc.MARCH}; fx {t_fx * 1e3:.3f} ms measured beside it: "
          f"{t_fx / t_hand:.2f}x the hand-written loop's time)", flush=True)

    # 2. MLP SGD step 784-512-512-10, batch 256
    params = mlp_init(rng)
    xb = rng.standard_normal((256, 784)).astype(np.float32)
    yb = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 256)]
    p_fx = [tuple(fnp.asarray(a) for a in p) for p in params]
    p_jax = [tuple(jnp.asarray(a) for a in p) for p in params]
    step_fx = fx.jit(mlp_step(fnp, fx.grad, fx_log_softmax))
    step_jax = jax.jit(mlp_step(jnp, jax.grad, jax.nn.log_softmax))
    xbf, ybf, xbj, ybj = fnp.asarray(xb), fnp.asarray(yb), jnp.asarray(xb), jnp.asarray(yb)
    times = timeit_each([lambda: step_fx(p_fx, xbf, ybf),
                         lambda: jax.block_until_ready(step_jax(p_jax, xbj, ybj))], repeat)
    row("MLP SGD step (784-512-512-10, batch 256)", *times)
    peak_share("MLP step", step_fx.lower(p_fx, xbf, ybf).cost_analysis()["flops"], times[0],
               machine_peaks)

    # 2b. CNN value-and-grad, batch 64 of 28x28x1 (the same initial weights in both)
    cnn_fx, cnn_jax, cnn_flops = cnn_steps(cnn, (64, 28, 28, 1), 0, rng)
    times = timeit_each([cnn_fx, cnn_jax], repeat)
    row("CNN value_and_grad (batch 64, 28x28x1)", *times)
    peak_share("CNN step", cnn_flops, times[0], machine_peaks)

    # 2b2. the residual CNN value-and-grad, batch 32 of 32x32x3
    res_fx, res_jax, res_flops = cnn_steps(residual_cnn, (32, 32, 32, 3), 1, rng)
    times = timeit_each([res_fx, res_jax], max(repeat // 2, 3))
    row("residual CNN value_and_grad (batch 32, 32x32x3)", *times)
    peak_share("residual CNN step", res_flops, times[0], machine_peaks)

    # 2b'. the same two steps while another process keeps one core busy (a data loader, a
    # second job): fx's threads (OpenMP kernels, BLAS, the wave workers) must not lose more
    # than jax's do.
    with busy_core():
        row("MLP SGD step, one core busy",
            *timeit_each([lambda: step_fx(p_fx, xbf, ybf),
                          lambda: jax.block_until_ready(step_jax(p_jax, xbj, ybj))], repeat))
        row("CNN value_and_grad, one core busy",
            *timeit_each([cnn_fx, cnn_jax], repeat))

    # 2c. one epoch of the digits MLP (adam, batch 64), as in examples/mlp_digits.py
    row("digits MLP epoch (adam, batch 64)", *digits_epoch(repeat=max(repeat // 4, 3)))
    row("digits CNN epoch (examples/cnn_digits.py)",
        *digits_epoch(repeat=max(repeat // 4, 3), cnn=True))

    # 2d. a 1,000-step fori_loop inside one jitted function vs a Python loop of jitted calls
    body_fx, body_jax = fori_loop_body(fnp), fori_loop_body(jnp)
    loop_fx = fx.jit(lambda x: fx.lax.fori_loop(0, 1000, body_fx, x))
    loop_jax = jax.jit(lambda x: jax.lax.fori_loop(0, 1000, body_jax, x))
    step_body = fx.jit(body_fx)
    v = rng.standard_normal(64).astype(np.float32)
    vf, vj = fnp.asarray(v), jnp.asarray(v)

    def python_loop():
        x = vf
        for i in range(1000):
            x = step_body(i, x)
        return x.block_until_ready()

    row("fori_loop, 1000 steps (in one jit)",
        *timeit_each([lambda: loop_fx(vf), lambda: loop_jax(vj).block_until_ready()], repeat))
    row("  same as a Python loop of jitted fx calls", timeit(python_loop, max(repeat // 4, 3)))

    # 3. cached dispatch of a tiny jitted function
    tiny_fx, tiny_jax = fx.jit(lambda a: a + 1.0), jax.jit(lambda a: a + 1.0)
    a_fx, a_jax = fnp.ones(4), jnp.ones(4)
    row("cached dispatch, tiny function",
        *timeit_each([lambda: tiny_fx(a_fx), lambda: tiny_jax(a_jax)], repeat, 2000), unit="us")
    a_np = np.ones(4, np.float32)
    row("cached dispatch, tiny function, NumPy input",
        *timeit_each([lambda: tiny_fx(a_np), lambda: tiny_jax(a_np)], repeat, 2000), unit="us")

    # 4. compile + first run of the MLP step: cold and warm disk cache (fresh processes)
    with tempfile.TemporaryDirectory() as cache:
        cold = first_step_seconds_fresh("fx", {"FX_CACHE_DIR": cache})
        warm = first_step_seconds_fresh("fx", {"FX_CACHE_DIR": cache})
    row("MLP step first call, cold compile cache", cold, first_step_seconds_fresh("jax"))
    row("MLP step first call, warm compile cache", warm)

    # 5. memory plan of the MLP step
    mem = step_fx.lower(p_fx, xbf, ybf).compile().memory_analysis()
    print(f"MLP step arena: {mem['arena_bytes'] / 2**20:.2f} MiB, lower bound "
          f"{mem['lower_bound_bytes'] / 2**20:.2f} MiB "
          f"({mem['arena_bytes'] / max(mem['lower_bound_bytes'], 1):.3f}x), naive "
          f"{mem['naive_bytes'] / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()
