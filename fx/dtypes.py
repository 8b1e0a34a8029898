"""Dtypes and type promotion, with jax's semantics in both of jax's modes.

fx supports bool, int8/16/32/64, uint8/16/32/64, float16, bfloat16, float32, float64,
complex64, complex128, and float8_e4m3fn / float8_e5m2 as storage types (converted to and
from, not computed in), all represented as NumPy dtype objects (the 16- and 8-bit floats come
from ml_dtypes).

**Modes.** In the default mode, as in jax's, values are at most 32-bit: 64-bit data
(``np.float64`` arrays, ``dtype=int64`` requests) is *canonicalized* to its 32-bit counterpart
and Python scalars are float32 / int32 / complex64. In x64 mode (``fx.config.update(
"jax_enable_x64", True)``, ``FX_ENABLE_X64=1``, or the ``fx.enable_x64()`` context) 64-bit
data stays 64-bit and Python scalars are float64 / int64 / complex128.

**Promotion** follows jax's type lattice. Python scalars are *weakly typed*: they take the
dtype of the array they meet instead of widening it (``f16_array * 2.0`` is float16), and
only decide the kind of the result (``int8_array * 2.5`` is a weak float of the mode's
default width). The primitives themselves accept every supported dtype in either mode; the
mode acts where values and dtype requests enter (:func:`canonicalize`).

**Strict promotion** (``fx.numpy_dtype_promotion("strict")``, or ``fx.config.update(
"jax_numpy_dtype_promotion", "strict")``) refuses every implicit promotion between different
dtypes with :class:`TypePromotionError`, as jax's; Python scalars still take the dtype of the
array they meet when their kind fits (``f32_array * 2`` stays float32, ``i32_array * 2.0`` is
refused).
"""

from __future__ import annotations

import functools
import threading
import warnings

import ml_dtypes
import numpy as np

from fx.config import (  # noqa: F401  (the promotion mode is an option with a per-context
    PROMOTION_MODES,  # override, kept with the options; fx.dtypes gives the same names)
    check_promotion_mode,
    config,
    numpy_dtype_promotion,
    promotion_mode,
)
from fx.extended_dtypes import (  # noqa: F401  (fx.dtypes' names for them)
    ExtendedDType,
    extended,
    is_extended,
    prng_key,
    refuse_extended,
)
from fx.extended_dtypes import issubdtype_extended as _issubdtype_extended
from fx.extended_dtypes import join_extended as _join_extended

bool_ = np.dtype(np.bool_)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)

SIGNED = (int8, int16, int32, int64)
UNSIGNED = (uint8, uint16, uint32, uint64)
INTEGER = SIGNED + UNSIGNED
FLOATING = (float16, bfloat16, float32, float64)  # the floats computed in
FLOAT8 = (float8_e4m3fn, float8_e5m2)  # stored and converted only
COMPLEX = (complex64, complex128)
INEXACT = FLOATING + COMPLEX
SUPPORTED = (bool_,) + INTEGER + FLOATING + COMPLEX + FLOAT8

SHORT_NAMES = {
    bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64",
    uint8: "u8", uint16: "u16", uint32: "u32", uint64: "u64",
    float16: "f16", bfloat16: "bf16", float32: "f32", float64: "f64",
    complex64: "c64", complex128: "c128", float8_e4m3fn: "f8e4m3fn", float8_e5m2: "f8e5m2",
}

# --- the mode -----------------------------------------------------------------------------------

_local = threading.local()  # ``enable_x64()`` contexts: per thread, as jax's


def x64_enabled() -> bool:
    """Whether 64-bit mode is on in this thread (see the module docstring)."""
    forced = getattr(_local, "x64", None)
    if forced is not None:
        return forced
    return config.enable_x64


class enable_x64:
    """``with fx.enable_x64():`` runs its body in x64 mode in this thread (``enable_x64(False)``
    in the default mode), then restores the previous mode."""

    def __init__(self, new_val: bool = True):
        self.new_val = bool(new_val)

    def __enter__(self):
        self._saved = getattr(_local, "x64", None)
        _local.x64 = self.new_val
        return self

    def __exit__(self, *exc):
        _local.x64 = self._saved
        return False


