"""Dtypes and type promotion.

fx supports bool, int32, int64, uint32, float16, bfloat16, float32 and float64, represented as
numpy dtype objects (bfloat16 comes from ml_dtypes). Promotion follows JAX's type lattice with
64-bit types enabled, so explicit 64-bit inputs stay 64-bit. Python scalars are *weakly typed*:
they take the dtype of the array they meet instead of widening it (``f32_array * 2.0`` is
float32). Values built from Python data with no dtype of their own default to float32 / int32,
as in JAX's default mode.
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

bool_ = np.dtype(np.bool_)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint32 = np.dtype(np.uint32)
float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)

SUPPORTED = (bool_, int32, int64, uint32, float16, bfloat16, float32, float64)
FLOATING = (float16, bfloat16, float32, float64)
INTEGER = (int32, int64, uint32)

default_float = float32
default_int = int32


def x64_enabled() -> bool:
    """Whether 64-bit mode is on (``fx.config.update("jax_enable_x64", True)``)."""
    from fx.config import config

    return config.enable_x64


def default_float_dtype() -> np.dtype:
    """The dtype of a Python float with nothing else to go by: float64 in x64 mode, else
    float32 (jax's ``jnp.float_``)."""
    return float64 if x64_enabled() else float32


def default_int_dtype() -> np.dtype:
    """int64 in x64 mode, else int32 (jax's ``jnp.int_``)."""
    return int64 if x64_enabled() else int32

SHORT_NAMES = {
    bool_: "bool",
    int32: "i32",
    int64: "i64",
    uint32: "u32",
    float16: "f16",
    bfloat16: "bf16",
    float32: "f32",
    float64: "f64",
}

# numpy dtypes without an fx counterpart map to the nearest supported one of the same kind.
_NARROW_ALIASES = {
    np.dtype(np.int8): int32,
    np.dtype(np.int16): int32,
    np.dtype(np.uint8): uint32,
    np.dtype(np.uint16): uint32,
}


def canonicalize(dtype) -> np.dtype:
    """The fx dtype for ``dtype`` (a numpy dtype, type, or name); raises for unsupported ones."""
    if dtype is float:
        return default_float
    if dtype is int:
        return default_int
    if dtype is bool:
        return bool_
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"fx: {dtype!r} is not a dtype") from e
    if dt in SUPPORTED:
        return dt
    if dt in _NARROW_ALIASES:
        return _NARROW_ALIASES[dt]
    raise TypeError(
        f"fx does not support dtype {dt}; supported dtypes are "
        + ", ".join(str(d) for d in SUPPORTED)
    )


def is_float(dtype) -> bool:
    return np.dtype(dtype) in FLOATING


def is_int(dtype) -> bool:
    return np.dtype(dtype) in INTEGER


def is_signed_int(dtype) -> bool:
    return np.dtype(dtype) in (int32, int64)


def short_name(dtype) -> str:
    return SHORT_NAMES.get(np.dtype(dtype), str(dtype))


def finfo(dtype):
    return ml_dtypes.finfo(dtype)


def iinfo(dtype):
    return np.iinfo(dtype)


# --- promotion lattice -------------------------------------------------------------------------
# Nodes are fx dtypes plus the weak categories "i*" (Python int) and "f*" (Python float).
# An edge a -> b means "a promotes to b". This is JAX's lattice restricted to fx's dtypes.
_WEAK_INT, _WEAK_FLOAT = "i*", "f*"
_LATTICE = {
    bool_: [_WEAK_INT],
    _WEAK_INT: [uint32, int32],
    uint32: [int64],
    int32: [int64],
    int64: [_WEAK_FLOAT],
    _WEAK_FLOAT: [float16, bfloat16],
    float16: [float32],
    bfloat16: [float32],
    float32: [float64],
    float64: [],
}


@functools.cache
def _upper_bounds(node) -> frozenset:
    out = {node}
    for nxt in _LATTICE[node]:
        out |= _upper_bounds(nxt)
    return frozenset(out)


