"""What the kernel dialects share: the :class:`Dialect` record (one per target, each in its own
module: ``c_dialect``, ``cuda_dialect``, ``opencl_dialect``) and the table of operation
spellings every dialect starts from (``_COMMON``, which a dialect's ``math`` overrides per op
and dtype).

A dialect is data: the function prefix, pointer qualifier, how the parallel loop is written
(an OpenMP ``for`` in C; a grid-stride loop over the thread index with a bounds guard in CUDA),
type names, and the spelling of each math function per dtype. ``renderer.Renderer`` reads it and
never asks which target it renders for.

The spellings of the elementwise primitives declared by a record (``fx.lax.elementwise_record``)
are derived from their records: the shared templates join ``_COMMON``, a record's templates for
one dialect join that dialect's ``math`` (:func:`record_math`), the C99 libm functions they call
are :func:`record_libm` (OpenCL maps those names) and their prelude helpers are
:data:`RECORD_HELPERS`, appended to every dialect's file prelude. The table below holds only the
operations no record declares: the renderer's own (select, blend, the shifts' and rounding's
forms, wrapping arithmetic, complex parts) and the special functions of ``prelude_special``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fx import dtypes
from fx.lax.elementwise_record import records

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
    ("round_away", "f32"): "fx_round_awayf({0})", ("round_away", "f64"): "fx_round_away({0})",
    ("round_even", "f32"): "rintf({0})", ("round_even", "f64"): "rint({0})",
    ("polygamma", "*"): "fx_polygamma({1}, {0})",
}
# The special functions of lowering/render/prelude_special.h behind fx.scipy.special (computed
# in double, see primitive_rules._via_double; fx.lax.special_functions' are records): op ->
# fx_<op>(operands...).
for _op, _n in [("expn", 2), ("erfcx", 1), ("dawsn", 1), ("expi", 1), ("spence", 1),
                ("ndtri", 1), ("sici_si", 1), ("sici_ci", 1), ("fresnel_s", 1), ("fresnel_c", 1)]:
    _COMMON[(_op, "f64")] = f"fx_{_op}({', '.join(f'{{{i}}}' for i in range(_n))})"
# Complex values are pairs (fx_c64 / fx_c128: {re, im}, as NumPy lays them out) computed by
# the prelude's fx_c* functions (the arithmetic's spellings are in its records); a select is
# C's ternary on the pairs.
for _c, _r in (("c64", "f32"), ("c128", "f64")):
    _COMMON[("conj", _c)] = f"fx_conj_{_c}({{0}})"
    _COMMON[("real", _c)] = "({0}).re"
    _COMMON[("imag", _c)] = "({0}).im"
    _COMMON[("complex", _r)] = f"fx_make_{_c}({{0}}, {{1}})"

# The records' shared templates.
for _record in records():
    for _key, _text in (_record.kernel.templates if _record.kernel else {}).items():
        assert (_record.name, _key) not in _COMMON, f"{_record.name} is spelled twice"
        _COMMON[(_record.name, _key)] = _text


def record_math(dialect: str) -> dict[tuple[str, str], str]:
    """The records' templates for ``dialect`` alone (a dialect's ``math``)."""
    return {(r.name, key): text for r in records() if r.kernel
            for key, text in r.kernel.dialects.get(dialect, {}).items()}


def record_libm() -> frozenset[str]:
    """The C99 libm functions the records' templates call (float32 forms ``f``-suffixed)."""
    return frozenset(name for r in records() if r.kernel for name in r.kernel.libm)


# Prelude functions records bring with their C text (FX_FN and the bit casts only), for every
# dialect's file prelude.
RECORD_HELPERS = "".join(text if text.endswith("\n") else text + "\n" for r in records()
                         if r.kernel for _name, text in r.kernel.helpers)


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
    # A pragma vectorizing a cooperative loop that reduces with these ops ("" = none), for
    # rows of at least ``simd_reduction_min`` elements; shorter rows reduce in order.
    simd_reduction: str = ""
    simd_reduction_min: int = 0
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