def default_float_dtype() -> np.dtype:
    """The dtype of a Python float: float64 in x64 mode, else float32 (jax's ``jnp.float_``)."""
    return float64 if x64_enabled() else float32


def default_int_dtype() -> np.dtype:
    """int64 in x64 mode, else int32 (jax's ``jnp.int_``)."""
    return int64 if x64_enabled() else int32


def default_uint_dtype() -> np.dtype:
    return uint64 if x64_enabled() else uint32


def default_complex_dtype() -> np.dtype:
    """complex128 in x64 mode, else complex64 (jax's ``jnp.complex_``)."""
    return complex128 if x64_enabled() else complex64


# --- validation and canonicalization ------------------------------------------------------------

_TO_32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}
WIDE = tuple(_TO_32)  # the dtypes only x64 mode keeps


def check(dtype) -> np.dtype:
    """The fx dtype ``dtype`` names (a NumPy dtype, type or name; Python's ``float``, ``int``,
    ``complex`` and ``bool`` mean the mode's defaults), without narrowing; raises
    ``TypeError`` for dtypes fx does not support."""
    if dtype is float:
        return default_float_dtype()
    if dtype is int:
        return default_int_dtype()
    if dtype is complex:
        return default_complex_dtype()
    if dtype is bool:
        return bool_
    if isinstance(dtype, ExtendedDType):
        raise TypeError(f"fx: {dtype} is an extended dtype (typed PRNG keys), not a NumPy "
                        "dtype; fx.random.key_data(k) gives a key's raw uint32 data")
    if not isinstance(dtype, (type, str, np.dtype)) and isinstance(
            getattr(dtype, "dtype", None), np.dtype):
        dtype = dtype.dtype  # fx.numpy's scalar types, arrays
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"fx: {dtype!r} is not a dtype") from e
    if dt in _SUPPORTED_SET:
        return dt
    raise TypeError(f"fx does not support dtype {dt}; supported dtypes are "
                    + ", ".join(str(d) for d in SUPPORTED))


_SUPPORTED_SET = frozenset(SUPPORTED)


def canonicalize(dtype) -> np.dtype:
    """The dtype a value of ``dtype`` gets in the current mode: :func:`check`, then 64-bit
    types become their 32-bit counterparts unless x64 mode is on (jax's
    ``canonicalize_dtype``)."""
    x64 = x64_enabled()
    if isinstance(dtype, np.dtype) and dtype in _KEPT[x64]:
        return dtype  # the common case, without the checks
    dt = check(dtype)
    if dt in _TO_32 and not x64:
        return _TO_32[dt]
    return dt


canonicalize_dtype = canonicalize
_KEPT = {x64: frozenset(d for d in SUPPORTED if x64 or d not in _TO_32) for x64 in (False, True)}


def requested(dtype, name: str) -> np.dtype:
    """An explicitly requested ``dtype=`` of function ``name``, canonicalized; warns (as jax
    does) when the default mode truncates a 64-bit request."""
    dt = canonicalize(dtype)
    asked = check(dtype)
    if asked != dt:
        warnings.warn(
            f"{name}: the requested dtype {asked} is not available in fx's default mode and "
            f"is truncated to {dt}; enable 64-bit types with "
            f"fx.config.update('jax_enable_x64', True), FX_ENABLE_X64=1 or fx.enable_x64()",
            UserWarning, stacklevel=3)
    return dt


def is_float(dtype) -> bool:
    """A real floating dtype that fx computes in (float8 types are storage only)."""
    return _numpy_or_extended(dtype) in _FLOATING_SET


def is_complex(dtype) -> bool:
    return _numpy_or_extended(dtype) in _COMPLEX_SET


def is_inexact(dtype) -> bool:
    return _numpy_or_extended(dtype) in _INEXACT_SET


def is_int(dtype) -> bool:
    return _numpy_or_extended(dtype) in _INTEGER_SET


def is_signed_int(dtype) -> bool:
    return _numpy_or_extended(dtype) in _SIGNED_SET


def is_unsigned_int(dtype) -> bool:
    return _numpy_or_extended(dtype) in _UNSIGNED_SET


