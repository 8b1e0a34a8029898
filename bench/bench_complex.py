"""Complex and narrow-integer elementwise programs: fx.jit (generated kernels over {re, im}
pairs and 8/16-bit integers) vs jax.jit vs NumPy, in one run, with ratios (above 1: fx is
faster).

Run: ``python bench/bench_complex.py`` (``--quick``: fewer repetitions). The machine header
(CPU model, ISA level, -march) is bench_cpu's. These are the groups that ran as NumPy steps,
op by op, before the kernel dialects spelled complex64/128 and int8/16.
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_cpu import hold_jax_to_march, print_machine, row, timeit_each

import fx
import fx.lax as flax
import fx.numpy as fnp


def complex_arith(np_, lax):
    # A rotation, a product, a quotient and a conjugate: the arithmetic the kernels spell.
    def f(z, w, x):
        r = lax.complex(x, -x) * z + np_.conj(w) * (0.5 - 1j)
        return r / (w + 2.0), lax.real(r * np_.conj(r))

    return f


def int8_saturating_mix(np_):
    # int8 quantized-style arithmetic: wrap-around products and shifts.
    def f(a, b):
        return ((a * b) >> 2) + (a ^ b), np_.maximum(a, b) - np_.minimum(a, b)

    return f


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    hold_jax_to_march()
    import jax
    import jax.numpy as jnp

    print_machine()
    repeat = 5 if args.quick else 20
    rng = np.random.default_rng(0)
    print(f"{'program':<44} | {'fx.jit':>12} | {'jax.jit':>12} | {'NumPy':>12} | vs jax  "
          "| vs NumPy")
    for n in (1 << 16, 1 << 20):
        for dt, rdt in ((np.complex64, np.float32), (np.complex128, np.float64)):
            z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
            w = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
            x = rng.standard_normal(n).astype(rdt)
            f_fx = fx.jit(complex_arith(fnp, flax))
            f_jax = jax.jit(complex_arith(jnp, jax.lax))
            f_np = complex_arith(np, _NumpyLax)
            ts = _time_three(jax, f_fx, f_jax, f_np, (z, w, x), repeat)
            row(f"complex arithmetic {np.dtype(dt).name} n={n}", *ts)
        a = rng.integers(-128, 128, n).astype(np.int8)
        b = rng.integers(-128, 128, n).astype(np.int8)
        f_fx, f_jax = fx.jit(int8_saturating_mix(fnp)), jax.jit(int8_saturating_mix(jnp))
        ts = _time_three(jax, f_fx, f_jax, int8_saturating_mix(np), (a, b), repeat)
        row(f"int8 wrap-around mix n={n}", *ts)


def _time_three(jax, f_fx, f_jax, f_np, args, repeat):
    """Median seconds of fx, jax (on device arrays) and NumPy on ``args``."""
    jargs = [jax.numpy.asarray(a) for a in args]
    return timeit_each([lambda: fx.block_until_ready(f_fx(*args)),
                        lambda: jax.block_until_ready(f_jax(*jargs)),
                        lambda: f_np(*args)], repeat)


class _NumpyLax:
    """The two fx.lax functions the complex program uses, in NumPy."""

    @staticmethod
    def complex(x, y):
        out = np.empty(x.shape, np.result_type(x.dtype, np.complex64))
        out.real, out.imag = x, y
        return out

    real = staticmethod(np.real)


if __name__ == "__main__":
    main()
