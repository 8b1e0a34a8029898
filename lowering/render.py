"""Rendering kernel IR as C or CUDA C: one renderer, two dialects.

A :class:`Dialect` is data: the function prefix, pointer qualifier, how the parallel loop is
written (an OpenMP ``for`` in C; a grid-stride loop over the thread index with a bounds guard
in CUDA), type names, and the spelling of each math function per dtype. The renderer never
asks which target it renders for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from fx import dtypes
from fx.lowering import kernel_ir as ir
from fx.lowering.prelude import PRELUDE
from fx.lowering.prelude_special import needed_source

F32, F64 = dtypes.float32, dtypes.float64

# Storage type of each dtype (half types are stored as raw 16-bit patterns; bool as a byte,
# like uint8, from which the renderer tells it apart by the dtype, never by the C type).
_STORAGE = {
    dtypes.bool_: "uint8_t", dtypes.int8: "int8_t", dtypes.int16: "int16_t",
    dtypes.int32: "int32_t", dtypes.int64: "int64_t", dtypes.uint8: "uint8_t",
    dtypes.uint16: "uint16_t", dtypes.uint32: "uint32_t", dtypes.uint64: "uint64_t",
    dtypes.float16: "uint16_t", dtypes.bfloat16: "uint16_t", dtypes.float32: "float",
    dtypes.float64: "double", dtypes.complex64: "fx_c64", dtypes.complex128: "fx_c128",
}

# Operations whose spelling does not depend on the dialect: (op, kind) -> template, where kind
# is "f32", "f64", "bool", an integer's ("i8" ... "i64", "u8" ... "u64"), then "int" (any
# signed), "uint" (any unsigned) or "*" for any, the most specific first.
#
# C computes integers narrower than int in int (the usual promotions): the renderer casts
# every 8- and 16-bit result back to its type, which wraps as NumPy and XLA do, and no int
# arithmetic on such operands overflows except a product of two uint16 (65535 * 65535 > INT_MAX,
# undefined behaviour), which is taken in uint32. Integer division goes through the 32-bit
# helpers (INT8_MIN / -1 is 128 there, which the cast wraps back to INT8_MIN as XLA does).
_COMMON = {
    ("add", "*"): "({0} + {1})", ("sub", "*"): "({0} - {1})", ("mul", "*"): "({0} * {1})",
    ("div", "f32"): "({0} / {1})", ("div", "f64"): "({0} / {1})",
    ("div", "i32"): "fx_div_i32({0}, {1})", ("div", "i64"): "fx_div_i64({0}, {1})",
    ("div", "i8"): "fx_div_i32({0}, {1})", ("div", "i16"): "fx_div_i32({0}, {1})",
    ("div", "u8"): "fx_div_u32({0}, {1})", ("div", "u16"): "fx_div_u32({0}, {1})",
    ("div", "u32"): "fx_div_u32({0}, {1})", ("div", "u64"): "fx_div_u64({0}, {1})",
    ("rem", "f32"): "fmodf({0}, {1})", ("rem", "f64"): "fmod({0}, {1})",
    ("rem", "i32"): "fx_rem_i32({0}, {1})", ("rem", "i64"): "fx_rem_i64({0}, {1})",
    ("rem", "i8"): "fx_rem_i32({0}, {1})", ("rem", "i16"): "fx_rem_i32({0}, {1})",
    ("rem", "u8"): "fx_rem_u32({0}, {1})", ("rem", "u16"): "fx_rem_u32({0}, {1})",
    ("rem", "u32"): "fx_rem_u32({0}, {1})", ("rem", "u64"): "fx_rem_u64({0}, {1})",
    ("mul", "u16"): "((uint32_t){0} * (uint32_t){1})",
    # Wrapping value arithmetic on wide signed ints (scalar_ops.WRAPPING): through the
    # unsigned type, whose overflow is defined; the conversion back is GCC's modulo.
    ("add_wrap", "i32"): "((int32_t)((uint32_t){0} + (uint32_t){1}))",
    ("sub_wrap", "i32"): "((int32_t)((uint32_t){0} - (uint32_t){1}))",
    ("mul_wrap", "i32"): "((int32_t)((uint32_t){0} * (uint32_t){1}))",
    ("neg_wrap", "i32"): "((int32_t)(0u - (uint32_t){0}))",
    ("abs_wrap", "i32"): "({0} < 0 ? (int32_t)(0u - (uint32_t){0}) : {0})",
    ("add_wrap", "i64"): "((int64_t)((uint64_t){0} + (uint64_t){1}))",
    ("sub_wrap", "i64"): "((int64_t)((uint64_t){0} - (uint64_t){1}))",
    ("mul_wrap", "i64"): "((int64_t)((uint64_t){0} * (uint64_t){1}))",
    ("neg_wrap", "i64"): "((int64_t)((uint64_t)0 - (uint64_t){0}))",
    ("abs_wrap", "i64"): "({0} < 0 ? (int64_t)((uint64_t)0 - (uint64_t){0}) : {0})",
    ("neg", "*"): "(-{0})", ("not", "bool"): "((uint8_t)!{0})", ("not", "*"): "(~{0})",
    ("and", "*"): "({0} & {1})", ("or", "*"): "({0} | {1})", ("xor", "*"): "({0} ^ {1})",
    ("eq", "*"): "((uint8_t)({0} == {1}))", ("ne", "*"): "((uint8_t)({0} != {1}))",
    ("lt", "*"): "((uint8_t)({0} < {1}))", ("le", "*"): "((uint8_t)({0} <= {1}))",
    ("gt", "*"): "((uint8_t)({0} > {1}))", ("ge", "*"): "((uint8_t)({0} >= {1}))",
    ("select", "*"): "({0} ? {1} : {2})",
    # Signed operands shift as their unsigned bits (a negative left operand is undefined in C;
    # a logical right shift must not copy the sign bit).
    ("shl", "uint"): "({0} << {1})", ("shl", "i8"): "((uint8_t){0} << {1})",
    ("shl", "i16"): "((uint16_t){0} << {1})", ("shl", "i32"): "((int32_t)((uint32_t){0} << {1}))",
    ("shl", "i64"): "((int64_t)((uint64_t){0} << {1}))",
    ("shr_logical", "uint"): "({0} >> {1})", ("shr_logical", "i8"): "((uint8_t){0} >> {1})",
    ("shr_logical", "i16"): "((uint16_t){0} >> {1})",
    ("shr_logical", "i32"): "((int32_t)((uint32_t){0} >> {1}))",
    ("shr_logical", "i64"): "((int64_t)((uint64_t){0} >> {1}))",
    ("max", "f32"): "fx_maxf({0}, {1})", ("min", "f32"): "fx_minf({0}, {1})",
    ("max", "f64"): "fx_max({0}, {1})", ("min", "f64"): "fx_min({0}, {1})",
    ("max", "*"): "({0} > {1} ? {0} : {1})", ("min", "*"): "({0} < {1} ? {0} : {1})",
    ("abs", "f32"): "fabsf({0})", ("abs", "f64"): "fabs({0})",
    ("abs", "uint"): "{0}", ("abs", "*"): "({0} < 0 ? -{0} : {0})",
    ("sign", "f32"): "fx_signf({0})", ("sign", "f64"): "fx_sign({0})",
    ("sign", "*"): "(({0} > 0) - ({0} < 0))",
    ("floor", "f32"): "floorf({0})", ("floor", "f64"): "floor({0})",
    ("ceil", "f32"): "ceilf({0})", ("ceil", "f64"): "ceil({0})",
    ("round_away", "f32"): "fx_round_awayf({0})", ("round_away", "f64"): "fx_round_away({0})",
    ("round_even", "f32"): "rintf({0})", ("round_even", "f64"): "rint({0})",
    ("sqrt", "f32"): "sqrtf({0})", ("sqrt", "f64"): "sqrt({0})",
    ("rsqrt", "f32"): "(1.0f / sqrtf({0}))", ("rsqrt", "f64"): "(1.0 / sqrt({0}))",
    ("is_finite", "f32"): "((uint8_t)isfinite({0}))",
    ("is_finite", "f64"): "((uint8_t)isfinite({0}))",
    ("pow", "f32"): "powf({0}, {1})", ("pow", "f64"): "pow({0}, {1})",
    ("atan2", "f32"): "atan2f({0}, {1})", ("atan2", "f64"): "atan2({0}, {1})",
    ("nextafter", "f32"): "nextafterf({0}, {1})", ("nextafter", "f64"): "nextafter({0}, {1})",
    ("digamma", "*"): "fx_digamma({0})", ("erf_inv", "*"): "fx_erf_inv({0})",
    ("polygamma", "*"): "fx_polygamma({1}, {0})",
    ("logistic", "f64"): "fx_logistic({0})",
}
# The special functions of lowering/prelude_special.py (computed in double, see
# scalar_ops._via_double): op -> fx_<op>(operands...).
for _op, _n in [("igamma", 2), ("igammac", 2), ("igamma_grad_a", 2), ("betainc", 3),
                ("zeta", 2), ("expn", 2), ("bessel_i0e", 1), ("bessel_i1e", 1), ("erfcx", 1),
                ("dawsn", 1), ("expi", 1), ("spence", 1), ("ndtri", 1), ("sici_si", 1),
                ("sici_ci", 1), ("fresnel_s", 1), ("fresnel_c", 1)]:
    _COMMON[(_op, "f64")] = f"fx_{_op}({', '.join(f'{{{i}}}' for i in range(_n))})"
# Unary libm functions: float32 name + "f", float64 plain.
_LIBM = ("exp", "exp2", "log", "log1p", "expm1", "cbrt", "tanh", "sin", "cos", "tan", "asin",
         "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "lgamma")
for _f in _LIBM:
    _COMMON[(_f, "f32")] = _f + "f({0})"
    _COMMON[(_f, "f64")] = _f + "({0})"
_COMMON[("logistic", "f32")] = "fx_logisticf({0})"
# Complex values are pairs (fx_c64 / fx_c128: {re, im}, as NumPy lays them out) computed by
# the prelude's fx_c* functions; a select is C's ternary on the pairs.
for _c, _r in (("c64", "f32"), ("c128", "f64")):
    for _op in ("neg", "conj", "abs"):
        _COMMON[(_op, _c)] = f"fx_{_op}_{_c}({{0}})"
    for _op in ("add", "sub", "mul", "div"):
        _COMMON[(_op, _c)] = f"fx_{_op}_{_c}({{0}}, {{1}})"
    _COMMON[("eq", _c)] = f"((uint8_t)fx_eq_{_c}({{0}}, {{1}}))"
    _COMMON[("ne", _c)] = f"((uint8_t)!fx_eq_{_c}({{0}}, {{1}}))"
    _COMMON[("real", _c)] = "({0}).re"
    _COMMON[("imag", _c)] = "({0}).im"
    _COMMON[("complex", _r)] = f"fx_make_{_c}({{0}}, {{1}})"


@dataclass(frozen=True)
class Dialect:
    name: str
    file_prelude: str  # defines FX_FN and anything target-wide
    kernel_prefix: str
    restrict: str
    parallel_for: str  # format: var, start, stop, (index type)
    # Kernels touching at most this many elements run their parallel loop as a plain loop
    # (starting threads costs more than they save; 0: always the parallel form).
    parallel_min_work: int = 0
    # The parallel loop, and a pragma for an inner loop, when iterations are straight-line
    # code (lets and stores, no accumulator): independent, so they may run as SIMD lanes.
    # (GCC does not vectorize loops OpenMP outlines into a thread function unless told.)
    parallel_for_simd: str = ""  # "" = as parallel_for
    simd_loop: str = ""
    math: dict = field(default_factory=dict)  # overrides of _COMMON
    index_type: str = "int64_t"
    # Index type for kernels whose every index fits in 31 bits ("" = always index_type):
    # 32-bit index arithmetic is cheaper on GPUs.
    small_index_type: str = ""
    # Rows shared by cooperating lanes (see kernel_ir.Loop): how the row loop, the split
    # reduction loop, the lane combine and the single-lane store are written.
    parallel_for_lanes: str = ""  # format: var, stop, it, lanes; "" = as parallel_for
    cooperative_for: str = "for ({it} {v} = 0; {v} < {stop}; {v}++)"
    combine: str = ""  # format: acc, other, type, combine expression; "" = no-op
    combine_arg: str = ""  # format: best, idx, vtype, itype, better; "" = no-op
    leader_guard: str = ""  # prefix of a store only one lane performs
    # Short SIMD loops that compute in float and store 8/16-bit integers are split in two:
    # the values, converted to int32, go to a local array, then a second loop narrows them
    # into the buffer (see Renderer.staged_loop). GCC sizes a loop's vectors by its narrowest
    # type: a 16-iteration loop storing int8 ran its float arithmetic in 128-bit vectors.
    stage_narrow_stores: bool = False
    # A pragma vectorizing a cooperative loop that reduces with these ops ("" = none).
    simd_reduction: str = ""
    simd_reduction_ops: dict = field(default_factory=dict)  # (op, kind) as in _COMMON
    # Wide memory access for flat loops marked ``vector`` (see kernel_ir.Loop): (width,
    # storage type) -> vector type, the test that pointers are aligned for it, and a wide
    # load/store. Empty: loops run scalar (a C compiler vectorizes them itself).
    vector_types: dict = field(default_factory=dict)
    vector_aligned: str = ""  # format: ptrs (bitwise or of the pointers' addresses), bytes
    vector_pointer: str = ""  # format: p (a pointer, as an integer)
    vector_load: str = ""  # format: vt, name, buf, i
    vector_store: str = ""  # format: vt, name, buf, i
    pointer_space: str = ""  # address-space qualifier of pointer parameters (``__global ``)
    # Written before a kernel that asks for the widest vectors (``Kernel.wide_vectors``).
    wide_vectors: str = ""


C = Dialect(
    name="c",
    file_prelude="#include <stdint.h>\n#include <string.h>\n#include <math.h>\n"
                 "#define FX_FN static inline\n"
                 "#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)\n"
                 "#define FX_WIDE_VECTORS __attribute__((target(\"prefer-vector-width=512\")))\n"
                 "#else\n#define FX_WIDE_VECTORS\n#endif\n"
                 "typedef struct { float re, im; } fx_c64;\n"
                 "typedef struct { double re, im; } fx_c128;\n"
                 "FX_FN float fx_bits_to_f32(uint32_t b) "
                 "{ float f; memcpy(&f, &b, 4); return f; }\n"
                 "FX_FN uint32_t fx_f32_to_bits(float f) "
                 "{ uint32_t b; memcpy(&b, &f, 4); return b; }\n"
                 "FX_FN double fx_bits_to_f64(uint64_t b) "
                 "{ double f; memcpy(&f, &b, 8); return f; }\n"
                 "FX_FN uint64_t fx_f64_to_bits(double f) "
                 "{ uint64_t b; memcpy(&b, &f, 8); return b; }\n",
    kernel_prefix="static void",
    # GCC on x86 vectorizes with 256-bit vectors by default even where AVX-512 exists (for
    # CPUs that clock down on 512-bit ones); a kernel dominated by dot-product instructions
    # (the int8 GEMM) asks for the full width. Elsewhere the attribute is empty.
    wide_vectors="FX_WIDE_VECTORS ",
    restrict="restrict",
    # Threads only pay off with enough total work (elements touched by the whole kernel); a
    # small kernel gets no pragma at all, since even a parallel region its if() clause turns
    # off costs a call into the OpenMP runtime (a loop of tiny kernels paid it every step).
    parallel_for="#pragma omp parallel for schedule(static)\n"
                 "for ({it} {v} = {start}; {v} < {stop}; {v}++)",
    parallel_min_work=32768,
    parallel_for_simd="#pragma omp parallel for simd schedule(static)\n"
                      "for ({it} {v} = {start}; {v} < {stop}; {v}++)",
    simd_loop="#pragma omp simd",
    stage_narrow_stores=True,
    # OpenMP may reassociate a sum or product within a row (the same way every run); max/min
    # reduce per lane with the prelude's NaN-propagating reductions fx_max/fx_min.
    simd_reduction="reduction({op}:{acc})",
    # (A uint16 product is taken in uint32, see _COMMON: OpenMP's own '*' would multiply in int.)
    simd_reduction_ops={("add", "*"): "+", ("mul", "*"): "*", ("mul", "u16"): "fx_mul_u16",
                        ("max", "*"): "fx_max", ("min", "*"): "fx_min"},
    math={
        ("exp", "f32"): "fx_expf({0})", ("log", "f32"): "fx_logf({0})",
        ("log1p", "f32"): "fx_log1pf({0})", ("expm1", "f32"): "fx_expm1f({0})",
        ("tanh", "f32"): "fx_tanhf({0})", ("blend", "f32"): "fx_blendf({0}, {1}, {2})",
        ("max", "i64"): "fx_max_i64({0}, {1})", ("min", "i64"): "fx_min_i64({0}, {1})",
        ("max", "i32"): "fx_max_i32({0}, {1})", ("min", "i32"): "fx_min_i32({0}, {1})",
        ("max", "u32"): "fx_max_u32({0}, {1})", ("min", "u32"): "fx_min_u32({0}, {1})",
    },
)

CUDA = Dialect(
    name="cuda",
    # nvcc includes the standard headers itself; NVRTC (CuPy) has none, so define what we use.
    file_prelude="#define FX_FN static __device__ __forceinline__\n"
                 "#ifdef __CUDACC_RTC__\n"
                 "typedef signed char int8_t; typedef short int16_t;\n"
                 "typedef unsigned char uint8_t; typedef unsigned short uint16_t;\n"
                 "typedef int int32_t; typedef unsigned int uint32_t;\n"
                 "typedef long long int64_t; typedef unsigned long long uint64_t;\n"
                 "#else\n#include <stdint.h>\n#endif\n"
                 "#ifndef INT32_MIN\n#define INT32_MIN (-2147483647 - 1)\n"
                 "#define INT32_MAX 2147483647\n"
                 "#define INT64_MIN (-9223372036854775807LL - 1)\n"
                 "#define INT64_MAX 9223372036854775807LL\n#endif\n"
                 "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
                 "#ifndef NAN\n#define NAN __int_as_float(0x7fffffff)\n#endif\n"
                 "struct __align__(8) fx_c64 { float re, im; };\n"
                 "struct __align__(16) fx_c128 { double re, im; };\n"
                 "FX_FN float fx_bits_to_f32(uint32_t b) { return __uint_as_float(b); }\n"
                 "FX_FN uint32_t fx_f32_to_bits(float f) { return __float_as_uint(f); }\n"
                 "FX_FN double fx_bits_to_f64(uint64_t b) "
                 "{ return __longlong_as_double((long long)b); }\n"
                 "FX_FN uint64_t fx_f64_to_bits(double f) "
                 "{ return (uint64_t)__double_as_longlong(f); }\n",
    kernel_prefix='extern "C" __global__ void',
    restrict="__restrict__",
    parallel_for="for ({it} {v} = {start} + (({it})blockIdx.x * blockDim.x + threadIdx.x); "
                 "{v} < {stop}; {v} += ({it})gridDim.x * blockDim.x)",
    parallel_for_lanes="const int fx_lane = threadIdx.x & ({lanes} - 1);\n"
                       "for ({it} {v} = (({it})blockIdx.x * blockDim.x + threadIdx.x) / {lanes}; "
                       "{v} < {stop}; {v} += (({it})gridDim.x * blockDim.x) / {lanes})",
    cooperative_for="for ({it} {v} = fx_lane; {v} < {stop}; {v} += 32)",
    small_index_type="int",
    combine="for (int fx_off = 16; fx_off > 0; fx_off >>= 1) {{ "
            "{type} {other} = ({type})__shfl_xor_sync(0xffffffffu, {shfl}, fx_off); "
            "{acc} = {expr}; }}",
    combine_arg="for (int fx_off = 16; fx_off > 0; fx_off >>= 1) {{ "
                "{vtype} fx_ob = ({vtype})__shfl_xor_sync(0xffffffffu, {vshfl}, fx_off); "
                "{itype} fx_oi = __shfl_xor_sync(0xffffffffu, {idx}, fx_off); "
                "if ({better}) {{ {best} = fx_ob; {idx} = fx_oi; }} }}",
    leader_guard="if (fx_lane == 0) ",
    vector_types={(4, "float"): "float4", (4, "int32_t"): "int4", (4, "uint32_t"): "uint4"},
    vector_aligned="((({ptrs}) % {bytes}ull) == 0ull)",
    vector_pointer="(unsigned long long){p}",
    vector_load="const {vt} {name} = reinterpret_cast<const {vt}*>({buf})[{i}];",
    vector_store="reinterpret_cast<{vt}*>({buf})[{i}] = {name};",
)


def _kind(dt: np.dtype) -> str:
    if dt == F32:
        return "f32"
    if dt == F64:
        return "f64"
    if dt == dtypes.bool_:
        return "bool"
    return f"{np.dtype(dt).kind}{np.dtype(dt).itemsize * 8}"  # i8 ... i64, u8 ... u64


def _keys(op: str, dt: np.dtype) -> tuple[tuple[str, str], ...]:
    """The keys of ``op`` on ``dt`` in a table like _COMMON, the most specific first."""
    kind = _kind(dt)
    family = {"i": "int", "u": "uint"}.get(kind[0], kind)
    return (op, kind), (op, family), (op, "*")


def _template(d: Dialect, op: str, dt: np.dtype) -> str:
    for key in _keys(op, dt):
        if key in d.math:
            return d.math[key]
        if key in _COMMON:
            return _COMMON[key]
    raise NotImplementedError(f"no {d.name} spelling for '{op}' on {dt}")


def _promoted(dt: np.dtype) -> bool:
    """Integers C computes in int (see _COMMON): results are cast back to their type."""
    dt = np.dtype(dt)
    return dtypes.is_int(dt) and dt.itemsize < 4


def compute_type(dt: np.dtype) -> str:
    """The C type values of ``dt`` are computed in (halves compute in float)."""
    if dt in (dtypes.float16, dtypes.bfloat16):
        return "float"
    return _STORAGE[np.dtype(dt)]


def storage_type(dt: np.dtype) -> str:
    return _STORAGE[np.dtype(dt)]


class Renderer:
    def __init__(self, dialect: Dialect):
        self.d = dialect
        self.work = 0  # the kernel being rendered: elements it touches
        self.it = dialect.index_type  # its index type
        self.params: dict[str, ir.Param] = {}  # its parameters by name
        self.accumulators: dict[str, np.dtype] = {}  # its declared locals' dtypes by name
        # Inside a vector loop: (the loop's index, the wide buffers, this lane's component).
        self.lane_of: tuple[ir.Sym, dict, int] | None = None

    # -- expressions ----------------------------------------------------------------------------
    def expr(self, e: ir.Expr) -> str:
        if isinstance(e, ir.Const):
            return self.const(e.value, e.dtype)
        if isinstance(e, ir.Sym):
            return e.name
        if isinstance(e, ir.Load):
            if self.lane_of is not None and e.buf in self.lane_of[1] and e.index == self.lane_of[0]:
                return f"{e.buf}_v.{_COMPONENTS[self.lane_of[2]]}"
            return f"{e.buf}[{self.expr(e.index)}]"
        if isinstance(e, ir.Op):
            return self.op(e)
        raise TypeError(f"cannot render {e!r}")

    def const(self, v, dt) -> str:
        dt = np.dtype(dt)
        if dtypes.is_complex(dt):
            v, part = complex(v), dtypes.real_dtype(dt)
            return f"fx_make_{_kind(dt)}({self.const(v.real, part)}, {self.const(v.imag, part)})"
        if dt == dtypes.bool_:
            return "1" if v else "0"
        if dtypes.is_float(dt):
            v = float(v)
            suffix = "f" if compute_type(dt) == "float" else ""
            if v != v:
                return "NAN" if suffix else "((double)NAN)"
            if v in (float("inf"), float("-inf")):
                s = "INFINITY" if v > 0 else "(-INFINITY)"
                return s if suffix else f"((double){s})"
            return f"{v!r}{suffix}" if "e" in repr(v) or "." in repr(v) else f"{v!r}.0{suffix}"
        if dt == dtypes.int64:
            if self.it != "int64_t" and abs(int(v)) < 2**31 - 1:
                return str(int(v))  # index arithmetic in 32 bits (see small_index_type)
            return f"((int64_t){int(v)}LL)"
        if dtypes.is_unsigned_int(dt):
            v = int(v) % 2 ** (dt.itemsize * 8)
            return {8: f"{v}ull", 4: f"{v}u"}.get(dt.itemsize, str(v))
        return f"((int32_t){int(v)})" if abs(int(v)) >= 2**31 - 1 else str(int(v))

    def op(self, e: ir.Op) -> str:
        args = [self.expr(a) for a in e.args]
        if e.op == "cast":
            return self.cast(e.args[0].dtype, e.dtype, args[0])
        if e.op == "cast_wide":  # a float32 -> narrow int conversion, left in int32
            return f"fx_f2{_kind(e.dtype)}w_f32({args[0]})"
        if e.op == "bitcast":
            return self.bitcast(e.args[0].dtype, e.dtype, args[0])
        if e.op == "load_half":
            fn = "fx_bf16_to_f32" if e.args[0].dtype == dtypes.bfloat16 else "fx_f16_to_f32"
            return f"{fn}({args[0]})"
        if e.op == "store_half":
            fn = "fx_f32_to_bf16" if e.dtype == dtypes.bfloat16 else "fx_f32_to_f16"
            return f"{fn}({args[0]})"
        if (e.op in ("div", "rem") and dtypes.is_int(e.dtype) and isinstance(e.args[1], ir.Const)
                and int(e.args[1].value) > 0):
            # By a positive constant C's / and % are defined for every dividend and truncate
            # as XLA does: no helper guarding zero and -1 divisors, which kept GCC from
            # vectorizing index arithmetic (delinearizing a flattened index) and values alike.
            text = f"({args[0]} {'/' if e.op == 'div' else '%'} {args[1]})"
            return f"(({compute_type(e.dtype)}){text})" if _promoted(e.dtype) else text
        if e.op in ("max", "min") and dtypes.is_float(e.dtype):
            # Against a constant that is neither zero nor NaN, jax's max/min is one compare:
            # a NaN operand fails it and comes through, and an equal operand has the
            # constant's bits (only zeros have two). fx_maxf's tie and NaN selects cost a
            # quantizer's clamp as much as the rest of its arithmetic.
            for i, c in enumerate(e.args):
                if isinstance(c, ir.Const) and float(c.value) != 0 and c.value == c.value:
                    text = (f"({args[i]} {'>' if e.op == 'max' else '<'} {args[1 - i]} ? "
                            f"{args[i]} : {args[1 - i]})")
                    return f"(({compute_type(e.dtype)}){text})" if _promoted(e.dtype) else text
        operand_dt = e.args[0].dtype if e.args and e.op not in ("select",) else e.dtype
        if e.op == "select":
            operand_dt = e.dtype
        if e.op in ("eq", "ne", "lt", "le", "gt", "ge"):
            operand_dt = e.args[0].dtype
        text = _template(self.d, e.op, np.dtype(operand_dt)).format(*args)
        return f"(({compute_type(e.dtype)}){text})" if _promoted(e.dtype) else text

    def cast(self, src: np.dtype, dst: np.dtype, x: str) -> str:
        src, dst = np.dtype(src), np.dtype(dst)
        if src == dst:
            return x
        if dtypes.is_complex(dst):  # from a real value (imaginary part 0) or the other width
            part = dtypes.real_dtype(dst)
            if dtypes.is_complex(src):
                re, im = (self.cast(dtypes.real_dtype(src), part, f"({x}).{p}")
                          for p in ("re", "im"))
                return f"fx_make_{_kind(dst)}({re}, {im})"
            return f"fx_make_{_kind(dst)}({self.cast(src, part, x)}, {self.const(0, part)})"
        if dtypes.is_complex(src):  # to bool: either part nonzero; otherwise the real part
            if dst == dtypes.bool_:
                return f"((uint8_t)(({x}).re != 0 || ({x}).im != 0))"
            return self.cast(dtypes.real_dtype(src), dst, f"({x}).re")
        if dst == dtypes.bool_:
            return f"((uint8_t)({x} != 0))"
        if dtypes.is_float(src) and dtypes.is_int(dst):
            if src == F32 and dst.itemsize <= 2:
                return f"fx_f2{_kind(dst)}_f32({x})"
            return f"fx_f2{_kind(dst)}((double)({x}))"
        return f"(({compute_type(dst)})({x}))"

    def bitcast(self, src: np.dtype, dst: np.dtype, x: str) -> str:
        """The bits of ``x`` (of dtype ``src``) as a ``dst`` of the same width (not a half:
        halves are computed in float, see scalar_ops.unsupported)."""
        src, dst = np.dtype(src), np.dtype(dst)
        if dtypes.is_float(src):
            x = f"fx_{_kind(src)}_to_bits({x})"
        if dtypes.is_float(dst):
            return f"fx_bits_to_{_kind(dst)}((uint{dst.itemsize * 8}_t)({x}))"
        return f"(({compute_type(dst)})({x}))"

    # -- statements -----------------------------------------------------------------------------
    def stmts(self, body, indent: int) -> list[str]:
        out = []
        pad = "  " * indent
        for s in body:
            if isinstance(s, ir.Let):
                out.append(f"{pad}const {compute_type(s.value.dtype)} {s.name} = "
                           f"{self.expr(s.value)};")
            elif isinstance(s, ir.Decl):
                self.accumulators[s.name] = np.dtype(s.dtype)
                out.append(f"{pad}{compute_type(s.dtype)} {s.name} = {self.expr(s.init)};")
            elif isinstance(s, ir.Assign):
                out.append(f"{pad}{s.name} = {self.assigned(s.value)};")
            elif isinstance(s, ir.Store):
                guard = self.d.leader_guard if s.leader_only else ""
                lane = self.lane_of
                if lane is not None and s.buf in lane[1] and s.index == lane[0]:
                    target = f"{s.buf}_v.{_COMPONENTS[lane[2]]}"
                else:
                    target = f"{s.buf}[{self.expr(s.index)}]"
                out.append(f"{pad}{guard}{target} = {self.expr(s.value)};")
            elif isinstance(s, ir.Combine):
                line = self.combine(s)
                if line:
                    out.append(pad + line)
            elif isinstance(s, ir.Loop):
                wide = self.wide_buffers(s) if s.parallel and s.vector > 1 else {}
                if wide:
                    out.extend(self.vector_loop(s, wide, indent))
                    continue
                if s.parallel:
                    head = self.parallel_head(s.var, 0, s.extent, s.lanes,
                                              max(self.work, s.extent),
                                              _straight(s.body) or s.simd_iterations,
                                              s.simd_iterations)
                    out.extend(pad + line for line in head.split("\n"))
                    out[-1] += " {"
                elif s.cooperative:
                    ops = [(a, _reduction_op(self.d, op, self.accumulators[a]))
                           for a, op in s.reductions]
                    if self.d.simd_reduction and ops and all(o for _, o in ops):
                        clauses = " ".join(self.d.simd_reduction.format(op=o, acc=a)
                                           for a, o in ops)
                        out.append(f"{pad}#pragma omp simd {clauses}")
                    head = self.d.cooperative_for.format(it=self.it, v=s.var,
                                                         stop=s.extent)
                    out.append(f"{pad}{head} {{")
                else:
                    staged = self.staged_loop(s, indent)
                    if staged:
                        out.extend(staged)
                        continue
                    if self.d.simd_loop and _straight(s.body):
                        out.append(pad + self.d.simd_loop)
                    out.append(f"{pad}for ({self.it} {s.var} = 0; {s.var} < "
                               f"{s.extent}; {s.var}++) {{")
                out.extend(self.stmts(s.body, indent + 1))
                out.append(f"{pad}}}")
            else:
                raise TypeError(f"cannot render statement {s!r}")
        return out

    def staged_loop(self, s: ir.Loop, indent: int) -> list[str] | None:
        """``s`` as two loops where ``Dialect.stage_narrow_stores`` applies (a short straight
        loop whose only narrow values are float32 -> 8/16-bit conversions, each stored once,
        at an index of loop variables): the first computes in float and stores each value
        converted to int32 (the same clamping: prelude ``fx_f2i8w_f32`` ...) in a local
        array, the second narrows them into the buffer. The same values land in the same
        places; only the vector sizes change."""
        if not (self.d.stage_narrow_stores and self.d.simd_loop and s.extent <= 32
                and _straight(s.body)):
            return None
        lets = {st.name: st for st in s.body if isinstance(st, ir.Let)}
        local = set(lets) | {st.name for st in s.body if isinstance(st, ir.Decl)}
        reads: dict[str, int] = {}
        for st in s.body:
            for e in (st.index, st.value) if isinstance(st, ir.Store) else (
                    getattr(st, "value", None) or getattr(st, "init", None),):
                for name in _names(e):
                    reads[name] = reads.get(name, 0) + 1

        def conversion(v: ir.Expr) -> ir.Op | None:
            if isinstance(v, ir.Sym) and v.name in lets and reads.get(v.name) == 1:
                v = lets[v.name].value
            ok = (isinstance(v, ir.Op) and v.op == "cast" and v.args[0].dtype == F32
                  and dtypes.is_int(v.dtype) and np.dtype(v.dtype).itemsize <= 2)
            return v if ok else None

        staged, dropped = {}, set()
        for k, st in enumerate(s.body):
            if isinstance(st, ir.Store):
                conv = conversion(st.value)
                if conv is None or st.leader_only or _names(st.index) & local:
                    return None
                staged[k] = (f"fx_stage{k}", conv)
                if isinstance(st.value, ir.Sym):
                    dropped.add(st.value.name)
        if not staged or any(_narrow(st) for k, st in enumerate(s.body) if k not in staged
                             and not (isinstance(st, ir.Let) and st.name in dropped)):
            return None
        pad, it = "  " * indent, self.it
        head = f"for ({it} {s.var} = 0; {s.var} < {s.extent}; {s.var}++) {{"
        out = [f"{pad}int32_t {name}[{s.extent}];" for name, _ in staged.values()]
        first = [ir.Store(staged[k][0], ir.Sym(s.var, ir.INDEX),
                          ir.Op("cast_wide", staged[k][1].args, staged[k][1].dtype))
                 if k in staged else st for k, st in enumerate(s.body)
                 if not (isinstance(st, ir.Let) and st.name in dropped)]
        out += [pad + self.d.simd_loop, pad + head, *self.stmts(tuple(first), indent + 1),
                pad + "}", pad + self.d.simd_loop, pad + head]
        out += [f"{pad}  {s.body[k].buf}[{self.expr(s.body[k].index)}] = "
                f"({storage_type(conv.dtype)}){name}[{s.var}];"
                for k, (name, conv) in staged.items()]
        return out + [pad + "}"]

    def assigned(self, e: ir.Expr) -> str:
        """An accumulator's new value. A select of floats is the dialect's bitwise blend where
        it has one: GCC folds a later test of the accumulator (``best == best``) into the select
        and cannot vectorize the select of masks that makes (the max-pool gradient's window
        loop stayed scalar)."""
        if isinstance(e, ir.Op) and e.op == "select":
            blend = self.d.math.get(("blend", _kind(e.dtype)))
            if blend:
                return blend.format(*(self.expr(a) for a in e.args))
        return self.expr(e)

    def parallel_head(self, var: str, start, stop, lanes: int, work: int,
                      straight: bool = False, simd_outer: bool = False) -> str:
        """The head of a kernel's parallel loop (several lines where the dialect needs them).
        ``simd_outer``: the iterations are SIMD lanes even without threads (a column
        reduction's outputs, whose inner loops the compiler would not vectorize)."""
        if lanes > 1 and self.d.parallel_for_lanes:
            template = self.d.parallel_for_lanes
        elif work <= self.d.parallel_min_work:
            template = "for ({it} {v} = {start}; {v} < {stop}; {v}++)"
            if simd_outer and self.d.simd_loop:
                template = self.d.simd_loop + "\n" + template
        elif straight and self.d.parallel_for_simd:
            template = self.d.parallel_for_simd
        else:
            template = self.d.parallel_for
        return template.format(it=self.it, v=var, start=start, stop=stop, lanes=lanes)

    def wide_buffers(self, loop: ir.Loop) -> dict[str, str]:
        """The buffers a vector loop reads or writes with wide accesses: name -> vector type.
        A buffer qualifies when the dialect has a vector type for it and every access to it
        in the loop is at exactly the loop index."""
        var = ir.Sym(loop.var, ir.INDEX)
        seen: dict[str, bool] = {}

        def visit(e):
            if isinstance(e, ir.Load):
                seen[e.buf] = seen.get(e.buf, True) and e.index == var
                visit(e.index)
            elif isinstance(e, ir.Op):
                for a in e.args:
                    visit(a)

        def walk(body):
            for st in body:
                if isinstance(st, ir.Store):
                    seen[st.buf] = seen.get(st.buf, True) and st.index == var
                    visit(st.index)
                for field_name in ("value", "init", "index"):
                    if isinstance(getattr(st, field_name, None), ir.Expr):
                        visit(getattr(st, field_name))
                if isinstance(st, ir.Loop):
                    walk(st.body)

        walk(loop.body)
        wide = {}
        for buf, ok in seen.items():
            vt = self.d.vector_types.get((loop.vector, storage_type(self.params[buf].dtype)))
            if ok and vt:
                wide[buf] = vt
        return wide

    def vector_loop(self, loop: ir.Loop, wide: dict[str, str], indent: int) -> list[str]:
        """``loop`` with ``loop.vector`` iterations per lane and one wide access per buffer in
        ``wide``, when every pointer is aligned for it; then the remaining iterations (the
        tail, or all of them for misaligned pointers) one per lane."""
        pad, inner = "  " * indent, "  " * (indent + 1)
        w, var = loop.vector, loop.var
        vec_iters = loop.extent // w
        done = f"{var}_done"
        ptrs = " | ".join(self.d.vector_pointer.format(p=b) for b in wide)
        bytes_ = w * max(self.params[b].dtype.itemsize for b in wide)
        out = [f"{pad}{self.it} {done} = 0;",
               f"{pad}if ({self.d.vector_aligned.format(ptrs=ptrs, bytes=bytes_)}) {{"]
        head = self.parallel_head(f"{var}_v", 0, vec_iters, 1, max(self.work, loop.extent))
        out.extend(inner + line for line in head.split("\n"))
        out[-1] += " {"
        deep = "  " * (indent + 2)
        reads = [b for b in wide if not self.params[b].is_output]
        writes = [b for b in wide if self.params[b].is_output]
        for b in reads:
            out.append(deep + self.d.vector_load.format(vt=wide[b], name=f"{b}_v", buf=b,
                                                        i=f"{var}_v"))
        for b in writes:
            out.append(f"{deep}{wide[b]} {b}_v;")
        for c in range(w):
            self.lane_of = (ir.Sym(var, ir.INDEX), wide, c)
            try:
                lane = self.stmts(loop.body, indent + 3)
            finally:
                self.lane_of = None
            if re.search(rf"\b{var}\b", "\n".join(lane)):  # scalar accesses need the index
                lane.insert(0, f"{deep}  const {self.it} {var} = {var}_v * {w} + {c};")
            out += [f"{deep}{{", *lane, f"{deep}}}"]
        for b in writes:
            out.append(deep + self.d.vector_store.format(vt=wide[b], name=f"{b}_v", buf=b,
                                                         i=f"{var}_v"))
        out.append(f"{inner}}}")
        out.append(f"{inner}{done} = {vec_iters * w};")
        out.append(f"{pad}}}")
        head = self.parallel_head(var, done, loop.extent, 1, max(self.work, loop.extent))
        out.extend(pad + line for line in head.split("\n"))
        out[-1] += " {"
        out.extend(self.stmts(loop.body, indent + 1))
        out.append(f"{pad}}}")
        return out

    def combine(self, c: ir.Combine) -> str:
        """The lane combine of an accumulator (empty where lanes do not cooperate)."""
        if c.op in ("argmax", "argmin"):
            if not self.d.combine_arg:
                return ""
            best, idx = c.name, c.index
            cmp = ">" if c.op == "argmax" else "<"
            better = f"(fx_ob {cmp} {best})"
            tie = f"(fx_ob == {best})"
            if dtypes.is_float(c.dtype):
                better = f"(({better} && {best} == {best}) || (fx_ob != fx_ob && {best} == {best}))"
                tie = f"({tie} || (fx_ob != fx_ob && {best} != {best}))"
            cond = f"fx_oi >= 0 && ({idx} < 0 || {better} || ({tie} && fx_oi < {idx}))"
            return self.d.combine_arg.format(
                best=best, idx=idx, vtype=compute_type(c.dtype),
                itype=compute_type(c.index_dtype), better=cond,
                vshfl=_shfl_operand(best, c.dtype))
        if not self.d.combine:
            return ""
        other = f"fx_other_{c.name}"
        expr = _template(self.d, c.op, np.dtype(c.dtype)).format(c.name, other)
        return self.d.combine.format(acc=c.name, other=other, type=compute_type(c.dtype),
                                     expr=expr, shfl=_shfl_operand(c.name, c.dtype))

    def kernel(self, k: ir.Kernel) -> str:
        restrict = self.d.restrict if k.restrict else ""
        params = ", ".join(
            f"{self.d.pointer_space}{'' if p.is_output else 'const '}{storage_type(p.dtype)}* "
            f"{restrict} {p.name}"
            for p in k.params
        )
        self.work = k.work
        self.params = {p.name: p for p in k.params}
        self.accumulators = {}
        largest = max([k.work] + [p.size for p in k.params])
        small = self.d.small_index_type and largest < 2**31 - 1
        self.it = self.d.small_index_type if small else self.d.index_type
        wide = self.d.wide_vectors if getattr(k, "wide_vectors", False) else ""
        lines = [f"{wide}{self.d.kernel_prefix} {k.name}({params}) {{"]
        lines += self.stmts(k.body, 1)
        lines.append("}")
        return "\n".join(lines)


_COMPONENTS = "xyzw"


def _reduction_op(d: Dialect, op: str, dt: np.dtype) -> str | None:
    """The dialect's SIMD reduction identifier for ``op`` on ``dt`` (None: no pragma)."""
    return next((d.simd_reduction_ops[k] for k in _keys(op, dt) if k in d.simd_reduction_ops),
                None)


def _names(e: ir.Expr) -> set[str]:
    """The symbols ``e`` reads."""
    if isinstance(e, ir.Sym):
        return {e.name}
    if isinstance(e, ir.Load):
        return _names(e.index)
    if isinstance(e, ir.Op):
        return set().union(*(_names(a) for a in e.args))
    return set()


def _narrow(st: ir.Stmt) -> bool:
    """Whether a statement loads, stores or computes an integer narrower than 32 bits
    (bools, which GCC keeps as masks, aside)."""
    def narrow(e: ir.Expr) -> bool:
        dt = np.dtype(e.dtype)
        if dtypes.is_int(dt) and dt.itemsize < 4:
            return True
        if isinstance(e, ir.Load):
            return narrow(e.index)
        return isinstance(e, ir.Op) and any(narrow(a) for a in e.args)

    if isinstance(st, ir.Store):
        return narrow(st.value) or narrow(st.index)
    value = getattr(st, "value", None) if not isinstance(st, ir.Decl) else st.init
    return value is not None and narrow(value)


def _straight(body) -> bool:
    """Straight-line code: lets, stores and variables of the iteration's own (declared in the
    body before they are assigned: a pooling window's unrolled max), so nothing is carried
    between iterations, and no nested loop."""
    local: set[str] = set()
    for s in body:
        if isinstance(s, ir.Decl):
            local.add(s.name)
        elif isinstance(s, ir.Assign):
            if s.name not in local:
                return False
        elif not isinstance(s, (ir.Let, ir.Store)):
            return False
    return True


def _shfl_operand(name: str, dt) -> str:
    """Warp shuffles move 32/64-bit values: widen bools and 8/16-bit integers to int."""
    return f"(int){name}" if np.dtype(dt) == dtypes.bool_ or _promoted(dt) else name


def render_module(kernels: list[ir.Kernel], dialect: Dialect, extra: str = "") -> str:
    """One translation unit holding every kernel (plus ``extra``, e.g. C entry points): the
    dialect's prelude, ``PRELUDE``, the special functions the kernels call (only those: they
    are long), the kernels."""
    r = Renderer(dialect)
    bodies = [k.render(r) for k in kernels]
    parts = [dialect.file_prelude, PRELUDE]
    special = needed_source("\n".join(bodies))
    if special:
        parts.append(special)
    parts += bodies
    if extra:
        parts.append(extra)
    return "\n\n".join(parts) + "\n"
