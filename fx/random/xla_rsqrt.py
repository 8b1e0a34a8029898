"""XLA CPU's ``rsqrt``, bit for bit: the x86 hardware approximation, run for real, refined as
XLA refines it.

Takes and returns fx values (any shape; float16/bfloat16 are computed in float32 and rounded
once). XLA's algebraic simplifier rewrites ``a / sqrt(b)`` into ``a * rsqrt(b)`` (Marsaglia-
Tsang's ``c = (1/3) / sqrt(d)`` in the gamma family), and XLA CPU (jaxlib 0.10.2) emits
``rsqrt`` as (``xla/codegen/intrinsic/rsqrt.cc``, and the object code it gives here):

* float32 on a CPU with AVX: ``y0 = rsqrtss(x)`` (the SSE approximation, 12 bits; the 128- and
  256-bit ``rsqrtps`` forms XLA uses on vectors give the same bits); float64 on a CPU with
  AVX-512F: ``y0 = vrsqrt14pd(x)`` (14 bits; the scalar and every vector width agree);
* two Newton steps (one for float32 on AMD CPUs, whose ``rsqrtss`` is more accurate than
  Intel's; XLA asks the CPU's vendor), each ``r2 = x * y``, ``h = y * -0.5``,
  ``e = fma(r2, y, -1)``, ``y = fma(h, e, y)`` (the LLVM backend fuses each multiply-add);
* ``y0`` itself where ``x < FLT_MIN`` (zeros, subnormals, negatives) or ``x == inf``;
* all of it with the denormals-are-zero and flush-to-zero flags XLA's threads run with;
* otherwise (float64 without AVX-512F, any type without AVX, other architectures):
  ``1 / sqrt(x)``, two exactly rounded operations.

The approximation is a table in the CPU (Intel documents only its error bound; AMD's differs),
so no composition of exactly rounded operations gives its bits: a small C kernel
(``runtime.cc``, compiled with the same ``-march`` as fx's kernels, so ``FX_MARCH=x86-64-v3``
gives an AVX2 machine's answer as ``--xla_cpu_max_isa=AVX2`` gives XLA's) runs the instruction
and the Newton steps, called through ``fx.pure_callback`` (eagerly, under ``jit`` and, one call
for the whole batch, under ``vmap``). Checked against ``jax.jit(jax.lax.rsqrt)`` on an Intel
Sapphire Rapids CPU: every float32 in [1/4, 4) and 4 million random bit patterns of each type,
specials included, with no difference; and by the tests on an AMD EPYC (Zen 4).

Differentiates as ``rsqrt`` (``custom_jvp`` with ``fx.lax.rsqrt``'s rule).
"""

from __future__ import annotations

import ctypes
import functools
import platform
import warnings

import numpy as np

from fx import dtypes, lax
from fx.api import ShapeDtypeStruct
from fx.autodiff import jvp
from fx.callback import pure_callback
from fx.core import get_aval
from fx.custom_derivatives import custom_jvp

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)

_SOURCE = r"""
#include <math.h>
#if defined(__x86_64__) && defined(__AVX__)
#include <immintrin.h>
#define FX_MXCSR_FLUSH 0x8040 /* flush-to-zero | denormals-are-zero */
#define NEWTON(T, FMA, a, y, steps) do { for (int s = 0; s < (steps); s++) { \
    T r2 = (a) * y, h = y * (T)-0.5; y = FMA(h, FMA(r2, y, (T)-1), y); } } while (0)

int fx_xla_rsqrt_f32_native(void) { return 1; }
/* AMD's rsqrtss/rsqrtps are more accurate than Intel's: XLA refines them with one step. */
int fx_xla_rsqrt_f32_steps(void) { __builtin_cpu_init(); return __builtin_cpu_is("amd") ? 1 : 2; }
void fx_xla_rsqrt_f32(const float* x, float* out, long n) {
    unsigned int csr = _mm_getcsr();
    const int steps = fx_xla_rsqrt_f32_steps();
    _mm_setcsr(csr | FX_MXCSR_FLUSH);
    for (long i = 0; i < n; i++) {
        float a = x[i], y0 = _mm_cvtss_f32(_mm_rsqrt_ss(_mm_set_ss(a))), y = y0;
        NEWTON(float, fmaf, a, y, steps);
        out[i] = (a < 1.17549435e-38f || a == INFINITY) ? y0 : y;
    }
    _mm_setcsr(csr);
}
#else
int fx_xla_rsqrt_f32_native(void) { return 0; }
int fx_xla_rsqrt_f32_steps(void) { return 0; }
void fx_xla_rsqrt_f32(const float* x, float* out, long n) {}
#endif
/* With AVX512-FP16, float16 arithmetic is native and LLVM contracts a * b + c into one
   vfmadd (rounded once); without it XLA computes each float16 operation in float32 and
   rounds its result to float16. */
#if defined(__x86_64__) && defined(__AVX512FP16__)
int fx_xla_float16_fma_native(void) { return 1; }
#else
int fx_xla_float16_fma_native(void) { return 0; }
#endif
#if defined(__x86_64__) && defined(__AVX512F__)
int fx_xla_rsqrt_f64_native(void) { return 1; }
void fx_xla_rsqrt_f64(const double* x, double* out, long n) {
    unsigned int csr = _mm_getcsr();
    _mm_setcsr(csr | FX_MXCSR_FLUSH);
    for (long i = 0; i < n; i++) {
        double a = x[i], y0 = _mm_cvtsd_f64(_mm_rsqrt14_pd(_mm_set1_pd(a))), y = y0;
        NEWTON(double, fma, a, y, 2);
        out[i] = (a < 2.2250738585072014e-308 || a == INFINITY) ? y0 : y;
    }
    _mm_setcsr(csr);
}
#else
int fx_xla_rsqrt_f64_native(void) { return 0; }
void fx_xla_rsqrt_f64(const double* x, double* out, long n) {}
#endif
"""

