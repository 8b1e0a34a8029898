"""Conversions between dtypes: ``convert_element_type`` (value-preserving where possible:
float → int truncates toward zero with NaN → 0 and saturation, as XLA) and
``bitcast_convert_type`` (same-width reinterpretation of the bits).
"""

from __future__ import annotations

import warnings

import numpy as np

from fx import dtypes
from fx.array import Array
from fx.avals import ShapedArray
from fx.core import Primitive, Tracer, get_aval
from fx.interpreters import batching, jvp, transpose
from fx.interpreters.jvp import Zero

# --- declarations ---------------------------------------------------------------------------------

convert_element_type_p = Primitive("convert_element_type")  # params: new_dtype, weak_type


@convert_element_type_p.def_abstract_eval
def _convert_abstract_eval(x, *, new_dtype, weak_type):
    dtypes.check(new_dtype)
    return ShapedArray(x.shape, new_dtype, weak_type)


@convert_element_type_p.def_impl
def _convert_impl(x, *, new_dtype, weak_type):
    with np.errstate(all="ignore"):
        if dtypes.is_complex(x.dtype) and not dtypes.is_complex(new_dtype) and (
                new_dtype != dtypes.bool_):
            x = np.real(x)  # complex → real keeps the real part (jax's, without a warning)
        if dtypes.is_float(x.dtype) and dtypes.is_int(new_dtype):
            # Float → int: NaN → 0 and saturate at the bounds (XLA's semantics). The bounds of
            # 64-bit types are not float64 values (2**63 - 1 rounds up to 2**63), so values
            # at or past a rounded bound take the bound itself, not a cast of it.
            info = np.iinfo(new_dtype)
            x = np.nan_to_num(np.trunc(np.asarray(x, np.float64)), nan=0.0)
            hi, lo = x >= float(info.max), x <= float(info.min)
            inside = np.where(hi | lo, 0.0, x).astype(new_dtype)
            return np.where(hi, info.max, np.where(lo, info.min, inside)).astype(new_dtype)
        if new_dtype == dtypes.bool_:
            return np.not_equal(x, 0)
        return np.asarray(x).astype(new_dtype)


batching.vectorized_batcher(convert_element_type_p)

bitcast_convert_type_p = Primitive("bitcast_convert_type")  # params: new_dtype


@bitcast_convert_type_p.def_abstract_eval
def _bitcast_abstract_eval(x, *, new_dtype):
    if np.dtype(new_dtype).itemsize != x.dtype.itemsize:
        raise TypeError(
            f"bitcast_convert_type: {x.dtype} and {new_dtype} differ in width; only "
            "same-width bitcasts are supported"
        )
    return ShapedArray(x.shape, new_dtype)


bitcast_convert_type_p.def_impl(
    lambda x, *, new_dtype: np.ascontiguousarray(x).view(new_dtype).reshape(np.shape(x)))
batching.vectorized_batcher(bitcast_convert_type_p)


# --- rules ----------------------------------------------------------------------------------------


def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
    (x,), (t,) = primals, tangents
    ans = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if isinstance(t, Zero) or not dtypes.is_inexact(new_dtype) or not dtypes.is_inexact(x.dtype):
        return ans, Zero.like(ans)
    return ans, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


jvp.jvp_rules[convert_element_type_p] = _convert_jvp


def _convert_transpose(ct, x, *, new_dtype, weak_type):
    # Real → complex transposes to the real part, complex → real to ``complex(ct, 0)``: both
    # are the conversion back (for the pairing Re(u * v), see fx.lax.complex_parts).
    return [convert_element_type_p.bind(ct, new_dtype=x.aval.dtype, weak_type=x.aval.weak_type)]


transpose.deftranspose(convert_element_type_p, _convert_transpose)


# --- the fx.lax functions -------------------------------------------------------------------------


def convert_element_type(x, new_dtype, weak_type: bool = False):
    """``x`` converted to ``new_dtype`` (canonicalized for the mode, as jax's: float64 is
    float32 in the default mode). Complex to real keeps the real part, with NumPy's
    ``ComplexWarning`` as jax gives."""
    old_dtype = get_aval(x).dtype
    if dtypes.is_extended(new_dtype) or dtypes.is_extended(old_dtype):  # (typed PRNG keys)
        if new_dtype != old_dtype:
            raise ValueError(f"Cannot convert_element_type from {old_dtype} to {new_dtype}")
        return x
    new_dtype = dtypes.canonicalize(new_dtype)
    if dtypes.is_complex(get_aval(x).dtype) and not dtypes.is_complex(new_dtype):
        warnings.warn("Casting complex values to real discards the imaginary part",
                      np.exceptions.ComplexWarning, stacklevel=2)
    return to_dtype(x, new_dtype, weak_type)


def to_dtype(x, new_dtype, weak_type: bool = False):
    """``convert_element_type`` to exactly ``new_dtype`` in either mode: for fx's own code that
    computes in a 64-bit type in the default mode (an exactly rounded float32 multiply-add
    through float64, 64-bit random bits)."""
    new_dtype = dtypes.check(new_dtype)
    aval = get_aval(x)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return x
    if not aval.shape and not isinstance(x, Tracer):
        # Constant-fold scalar constants (Python scalars meeting arrays) instead of staging.
        buf = _convert_impl(np.asarray(x), new_dtype=new_dtype, weak_type=weak_type)
        return Array(np.asarray(buf, dtype=new_dtype), weak_type)
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=bool(weak_type))


def bitcast_convert_type(x, new_dtype):
    return bitcast_convert_type_p.bind(x, new_dtype=dtypes.check(new_dtype))
