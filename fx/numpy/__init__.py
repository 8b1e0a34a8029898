"""``fx.numpy``: the NumPy API over fx arrays, traceable and differentiable.

Functions follow NumPy's signatures and broadcasting, with JAX's dtype promotion (weak Python
scalars) and JAX's default dtypes (float32 / int32 for Python data).
"""

import numpy as _np

from fx import dtypes as _dtypes
from fx.array import Array as ndarray  # noqa: F401
from fx.numpy import array_methods as _array_methods
from fx.numpy import linalg  # noqa: F401
from fx.numpy.compaction import *  # noqa: F403
from fx.numpy.convolutions import *  # noqa: F403
from fx.numpy.creation import *  # noqa: F403
from fx.numpy.creation_more import *  # noqa: F403
from fx.numpy.diagonals import *  # noqa: F403
from fx.numpy.histograms import *  # noqa: F403
from fx.numpy.index_tricks import *  # noqa: F403
from fx.numpy.indexing import *  # noqa: F403
from fx.numpy.io import *  # noqa: F403
from fx.numpy.linalg import *  # noqa: F403
from fx.numpy.manipulation import *  # noqa: F403
from fx.numpy.manipulation_more import *  # noqa: F403
from fx.numpy.mathematical import *  # noqa: F403
from fx.numpy.nan_reductions import *  # noqa: F403
from fx.numpy.polynomial import *  # noqa: F403
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

    def __eq__(self, other):
        try:
            return self.dtype == _np.dtype(other)
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self.dtype)

    def __repr__(self):
        return f"fx.numpy.{self.dtype.name}"


bool_ = _ScalarType(_dtypes.bool_)
int32 = _ScalarType(_dtypes.int32)
int64 = _ScalarType(_dtypes.int64)
uint32 = _ScalarType(_dtypes.uint32)
float16 = _ScalarType(_dtypes.float16)
bfloat16 = _ScalarType(_dtypes.bfloat16)
float32 = _ScalarType(_dtypes.float32)
float64 = _ScalarType(_dtypes.float64)
pi = 3.141592653589793
e = 2.718281828459045
inf = float("inf")
nan = float("nan")
newaxis = None


def result_type(*args):
    return _dtypes.result_type(*args)


def promote_types(a, b):
    a, b = _dtypes.canonicalize(a), _dtypes.canonicalize(b)
    return _dtypes.promote_types((a, False), (b, False))[0]


def issubdtype(a, b):
    import numpy as _np

    return _np.issubdtype(a, b)


def shape(a):
    return _array_methods.aval_of(a).shape


def ndim(a):
    return _array_methods.aval_of(a).ndim


def size(a):
    return _array_methods.aval_of(a).size


_array_methods.install()