def _numpy_or_extended(dtype):
    # Extended dtypes (PRNG keys) are of no NumPy kind: the kind tests above say False.
    return dtype if isinstance(dtype, (np.dtype, ExtendedDType)) else np.dtype(dtype)


_FLOATING_SET, _COMPLEX_SET = frozenset(FLOATING), frozenset(COMPLEX)
_INEXACT_SET, _INTEGER_SET = frozenset(INEXACT), frozenset(INTEGER)
_SIGNED_SET, _UNSIGNED_SET = frozenset(SIGNED), frozenset(UNSIGNED)


def real_dtype(dtype) -> np.dtype:
    """The dtype of the real and imaginary parts of ``dtype`` (``dtype`` itself if real)."""
    dt = np.dtype(dtype)
    return {complex64: float32, complex128: float64}.get(dt, dt)


def complex_dtype(dtype) -> np.dtype:
    """The complex dtype with parts of real ``dtype`` (16-bit floats: complex64)."""
    dt = np.dtype(dtype)
    return complex128 if dt in (float64, complex128) else complex64


def short_name(dtype) -> str:
    return SHORT_NAMES.get(_numpy_or_extended(dtype), str(dtype))


def finfo(dtype):
    return ml_dtypes.finfo(check(dtype))


def iinfo(dtype):
    return ml_dtypes.iinfo(check(dtype))


def itemsize_bits(dtype) -> int:
    return _numpy_or_extended(dtype).itemsize * 8


# --- promotion lattice --------------------------------------------------------------------------
# Nodes are dtypes plus the weak kinds of Python scalars: "i*" (int), "f*" (float), "c*"
# (complex). An edge a -> b means "a promotes to b". This is jax's lattice ("standard"
# promotion); float8 types join only themselves and weak floats (implicit promotion of 8-bit
# floats is refused, as jax refuses it). In the default mode uint32 meets int32 at int32
# (jax avoids forming a 64-bit type from 32-bit inputs).
_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX = "i*", "f*", "c*"
_WEAK_NODES = (_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX)


def _lattice(x64: bool, strict: bool) -> dict:
    if strict:  # only Python scalars promote: to any dtype of their kind or above
        return {
            _WEAK_INT: [*INTEGER, _WEAK_FLOAT],
            _WEAK_FLOAT: [*FLOATING, *FLOAT8, _WEAK_COMPLEX],
            _WEAK_COMPLEX: [*COMPLEX],
            **{dt: [] for dt in SUPPORTED},
        }
    return {
        bool_: [_WEAK_INT],
        _WEAK_INT: [uint8, int8],
        uint8: [int16, uint16],
        uint16: [int32, uint32],
        uint32: [int64, uint64] if x64 else [int32, uint64],
        uint64: [_WEAK_FLOAT],
        int8: [int16],
        int16: [int32],
        int32: [int64],
        int64: [_WEAK_FLOAT],
        _WEAK_FLOAT: [float16, bfloat16, _WEAK_COMPLEX, *FLOAT8],
        **{f8: [] for f8 in FLOAT8},
        float16: [float32],
        bfloat16: [float32],
        float32: [float64, complex64],
        float64: [complex128],
        _WEAK_COMPLEX: [complex64],
        complex64: [complex128],
        complex128: [],
    }


_LATTICES = {(x64, strict): _lattice(x64, strict) for x64 in (False, True)
             for strict in (False, True)}


@functools.cache
def _upper_bounds(node, x64: bool, strict: bool = False) -> frozenset:
    out = {node}
    for nxt in _LATTICES[x64, strict][node]:
        out |= _upper_bounds(nxt, x64, strict)
    return frozenset(out)


class TypePromotionError(ValueError):
    """Two dtypes have no implicit promotion: 8-bit floats with anything but themselves, or
    any two different dtypes in strict mode (jax's ``jax.dtypes.TypePromotionError``)."""


_NODE_NAMES = {_WEAK_INT: "int (a Python scalar)", _WEAK_FLOAT: "float (a Python scalar)",
               _WEAK_COMPLEX: "complex (a Python scalar)"}


