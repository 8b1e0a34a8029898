"""``fx.numpy``: the NumPy API over fx arrays, traceable and differentiable.

Functions follow NumPy's signatures and broadcasting, with JAX's dtype promotion (weak Python
scalars) and JAX's default dtypes (float32 / int32 for Python data).
"""

from fx import dtypes as _dtypes
from fx.array import Array as ndarray  # noqa: F401
from fx.numpy import array_methods as _array_methods
from fx.numpy import linalg  # noqa: F401
from fx.numpy.convolutions import *  # noqa: F403
from fx.numpy.creation import *  # noqa: F403
from fx.numpy.indexing import *  # noqa: F403
from fx.numpy.linalg import *  # noqa: F403
from fx.numpy.manipulation import *  # noqa: F403
from fx.numpy.reductions import *  # noqa: F403
from fx.numpy.sorting import *  # noqa: F403
from fx.numpy.ufuncs import *  # noqa: F403

bool_ = _dtypes.bool_
int32 = _dtypes.int32
int64 = _dtypes.int64
uint32 = _dtypes.uint32
float16 = _dtypes.float16
bfloat16 = _dtypes.bfloat16
float32 = _dtypes.float32
float64 = _dtypes.float64
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
