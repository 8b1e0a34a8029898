"""What differs between the targets kernels are rendered for: one :class:`Dialect` record per
target (C with OpenMP, CUDA C; OpenCL C in ``opencl_dialect``), and the table of operation
spellings they share (``_COMMON``, which a dialect's ``math`` overrides per op and dtype).

A dialect is data: the function prefix, pointer qualifier, how the parallel loop is written
(an OpenMP ``for`` in C; a grid-stride loop over the thread index with a bounds guard in CUDA),
type names, and the spelling of each math function per dtype. ``render.Renderer`` reads it and
never asks which target it renders for.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fx import dtypes

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
    # Wrapping value arithmetic on wide signed ints (primitive_rules.WRAPPING): through the
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
# The special functions of lowering/render/prelude_special.py (computed in double, see
# primitive_rules._via_double): op -> fx_<op>(operands...).
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
                 "#ifndef NAN\n#define NAN __int_as_float(0x7fc00000)\n#endif\n"
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