def _node(dtype, weak: bool):
    if weak and dtype != bool_:
        return _WEAK_FLOAT if is_float(dtype) else _WEAK_INT
    return dtype


@functools.cache
def _join(nodes: tuple) -> object:
    common = functools.reduce(frozenset.__and__, (_upper_bounds(n) for n in nodes))
    # The least upper bound is the common bound that every other common bound is above.
    for cand in common:
        if common <= _upper_bounds(cand):
            return cand
    raise TypeError(f"no common dtype for {nodes}")  # unreachable for this lattice


def promote_types(*typed: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
    """Result ``(dtype, weak_type)`` of combining values given as ``(dtype, weak_type)`` pairs.

    A weak value keeps its own dtype when it meets only weak values or strong values of a lower
    kind (bool < int < float); meeting a strong value of a kind at least as high, it adopts
    that value's dtype. Example: ``promote_types((int32, False), (float32, True))`` is
    ``(float32, True)``, ``int32_array * 2.0`` is float32.
    """
    nodes = tuple(_node(dt, w) for dt, w in typed)
    joined = _join(nodes)
    if joined == _WEAK_FLOAT or joined == _WEAK_INT:
        # The result is weak, with the join of the weak operands' dtypes taken as strong types
        # (weak f16 + weak bf16 is weak f32, in either order), which keeps promotion
        # associative. When every operand is weak this is JAX's rule. When a strong operand of
        # a lower kind takes part (int32 array * 2.0) JAX gives its default dtype of the
        # result's kind (64-bit under x64); fx keeps the weak operand's dtype, so Python
        # scalars give float32/int32 as in JAX's default mode.
        return _join(tuple(dt for dt, w in typed if w)), True
    return joined, False


def result_type(*values) -> np.dtype:
    """numpy-style ``result_type`` over fx arrays, numpy arrays, Python scalars and dtypes."""
    return promote_types(*(dtype_and_weak(v) for v in values))[0]


def dtype_and_weak(value) -> tuple[np.dtype, bool]:
    """``(dtype, weak_type)`` of an fx value, numpy value, Python scalar, or dtype."""
    aval = getattr(value, "aval", None)
    if aval is not None:
        return aval.dtype, aval.weak_type
    if isinstance(value, (np.ndarray, np.generic)):
        return canonicalize(value.dtype), False
    if isinstance(value, bool):
        return bool_, False
    if isinstance(value, int):
        return default_int, True
    if isinstance(value, float):
        return default_float, True
    if isinstance(value, complex):
        raise TypeError("fx does not support complex numbers")
    if isinstance(value, (list, tuple)):
        # Nested Python data: strong if it holds any numpy value, else weak-typed defaults.
        return canonicalize(python_data_dtype(value)), False
    return canonicalize(value), False


def python_data_dtype(data) -> np.dtype:
    """The fx dtype numpy data or nested Python lists get by default (floats → float32)."""
    arr = np.asarray(data)
    if arr.dtype == np.float64 and not _holds_numpy_float64(data):
        return default_float
    if arr.dtype == np.int64 and not _holds_numpy_int64(data):
        return default_int
    return canonicalize(arr.dtype)


def _holds_numpy_float64(data) -> bool:
    if isinstance(data, (np.ndarray, np.generic)):
        return data.dtype == np.float64
    if isinstance(data, (list, tuple)):
        return any(_holds_numpy_float64(d) for d in data)
    return False


def _holds_numpy_int64(data) -> bool:
    if isinstance(data, (np.ndarray, np.generic)):
        return data.dtype == np.int64
    if isinstance(data, (list, tuple)):
        return any(_holds_numpy_int64(d) for d in data)
    return False


class prng_key(np.generic):  # noqa: N801  (jax's name: jax.dtypes.prng_key)
    """The abstract type of jax's typed PRNG keys. fx keys are raw ``uint32`` data, so
    ``issubdtype(k.dtype, prng_key)`` is False for them, as it is for jax's raw keys."""
