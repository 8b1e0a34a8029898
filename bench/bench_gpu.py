"""GPU benchmarks (run by bench/gpu_check.sh on a CUDA machine): fx vs CuPy/cuBLAS vs jax.

1. fused elementwise bandwidth against a plain device-to-device copy (target >= 80%);
2. the generated FP32 GEMM against cuBLAS at 1024/2048/4096 (TF32 off; target >= 70% at 4096);
3. MLP train step (784-512-512-10, batch 256), fx vs jax (target 1.2x);
4. the CNN and residual CNN value-and-grad (bench_cpu's), fx (convolutions reading their input
   in place) vs jax.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("CUPY_TF32", "0")  # FP32 means FP32: TF32 off for cuBLAS (read at import)

import cupy as cp  # noqa: E402

import fx  # noqa: E402
import fx.numpy as fnp  # noqa: E402
from fx.lowering.pipeline import lower  # noqa: E402


def gpu_time(fn, repeat=20, warmup=3) -> float:
    """Median seconds per call, measured with CUDA events."""
    for _ in range(warmup):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return float(np.median(times))


def elementwise_bandwidth():
    n = 64 * 2**20
    x = fx.device_put(np.random.default_rng(0).standard_normal(n).astype(np.float32), "cuda")
    f = fx.jit(lambda x: fnp.tanh(2 * x + 1) * fx.lax.logistic(x) - fnp.exp(-x * x) + 0.5 * x,
               backend="cuda")
    y = cp.empty(n, cp.float32)
    t_copy = gpu_time(lambda: cp.copyto(y, x._buf))
    t_fx = gpu_time(lambda: f(x))
    bytes_moved = 2 * 4 * n
    print(f"elementwise 64M f32: fx {t_fx * 1e3:.3f} ms ({bytes_moved / t_fx / 1e9:.0f} GB/s), "
          f"copy {t_copy * 1e3:.3f} ms ({bytes_moved / t_copy / 1e9:.0f} GB/s): "
          f"{t_copy / t_fx * 100:.0f}% of copy bandwidth")


def gemm():
    from fx.runtime.cuda import CudaExecutable

    for n in (1024, 2048, 4096):
        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        closed = fx.make_jaxpr(lambda a, b: a @ b)(fnp.asarray(a), fnp.asarray(b))
        low = lower(closed, "cuda")
        # Force the generated kernel for the comparison, whatever selection prefers.
        from fx.lowering.select import op_impl
        tiled = next(i for i in op_impl.registry if i.name == "cuda.tiled_gemm")
        step = low.steps[0]
        if step.choice.impl is not tiled:
            saved = list(op_impl.registry)
            op_impl.registry[:] = [i for i in saved if i.name != "cuda.cublas_gemm"]
            try:
                low = lower(closed, "cuda")
            finally:
                op_impl.registry[:] = saved
        exe = CudaExecutable(low)
        da, db = cp.asarray(a), cp.asarray(b)
        t_cublas = gpu_time(lambda da=da, db=db: cp.matmul(da, db))
        t_fx = gpu_time(lambda exe=exe, da=da, db=db: exe([da, db]))
        err = float(cp.max(cp.abs(exe([da, db])[0] - cp.matmul(da, db))))
        flops = 2.0 * n**3
        print(f"GEMM {n}^3 f32: generated {flops / t_fx / 1e12:.1f} TFLOP/s, cuBLAS "
              f"{flops / t_cublas / 1e12:.1f} TFLOP/s: {t_cublas / t_fx * 100:.0f}% of cuBLAS "
              f"(max abs diff {err:.2e})")


def mlp_step():
    import jax
    import jax.numpy as jnp
    from bench_cpu import fx_log_softmax, mlp_init, mlp_step

    rng = np.random.default_rng(0)
    params = mlp_init(rng)
    xb = rng.standard_normal((256, 784)).astype(np.float32)
    yb = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 256)]
    p_fx = [tuple(fx.device_put(a, "cuda") for a in p) for p in params]
    step_fx = fx.jit(mlp_step(fnp, fx.grad, fx_log_softmax), backend="cuda")
    x_fx, y_fx = fx.device_put(xb, "cuda"), fx.device_put(yb, "cuda")
    gpu = jax.devices("gpu")[0]
    p_jax = jax.device_put([tuple(jnp.asarray(a) for a in p) for p in params], gpu)
    step_jax = jax.jit(mlp_step(jnp, jax.grad, jax.nn.log_softmax))
    x_jax, y_jax = jax.device_put(xb, gpu), jax.device_put(yb, gpu)
    t_fx = gpu_time(lambda: step_fx(p_fx, x_fx, y_fx))
    t_jax = gpu_time(lambda: jax.block_until_ready(step_jax(p_jax, x_jax, y_jax)))
    print(f"MLP SGD step: fx {t_fx * 1e3:.3f} ms, jax {t_jax * 1e3:.3f} ms "
          f"(fx/jax {t_fx / t_jax:.2f}x)")


def cnn_steps():
    """The issue's two CNNs (bench_cpu's), value_and_grad from the same initial weights, fx on
    the GPU (each convolution, its input gradient and its weight gradient one kernel reading
    its input in place: ``cuda.in_place_conv``) vs jax on the GPU."""
    from bench_cpu import cnn, residual_cnn

    rng = np.random.default_rng(0)
    _cnn_row("CNN value_and_grad (batch 64, 28x28x1)", cnn, (64, 28, 28, 1), 0, rng)
    _cnn_row("residual CNN value_and_grad (batch 32, 32x32x3)", residual_cnn, (32, 32, 32, 3),
             1, rng)


def _cnn_row(name, make, shape, seed, rng):
    import jax
    import jax.example_libraries.stax as jstax
    import jax.numpy as jnp
    from bench_cpu import cnn_value_and_grad

    from fx.example_libraries import stax as fstax

    gpu = jax.devices("gpu")[0]
    _, apply_fx = make(fstax)
    init_jax, apply_jax = make(jstax)
    _, params_j = init_jax(jax.random.PRNGKey(seed), shape)
    params = jax.tree_util.tree_map(np.asarray, params_j)
    xb = rng.standard_normal(shape).astype(np.float32)
    yb = np.eye(10, dtype=np.float32)[rng.integers(0, 10, shape[0])]
    p_fx = fx.tree_util.tree_map(lambda a: fx.device_put(a, "cuda"), params)
    x_fx, y_fx = fx.device_put(xb, "cuda"), fx.device_put(yb, "cuda")
    vg_fx = fx.jit(cnn_value_and_grad(fnp, fx.value_and_grad, apply_fx), backend="cuda")
    p_jax = jax.device_put(params_j, gpu)
    x_jax, y_jax = jax.device_put(xb, gpu), jax.device_put(yb, gpu)
    vg_jax = jax.jit(cnn_value_and_grad(jnp, jax.value_and_grad, apply_jax))
    in_place = vg_fx.lower(p_fx, x_fx, y_fx).as_text().count("impl: cuda.in_place_conv ->")
    loss_fx = float(np.asarray(vg_fx(p_fx, x_fx, y_fx)[0]))
    loss_jax = float(vg_jax(p_jax, x_jax, y_jax)[0])
    t_fx = gpu_time(lambda: vg_fx(p_fx, x_fx, y_fx))
    t_jax = gpu_time(lambda: jax.block_until_ready(vg_jax(p_jax, x_jax, y_jax)))
    print(f"{name}: fx {t_fx * 1e3:.3f} ms, jax {t_jax * 1e3:.3f} ms "
          f"(fx/jax {t_fx / t_jax:.2f}x); {in_place} convolution steps in place; "
          f"loss fx {loss_fx:.6f} jax {loss_jax:.6f}")


def main():
    print(cp.cuda.runtime.getDeviceProperties(0)["name"].decode())
    for bench in (elementwise_bandwidth, gemm, mlp_step, cnn_steps):
        try:
            bench()
        except Exception as e:  # report and go on: one failure must not hide the others
            print(f"{bench.__name__}: FAILED: {type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
