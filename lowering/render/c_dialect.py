"""The C dialect of the kernel renderer: C99 with OpenMP, compiled by the system's C compiler
for the CPU.

Kernels are ``static`` functions of one translation unit; the parallel loop is an OpenMP
``for`` (with ``simd`` where iterations are straight-line code), taken only above
``parallel_min_work`` elements; float32 exp, log, log1p, expm1 and tanh call the prelude's
vectorizable polynomials (their records' C templates), everything else the shared spellings.
"""

from __future__ import annotations

from fx.lowering import resources
from fx.lowering.render.dialect_base import RECORD_HELPERS, Dialect, record_math

C = Dialect(
    name="c",
    file_prelude=resources.sections(__package__, "dialect_preludes.h")["c"] + RECORD_HELPERS,
    kernel_prefix="static void",
    # GCC on x86 vectorizes with 256-bit vectors by default even where AVX-512 exists (for
    # CPUs that clock down on 512-bit ones); a kernel dominated by dot-product instructions
    # (the int8 GEMM) asks for the full width. Elsewhere the attribute is empty.
    wide_vectors="FX_WIDE_VECTORS ",
    restrict="restrict",
    # Threads only pay off with enough total work (elements touched by the whole kernel); a
    # small kernel gets no pragma at all, since even a parallel region its if() clause turns
    # off costs a call into the OpenMP runtime (a loop of tiny kernels paid it every step).
    # Iterations are handed out guided, not split statically: where another process holds
    # one of the cores, the thread on the free one takes more of them instead of waiting.
    parallel_for="#pragma omp parallel for schedule(guided)\n"
                 "for ({it} {v} = {start}; {v} < {stop}; {v}++)",
    parallel_min_work=32768,
    parallel_for_simd="#pragma omp parallel for simd schedule(guided)\n"
                      "for ({it} {v} = {start}; {v} < {stop}; {v}++)",
    simd_loop="#pragma omp simd",
    stage_narrow_stores=True,
    # OpenMP may reassociate a sum or product within a row (the same way every run); max/min
    # reduce per lane with the prelude's NaN-propagating reductions fx_max/fx_min. A row
    # shorter than one vector of float32 gains nothing from lanes, so it is summed in order,
    # left to right, as XLA sums a row (a softmax over a few classes then rounds as jax's).
    simd_reduction="reduction({op}:{acc})",
    simd_reduction_min=8,
    # (A uint16 product is taken in uint32, see _COMMON: OpenMP's own '*' would multiply in int.)
    simd_reduction_ops={("add", "*"): "+", ("mul", "*"): "*", ("mul", "u16"): "fx_mul_u16",
                        ("max", "*"): "fx_max", ("min", "*"): "fx_min"},
    # The records' C templates (the prelude's float32 exp family, integer max/min), and the
    # select of a float accumulator by the bits.
    math={("blend", "f32"): "fx_blendf({0}, {1}, {2})", **record_math("c")},
)
