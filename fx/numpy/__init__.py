"""``fx.numpy``: the NumPy API over fx arrays, traceable and differentiable.

Functions follow NumPy's signatures and broadcasting, with JAX's dtype promotion (weak Python
scalars) and JAX's default dtypes (float32 / int32 for Python data).
"""

import numpy as _np

from fx import dtypes as _dtypes
from fx.array import Array as ndarray  # noqa: F401
from fx.dlpack import numpy_from_dlpack as from_dlpack  # noqa: F401
from fx.numpy import array_methods as _array_methods
from fx.numpy import fft, linalg  # noqa: F401
from fx.numpy.array_api import (  # noqa: F401
    __array_api_version__,
    __array_namespace_info__,
    finfo,
)
from fx.numpy.bit_packing import *  # noqa: F403
from fx.numpy.compaction import *  # noqa: F403
from fx.numpy.complex_functions import *  # noqa: F403
from fx.numpy.convolutions import *  # noqa: F403
from fx.numpy.creation import *  # noqa: F403
from fx.numpy.diagonals import *  # noqa: F403
from fx.numpy.histograms import *  # noqa: F403
from fx.numpy.index_tricks import *  # noqa: F403
from fx.numpy.indexing import *  # noqa: F403
from fx.numpy.io import *  # noqa: F403
from fx.numpy.joining_and_editing import *  # noqa: F403
from fx.numpy.linalg import *  # noqa: F403
from fx.numpy.manipulation import *  # noqa: F403
from fx.numpy.mathematical import *  # noqa: F403
from fx.numpy.nan_reductions import *  # noqa: F403
from fx.numpy.padding import *  # noqa: F403
from fx.numpy.polynomial import *  # noqa: F403
from fx.numpy.quantiles import *  # noqa: F403
from fx.numpy.reductions import *  # noqa: F403
from fx.numpy.selection import *  # noqa: F403
from fx.numpy.setops import *  # noqa: F403
from fx.numpy.sorting import *  # noqa: F403
from fx.numpy.statistics import *  # noqa: F403
from fx.numpy.ufuncs import *  # noqa: F403
from fx.numpy.vector_products import *  # noqa: F403
from fx.numpy.vectorization import *  # noqa: F403
from fx.numpy.windows import *  # noqa: F403


class _ScalarType:
    """``fnp.float32`` & co.: usable as a dtype (``x.astype(fnp.float32)``, ``np.dtype(...)``)
    and callable like JAX's scalar types (``fnp.float32(2.0)`` is a 0-d array)."""

    def __init__(self, dtype):
        self.dtype = dtype
        self.__name__ = dtype.name

    def __call__(self, value):
        return asarray(value, dtype=self.dtype)  # noqa: F405

    def __eq__(self, other) -> bool:
        # A bool whatever ``other`` is (the Array API suite compares dtypes with any value):
        # equal to the same scalar type, its NumPy dtype and NumPy/jax scalar classes, as
        # jax's scalar types; never to strings or arrays.
        if isinstance(other, _ScalarType):
            return self.dtype == other.dtype
        if isinstance(other, _np.dtype):
            return other == self.dtype
        if isinstance(other, type):
            return other is self.dtype.type or isinstance(getattr(other, "dtype", None),
                                                          _np.dtype) and other.dtype == self.dtype
        return False

    def __hash__(self):
        return hash(self.dtype)

    def __repr__(self):
        return f"fx.numpy.{self.dtype.name}"


bool_ = _ScalarType(_dtypes.bool_)
int8 = _ScalarType(_dtypes.int8)
int16 = _ScalarType(_dtypes.int16)
int32 = _ScalarType(_dtypes.int32)
int64 = _ScalarType(_dtypes.int64)
uint8 = _ScalarType(_dtypes.uint8)
uint16 = _ScalarType(_dtypes.uint16)
uint32 = _ScalarType(_dtypes.uint32)
uint64 = _ScalarType(_dtypes.uint64)
float16 = _ScalarType(_dtypes.float16)
bfloat16 = _ScalarType(_dtypes.bfloat16)
float32 = _ScalarType(_dtypes.float32)
float64 = _ScalarType(_dtypes.float64)
complex64 = _ScalarType(_dtypes.complex64)
complex128 = _ScalarType(_dtypes.complex128)
float8_e4m3fn = _ScalarType(_dtypes.float8_e4m3fn)
float8_e5m2 = _ScalarType(_dtypes.float8_e5m2)
# jax's aliases: the 64-bit names are requests, canonicalized for the mode where used.
bool = bool_  # noqa: A001
float_ = double = float64
single = float32
int_ = int64
uint = uint64
complex_ = cdouble = complex128
csingle = complex64
# NumPy's abstract scalar classes, for issubdtype.
generic, number, integer = _np.generic, _np.number, _np.integer
signedinteger, unsignedinteger = _np.signedinteger, _np.unsignedinteger
inexact, floating, complexfloating = _np.inexact, _np.floating, _np.complexfloating
character, flexible = _np.character, _np.flexible
dtype = _np.dtype
iinfo = _dtypes.iinfo
ComplexWarning = _np.exceptions.ComplexWarning
pi = 3.141592653589793
e = 2.718281828459045
inf = float("inf")
nan = float("nan")
newaxis = None


def result_type(*args, return_weak_type_flag: bool = False):
    return _dtypes.result_type(*args, return_weak_type_flag=return_weak_type_flag)


promote_types = _dtypes.promote_types
can_cast = _dtypes.can_cast


def issubdtype(arg1, arg2) -> bool:
    return _dtypes.issubdtype(arg1, arg2)


_ISDTYPE_KINDS = {
    "bool": lambda d: d == _dtypes.bool_,
    "signed integer": _dtypes.is_signed_int,
    "unsigned integer": _dtypes.is_unsigned_int,
    "integral": _dtypes.is_int,
    "real floating": lambda d: _dtypes.is_float(d) or d in _dtypes.FLOAT8,
    "complex floating": _dtypes.is_complex,
    "numeric": lambda d: d != _dtypes.bool_,
}


def isdtype(dtype, kind) -> bool:
    """The array API's ``isdtype``: ``kind`` is a dtype, one of the kind names ("bool",
    "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
    "numeric"), or a tuple of them."""
    dt = _dtypes.check(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in _ISDTYPE_KINDS:
                raise ValueError(f"fx.numpy.isdtype: unknown kind {k!r}; known kinds are "
                                 f"{sorted(_ISDTYPE_KINDS)}")
            if _ISDTYPE_KINDS[k](dt):
                return True
        elif _dtypes.check(k) == dt:
            return True
    return False


def iscomplexobj(x) -> bool:
    return _dtypes.is_complex(_dtypes.dtype_and_weak(x)[0])


def isrealobj(x) -> bool:
    return not iscomplexobj(x)


def astype(x, dtype, /, *, copy: bool = False, device=None):
    """``x`` converted to ``dtype`` (the array API's function form of ``x.astype``)."""
    return asarray(x).astype(dtype)  # noqa: F405


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (NumPy's rules)."""
    from fx.numpy._promote import broadcast_shapes as _broadcast

    return _broadcast(*shapes, name="fx.numpy.broadcast_shapes")


def shape(a):
    return _array_methods.aval_of(a).shape


def ndim(a):
    return _array_methods.aval_of(a).ndim


def size(a):
    return _array_methods.aval_of(a).size


_array_methods.install()