@functools.cache
def _lub(nodes: frozenset, x64: bool, strict: bool = False):
    common = functools.reduce(frozenset.__and__,
                              (_upper_bounds(n, x64, strict) for n in nodes))
    # The least upper bound is the common bound that every other common bound is above.
    for cand in common:
        if common <= _upper_bounds(cand, x64, strict):
            return cand
    names = ", ".join(sorted(_NODE_NAMES.get(n, str(n)) for n in nodes))
    if strict:
        raise TypePromotionError(
            f"fx: the dtypes {names} have no implicit promotion when "
            "jax_numpy_dtype_promotion='strict'; convert the operands explicitly "
            "(x.astype(...)) or use fx.numpy_dtype_promotion('standard')")
    raise TypePromotionError(
        f"fx: the dtypes {names} have no implicit promotion (8-bit floats promote only to "
        f"themselves); convert explicitly, e.g. x.astype(jnp.float32)")


_WEAK_DEFAULTS = {_WEAK_INT: default_int_dtype, _WEAK_FLOAT: default_float_dtype,
                  _WEAK_COMPLEX: default_complex_dtype}


def _kind_node(dtype) -> str:
    if is_inexact(dtype) or dtype in FLOAT8:
        return _WEAK_COMPLEX if is_complex(dtype) else _WEAK_FLOAT
    return _WEAK_INT


