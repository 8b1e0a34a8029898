"""The OpenCL C dialect of the kernel renderer (OpenCL C 1.2, what PoCL and GPU drivers take).

The same kernel IR as the C and CUDA dialects, rendered as ``__kernel`` functions whose pointer
parameters live in the ``__global`` address space and whose parallel loop is a grid-stride loop
over ``get_global_id(0)`` (any global size is correct; the executor picks one). OpenCL C has no
``stdint.h`` and no C99 ``f``-suffixed libm names, so the file prelude defines the fixed-width
integer types and maps ``expf`` & co. to the overloaded built-ins; bit casts are ``as_float`` /
``as_uint`` / ``as_double`` / ``as_ulong``. float64 needs ``cl_khr_fp64`` (the executor checks
the device). Contraction of ``a * b + c`` into FMAs is off, as for the other dialects: results
must not depend on the compiler.
"""

from __future__ import annotations

from fx.lowering import resources
from fx.lowering.render.dialect_base import RECORD_HELPERS, Dialect, record_libm

# C99 float32 names -> OpenCL's overloads: those the records' spellings call, and those the
# prelude and the shared spelling table call themselves (round_even's rint, round_away's trunc
# and copysign, complex abs's hypot, fx_fmaf's fma).
_F32_NAMES = tuple(sorted(record_libm() | {"rint", "trunc", "copysign", "hypot", "fma"}))

# PoCL (3.1 on LLVM 15) evaluates these built-ins on a NaN known at compile time (a NaN
# literal, or x - NAN, which LLVM folds to one) as garbage, not NaN (rint's crashed the
# compiler); on a NaN known only at run time they are right.
# Each is called through a guard that returns a NaN argument itself, which every compiler folds
# soundly; at run time the guard is one compare. The C names are redefined (an OpenCL header
# may define the built-in's name as a macro: #undef first), so the prelude's calls are guarded
# too, with C's meaning: ``exp`` takes and returns double, ``expf`` float.
_NAN_FOLDED = ("exp", "exp2", "expm1", "tanh", "sinh", "floor", "ceil", "rint", "trunc",
               "round")

_SECTIONS = resources.sections(__package__, "dialect_preludes.h")
_PRELUDE = _SECTIONS["opencl_head"] + "".join([
    *(f"#define {f}f {f}\n" for f in _F32_NAMES if f not in _NAN_FOLDED),
    *(line + "\n" for f in _NAN_FOLDED for line in (
        f"FX_FN float fx_cl_{f}f(float x) {{ return isnan(x) ? x : {f}(x); }}",
        f"FX_FN double fx_cl_{f}(double x) {{ return isnan(x) ? x : {f}(x); }}",
        f"#define {f}f fx_cl_{f}f", f"#undef {f}", f"#define {f} fx_cl_{f}")),
]) + _SECTIONS["opencl_tail"] + RECORD_HELPERS

OPENCL = Dialect(
    name="opencl",
    file_prelude=_PRELUDE,
    kernel_prefix="__kernel void",
    restrict="restrict",
    pointer_space="__global ",
    parallel_for="for ({it} {v} = {start} + ({it})get_global_id(0); {v} < {stop}; "
                 "{v} += ({it})get_global_size(0))",
    small_index_type="int",
)
