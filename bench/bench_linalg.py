"""Linear algebra and FFT: fx.jit vs jax.jit vs NumPy/SciPy in one run, with ratios (above 1:
fx is faster).

Run: ``python bench/bench_linalg.py`` (``--quick``: fewer repetitions, no 1024 svd/eigh;
``--one-thread``: OpenBLAS, OpenMP and XLA on one thread each, for a loaded machine, where two
BLAS thread pools and XLA's spinning on two shared cores measure the scheduler; ``--only
"solve n=1024"``: the rows whose name starts with that). The machine
header (CPU model, ISA level, -march) is bench_cpu's. The rows are the issue's:

- ``cholesky``, ``solve`` (one right-hand side), ``eigh`` and ``svd`` (thin, with vectors) of
  one n x n matrix, n = 64, 256, 1024: LAPACK-bound for large n (fx and jax both call
  SciPy's LAPACK, jax through ``scipy.linalg.cython_lapack``; NumPy has its own OpenBLAS);
- batched small problems, ``vmap`` over 100,000 matrices: solves of 2x2, 3x3 and 4x4
  systems, 3x3 inverses, determinants and Cholesky factors;
- ``rfft`` of 2^20 points;
- ``jit(grad)`` of a Gaussian-process negative log marginal likelihood (an RBF kernel over
  1,024 points; Cholesky, two triangular solves, the log-determinant) with respect to its
  three log-hyperparameters; the NumPy/SciPy column is the same value and gradient written
  by hand (``cho_factor``/``cho_solve`` and ``0.5 tr((K^-1 - a a^T) dK)``).

float32 and float64 (jax and fx in 64-bit mode; float32 operands stay float32).
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import scipy.linalg
from bench_cpu import hold_jax_to_march, print_machine, restart_on_one_thread, row, timeit_each

import fx
import fx.numpy as fnp
import fx.scipy.linalg as fsl

DTYPES = (np.float32, np.float64)


def spd(rng, n: int, dt, batch=()):
    """Well-conditioned symmetric positive-definite matrices."""
    a = rng.standard_normal((*batch, n, n))
    return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n)).astype(dt)


def dense_cases(np_):
    """name -> function of (a, b) for the one-matrix rows, in the library ``np_``."""
    return {
        "cholesky": lambda a, b: np_.linalg.cholesky(a),
        "solve": lambda a, b: np_.linalg.solve(a, b),
        "eigh": lambda a, b: np_.linalg.eigh(a),
        "svd": lambda a, b: np_.linalg.svd(a, full_matrices=False),
    }


def batched_cases(np_):
    """name -> (matrix size, function of (a, b) for one problem, vmapped by the caller)."""
    return {
        "solve 2x2": (2, lambda a, b: np_.linalg.solve(a, b)),
        "solve 3x3": (3, lambda a, b: np_.linalg.solve(a, b)),
        "solve 4x4": (4, lambda a, b: np_.linalg.solve(a, b)),
        "inv 3x3": (3, lambda a, b: np_.linalg.inv(a)),
        "det 3x3": (3, lambda a, b: np_.linalg.det(a)),
        "cholesky 3x3": (3, lambda a, b: np_.linalg.cholesky(a)),
    }


def gp_nll(np_, cho_factor, cho_solve):
    """Negative log marginal likelihood of y under a GP with an RBF kernel; ``theta`` holds
    the logs of the lengthscale, signal variance and noise variance."""

    def f(theta, x, y):
        ell, var, noise = np_.exp(theta[0]), np_.exp(theta[1]), np_.exp(theta[2])
        d2 = (x[:, None] - x[None, :]) ** 2
        k = var * np_.exp(-0.5 * d2 / ell**2) + noise * np_.eye(x.shape[0], dtype=x.dtype)
        c = cho_factor(k, lower=True)
        alpha = cho_solve(c, y)
        logdet = 2 * np_.sum(np_.log(np_.diagonal(c[0])))
        return 0.5 * y @ alpha + 0.5 * logdet + 0.5 * x.shape[0] * np_.log(2 * np_.pi)

    return f


def gp_grad_numpy(theta, x, y):
    """The gradient of ``gp_nll`` in NumPy/SciPy: ``0.5 tr((K^-1 - a a^T) dK/dtheta_i)``."""
    ell, var, noise = np.exp(theta)
    d2 = (x[:, None] - x[None, :]) ** 2
    rbf = var * np.exp(-0.5 * d2 / ell**2)
    k = rbf + noise * np.eye(x.shape[0], dtype=x.dtype)
    c = scipy.linalg.cho_factor(k, lower=True, check_finite=False)
    alpha = scipy.linalg.cho_solve(c, y, check_finite=False)
    w = scipy.linalg.cho_solve(c, np.eye(x.shape[0], dtype=x.dtype), check_finite=False)
    w -= np.outer(alpha, alpha)
    dks = (rbf * d2 / ell**2, rbf)  # d/dlog(ell), d/dlog(var); d/dlog(noise) = noise * I
    return np.array([0.5 * np.sum(w * dk) for dk in dks] + [0.5 * noise * np.trace(w)],
                    x.dtype)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--one-thread", action="store_true")
    ap.add_argument("--only", default="", help="run the rows whose name starts with this")
    args = ap.parse_args()
    if args.one_thread:
        restart_on_one_thread()
    hold_jax_to_march()
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl

    jax.config.update("jax_enable_x64", True)
    fx.config.update("jax_enable_x64", True)
    print_machine()
    threads = {k: os.environ.get(k, "(unset)") for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    print(f"SciPy {scipy.__version__}; {threads}; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; times are medians after a warm-up "
          "call; ratios above 1: fx is faster")
    rng = np.random.default_rng(0)
    quick = args.quick
    header = (f"{'program':<44} | {'fx.jit':>12} | {'jax.jit':>12} | {'NumPy/SciPy':>12} | "
              "vs jax  | vs NumPy")

    def three(f_fx, f_jax, f_np, args, repeat):
        jargs = [jnp.asarray(a) for a in args]
        return timeit_each([lambda: fx.block_until_ready(f_fx(*args)),
                            lambda: jax.block_until_ready(f_jax(*jargs)),
                            lambda: f_np(*args)], repeat)

    print("\n" + header)
    fx_c, jax_c, np_c = dense_cases(fnp), dense_cases(jnp), dense_cases(np)
    for name in fx_c:
        for n in (64, 256, 1024):
            if quick and n == 1024 and name in ("eigh", "svd"):
                continue
            for dt in DTYPES:
                if not f"{name} n={n} {np.dtype(dt).name}".startswith(args.only):
                    continue
                a = spd(rng, n, dt)
                b = rng.standard_normal(n).astype(dt)
                repeat = (3 if name in ("eigh", "svd") else 5) if n == 1024 else 11
                repeat = min(repeat, 3) if quick else repeat
                ts = three(fx.jit(fx_c[name]), jax.jit(jax_c[name]), np_c[name], (a, b), repeat)
                row(f"{name} n={n} {np.dtype(dt).name}", *ts)

    print("\n" + header)
    batch = 100_000
    fx_b, jax_b, np_b = batched_cases(fnp), batched_cases(jnp), batched_cases(np)
    for name, (m, _) in fx_b.items():
        for dt in DTYPES:
            if not f"vmap {name}, {batch} {np.dtype(dt).name}".startswith(args.only):
                continue
            a = spd(rng, m, dt, (batch,))
            b = rng.standard_normal((batch, m)).astype(dt)
            f_np = np_b[name][1]
            if name.startswith("solve"):
                f_np = lambda a, b: np.linalg.solve(a, b[..., None])[..., 0]  # noqa: E731
            ts = three(fx.jit(fx.vmap(fx_b[name][1])), jax.jit(jax.vmap(jax_b[name][1])),
                       f_np, (a, b), 5 if quick else 11)
            row(f"vmap {name}, {batch} {np.dtype(dt).name}", *ts)

    print("\n" + header)
    for dt in DTYPES:
        if not f"rfft 2^20 {np.dtype(dt).name}".startswith(args.only):
            continue
        x = rng.standard_normal(1 << 20).astype(dt)
        ts = three(fx.jit(fnp.fft.rfft), jax.jit(jnp.fft.rfft), np.fft.rfft, (x,),
                   5 if quick else 21)
        row(f"rfft 2^20 {np.dtype(dt).name}", *ts)

    print("\n" + header)
    n = 1024
    for dt in DTYPES:
        if not f"jit(grad) GP marginal likelihood n={n} {np.dtype(dt).name}".startswith(
                args.only):
            continue
        x = np.sort(rng.uniform(-3, 3, n)).astype(dt)
        y = (np.sin(2 * x) + 0.1 * rng.standard_normal(n)).astype(dt)
        theta = np.log(np.array([0.7, 1.3, 0.05])).astype(dt)
        f_fx = fx.jit(fx.grad(gp_nll(fnp, fsl.cho_factor, fsl.cho_solve)))
        f_jax = jax.jit(jax.grad(gp_nll(jnp, jsl.cho_factor, jsl.cho_solve)))
        ts = three(f_fx, f_jax, gp_grad_numpy, (theta, x, y), 3 if quick else 7)
        row(f"jit(grad) GP marginal likelihood n={n} {np.dtype(dt).name}", *ts)
    print(f"\nload average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