def join(*typed: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
    """``(dtype, weak_type)`` of combining values given as ``(dtype, weak_type)`` pairs, as
    jax does (the result canonicalized for the mode).

    A weak operand counts only by its kind (int, float, complex). When every operand is weak
    the result is the join of their dtypes, weak; when a strong operand of a kind at least as
    high takes part the result is strong; otherwise the result is weak, with the mode's
    default dtype of its kind: ``join((int8, False), (float32, True))`` is weak float32, or
    weak float64 in x64 mode.
    """
    if any(isinstance(dt, ExtendedDType) for dt, _ in typed):
        return _join_extended(tuple(dt for dt, _ in typed)), False
    x64 = x64_enabled()
    typed = tuple((canonicalize(dt), w) for dt, w in typed)
    if len(typed) == 1:
        dt, weak = typed[0]
        return canonicalize(dt), weak and dt != bool_
    dts = {dt for dt, _ in typed}
    if len(dts) == 1 and not all(w for _, w in typed):
        return canonicalize(next(iter(dts))), False
    strict = promotion_mode() == "strict"
    if all(w for _, w in typed) and not strict:
        out, weak = _lub(frozenset(dts), x64), True
    else:  # (strict: weak values meet by kind alone, so weak int8 + weak int8 is weak int)
        out = _lub(frozenset(_kind_node(dt) if w and dt != bool_ else dt for dt, w in typed),
                   x64, strict)
        weak = out in _WEAK_NODES
    if out in _WEAK_NODES:  # (weak int8 + weak uint64 meet at f* too)
        out = _WEAK_DEFAULTS[out]()
    return canonicalize(out), weak and out != bool_


promote_typed = join  # the name fx used before


def dtype_and_weak(value) -> tuple[np.dtype, bool]:
    """``(dtype, weak_type)`` of an fx value, NumPy value, Python scalar, or dtype."""
    aval = getattr(value, "aval", None)
    if aval is not None:
        return aval.dtype, aval.weak_type
    if isinstance(value, (np.ndarray, np.generic)):
        return canonicalize(value.dtype), False
    if isinstance(value, bool):
        return bool_, False
    if isinstance(value, int):
        return default_int_dtype(), True
    if isinstance(value, float):
        return default_float_dtype(), True
    if isinstance(value, complex):
        return default_complex_dtype(), True
    if isinstance(value, (list, tuple)):
        return python_data_dtype(value), False
    return canonicalize(value), False


def _leaves(data, out: list) -> list:
    if isinstance(data, (list, tuple)):
        for d in data:
            _leaves(d, out)
    else:
        out.append(data)
    return out


def python_data_dtype(data) -> np.dtype:
    """The dtype of an array built from nested Python data: the promotion of its leaves, with
    Python scalars weak (``[np.float16(1), 2.0]`` is float16), canonicalized."""
    leaves = _leaves(data, [])
    if not leaves:
        return default_float_dtype()
    typed = []
    for leaf in leaves:
        if isinstance(leaf, (np.ndarray, np.generic)) or getattr(leaf, "aval", None):
            typed.append(dtype_and_weak(leaf))
        elif isinstance(leaf, (bool, int, float, complex)):
            typed.append(dtype_and_weak(leaf))
        else:
            typed.append((canonicalize(np.asarray(leaf).dtype), False))
    return join(*set(typed))[0]


# --- the public, jax-compatible functions (fx.dtypes / fx.numpy) -------------------------------


def _public_node(x):
    """A lattice node for ``promote_types``' arguments: Python scalar types are weak kinds."""
    if x is int:
        return _WEAK_INT
    if x is float:
        return _WEAK_FLOAT
    if x is complex:
        return _WEAK_COMPLEX
    return check(x)


_WEAK_AS_DTYPE = {_WEAK_INT: int64, _WEAK_FLOAT: float64, _WEAK_COMPLEX: complex128}


def promote_types(a, b) -> np.dtype:
    """jax's ``promote_types``: the lattice join of two dtypes (Python's ``int``, ``float`` and
    ``complex`` count as weak), not canonicalized for the mode."""
    out = _lub(frozenset((_public_node(a), _public_node(b))), x64_enabled(),
               promotion_mode() == "strict")
    return _WEAK_AS_DTYPE.get(out, out)


def result_type(*args, return_weak_type_flag: bool = False):
    """jax's ``result_type`` over arrays, Python scalars and dtypes (canonicalized)."""
    if not args:
        raise ValueError("fx.numpy.result_type: at least one array or dtype is required")
    typed = []
    for a in args:
        if a is int or a is float or a is complex:
            typed.append((check(a), True))
        elif isinstance(a, (np.dtype, type, str)) or hasattr(a, "dtype") and not hasattr(
                a, "shape"):
            typed.append((check(a), False))
        else:
            typed.append(dtype_and_weak(a))
    dt, weak = join(*typed)
    if weak:  # a weak result is reported as the mode's default type of its kind, as jax does
        dt = canonicalize(_KIND_DEFAULTS[dt.kind if dt not in _ML_FLOATS else "f"]())
    return (dt, weak) if return_weak_type_flag else dt


_KIND_DEFAULTS = {"b": lambda: bool_, "i": default_int_dtype, "u": default_uint_dtype,
                  "f": default_float_dtype, "c": default_complex_dtype}


def to_inexact_dtype(dtype) -> np.dtype:
    """The inexact dtype a computation such as ``sin`` gives an operand of ``dtype``, as jax:
    floats and complex stay; 64-bit integers become float64, other integers and bools
    float32 (canonicalized, so float32 in the default mode)."""
    dt = np.dtype(dtype)
    if is_inexact(dt):
        return dt
    return canonicalize(float64 if dt.itemsize == 8 else float32)


def can_cast(from_, to, casting: str = "safe") -> bool:
    """NumPy's ``can_cast`` between fx dtypes."""
    return bool(np.can_cast(check(from_), check(to), casting=casting))


_ML_FLOATS = frozenset([bfloat16, *FLOAT8])


def issubdtype(arg1, arg2) -> bool:
    """jax's ``issubdtype``: NumPy's, with bfloat16 and the float8 types counted as
    ``np.floating`` (NumPy does not know where ml_dtypes' types belong); extended dtypes
    (PRNG keys) are of ``fx.dtypes.extended`` and their kind (``prng_key``)."""
    if isinstance(arg1, ExtendedDType) or isinstance(arg2, ExtendedDType):
        return _issubdtype_extended(arg1, arg2)

    def as_dtype(x):
        if isinstance(x, type) and issubclass(x, np.generic) and not _is_ml_type(x):
            return x  # np.floating & co. stay classes
        try:
            return check(x)
        except TypeError:
            return np.dtype(x)

    a, b = as_dtype(arg1), as_dtype(arg2)
    if isinstance(a, np.dtype) and a in _ML_FLOATS:
        if isinstance(b, np.dtype):
            return a == b
        return b in (np.floating, np.inexact, np.number, np.generic)
    return bool(np.issubdtype(a, b))


def _is_ml_type(t) -> bool:
    try:
        return np.dtype(t) in _ML_FLOATS
    except TypeError:
        return False
