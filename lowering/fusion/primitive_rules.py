"""How each fusible primitive computes one element: its op pattern and its kernel-IR rule.

The op-pattern lattice (from least to most restrictive for fusion):

- ELEMENTWISE: out[i] = f(in[i], ...) (scalars broadcast);
- BROADCAST: out[i] = in[g(i)] where g drops or zeroes dimensions (and iota);
- INJECTIVE: out[i] = in[g(i)] for an index map g (transpose, reshape, slice, pad, ...);
- REDUCTION: out[o] = combine over r of in[o, r];
- OUT_ELEMENTWISE_FUSABLE: a matmul/convolution whose elementwise consumers can be applied
  as it writes its output (an epilogue);
- OPAQUE: anything else (run on its own, through a library or NumPy kernel).

``scalar_rules[prim](args, params, out_dtype)`` builds the kernel-IR expression for one output
element from the operands' expressions (already in compute dtype). The rules, patterns and the
cheap and complex sets of the elementwise primitives declared by a record
(``fx.lax.elementwise_record``) are derived from their records; the rest are written here.
``index_rules[prim]`` maps an output index to the operand's index (or a guarded one) for the
index-map patterns.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import numpy as np

from fx import dtypes
from fx.core import Primitive
from fx.lax import base, linalg
from fx.lax import complex_parts as cx
from fx.lax import elementwise as ew
from fx.lax import reductions as red
from fx.lax import scipy_special as scipy_prims
from fx.lax import special as sp
from fx.lax import structural as st
from fx.lax.elementwise_record import records
from fx.lowering.codegen import kernel_ir as ir


class Pattern(enum.IntEnum):
    ELEMENTWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    REDUCTION = 3
    OUT_ELEMENTWISE_FUSABLE = 4
    OPAQUE = 5


patterns: dict[Primitive, Pattern] = {}
scalar_rules: dict[Primitive, Callable] = {}


def pattern_of(prim: Primitive) -> Pattern:
    return patterns.get(prim, Pattern.OPAQUE)


def compute_dtype(dt) -> np.dtype:
    """Half precision computes in float32 (storage stays 16-bit)."""
    dt = np.dtype(dt)
    return dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt


# Signed 32/64-bit arithmetic wraps in NumPy and XLA; in C its overflow is undefined, and GCC
# folds on that (``x + 1 > x`` became true for INT32_MAX). These ops are value arithmetic
# rendered through the unsigned type (index arithmetic, which never overflows, keeps the
# plain ops: GCC's loop analysis relies on it).
WRAPPING = {"add": "add_wrap", "sub": "sub_wrap", "mul": "mul_wrap", "neg": "neg_wrap",
            "abs": "abs_wrap"}


def wrapping(op: str, dt) -> str:
    """The op for value arithmetic ``op`` on ``dt``: its wrapping form on wide signed ints."""
    dt = np.dtype(dt)
    return WRAPPING.get(op, op) if dt in (dtypes.int32, dtypes.int64) else op


def _named(prim: Primitive, op: str) -> None:
    patterns[prim] = Pattern.ELEMENTWISE
    scalar_rules[prim] = lambda args, params, dt, op=op: ir.Op(wrapping(op, dt), tuple(args),
                                                                dt)


def _formula(expr, args, dt):
    """A record's ``Kernel.formula`` (nested ``(op, operand, ...)``, operands by position) as
    kernel IR."""
    if isinstance(expr, int):
        return args[expr]
    op, *operands = expr
    return ir.Op(wrapping(op, dt), tuple(_formula(o, args, dt) for o in operands), dt)


# digamma & co. (the special functions of lowering/render/prelude_special.h) compute in double
# whatever the operand type, as their eager impls do.
def _via_double(op: str, args, dt, extra=()):
    if dt == dtypes.float64:
        return ir.Op(op, tuple(args) + tuple(extra), dt)
    wide = [ir.Op("cast", (a,), dtypes.float64) for a in args]
    return ir.Op("cast", (ir.Op(op, tuple(wide) + tuple(extra), dtypes.float64),), dt)


# The elementwise records (fx.lax.elementwise_record): each computes one element as the op of
# its name (spelled by the dialects from the record), as its formula, or in double. Records
# without a kernel have their rule written below.
for _record in records():
    _k = _record.kernel
    if _k is None:
        continue
    if _k.formula is not None:
        _rule = lambda args, params, dt, f=_k.formula: _formula(f, args, dt)  # noqa: E731
    elif _k.via_f64:
        _rule = lambda args, params, dt, op=_record.name: _via_double(op, args, dt)  # noqa: E731
    else:
        _named(_record.primitive, _record.name)
        continue
    patterns[_record.primitive] = Pattern.ELEMENTWISE
    scalar_rules[_record.primitive] = _rule
_named(base.add_any_p, "add")

for _prim in [scipy_prims.erfcx_p, scipy_prims.dawsn_p, scipy_prims.expi_p,
              scipy_prims.expn_p, scipy_prims.spence_p, scipy_prims.ndtri_p, scipy_prims.si_p,
              scipy_prims.ci_p, scipy_prims.fresnel_s_p, scipy_prims.fresnel_c_p]:
    patterns[_prim] = Pattern.ELEMENTWISE
    scalar_rules[_prim] = lambda args, params, dt, op=_prim.name: _via_double(op, args, dt)

patterns[sp.polygamma_p] = Pattern.ELEMENTWISE
scalar_rules[sp.polygamma_p] = lambda args, params, dt: _via_double(
    "polygamma", args, dt, (ir.Const(int(params["m"]), dtypes.int32),)
)


def _shift(op: str):
    """Shifts by an amount outside [0, bits) give 0 (as the NumPy impl and XLA do)."""

    def rule(args, params, dt):
        x, y = args
        bits = np.dtype(dt).itemsize * 8
        in_range = ir.Op("and", (ir.Op("ge", (y, ir.Const(0, dt)), dtypes.bool_),
                                 ir.Op("lt", (y, ir.Const(bits, dt)), dtypes.bool_)), dtypes.bool_)
        safe_y = ir.Op("select", (in_range, y, ir.Const(0, dt)), dt)
        shifted = ir.Op(op, (x, safe_y), dt)
        return ir.Op("select", (in_range, shifted, ir.Const(0, dt)), dt)

    return rule


def _select_n(args, params, dt):
    which, *cases = args
    if which.dtype == dtypes.bool_:
        return ir.Op("select", (which, cases[1], cases[0]), dt) if len(cases) == 2 else cases[0]
    out = cases[-1]
    for i in range(len(cases) - 2, -1, -1):
        out = ir.Op("select", (ir.Op("le", (which, ir.Const(i, which.dtype)), dtypes.bool_),
                               cases[i], out), dt)
    return out


def _convert(args, params, dt):
    return ir.Op("cast", (args[0],), dt)


def _integer_pow(args, params, dt):
    (x,), y = args, int(params["y"])
    if y == 0:
        return ir.Const(1, dt)
    # Wide signed ints multiply in the wrapping form: C leaves signed overflow undefined,
    # where eager (NumPy, XLA) wraps.
    mul = wrapping("mul", dt)
    acc, base_, n = None, x, abs(y)
    while n:  # binary exponentiation, unrolled at compile time
        if n & 1:
            acc = base_ if acc is None else ir.Op(mul, (acc, base_), dt)
        n >>= 1
        if n:
            base_ = ir.Op(mul, (base_, base_), dt)
    return ir.Op("div", (ir.Const(1, dt), acc), dt) if y < 0 else acc


def _round(args, params, dt):
    return ir.Op("round_even" if params["rounding_method"] == 1 else "round_away", tuple(args), dt)


for _prim, _rule in [
    (ew.select_n_p, _select_n), (ew.convert_element_type_p, _convert),
    (ew.integer_pow_p, _integer_pow), (ew.round_p, _round),
]:
    patterns[_prim] = Pattern.ELEMENTWISE
    scalar_rules[_prim] = _rule

for _prim, _op in [(ew.shift_left_p, "shl"), (ew.shift_right_logical_p, "shr_logical")]:
    patterns[_prim] = Pattern.ELEMENTWISE
    scalar_rules[_prim] = _shift(_op)

# Equations a kernel cannot compute although their primitive has a rule: prim -> test of the
# equation. A group holding one runs as a NumPy step.
unsupported: dict[Primitive, Callable] = {}

patterns[ew.bitcast_convert_type_p] = Pattern.ELEMENTWISE
scalar_rules[ew.bitcast_convert_type_p] = lambda args, params, dt: ir.Op("bitcast", tuple(args),
                                                                         dt)
# Half precision is computed in float32: the 16 bits (a NaN's payload) are not at hand.
unsupported[ew.bitcast_convert_type_p] = lambda eqn: any(
    v.aval.dtype in (dtypes.float16, dtypes.bfloat16) for v in (*eqn.invars, *eqn.outvars))

# Complex values: the parts, and the arithmetic the prelude's fx_c* functions spell. A group
# with any other equation on complex values (exp, reductions, ...) runs as a NumPy step.
for _prim, _op in [(cx.real_p, "real"), (cx.imag_p, "imag"), (cx.complex_p, "complex")]:
    _named(_prim, _op)
patterns[cx.conj_p] = Pattern.ELEMENTWISE
# A real operand is made complex first: its conjugate's imaginary part is -0.0, as eager's.
scalar_rules[cx.conj_p] = lambda args, params, dt: ir.Op("conj", (
    args[0] if dtypes.is_complex(args[0].dtype) else ir.Op("cast", tuple(args), dt),), dt)
complex_prims: frozenset[Primitive] = frozenset([
    cx.real_p, cx.imag_p, cx.complex_p, cx.conj_p, ew.select_n_p, ew.convert_element_type_p,
    ew.integer_pow_p, base.add_any_p,
    *(r.primitive for r in records() if r.computes_complex),
])


def touches_complex(eqn) -> bool:
    return any(dtypes.is_complex(v.aval.dtype) for v in (*eqn.invars, *eqn.outvars)
               if hasattr(v, "aval"))


# --- index maps ----------------------------------------------------------------------------------
# index_rules[prim](out_index, in_avals, out_aval, params) -> list of (operand position,
# operand index) reads plus a combining function of the read values, for injective ops.

for _prim in (base.broadcast_in_dim_p, st.iota_p):
    patterns[_prim] = Pattern.BROADCAST
for _prim in (base.reshape_p, base.transpose_p, st.slice_p, st.concatenate_p, st.pad_p,
              st.squeeze_p, st.rev_p):
    patterns[_prim] = Pattern.INJECTIVE

# Reductions and how a kernel combines two partial results.
reduction_combine: dict[Primitive, str] = {
    base.reduce_sum_p: "add", red.reduce_max_p: "max", red.reduce_min_p: "min",
    red.reduce_prod_p: "mul", red.reduce_and_p: "and", red.reduce_or_p: "or",
    red.argmax_p: "argmax", red.argmin_p: "argmin",
}
for _prim in reduction_combine:
    patterns[_prim] = Pattern.REDUCTION
patterns[linalg.dot_general_p] = Pattern.OUT_ELEMENTWISE_FUSABLE


# Index maps that may read each operand element many times (overlapping windows: the
# convolution patches, pooling with overlapping windows, the max-pool gradient, which reads
# every window's elements for each of them): primitive -> whether this equation does. Fusing
# a producer into such a reader would recompute it at every read, so the producer is stored
# (and loaded) instead, unless it is a cheap broadcast.
gathers: dict[Primitive, Callable] = {}


def rereads(eqn) -> bool:
    rule = gathers.get(eqn.primitive)
    return rule is not None and rule(eqn)


def windows_overlap(window, strides, dilation) -> bool:
    """Some element lies in more than one window."""
    return any(k > 1 and (k - 1) * d + 1 > s for k, s, d in zip(window, strides, dilation))

# Operations cheaper to recompute in every consumer than to write out and read back.
cheap_prims: set[Primitive] = {
    ew.select_n_p, ew.convert_element_type_p, base.add_any_p, ew.integer_pow_p,
    *(r.primitive for r in records() if r.cheap),
}