_SUFFIX = {F32: "f32", F64: "f64"}


@functools.cache
def _library():
    """The compiled kernel, or None (not x86-64, no compiler, or the build failed)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    from fx.runtime import cc

    if cc.compiler() is None:
        return None
    try:
        lib = cc.build(_SOURCE)
    except (cc.CompileError, OSError) as e:  # the exactly rounded 1 / sqrt(x) instead
        warnings.warn(f"fx: XLA's rsqrt kernel did not build ({e}); fx computes the exactly "
                      "rounded 1 / sqrt(x) instead", RuntimeWarning, stacklevel=2)
        return None
    p = ctypes.c_void_p
    for s in _SUFFIX.values():
        getattr(lib, f"fx_xla_rsqrt_{s}").argtypes = [p, p, ctypes.c_long]
        getattr(lib, f"fx_xla_rsqrt_{s}_native").restype = ctypes.c_int
    lib.fx_xla_rsqrt_f32_steps.restype = ctypes.c_int
    lib.fx_xla_float16_fma_native.restype = ctypes.c_int
    return lib


def float16_fma_fused() -> bool:
    """Whether XLA CPU rounds a float16 ``a * b + c`` once (a native float16 FMA: x86 with
    AVX512-FP16, for the ``-march`` fx compiles for) rather than after each operation."""
    lib = _library()
    return lib is not None and bool(lib.fx_xla_float16_fma_native())


def uses_hardware_approximation(dtype) -> bool:
    """Whether XLA CPU computes ``rsqrt`` of ``dtype`` from the hardware approximation here
    (float32 with AVX, float64 with AVX-512F; 16-bit floats go through float32), so that
    ``rsqrt`` runs the instruction; otherwise it is ``1 / sqrt(x)``."""
    dtype = np.dtype(dtype)
    if dtype in (dtypes.float16, dtypes.bfloat16):
        dtype = F32
    lib = _library()
    return dtype in _SUFFIX and lib is not None and bool(
        getattr(lib, f"fx_xla_rsqrt_{_SUFFIX[dtype]}_native")())


def _host_rsqrt(x) -> np.ndarray:
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    getattr(_library(), f"fx_xla_rsqrt_{_SUFFIX[x.dtype]}")(x.ctypes.data, out.ctypes.data,
                                                            x.size)
    return out


def flush_denormals(x):
    """Subnormal float32/float64 values replaced by zeros of their sign: XLA's CPU threads run
    with the denormals-are-zero and flush-to-zero flags set, for its own code and libm's."""
    tiny = lax.full_like(x, float(dtypes.finfo(get_aval(x).dtype).tiny))
    return lax.select(lax.lt(lax.abs(x), tiny), lax.mul(x, lax.full_like(x, 0)), x)


def _impl(x):
    dt = get_aval(x).dtype
    if dt in (dtypes.float16, dtypes.bfloat16):
        return lax.convert_element_type(_impl(lax.convert_element_type(x, F32)), dt)
    if dt not in _SUFFIX:
        return lax.rsqrt(x)
    if uses_hardware_approximation(dt):
        spec = ShapeDtypeStruct(get_aval(x).shape, dt)
        return pure_callback(_host_rsqrt, spec, x, vmap_method="expand_dims")
    x = flush_denormals(x)
    return flush_denormals(lax.div(lax.full_like(x, 1), lax.sqrt(x)))


@custom_jvp
def rsqrt(x):
    """XLA CPU's ``rsqrt``, bit for bit (see the module docstring)."""
    return _impl(x)


@rsqrt.defjvp
def _rsqrt_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return rsqrt(x), jvp(lax.rsqrt, (x,), (x_dot,))[1]
