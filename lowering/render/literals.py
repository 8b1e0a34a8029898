"""Values as literals of the C dialects: every value of every dtype spelled as an atom (see
:func:`literal`), bit-exact where the value has no decimal spelling (NaN payloads, -0.0, the
most negative integers)."""

from __future__ import annotations

import numpy as np

from fx import dtypes
from fx.lowering.render.dialects import F32, _kind, compute_type


def literal(v, dt, small_index: bool = False) -> str:
    """``v`` as a C/CUDA/OpenCL literal of dtype ``dt`` (float16/bfloat16 as the float they
    compute in), spelled as an atom: a name, a call or a parenthesized expression, or a
    non-negative number. Every value has a spelling: NaN (the default quiet NaN as ``NAN``,
    any other by its bits), infinities, -0.0, the most negative integers (``-2**63`` has no
    literal in C: it is ``(-9223372036854775807LL - 1)``). ``small_index``: an int64 that fits
    is written without its cast (index arithmetic in 32 bits, see ``small_index_type``)."""
    dt = np.dtype(dt)
    if dtypes.is_complex(dt):
        v, part = complex(v), dtypes.real_dtype(dt)
        return f"fx_make_{_kind(dt)}({literal(v.real, part)}, {literal(v.imag, part)})"
    if dt == dtypes.bool_:
        return "1" if v else "0"
    if dtypes.is_float(dt):
        single = compute_type(dt) == "float"
        if single:
            bits = int(np.asarray(v, F32).view(np.uint32))
            v = float(np.float32(v))
        else:
            bits = int(np.asarray(v, np.float64).view(np.uint64))
            v = float(v)
        if v != v:
            if bits == (0x7FC00000 if single else 0x7FF8000000000000):
                return "NAN" if single else "((double)NAN)"
            return (f"fx_bits_to_f32({bits:#x}u)" if single
                    else f"fx_bits_to_f64({bits:#x}ull)")
        if v in (float("inf"), float("-inf")):
            s = "INFINITY" if v > 0 else "(-INFINITY)"
            return s if single else f"((double){s})"
        text = repr(abs(v))
        if "e" not in text and "." not in text:
            text += ".0"
        text += "f" if single else ""
        return f"(-{text})" if np.signbit(v) else text
    v = int(v)
    if dtypes.is_unsigned_int(dt):
        v %= 2 ** (dt.itemsize * 8)
        return {8: f"{v}ull", 4: f"{v}u"}.get(dt.itemsize, str(v))
    if dt == dtypes.int64:
        if v == -(2**63):
            return "((int64_t)(-9223372036854775807LL - 1))"
        if small_index and abs(v) < 2**31 - 1:
            return str(v) if v >= 0 else f"({v})"
        return f"((int64_t){v}LL)"
    if v == -(2**31):
        return "((int32_t)(-2147483647 - 1))"
    if abs(v) >= 2**31 - 1:
        return f"((int32_t){v})"
    return str(v) if v >= 0 else f"({v})"
